/* task_errors_test.c: a task's own failures are the task's error, never a candidate's verdict. In
 * a temporary tasks folder, copies of vector_add whose reference crashes (SIGSEGV) or loops forever
 * at the shape N=7 are evaluated on the OpenCL device through one worker: each evaluation gets an
 * error (no result) whose message names the task, the shape and the signal or the time limit, and
 * the next evaluation on the same worker, of a good task, is still `correct`.
 *
 * usage: task_errors_test SOURCE_DIR   (exit 77: no OpenCL device here, skipped) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eval/eval_internal.h"
#include "util/util.h"

#define SKIP 77

/* How the parent names the crash: the signal, or under AddressSanitizer (which reports the SIGSEGV
 * itself) the exit status 1, or SIGABRT with ASAN_OPTIONS=abort_on_error=1 (scripts/test.sh). */
static const char *crash_words(void)
{
#ifdef __SANITIZE_ADDRESS__
    const char *opts = getenv("ASAN_OPTIONS");
    return opts && strstr(opts, "abort_on_error=1") ? "Aborted" : "exited with status 1";
#else
    return "Segmentation fault";
#endif
}

static int failures;

#define CHECK(cond, ...)                                                                                              \
    do {                                                                                                              \
        if (cond) {                                                                                                   \
            printf("ok   ");                                                                                          \
        } else {                                                                                                      \
            printf("FAIL ");                                                                                          \
            failures++;                                                                                               \
        }                                                                                                             \
        printf(__VA_ARGS__);                                                                                          \
        printf("\n");                                                                                                 \
    } while (0)

static void write_text(const char *path, const char *text)
{
    char msg[512];
    if (temper_write_file_atomic(path, text, strlen(text), msg, sizeof(msg))) {
        fprintf(stderr, "%s\n", msg);
        exit(2);
    }
}

/* Replaces every `from` in text with `to`; caller frees. */
static char *replace(const char *text, const char *from, const char *to)
{
    struct temper_buf b;
    temper_buf_init(&b, 4u << 20);
    for (const char *p = text;;) {
        const char *at = strstr(p, from);
        if (!at) {
            temper_buf_append(&b, p, strlen(p));
            break;
        }
        temper_buf_append(&b, p, (size_t)(at - p));
        temper_buf_append(&b, to, strlen(to));
        p = at + strlen(from);
    }
    return b.data;
}

/* Makes tasks/L1/NAME from vector_add with the given reference, and a candidate for it. */
static void make_task(const char *src, const char *work, const char *name, const char *reference, char *cand,
                      size_t cand_size)
{
    char path[8192], dir[4096], msg[512];
    char *json, *kernel, *cuda;
    snprintf(path, sizeof(path), "%s/tasks/L1/vector_add/task.json", src);
    if (temper_read_file(path, 1 << 20, &json, NULL, msg, sizeof(msg)) ||
        (snprintf(path, sizeof(path), "%s/tasks/L1/vector_add/naive.cl", src),
         temper_read_file(path, 1 << 20, &kernel, NULL, msg, sizeof(msg))) ||
        (snprintf(path, sizeof(path), "%s/tasks/L1/vector_add/naive.cu", src),
         temper_read_file(path, 1 << 20, &cuda, NULL, msg, sizeof(msg)))) {
        fprintf(stderr, "%s\n", msg);
        exit(2);
    }
    char quoted[128], task_line[128];
    snprintf(quoted, sizeof(quoted), "\"name\": \"%s\"", name);
    snprintf(task_line, sizeof(task_line), "@temper task %s", name);
    char *renamed = replace(json, "\"name\": \"vector_add\"", quoted);
    char *retasked = replace(kernel, "@temper task vector_add", task_line);
    char *retasked_cuda = replace(cuda, "@temper task vector_add", task_line);
    snprintf(dir, sizeof(dir), "%s/tasks/L1/%s", work, name);
    snprintf(path, sizeof(path), "%s/task.json", dir);
    write_text(path, renamed);
    snprintf(path, sizeof(path), "%s/naive.cl", dir);
    write_text(path, retasked);
    snprintf(path, sizeof(path), "%s/naive.cu", dir);
    write_text(path, retasked_cuda);
    snprintf(path, sizeof(path), "%s/reference.c", dir);
    write_text(path, reference);
    snprintf(cand, cand_size, "%s/%s.cl", work, name);
    write_text(cand, retasked);
    free(json);
    free(kernel);
    free(cuda);
    free(renamed);
    free(retasked);
    free(retasked_cuda);
}

/* What one evaluation gave. */
struct outcome {
    json_t *result; /* the result, or NULL */
    int err;        /* the error, if none */
    char msg[4096]; /* its message */
};

static void on_result(void *user, int index, json_t *result, int err, const char *error)
{
    struct outcome *o = user;
    (void)index;
    o->result = result;
    o->err = err;
    snprintf(o->msg, sizeof(o->msg), "%s", error ? error : "");
}

static void evaluate(struct temper_worker *w, const char *path, const char *tasks, struct outcome *o)
{
    memset(o, 0, sizeof(*o));
    struct temper_eval_request req = {.path = path, .tasks_dir = tasks, .seed = 3, .no_timing = 1};
    char msg[4096];
    int err = temper_eval_batch(w, &req, 1, NULL, 1, on_result, o, msg, sizeof(msg));
    if (err) {
        o->err = err;
        snprintf(o->msg, sizeof(o->msg), "%s", msg);
    }
}

static const char crash_ref[] =
    "void reference(double **out, const double **in, const long long *s);\n"
    "void reference(double **out, const double **in, const long long *s)\n"
    "{\n"
    "    if (s[0] == 7)\n"
    "        *(volatile int *)0 = 1;\n"
    "    for (long long i = 0; i < s[0]; i++)\n"
    "        out[0][i] = in[0][i] + in[1][i];\n"
    "}\n";

static const char loop_ref[] =
    "void reference(double **out, const double **in, const long long *s);\n"
    "void reference(double **out, const double **in, const long long *s)\n"
    "{\n"
    "    volatile long long spin = 0;\n"
    "    while (s[0] == 7)\n"
    "        spin++;\n"
    "    for (long long i = 0; i < s[0]; i++)\n"
    "        out[0][i] = in[0][i] + in[1][i];\n"
    "}\n";

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: task_errors_test SOURCE_DIR\n");
        return 2;
    }
    const char *src = argv[1];
    char work[] = "/tmp/temper-task-errors-XXXXXX";
    if (!mkdtemp(work))
        return 2;
    char home[4096], cache[4096], tasks[4096], suite[4096];
    snprintf(home, sizeof(home), "%s/home", work);
    snprintf(cache, sizeof(cache), "%s/cache", work);
    setenv("TEMPER_HOME", home, 1);
    setenv("TEMPER_CACHE", cache, 1);
    snprintf(tasks, sizeof(tasks), "%s/tasks", work);
    snprintf(suite, sizeof(suite), "%s/tasks", src);

    char crash_cand[4096], loop_cand[4096], good_cand[4096];
    make_task(src, work, "crashing_reference", crash_ref, crash_cand, sizeof(crash_cand));
    make_task(src, work, "looping_reference", loop_ref, loop_cand, sizeof(loop_cand));
    snprintf(good_cand, sizeof(good_cand), "%s/tasks/L1/vector_add/naive.cl", src);

    struct temper_limits limits;
    temper_limits_default(&limits);
    limits.reference_timeout_s = 2.0;
    struct temper_worker *w;
    char msg[4096];
    if (temper_worker_start("opencl", &limits, &w, msg, sizeof(msg))) {
        fprintf(stderr, "%s\n", msg);
        return 2;
    }
    json_t *info = NULL;
    if (temper_worker_device_info(w, &info, msg, sizeof(msg))) {
        printf("SKIP: no OpenCL device here: %s\n", msg);
        temper_worker_stop(w);
        return SKIP;
    }
    json_decref(info);

    static struct outcome o;
    evaluate(w, crash_cand, tasks, &o);
    CHECK(!o.result && o.err, "a crashing reference is an error, not a verdict (%s)",
          o.result ? json_string_value(json_object_get(o.result, "verdict")) : "no result");
    CHECK(strstr(o.msg, "task error") && strstr(o.msg, "crashing_reference") && strstr(o.msg, "N=7") &&
              strstr(o.msg, crash_words()),
          "its message names the task, the shape and the signal: %s", o.msg);
    json_decref(o.result);

    double t0 = temper_now_s();
    evaluate(w, loop_cand, tasks, &o);
    double took = temper_now_s() - t0;
    CHECK(!o.result && o.err, "a looping reference is an error, not a verdict (%s)",
          o.result ? json_string_value(json_object_get(o.result, "verdict")) : "no result");
    CHECK(strstr(o.msg, "task error") && strstr(o.msg, "looping_reference") && strstr(o.msg, "N=7") &&
              strstr(o.msg, "2 s limit"),
          "its message names the task, the shape and the limit: %s", o.msg);
    CHECK(took < 60, "the loop was stopped by the reference limit (%.1f s)", took);
    json_decref(o.result);

    /* The worker that was killed is replaced: a good candidate of a good task still passes. */
    evaluate(w, good_cand, suite, &o);
    const char *verdict = o.result ? json_string_value(json_object_get(o.result, "verdict")) : NULL;
    CHECK(verdict && !strcmp(verdict, "correct"), "the next evaluation is correct (%s %s)",
          verdict ? verdict : "error", o.msg);
    json_decref(o.result);

    temper_worker_stop(w);
    if (!failures) {
        char cmd[4200];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", work);
        if (system(cmd))
            printf("note: could not remove %s\n", work);
    }
    printf("%s\n", failures ? "FAILED" : "all passed");
    return failures ? 1 : 0;
}
