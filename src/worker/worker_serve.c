/* worker_serve.c: the worker process's serving loop: requests read from its socket, handled by
 * the pipeline (pipeline.c), and each reply sent back as one frame (worker_proto.c). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "temper/eval.h"
#include "eval/worker_impl.h"

void (*worker_job_done_hook)(void);

/* Says on a reply that is not a result that this worker exits after it (worker.c reads the flag
 * on every op's reply). */
static void frame_restarts(json_t *frame)
{
    json_object_set_new(frame, "worker_restarted", json_true());
}

void temper_worker_main(int in_fd, int out_fd, const char *device_spec, void *shared)
{
    struct worker_state *ws = worker_state_new(device_spec, shared);
    if (!ws)
        _exit(1);
    /* The parent times the device's waits from the beats on the socket (worker_impl.h). */
    if (shared && out_fd == WORKER_SOCKET_FD)
        worker_beats_start();
    for (;;) {
        json_t *req = worker_recv(in_fd);
        if (!req)
            _exit(0);
        int fatal = 0;
        const char *op = json_string_value(json_object_get(req, "op"));
        int describes = op && (!strcmp(op, "info") || !strcmp(op, "devices"));
        int eval = op && !strcmp(op, "eval");
        json_t *reply = worker_handle(ws, req, &fatal);
        json_decref(req);
        /* What it built goes to the calling program before the reply, so that the reply's
         * reader finds the report already sent (cache_service.c). */
        if (worker_job_done_hook)
            worker_job_done_hook();
        /* What confines this process is part of the device's description. */
        if (describes && json_is_object(reply) && !json_object_get(reply, "error"))
            json_object_set_new(reply, "sandbox", worker_sandbox_json(ws->shared));
        /* That this worker exits after the reply: an eval's result says so in its field, set by
         * the pipeline (pipeline.c); a reply that is not a result (calibrate's, an error) here. */
        if (fatal && !(eval && !json_object_get(reply, "error")))
            frame_restarts(reply);
        int rc = worker_send(out_fd, reply);
        json_decref(reply);
        /* After a device fault the context may be unusable (CUDA errors are sticky): start over. */
        if (rc || fatal)
            _exit(0);
    }
}
