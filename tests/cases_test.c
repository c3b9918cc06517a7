/* cases_test.c: the data-driven verdict cases. Every candidate in a folder carries the verdict it
 * must get (`// @expect VERDICT`) and optionally a phrase its message must contain
 * (`// @expect-message TEXT`), and optionally how many checks fail when the worker request asks to
 * keep going after a failure (`// @expect-keep-going N`, run as a second request without timing),
 * and optionally the secret seed to use (`// @expect-secret-seed N`; by default a fresh random
 * one each evaluation), for a verdict that depends on the data a seed draws, and optionally no
 * timing (`// @expect-no-timing`), for a kernel whose outputs sit at its task's tolerance: every timed
 * launch draws fresh inputs, and how many launches a budget times follows the machine's speed.
 * All cases run through one worker handle, in order, so a case that
 * crashes or hangs the worker also shows that the next evaluation runs normally. Every result
 * is recorded in a fresh store, and the store must hold exactly one evaluation per case. The
 * device's ceilings are the test run's ($TEMPER_CEILINGS, saved by calibrate_opencl) when they are
 * this device's; otherwise it measures them.
 *
 * With --only LIST it runs only the cases LIST names, with --skip LIST all the others (LIST: one
 * case file name a line, `#` comments; a name that is not a case of the folder fails the test):
 * the default run (scripts/test.sh) runs the sanitizer tier's few cases, which reach every code
 * path of temper's own that the cases do, under ASan/UBSan, and all the others in the Release
 * build, so each case runs once; tests/cases/sanitize_opencl.txt says why each is in the few.
 *
 * usage: cases_test BACKEND CASES_DIR TASKS_DIR [--only LIST | --skip LIST]
 *        (exit 77: no such device here, skipped) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval/eval_internal.h"
#include "temper/store.h"

#include "candidate_files.h"
#include "util/util.h"

#define SKIP 77


/* Copies the n bytes at src into dst (of size bytes) as a string; -1 if they do not fit. */
static int copy_field(char *dst, size_t size, const char *src, size_t n)
{
    if (n >= size)
        return -1;
    memcpy(dst, src, n);
    dst[n] = 0;
    return 0;
}

/* Reads the @expect lines of a case into verdict (vsize bytes) and phrase (psize bytes); -1 with
 * a reason in why (of why_size bytes) when the verdict is missing or a field does not fit. */
static int expectation(const char *source, char *verdict, size_t vsize, char *phrase, size_t psize, char *why,
                       size_t why_size)
{
    verdict[0] = phrase[0] = 0;
    const char *p = strstr(source, "@expect-message ");
    if (p && copy_field(phrase, psize, p + 16, strcspn(p + 16, "\r\n"))) {
        snprintf(why, why_size, "'@expect-message' text longer than %zu bytes", psize - 1);
        return -1;
    }
    for (p = source; (p = strstr(p, "@expect ")); p++) {
        const char *v = p + 8 + strspn(p + 8, " \t");
        size_t n = strcspn(v, " \t\r\n");
        if (n == 0)
            continue;
        if (copy_field(verdict, vsize, v, n)) {
            snprintf(why, why_size, "'@expect' verdict longer than %zu bytes", vsize - 1);
            return -1;
        }
        return 0;
    }
    snprintf(why, why_size, "no '@expect VERDICT' line");
    return -1;
}

/* Evaluates a case again through a worker request with keep_going set and no timing, and checks
 * that it fails the same way with want_failed failed checks, each saying why. Returns 1 if so. */
static int keep_going_ok(struct temper_worker *w, const char *path, const char *source, const char *tasks,
                         json_t *calib, const char *verdict, int want_failed)
{
    char msg[4096], task_dir[4096];
    struct temper_candidate cand;
    if (temper_candidate_parse(path, source, strlen(source), &cand, msg, sizeof(msg)) ||
        temper_task_find(temper_tasks_root(tasks), cand.task, task_dir, sizeof(task_dir), msg, sizeof(msg))) {
        printf("     keep-going: %s\n", msg);
        return 0;
    }
    temper_candidate_free(&cand);
    json_t *req = json_pack("{s:s, s:s, s:s, s:s, s:{}, s:i, s:i, s:b, s:f, s:O, s:b}", "op", "eval", "task_dir",
                            task_dir, "path", path, "source", source, "knobs", "seed", 1, "secret_seed", 12345,
                            "no_timing", 1, "time_budget_s", 0.2, "calibration", calib, "keep_going", 1);
    json_t *r = NULL;
    int err = temper_worker_call(w, req, &r, msg, sizeof(msg));
    json_decref(req);
    if (err) {
        printf("     keep-going: %s\n", msg);
        return 0;
    }
    const char *got = json_string_value(json_object_get(r, "verdict"));
    json_int_t failed = json_integer_value(json_object_get(r, "failed_checks"));
    int described = 0;
    json_t *lists[2] = {json_object_get(r, "checks"), json_object_get(r, "bench_checks")}, *c;
    size_t k;
    for (int l = 0; l < 2; l++)
        json_array_foreach(lists[l], k, c) described += json_is_string(json_object_get(c, "message"));
    int ok = got && !strcmp(got, verdict) && failed == want_failed && described == want_failed;
    printf("     keep-going: %s, %lld failed checks, %d with a message (want %d): %s\n", got ? got : "no verdict",
           (long long)failed, described, want_failed, json_string_value(json_object_get(r, "message")));
    json_decref(r);
    return ok;
}

/* Keeps in names (n of them, updated) those LIST names (only) or does not name (!only); the
 * others are freed. Returns 0, or -1 with a reason in why when LIST cannot be read or names a
 * file that is not among names. */
static int select_cases(const char *list, int only, char **names, int *n, char *why, size_t why_size)
{
    FILE *f = fopen(list, "r");
    if (!f) {
        snprintf(why, why_size, "cannot open %s", list);
        return -1;
    }
    char *listed = calloc((size_t)*n + 1, 1), line[512];
    int rc = 0;
    while (!rc && fgets(line, sizeof(line), f)) {
        char *name = line + strspn(line, " \t");
        name[strcspn(name, " \t\r\n#")] = 0;
        if (!name[0])
            continue;
        int i = 0;
        while (i < *n && strcmp(names[i], name))
            i++;
        if (i == *n) {
            snprintf(why, why_size, "%s names %s, not a case here", list, name);
            rc = -1;
        } else
            listed[i] = 1;
    }
    fclose(f);
    int kept = 0;
    for (int i = 0; i < *n; i++) {
        if (!rc && listed[i] == only)
            names[kept++] = names[i];
        else if (!rc)
            free(names[i]);
    }
    if (!rc)
        *n = kept;
    free(listed);
    return rc;
}

/* The ceilings the test run measured once (calibrate_opencl, saved where $TEMPER_CEILINGS says),
 * when they are this device's (info); NULL otherwise, and the test measures them itself. */
static json_t *seeded_ceilings(json_t *info)
{
    const char *path = getenv("TEMPER_CEILINGS");
    if (!path || !*path || access(path, F_OK))
        return NULL;
    char key[1024];
    temper_store_device_key(info, key, sizeof(key));
    json_t *o = json_load_file(path, 0, NULL), *ceilings = json_object_get(o, "ceilings");
    const char *stored = json_string_value(json_object_get(o, "device_key"));
    if (!stored || strcmp(stored, key) || !json_is_object(ceilings) ||
        json_number_value(json_object_get(ceilings, "copy_gbs")) <= 0) {
        json_decref(o);
        return NULL;
    }
    json_incref(ceilings);
    json_decref(o);
    printf("ceilings taken from %s ($TEMPER_CEILINGS)\n", path);
    return ceilings;
}

static int contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (!strncasecmp(hay, needle, n))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4 && !(argc == 6 && (!strcmp(argv[4], "--only") || !strcmp(argv[4], "--skip")))) {
        fprintf(stderr, "usage: cases_test BACKEND CASES_DIR TASKS_DIR [--only LIST | --skip LIST]\n");
        return 2;
    }
    const char *backend = argv[1], *dir = argv[2], *tasks = argv[3];
    char home[] = "/tmp/temper-cases-XXXXXX";
    if (!mkdtemp(home))
        return 2;
    setenv("TEMPER_HOME", home, 1);

    char **names;
    int n = candidate_files(dir, backend, &names);
    if (n < 0) {
        fprintf(stderr, "cannot open %s\n", dir);
        return 2;
    }
    if (argc == 6) {
        char why[4096 + 64];
        if (select_cases(argv[5], !strcmp(argv[4], "--only"), names, &n, why, sizeof(why)) ||
            (!n && snprintf(why, sizeof(why), "%s %s leaves no case", argv[4], argv[5]))) {
            fprintf(stderr, "%s\n", why);
            for (int i = 0; i < n; i++)
                free(names[i]);
            free(names);
            return 2;
        }
        printf("%d cases (%s %s)\n", n, argv[4], argv[5]);
    }

    struct temper_limits limits;
    temper_limits_default(&limits);
    limits.launch_timeout_s = 3.0;
    struct temper_worker *w;
    char msg[4096];
    int started = !temper_worker_start(backend, &limits, &w, msg, sizeof(msg));
    json_t *info = NULL;
    if (!started || temper_worker_device_info(w, &info, msg, sizeof(msg))) {
        /* Leaving early frees what was listed, so that leak detection sees nothing of ours. */
        for (int i = 0; i < n; i++)
            free(names[i]);
        free(names);
        if (!started) {
            fprintf(stderr, "%s\n", msg);
            return 2;
        }
        printf("SKIP: no %s device here: %s\n", backend, msg);
        temper_worker_stop(w);
        return SKIP;
    }
    printf("device %s: %s\n", json_string_value(json_object_get(info, "id")),
           json_string_value(json_object_get(info, "name")));
    json_t *calib = seeded_ceilings(info);
    if (!calib && temper_calibrate(w, &calib, msg, sizeof(msg))) {
        fprintf(stderr, "calibration failed: %s\n", msg);
        return 1;
    }
    struct temper_store *store;
    if (temper_store_open(NULL, &store, msg, sizeof(msg))) {
        fprintf(stderr, "%s\n", msg);
        return 2;
    }
    int failures = 0, recorded = 0;
    const char *first_correct = NULL;
    for (int i = 0; i < n; i++) {
        char path[4096], verdict[32], phrase[256], why[128];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        char *source;
        if (temper_read_file(path, 1 << 20, &source, NULL, msg, sizeof(msg))) {
            printf("FAIL %-36s %s\n", names[i], msg);
            failures++;
            continue;
        }
        if (expectation(source, verdict, sizeof(verdict), phrase, sizeof(phrase), why, sizeof(why))) {
            printf("FAIL %-36s %s\n", names[i], why);
            free(source);
            failures++;
            continue;
        }
        struct temper_eval_request req = {0};
        req.path = path;
        req.source = source;
        req.tasks_dir = tasks;
        req.seed = 1;
        const char *pinned = strstr(source, "@expect-secret-seed ");
        req.secret_seed = pinned ? strtoull(pinned + 20, NULL, 10) : 0;
        req.time_budget_s = 0.2;
        req.no_timing = strstr(source, "@expect-no-timing") != NULL;
        json_t *r = NULL;
        double t0 = temper_now_s();
        if (temper_eval(w, &req, calib, &r, msg, sizeof(msg))) {
            printf("FAIL %-36s evaluation error: %s\n", names[i], msg);
            failures++;
            free(source);
            continue;
        }
        const char *got = json_string_value(json_object_get(r, "verdict"));
        const char *message = json_string_value(json_object_get(r, "message"));
        int ok = got && !strcmp(got, verdict) && (!phrase[0] || contains_ci(message, phrase));
        const char *keep = strstr(source, "@expect-keep-going ");
        if (ok && keep)
            ok = keep_going_ok(w, path, source, tasks, calib, verdict, atoi(keep + 19));
        printf("%s %-36s expect %-13s got %-13s %.1fs  %s\n", ok ? "ok  " : "FAIL", names[i], verdict, got,
               temper_now_s() - t0, message);
        if (!ok && phrase[0])
            printf("     (message must contain '%s')\n", phrase);
        failures += !ok;
        /* A CUDA worker runs no program: once its device is open, exec is refused (where the
         * seccomp filter holds at all). */
        json_t *sb = json_object_get(r, "sandbox");
        if (!strcmp(backend, "cuda") && json_is_true(json_object_get(sb, "seccomp")) &&
            !json_is_true(json_object_get(sb, "exec_blocked"))) {
            printf("FAIL %-36s the CUDA worker still allows exec: %s\n", names[i],
                   json_string_value(json_object_get(sb, "reason")));
            failures++;
        }
        if (ok && !strcmp(verdict, "correct") && !first_correct)
            first_correct = names[i];
        if (!temper_store_record(store, r, source, NULL, msg, sizeof(msg)))
            recorded++;
        else
            printf("FAIL %-36s not recorded: %s\n", names[i], msg);
        json_decref(r);
        free(source);
    }
    /* After every crash and hang above, the same handle still evaluates normally. */
    if (first_correct) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, first_correct);
        struct temper_eval_request req = {.path = path, .tasks_dir = tasks, .seed = 2, .no_timing = 1};
        json_t *r = NULL;
        int err = temper_eval(w, &req, calib, &r, msg, sizeof(msg));
        const char *got = err ? "error" : json_string_value(json_object_get(r, "verdict"));
        int ok = !strcmp(got, "correct");
        printf("%s %-36s again after all cases: %s\n", ok ? "ok  " : "FAIL", first_correct, got);
        failures += !ok;
        json_decref(r);
    }
    int64_t stored = temper_store_count(store, NULL);
    if (stored != recorded || recorded != n) {
        printf("FAIL store holds %lld evaluations; %d recorded of %d cases\n", (long long)stored, recorded, n);
        failures++;
    }
    temper_store_close(store);
    temper_worker_stop(w);
    json_decref(info);
    json_decref(calib);
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    printf("%d cases, %d failures\n", n, failures);
    return failures ? 1 : 0;
}
