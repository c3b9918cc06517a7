/* baselines_test.c: every task's baseline for a backend, checked against its C reference on every
 * check shape (and at the bench shapes against itself), like ggml's test-backend-ops; then every
 * other candidate the task ships for that backend (the tunable ones), at its default knobs.
 *
 * usage: baselines_test BACKEND TASKS_DIR   (exit 77: no such device here, skipped) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_internal.h"

#include "candidate_files.h"
#include "util/util.h"

/* What the walk over tasks needs. */
struct walk {
    struct temper_worker *w; /* the worker */
    const char *backend;     /* "cuda" or "opencl" */
    const char *tasks;       /* the tasks folder */
    int count;               /* baselines checked */
    int shipped;             /* other candidates checked */
    int failures;            /* baselines and candidates that did not pass */
};

/* Checks one file; returns 1 if it is correct. */
static int check_file(struct walk *k, const char *task, const char *path)
{
    char msg[4096];
    struct temper_eval_request req = {.path = path, .tasks_dir = k->tasks, .seed = 1, .no_timing = 1};
    json_t *r = NULL;
    double t0 = temper_now_s();
    int err = temper_eval(k->w, &req, NULL, &r, msg, sizeof(msg));
    const char *verdict = err ? "error" : json_string_value(json_object_get(r, "verdict"));
    int ok = !strcmp(verdict, "correct");
    const char *base = strrchr(path, '/');
    printf("%s %-16s %-10s %-8s %s  %.2fs  %s\n", ok ? "ok  " : "FAIL", task, base ? base + 1 : path, k->backend,
           verdict, temper_now_s() - t0, err ? msg : json_string_value(json_object_get(r, "message")));
    json_decref(r);
    k->failures += !ok;
    return ok;
}

static int check_task(void *user, const char *dir)
{
    struct walk *k = user;
    struct temper_task t;
    char msg[4096];
    if (temper_task_load(dir, &t, msg, sizeof(msg))) {
        printf("FAIL %s: %s\n", dir, msg);
        k->failures++;
        return 0;
    }
    const char *baseline = !strcmp(k->backend, "cuda") ? t.baseline_cuda : t.baseline_opencl;
    if (!baseline[0]) {
        printf("FAIL %-16s has no %s baseline\n", t.name, k->backend);
        k->failures++;
        return 0;
    }
    check_file(k, t.name, baseline);
    k->count++;
    /* the task's other candidates for this backend, in name order */
    const char *slash = strrchr(baseline, '/');
    char **names;
    int n = candidate_files(dir, k->backend, &names);
    for (int i = 0; i < n; i++) {
        if (strcmp(names[i], slash ? slash + 1 : baseline)) {
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
            check_file(k, t.name, path);
            k->shipped++;
        }
        free(names[i]);
    }
    free(names);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: baselines_test BACKEND TASKS_DIR\n");
        return 2;
    }
    char home[] = "/tmp/temper-baselines-XXXXXX";
    if (!mkdtemp(home))
        return 2;
    setenv("TEMPER_HOME", home, 1);
    struct walk k = {NULL, argv[1], argv[2], 0, 0, 0};
    char msg[4096];
    if (temper_worker_start(argv[1], NULL, &k.w, msg, sizeof(msg)))
        return 2;
    json_t *info = NULL;
    if (temper_worker_device_info(k.w, &info, msg, sizeof(msg))) {
        printf("SKIP: no %s device here: %s\n", argv[1], msg);
        temper_worker_stop(k.w);
        return 77;
    }
    json_decref(info);
    temper_task_each(argv[2], check_task, &k);
    temper_worker_stop(k.w);
    printf("%d baselines and %d other candidates, %d failures\n", k.count, k.shipped, k.failures);
    return k.failures || !k.count ? 1 : 0;
}
