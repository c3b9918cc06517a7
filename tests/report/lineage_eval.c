/* lineage_eval.c: a client of the session API that records lineage, as an agent would: evaluates
 * one candidate file (correctness only) on the first OpenCL device, stored with a parent and the
 * name of what made it, and prints the evaluation's store id. The export and report tests use it
 * for an improving step whose parent was not correct, which `temper eval` cannot record.
 * usage: lineage_eval FILE PARENT_ID MADE_BY   (PARENT_ID 0: none) */
#include <stdio.h>
#include <stdlib.h>

#include "temper/session.h"

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: lineage_eval FILE PARENT_ID MADE_BY\n");
        return 2;
    }
    struct temper_session_config config = {.device = "opencl"};
    struct temper_session *session;
    char msg[2048];
    if (temper_session_open(&config, &session, msg, sizeof(msg))) {
        fprintf(stderr, "lineage_eval: %s\n", msg);
        return 3;
    }
    struct temper_session_request req = {
        .path = argv[1], .no_timing = 1, .parent_id = strtoll(argv[2], NULL, 10), .made_by = argv[3]};
    int64_t id;
    json_t *result = NULL;
    int err = temper_session_submit(session, &req, &id, msg, sizeof(msg));
    if (!err)
        err = temper_session_wait(session, id, &result, msg, sizeof(msg));
    temper_session_close(session);
    if (err || !json_is_integer(json_object_get(result, "store_id"))) {
        fprintf(stderr, "lineage_eval: %s\n", err ? msg : "the result was not stored");
        json_decref(result);
        return 4;
    }
    printf("%lld\n", (long long)json_integer_value(json_object_get(result, "store_id")));
    json_decref(result);
    return 0;
}
