/* worker_api_test.c: the worker process through the library's interface, on a real device
 * (PoCL here): the frame codec keeps every byte of a request, refuses malformed frames and
 * cleans replies; the non-blocking interface (send, a descriptor to poll, a deadline, service)
 * gets a reply; temper_worker_cancel, from another thread, ends a hung job with a "cancelled"
 * reply long before any limit and the next job gets a fresh worker; nothing changes the
 * process's SIGPIPE disposition. A hung kernel that keeps zeroing the page the worker shares with
 * its parent (where the watchdog's clock once was: issue 28) is still judged `timeout` at the launch
 * limit, not at the job's; and a worker in which a candidate's kernel ran (PoCL runs kernels in the
 * worker) is replaced after it.
 * usage: worker_api_test BACKEND TASKS_DIR HANG_CANDIDATE GOOD_CANDIDATE (exit 77: no device) */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <string.h>
#include <unistd.h>

#include "eval/eval_internal.h"
#include "util/util.h"
#include "worker/pipeline_impl.h"
#include "eval/worker_impl.h"

#define SKIP 77

static int failures;

#define CHECK(cond, ...)                                                                                             \
    do {                                                                                                             \
        if (cond) {                                                                                                  \
            printf("ok   ");                                                                                         \
        } else {                                                                                                     \
            printf("FAIL ");                                                                                         \
            failures++;                                                                                              \
        }                                                                                                            \
        printf(__VA_ARGS__);                                                                                         \
        printf("\n");                                                                                                \
    } while (0)

/* ---- frames ---- */

static void test_frames(void)
{
    static const char bytes[] = "// caf\xe9\n__kernel void k() {}\0tail after a NUL";
    size_t n = sizeof(bytes) - 1;
    json_t *msg = json_pack("{s:s}", "op", "eval");
    json_object_set_new(msg, "source", json_stringn_nocheck(bytes, n));
    json_object_set_new(msg, "path", json_string("plain.cl"));
    char *frame = NULL;
    size_t len = 0;
    CHECK(!worker_encode(msg, &frame, &len), "a request with a Latin-1 byte and a NUL encodes");
    CHECK(frame && len > 4 && memchr(frame + 4, 0xe9, len - 4) == NULL, "the frame itself is plain JSON");
    json_t *req = NULL;
    CHECK(!worker_decode_request(frame, len, &req), "the request decodes");
    json_t *src = json_object_get(req, "source");
    CHECK(json_string_length(src) == n && !memcmp(json_string_value(src), bytes, n),
          "the source arrives byte for byte (%zu bytes)", n);
    CHECK(!json_object_get(req, "source_b64"), "no _b64 key is left");
    CHECK(!strcmp(json_string_value(json_object_get(req, "path")), "plain.cl"), "plain strings are untouched");
    json_decref(req);

    json_t *reply = NULL;
    CHECK(!worker_decode_reply(frame, len, &reply), "the same frame decodes as a reply");
    const char *clean = json_string_value(json_object_get(reply, "source"));
    CHECK(clean && strstr(clean, "caf\xef\xbf\xbd") && worker_utf8_valid(clean, strlen(clean)),
          "a reply's bytes that are not UTF-8 become U+FFFD");
    json_decref(reply);

    /* Malformed frames: each refused, none crashes. */
    req = (json_t *)1;
    CHECK(worker_decode_request(frame, len - 1, &req) && !req, "a truncated frame is refused");
    char *longer = malloc(len + 1);
    memcpy(longer, frame, len);
    longer[len] = '{';
    CHECK(worker_decode_request(longer, len + 1, &req) && !req, "a frame with bytes after it is refused");
    free(longer);
    static const struct {
        const char *json; /* the frame's JSON */
        const char *why;  /* what is wrong with it */
    } bad[] = {
        {"[1,2]", "not an object"},
        {"{\"source_b64\":\"abc\"}", "base64 not a multiple of 4"},
        {"{\"source_b64\":\"ab!d\"}", "a byte outside base64"},
        {"{\"source_b64\":7}", "base64 that is not a string"},
        {"{\"source\":\"x\",\"source_b64\":\"eA==\"}", "a key both plain and in base64"},
        {"{\"a\":1,\"a\":2}", "a key twice"},
        {"{\"a\":", "JSON cut short"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t m = strlen(bad[i].json);
        char buf[256];
        for (int k = 0; k < 4; k++)
            buf[k] = (char)(m >> (8 * k));
        memcpy(buf + 4, bad[i].json, m);
        CHECK(worker_decode_request(buf, m + 4, &req) && !req, "refused: %s", bad[i].why);
    }
    free(frame);
    json_decref(msg);
}

/* ---- compile mode ---- */

/* Runs temper-worker compile on the frame (or raw bytes) given; returns its exit status and
 * fills log with the log of the frame it wrote (no binary may come with a failure). */
static int run_compile(const char *bytes, size_t n, char *log, size_t log_size)
{
    char exe[4096], msg[512], scratch[] = "/tmp/temper-compile-test-XXXXXX";
    if (temper_worker_path(exe, sizeof(exe), msg, sizeof(msg))) {
        snprintf(log, log_size, "%s", msg);
        return -1;
    }
    if (!mkdtemp(scratch))
        return -1;
    int req_fd = memfd_create("test-request", 0), out_fd = memfd_create("test-output", 0);
    if (write(req_fd, bytes, n) != (ssize_t)n || lseek(req_fd, 0, SEEK_SET))
        return -1;
    char *argv[] = {exe, "compile", scratch, NULL};
    int fds[2] = {req_fd, out_fd};
    pid_t pid;
    if (worker_spawn_exe(exe, argv, fds, 2, scratch, &pid, msg, sizeof(msg)))
        return -1;
    int status = 0;
    waitpid(pid, &status, 0);
    static char out[1 << 16];
    ssize_t got = pread(out_fd, out, sizeof(out), 0);
    json_t *frame = NULL;
    log[0] = 0;
    if (got > 0 && !worker_decode_request(out, (size_t)got, &frame)) {
        snprintf(log, log_size, "%s", json_string_value(json_object_get(frame, "log")));
        if (json_object_get(frame, "binary"))
            snprintf(log, log_size, "a failed compile handed back a binary");
    }
    json_decref(frame);
    close(req_fd);
    close(out_fd);
    rmdir(scratch);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_compile_mode(void)
{
    /* PoCL has no offline compiler (NVRTC is CUDA's, which cannot run here): the compile process
     * must say so and exit 2, "could not try", so the worker compiles instead. */
    json_t *req = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "backend", "opencl", "name", "x", "arch", "", "compiler",
                            "", "options", "", "mem_limit_bytes", (json_int_t)(1 << 30));
    json_object_set_new(req, "source", json_stringn_nocheck("// caf\xe9\n", 9));
    char *frame;
    size_t len;
    char log[4096];
    CHECK(!worker_encode(req, &frame, &len), "a compile request encodes");
    int status = run_compile(frame, len, log, sizeof(log));
    CHECK(status == 2 && strstr(log, "no offline compiler for backend opencl"),
          "compile mode without an offline compiler: exit %d, log '%s'", status, log);
    free(frame);
    json_decref(req);
    status = run_compile("\3\0\0\0{}x", 8, log, sizeof(log));
    CHECK(status == 2 && strstr(log, "malformed"), "a malformed compile request: exit %d, log '%s'", status, log);
}

/* ---- a device ---- */

struct canceller {
    struct temper_worker *w; /* the worker to cancel */
    double after_s;          /* when, after starting */
    int cancelled;           /* what temper_worker_cancel returned */
};

static void *cancel_later(void *arg)
{
    struct canceller *c = arg;
    usleep((useconds_t)(c->after_s * 1e6));
    c->cancelled = temper_worker_cancel(c->w);
    return NULL;
}

/* ---- the watchdog's clock against a kernel that writes the shared page ---- */

/* The address of the page the worker shares with its parent in process pid (the memfd
 * "temper-worker-page"), from /proc/PID/maps; 0 when it cannot be read. */
static unsigned long long page_address(long pid)
{
    char path[64], line[512];
    snprintf(path, sizeof(path), "/proc/%ld/maps", pid);
    FILE *f = fopen(path, "r");
    unsigned long long at = 0;
    while (f && !at && fgets(line, sizeof(line), f))
        if (strstr(line, "temper-worker-page"))
            at = strtoull(line, NULL, 16);
    if (f)
        fclose(f);
    return at;
}

/* The pid of this process's child temper-worker, 0 if none. */
static long worker_child(void)
{
    char path[96], list[4096] = "";
    snprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", (long)getpid(), (long)getpid());
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(list, sizeof(list), f))
            list[0] = 0;
        fclose(f);
    }
    for (char *p = list, *end; *p; p = end) {
        long pid = strtol(p, &end, 10);
        if (end == p)
            break;
        char comm[64] = "";
        snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
        FILE *c = fopen(path, "r");
        if (c) {
            if (!fgets(comm, sizeof(comm), c))
                comm[0] = 0;
            fclose(c);
        }
        if (!strncmp(comm, "temper-worker", 13))
            return pid;
    }
    return 0;
}

/* Zeroes the shared page from this side (the same memory the worker maps) until told to stop:
 * what a kernel writing it does, for when the worker's map cannot be read. */
struct zeroer {
    volatile unsigned char *page; /* this process's map of the page */
    volatile int stop;            /* set to end */
};

static void *zero_page(void *arg)
{
    struct zeroer *z = arg;
    while (!z->stop) {
        for (int i = 0; i < 64; i++)
            z->page[i] = 0;
        usleep(1000);
    }
    return NULL;
}

/* An OpenCL kernel that hangs while zeroing the first 64 bytes of the page at address (in the
 * worker), where busy_since_ns, the grace and the phase lay before issue 28. */
static const char page_zeroer[] =
    "// @temper task vector_add\n"
    "// @temper launch add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)\n"
    "#define PAGE 0x%llxUL\n"
    "__kernel void add(__global float *c, __global const float *a, __global const float *b, int N)\n"
    "{\n"
    "    volatile __global ulong *page = (volatile __global ulong *)PAGE;\n"
    "    int i = get_global_id(0);\n"
    "    while (a[0] == a[0])\n"
    "        for (int k = 0; k < 8; k++)\n"
    "            page[k] = 0;\n"
    "    if (i < N)\n"
    "        c[i] = a[i] + b[i];\n"
    "}\n";

/* What one evaluation of a batch got. */
struct got {
    json_t *result; /* the result, owned */
    int err;        /* or the error */
};

static void on_result(void *user, int index, json_t *result, int err, const char *error)
{
    (void)index;
    (void)error;
    struct got *g = user;
    g->result = result;
    g->err = err;
}

/* ---- the calling program's own judgement (worker_truth.c) and the sealed reference ---- */

/* The memfds of a worker's judgement, as the parent makes them, with want (3 doubles, sealed when
 * seal) and got (3 floats) written where the frames say: want at 0, got at 16 (after 4 bytes of
 * something else). */
struct judged {
    int truth_fd, outputs_fd;
};

static struct judged judged_files(const double *want, const float *got, int seal)
{
    struct judged j;
    worker_truth_fds(&j.truth_fd, &j.outputs_fd);
    if (pwrite(j.truth_fd, want, 3 * sizeof(double), 0) != 3 * sizeof(double) ||
        pwrite(j.outputs_fd, "xxxx", 4, 12) != 4 || pwrite(j.outputs_fd, got, 3 * sizeof(float), 16) != 3 * sizeof(float))
        CHECK(0, "the judgement's memfds can be written");
    if (seal)
        fcntl(j.truth_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
    return j;
}

static void judged_close(struct judged *j)
{
    close(j->truth_fd);
    close(j->outputs_fd);
}

/* A check of the truth frame at shape N=3, public seed: output c (f32), 3 elements at 0. */
static json_t *truth_frame(void)
{
    return json_pack("{s:{s:f, s:f, s:[{s:s, s:s, s:[{s:s, s:s, s:i, s:i}]}]}}", "truth", "atol", 1e-6, "rtol", 1e-5,
                     "checks", "shape", "N=3", "seed", "public", "outputs", "name", "c", "dtype", "f32", "elements",
                     3, "at", 0);
}

/* A reply whose check at N=3, public seed, passed, with its output c at offset at (-1: none). */
static json_t *reply_of(int at, const char *verdict)
{
    json_t *check = json_pack("{s:s, s:s, s:b}", "shape", "N=3", "seed", "public", "passed", 1);
    if (at >= 0)
        json_object_set_new(check, "outputs_at", json_pack("{s:i}", "c", at));
    return json_pack("{s:s, s:s, s:[o], s:[{}]}", "verdict", verdict, "message", "passed 1 check shape",
                     "checks", check, "timings");
}

static const char *verdict_of(json_t *reply)
{
    return json_string_value(json_object_get(reply, "verdict"));
}

/* The truth of frame as the parent takes it from the worker's frame. */
static json_t *take(json_t *frame, int tainted, int truth_fd, int *taken)
{
    char *data = NULL;
    size_t len = 0;
    json_t *held = NULL;
    worker_encode(frame, &data, &len);
    *taken = worker_truth_take(data, len, tainted, truth_fd, &held);
    free(data);
    return held;
}

static void test_truth_judge(void)
{
    const double want[3] = {1.0, 2.0, 3.0};
    const float right[3] = {1.0f, 2.0f, 3.0f}, wrong[3] = {1.0f, 2.5f, 3.0f};
    json_t *frame = truth_frame();
    int taken = 0;

    struct judged j = judged_files(want, right, 1);
    json_t *truth = take(frame, 0, j.truth_fd, &taken);
    CHECK(taken && truth, "a truth frame before a candidate ran, its memfd sealed, is kept");
    json_t *r = reply_of(16, "correct");
    worker_truth_judge(truth, 1, 1, j.truth_fd, j.outputs_fd, r);
    json_t *c0 = json_array_get(json_object_get(r, "checks"), 0);
    CHECK(!strcmp(verdict_of(r), "correct") && !json_object_get(c0, "outputs_at"),
          "judged outside the worker: right outputs keep a correct verdict, and where they lay leaves the reply");
    json_decref(r);
    r = reply_of(12, "correct");
    worker_truth_judge(truth, 1, 1, j.truth_fd, j.outputs_fd, r);
    CHECK(!strcmp(verdict_of(r), "incorrect"), "outputs read from another offset than the check's are not right");
    json_decref(r);
    r = reply_of(4096, "correct");
    worker_truth_judge(truth, 1, 1, j.truth_fd, j.outputs_fd, r);
    CHECK(!strcmp(verdict_of(r), "incorrect"), "outputs past the end of what was handed over are missing: %s",
          json_string_value(json_object_get(r, "message")));
    json_decref(r);
    judged_close(&j);
    json_decref(truth);

    j = judged_files(want, wrong, 1);
    truth = take(frame, 0, j.truth_fd, &taken);
    r = reply_of(16, "correct");
    worker_truth_judge(truth, 1, 1, j.truth_fd, j.outputs_fd, r);
    const char *m = json_string_value(json_object_get(r, "message"));
    CHECK(!strcmp(verdict_of(r), "incorrect") && m && strstr(m, "temper's own comparison") && strstr(m, "c[1]") &&
              json_array_size(json_object_get(r, "timings")) == 0,
          "a correct verdict over a wrong output (a patched comparison) becomes incorrect, naming it: %s", m);
    json_decref(r);
    r = reply_of(-1, "correct");
    worker_truth_judge(truth, 1, 1, j.truth_fd, j.outputs_fd, r);
    CHECK(!strcmp(verdict_of(r), "incorrect"), "a correct verdict without the outputs it was judged on is not correct");
    json_decref(r);
    r = json_pack("{s:s, s:[], s:[]}", "verdict", "correct", "checks", "timings");
    worker_truth_judge(truth, 1, 1, j.truth_fd, j.outputs_fd, r);
    CHECK(!strcmp(verdict_of(r), "incorrect"), "a correct verdict that lacks a check of the truth is not correct");
    json_decref(r);
    r = reply_of(16, "incorrect");
    worker_truth_judge(truth, 1, 1, j.truth_fd, j.outputs_fd, r);
    CHECK(!strcmp(verdict_of(r), "incorrect") &&
              !strcmp(json_string_value(json_object_get(r, "message")), "passed 1 check shape"),
          "a verdict that is not correct is left as the worker gave it");
    json_decref(r);
    r = reply_of(16, "correct");
    worker_truth_judge(NULL, 1, 1, j.truth_fd, j.outputs_fd, r);
    CHECK(!strcmp(verdict_of(r), "runtime_error"),
          "a candidate ran but no truth came before it: the verdict cannot stand (%s)", verdict_of(r));
    json_decref(r);
    r = reply_of(16, "correct");
    worker_truth_judge(NULL, 1, 0, j.truth_fd, j.outputs_fd, r);
    CHECK(!strcmp(verdict_of(r), "correct"), "no candidate's kernel ran in the worker (a GPU): its verdict is its own");
    json_decref(r);
    json_t *late = take(frame, 1, j.truth_fd, &taken);
    CHECK(taken && !late, "a truth frame after a candidate ran is ignored");
    judged_close(&j);
    json_decref(truth);

    j = judged_files(want, right, 0);
    json_t *unsealed = take(frame, 0, j.truth_fd, &taken);
    CHECK(taken && !unsealed, "a truth whose memfd is not sealed (the worker could still change it) is not taken");
    judged_close(&j);
    json_decref(frame);

    json_t *plain = json_pack("{s:s}", "verdict", "correct");
    json_t *none = take(plain, 0, -1, &taken);
    CHECK(!taken && !none, "a reply is not a truth frame");
    json_decref(plain);
}

/* Reads want[0] in a child: 0 when it read it, else the signal that ended the child. */
static int child_reads(const double *want)
{
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL); /* not a sanitizer's handler, which would abort instead */
        volatile double v = want[0];
        (void)v;
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

static void test_sealed_reference(void)
{
    struct temper_task *task = calloc(1, sizeof(*task));
    struct arena *a = calloc(1, sizeof(*a));
    task->nargs = 1;
    task->args[0].role = TEMPER_ROLE_OUTPUT;
    a->task = task;
    a->elems[0] = 5000;
    a->want[0] = want_alloc(a->elems[0]);
    CHECK(a->want[0] != NULL, "the reference's outputs get pages of their own");
    if (a->want[0]) {
        a->want[0][4999] = 7.0;
        want_open(a, 0);
        int sig = child_reads(a->want[0]);
        CHECK(sig == SIGSEGV, "sealed, the reference's outputs cannot be read (a kernel copying them faults): signal %d",
              sig);
        want_open(a, 1);
        CHECK(child_reads(a->want[0]) == 0 && a->want[0][4999] == 7.0, "opened, temper's own code reads them");
        want_free(a->want[0], a->elems[0]);
    }
    free(a);
    free(task);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: worker_api_test BACKEND TASKS_DIR HANG_CANDIDATE GOOD_CANDIDATE\n");
        return 2;
    }
    test_frames();
    test_compile_mode();
    test_truth_judge();
    test_sealed_reference();

    struct temper_limits limits;
    temper_limits_default(&limits);
    limits.launch_timeout_s = 600; /* far past the test: only a cancel can end the hang */
    struct temper_worker *w;
    char msg[4096];
    if (temper_worker_start(argv[1], &limits, &w, msg, sizeof(msg))) {
        fprintf(stderr, "%s\n", msg);
        return 2;
    }
    CHECK(temper_worker_timeout_ms(w) == -1, "no deadline while idle");

    /* The non-blocking interface, as an event loop uses it. */
    json_t *req = json_pack("{s:s}", "op", "info");
    int err = temper_worker_send(w, req, msg, sizeof(msg));
    json_decref(req);
    CHECK(!err, "send starts the worker and the job");
    CHECK(temper_worker_fd(w) >= 0 && temper_worker_timeout_ms(w) >= 0, "a descriptor and a deadline while busy");
    json_t *info = NULL;
    int wakeups = 0;
    while (!err && !info) {
        struct pollfd pfd = {temper_worker_fd(w), temper_worker_events(w), 0};
        poll(&pfd, 1, temper_worker_timeout_ms(w));
        wakeups++;
        err = temper_worker_service(w, &info, msg, sizeof(msg));
    }
    if (!info || !json_object_get(info, "id")) {
        printf("SKIP: no %s device here: %s\n", argv[1], info ? json_string_value(json_object_get(info, "error")) : msg);
        json_decref(info);
        temper_worker_stop(w);
        return failures ? 1 : SKIP;
    }
    CHECK(1, "the reply came through poll and service (%d wake-ups): %s", wakeups,
          json_string_value(json_object_get(info, "name")));
    CHECK(json_is_object(json_object_get(info, "sandbox")), "the device description says what confines the worker");
    json_decref(info);

    /* Cancel a hung job from another thread. */
    struct temper_eval_request r;
    memset(&r, 0, sizeof(r));
    r.path = argv[3];
    r.tasks_dir = argv[2];
    r.no_timing = 1;
    r.seed = 1;
    struct canceller c = {w, 2.0, 0};
    pthread_t t;
    pthread_create(&t, NULL, cancel_later, &c);
    struct got g = {NULL, 0};
    double start = temper_now_s();
    err = temper_eval_batch(w, &r, 1, NULL, 1, on_result, &g, msg, sizeof(msg));
    double took = temper_now_s() - start;
    pthread_join(t, NULL);
    CHECK(!err && c.cancelled == 1, "the cancel found a job in flight");
    CHECK(g.result && json_is_true(json_object_get(g.result, "cancelled")) &&
              json_is_null(json_object_get(g.result, "verdict")),
          "the hung job's result says cancelled and has no verdict");
    CHECK(took < 120, "it ended %.1f s after it began, long before the 600 s limit", took);
    json_decref(g.result);
    CHECK(temper_worker_cancel(w) == 0, "a cancel with nothing in flight does nothing");

    /* The next job gets a fresh worker. */
    r.path = argv[4];
    g.result = NULL;
    err = temper_eval_batch(w, &r, 1, NULL, 1, on_result, &g, msg, sizeof(msg));
    const char *verdict = g.result ? json_string_value(json_object_get(g.result, "verdict")) : NULL;
    CHECK(!err && verdict && !strcmp(verdict, "correct"), "the next candidate is judged by a fresh worker: %s",
          verdict ? verdict : msg);
    /* PoCL runs the kernel in the worker: a correct candidate too could have written anywhere in it. */
    long ran_in = worker_child();
    CHECK(g.result && json_is_true(json_object_get(g.result, "worker_restarted")) && !ran_in,
          "the worker in which it ran is replaced after it (worker_restarted, no worker left: %ld)", ran_in);
    json_decref(g.result);
    temper_worker_stop(w);

    /* A hung kernel that zeroes the shared page all along: timed out at the launch limit (5 s, plus
     * the 30 s grace of a first launch on OpenCL), long before the job limit (120 s here). */
    limits.launch_timeout_s = 5;
    limits.job_timeout_s = 120;
    if (temper_worker_start(argv[1], &limits, &w, msg, sizeof(msg))) {
        fprintf(stderr, "%s\n", msg);
        return 2;
    }
    req = json_pack("{s:s}", "op", "info");
    info = NULL;
    err = temper_worker_call(w, req, &info, msg, sizeof(msg));
    json_decref(req);
    json_decref(info);
    long child = worker_child();
    unsigned long long at = child ? page_address(child) : 0;
    char source[2048];
    struct zeroer z = {NULL, 0};
    pthread_t zt;
    memset(&r, 0, sizeof(r));
    r.tasks_dir = argv[2];
    r.no_timing = 1;
    r.seed = 1;
    if (at) {
        snprintf(source, sizeof(source), page_zeroer, at);
        r.path = "page_zeroer.cl";
        r.source = source;
        printf("     the kernel zeroes the page at 0x%llx in worker %ld\n", at, child);
    } else {
        /* The worker's map cannot be read here: zero the page from this side instead. */
        unsigned long long mine = page_address((long)getpid());
        CHECK(mine != 0, "the page is mapped here too");
        z.page = (volatile unsigned char *)(uintptr_t)mine;
        if (z.page)
            pthread_create(&zt, NULL, zero_page, &z);
        r.path = argv[3];
        printf("     worker %ld's map is unreadable: the page is zeroed from the parent's side\n", child);
    }
    g.result = NULL;
    start = temper_now_s();
    err = temper_eval_batch(w, &r, 1, NULL, 1, on_result, &g, msg, sizeof(msg));
    took = temper_now_s() - start;
    if (z.page) {
        z.stop = 1;
        pthread_join(zt, NULL);
    }
    verdict = g.result ? json_string_value(json_object_get(g.result, "verdict")) : NULL;
    const char *said = g.result ? json_string_value(json_object_get(g.result, "message")) : msg;
    CHECK(!err && verdict && !strcmp(verdict, "timeout") && said && strstr(said, "a launch ran longer than"),
          "a hung kernel zeroing the shared page is stopped by the launch limit: %s: %s", verdict ? verdict : "-",
          said ? said : "-");
    CHECK(took < 60, "it ended %.1f s after it began, long before the %.0f s job limit", took, limits.job_timeout_s);
    json_decref(g.result);
    temper_worker_stop(w);

    struct sigaction sa;
    sigaction(SIGPIPE, NULL, &sa);
    CHECK(sa.sa_handler == SIG_DFL, "SIGPIPE is left as it was (default)");

    printf("%s\n", failures ? "worker_api_test FAILED" : "all worker api tests passed");
    return failures ? 1 : 0;
}
