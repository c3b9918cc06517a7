/* queue_tool.c: a small client of the job queue (queue.h) for the process tests
 * (redis_workers_test.sh): it submits jobs and reads their views, the dead letters and the counts,
 * through the same engine the server uses, so that real `temper worker` processes can be tested
 * against a real Redis without the HTTP front end.
 *   queue_tool URL submit ID FILE LANG [BATCH]   (correctness only: options {"timing": false}; the
 *                                                item names the candidate's task, as the API's does)
 *   queue_tool URL get ID [WAIT_MS]              (the view, one JSON line; exit 1 if unknown)
 *   queue_tool URL wait WAIT_S ID...             (each view once all are finished; exit 1 if not)
 *   queue_tool URL dead | stats | workers        (one JSON line) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve/queue.h"
#include "temper/error.h"
#include "temper/kernel.h"

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *text = NULL;
    size_t len = 0, cap = 0, n;
    char buf[4096];
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            char *grown = realloc(text, cap);
            if (!grown) {
                free(text);
                fclose(f);
                return NULL;
            }
            text = grown;
        }
        memcpy(text + len, buf, n);
        len += n;
    }
    fclose(f);
    if (!text)
        text = calloc(1, 1);
    else
        text[len] = 0;
    return text;
}

static void print(json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    printf("%s\n", s ? s : "null");
    free(s);
}

static int finished(json_t *v)
{
    const char *st = json_string_value(json_object_get(v, "status"));
    return st && (!strcmp(st, "done") || !strcmp(st, "failed") || !strcmp(st, "cancelled"));
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: queue_tool URL submit|get|wait|dead|stats|workers ...\n");
        return 2;
    }
    char msg[1024] = "";
    struct temper_queue *q = NULL;
    if (temper_queue_open_redis(argv[1], NULL, &q, msg, sizeof(msg))) {
        fprintf(stderr, "queue_tool: %s\n", msg);
        return 2;
    }
    const char *cmd = argv[2];
    int rc = 0, err = 0;
    json_t *v = NULL;
    if (!strcmp(cmd, "submit") && (argc == 6 || argc == 7)) {
        struct temper_job j = {0};
        snprintf(j.id, sizeof(j.id), "%s", argv[3]);
        if (argc == 7)
            snprintf(j.batch, sizeof(j.batch), "%s", argv[6]);
        char *src = read_file(argv[4]);
        if (!src) {
            fprintf(stderr, "queue_tool: cannot read %s\n", argv[4]);
            q->ops->close(q);
            return 2;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        j.submitted_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
        j.item = json_pack("{s:s, s:s, s:{s:b}}", "source", src, "lang", argv[5], "options", "timing", 0);
        struct temper_candidate *cand = calloc(1, sizeof(*cand));
        if (cand && j.item && !temper_candidate_parse_lang(NULL, argv[5], src, strlen(src), cand, msg, sizeof(msg)))
            json_object_set_new(j.item, "task", json_string(cand->task));
        if (cand)
            temper_candidate_free(cand);
        free(cand);
        int existing = 0;
        err = q->ops->submit(q, &j, 1, &existing, msg, sizeof(msg));
        json_decref(j.item);
        free(src);
        if (!err)
            printf("%s\n", existing ? "existing" : "queued");
    } else if (!strcmp(cmd, "get") && (argc == 4 || argc == 5)) {
        err = q->ops->get(q, argv[3], argc == 5 ? atoi(argv[4]) : 0, &v, msg, sizeof(msg));
        if (!err)
            print(v);
    } else if (!strcmp(cmd, "wait") && argc >= 5) {
        double deadline = (double)time(NULL) + atof(argv[3]);
        for (int i = 4; i < argc && !err; i++) {
            for (;;) {
                json_decref(v);
                v = NULL;
                int left_ms = (int)((deadline - (double)time(NULL)) * 1000);
                err = q->ops->get(q, argv[i], left_ms > 0 ? (left_ms < 5000 ? left_ms : 5000) : 0, &v, msg, sizeof(msg));
                if (err || finished(v) || left_ms <= 0)
                    break;
            }
            if (!err) {
                print(v);
                rc |= !finished(v);
            }
        }
    } else if (!strcmp(cmd, "dead") && argc == 3) {
        if (!(err = q->ops->dead_letters(q, &v, msg, sizeof(msg))))
            print(v);
    } else if (!strcmp(cmd, "workers") && argc == 3) {
        if (!(err = q->ops->workers(q, 60, &v, msg, sizeof(msg))))
            print(v);
    } else if (!strcmp(cmd, "stats") && argc == 3) {
        struct temper_queue_stats st;
        if (!(err = q->ops->stats(q, &st, msg, sizeof(msg))))
            printf("{\"queued\":%lld,\"running\":%lld,\"done\":%lld,\"failed\":%lld,\"cancelled\":%lld,"
                   "\"redeliveries\":%lld,\"dead_letters\":%lld}\n",
                   (long long)st.queued, (long long)st.running, (long long)st.done, (long long)st.failed,
                   (long long)st.cancelled, (long long)st.redeliveries, (long long)st.dead_letters);
    } else {
        fprintf(stderr, "queue_tool: bad command line\n");
        rc = 2;
    }
    json_decref(v);
    if (err) {
        fprintf(stderr, "queue_tool: %s\n", msg);
        rc = err == TEMPER_ENOTFOUND ? 1 : 2;
    }
    q->ops->close(q);
    return rc;
}
