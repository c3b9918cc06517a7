/* worker.c: the worker process. The parent forks it before any device is opened, sends it
 * requests over a pipe, and watches it through a shared page: a launch that runs past its limit,
 * a build that runs too long, or a worker that grows past its memory limit is killed, and the
 * request gets a verdict saying what happened; the next request starts a fresh worker. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "temper/eval.h"
#include "worker_impl.h"

#define MESSAGE_MAX (256u << 20)

/* A worker process as the parent sees it. */
struct temper_worker {
    pid_t pid;                     /* the process, 0 when none runs */
    int to_fd;                     /* requests go here */
    int from_fd;                   /* replies come from here */
    struct worker_shared *shared;  /* the watched page */
    char device_spec[64];          /* what the worker opens */
    struct temper_limits limits;   /* what is enforced */
};

void temper_limits_default(struct temper_limits *l)
{
    l->launch_timeout_s = 5.0;
    l->compile_timeout_s = 120.0;
    l->job_timeout_s = 1800.0;
    l->reference_timeout_s = 120.0;
    l->mem_limit_bytes = 0; /* 0: three quarters of the machine's memory */
}

void worker_doing(struct worker_shared *s, int phase, const char *fmt, ...)
{
    if (!s)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->doing, sizeof(s->doing), fmt, ap);
    va_end(ap);
    s->phase_since_ns = temper_now_ns();
    s->phase = phase;
}

static int write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, void *data, size_t n)
{
    char *p = data;
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

int worker_send(int fd, json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    if (!text)
        return -1;
    uint32_t len = (uint32_t)strlen(text);
    int rc = write_all(fd, &len, 4) || write_all(fd, text, len) ? -1 : 0;
    free(text);
    return rc;
}

json_t *worker_recv(int fd)
{
    uint32_t len;
    if (read_all(fd, &len, 4) || len > MESSAGE_MAX)
        return NULL;
    char *text = malloc((size_t)len + 1);
    if (!text)
        return NULL;
    if (read_all(fd, text, len)) {
        free(text);
        return NULL;
    }
    text[len] = 0;
    json_t *msg = json_loads(text, 0, NULL);
    free(text);
    return msg;
}

void temper_worker_main(int in_fd, int out_fd, const char *device_spec, void *shared)
{
    struct worker_state *ws = worker_state_new(device_spec, shared);
    if (!ws)
        _exit(1);
    for (;;) {
        json_t *req = worker_recv(in_fd);
        if (!req)
            _exit(0);
        int fatal = 0;
        json_t *reply = worker_handle(ws, req, &fatal);
        json_decref(req);
        if (fatal)
            json_object_set_new(reply, "worker_restarted", json_true());
        int rc = worker_send(out_fd, reply);
        json_decref(reply);
        /* After a device fault the context may be unusable (CUDA errors are sticky): start over. */
        if (rc || fatal)
            _exit(0);
    }
}

static void worker_kill(struct temper_worker *w)
{
    if (!w->pid)
        return;
    kill(w->pid, SIGKILL);
    while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    close(w->to_fd);
    close(w->from_fd);
    w->pid = 0;
}

static int worker_spawn(struct temper_worker *w, char *msg, size_t n)
{
    int to[2], from[2];
    if (pipe2(to, O_CLOEXEC))
        return temper_fail(msg, n, TEMPER_EIO, "pipe: %s", strerror(errno));
    if (pipe2(from, O_CLOEXEC)) {
        close(to[0]);
        close(to[1]);
        return temper_fail(msg, n, TEMPER_EIO, "pipe: %s", strerror(errno));
    }
    memset(w->shared, 0, sizeof(*w->shared));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return temper_fail(msg, n, TEMPER_EIO, "fork: %s", strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        /* What runtimes print (PoCL's "1 error generated.") is not for the user: the build log
         * and the verdict carry it. TEMPER_WORKER_STDERR=1 keeps it, for debugging. */
        const char *keep = getenv("TEMPER_WORKER_STDERR");
        if (!keep || strcmp(keep, "1")) {
            int devnull = open("/dev/null", O_WRONLY);
            if (devnull >= 0) {
                dup2(devnull, 2);
                close(devnull);
            }
        }
        close(to[1]);
        close(from[0]);
        signal(SIGPIPE, SIG_IGN);
        temper_worker_main(to[0], from[1], w->device_spec, w->shared);
        _exit(0);
    }
    close(to[0]);
    close(from[1]);
    w->pid = pid;
    w->to_fd = to[1];
    w->from_fd = from[0];
    return 0;
}

int temper_worker_start(const char *device_spec, const struct temper_limits *limits, struct temper_worker **out,
                        char *msg, size_t msg_size)
{
    struct temper_worker *w = calloc(1, sizeof(*w));
    if (!w)
        return TEMPER_ENOMEM;
    w->shared = mmap(NULL, sizeof(struct worker_shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (w->shared == MAP_FAILED) {
        free(w);
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "mmap: %s", strerror(errno));
    }
    snprintf(w->device_spec, sizeof(w->device_spec), "%s", device_spec ? device_spec : "");
    if (limits)
        w->limits = *limits;
    else
        temper_limits_default(&w->limits);
    if (!w->limits.mem_limit_bytes) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        w->limits.mem_limit_bytes = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 4 * 3 : (16ull << 30);
    }
    signal(SIGPIPE, SIG_IGN);
    *out = w;
    return 0;
}

void temper_worker_stop(struct temper_worker *w)
{
    if (!w)
        return;
    if (w->pid) {
        close(w->to_fd);
        /* Give it a moment to exit cleanly, then make sure. */
        for (int i = 0; i < 50; i++) {
            if (waitpid(w->pid, NULL, WNOHANG) == w->pid) {
                close(w->from_fd);
                w->pid = 0;
                break;
            }
            usleep(10000);
        }
        if (w->pid) {
            kill(w->pid, SIGKILL);
            waitpid(w->pid, NULL, 0);
            close(w->from_fd);
            w->pid = 0;
        }
    }
    munmap(w->shared, sizeof(*w->shared));
    free(w);
}

static uint64_t resident_bytes(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    unsigned long long size = 0, rss = 0;
    int ok = fscanf(f, "%llu %llu", &size, &rss) == 2;
    fclose(f);
    return ok ? rss * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

static json_t *failed_reply(enum temper_verdict v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static json_t *failed_reply(enum temper_verdict v, const char *fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    return json_pack("{s:s, s:s, s:b}", "verdict", temper_verdict_name(v), "message", text, "worker_restarted", 1);
}

/* The reply for a failure of the task itself (its reference crashed or hung): an error with its
 * code, never a verdict, so nothing is recorded as the candidate's. */
static json_t *task_error_reply(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static json_t *task_error_reply(int code, const char *fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    return json_pack("{s:s, s:i}", "error", text, "code", code);
}

int temper_worker_call(struct temper_worker *w, json_t *request, json_t **reply, char *msg, size_t msg_size)
{
    *reply = NULL;
    if (!w->pid) {
        int err = worker_spawn(w, msg, msg_size);
        if (err)
            return err;
    }
    if (worker_send(w->to_fd, request)) {
        worker_kill(w);
        int err = worker_spawn(w, msg, msg_size);
        if (err)
            return err;
        if (worker_send(w->to_fd, request))
            return temper_fail(msg, msg_size, TEMPER_EIO, "cannot send a request to the worker");
    }
    double start = temper_now_s();
    uint64_t mem_checked = 0;
    for (;;) {
        struct pollfd pfd = {w->from_fd, POLLIN, 0};
        int r = poll(&pfd, 1, 20);
        if (r > 0) {
            json_t *m = worker_recv(w->from_fd);
            if (m) {
                *reply = m;
                if (json_is_true(json_object_get(m, "worker_restarted"))) {
                    while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                    close(w->to_fd);
                    close(w->from_fd);
                    w->pid = 0;
                }
                return 0;
            }
            /* The pipe closed: the worker died. */
            char doing[sizeof(w->shared->doing)];
            snprintf(doing, sizeof(doing), "%s", w->shared->doing);
            int phase = w->shared->phase, status = 0;
            while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
                ;
            close(w->to_fd);
            close(w->from_fd);
            w->pid = 0;
            char how[64]; /* the signal, or the exit status (a sanitizer reports a crash and exits 1) */
            if (WIFSIGNALED(status))
                snprintf(how, sizeof(how), "%s", strsignal(WTERMSIG(status)));
            else
                snprintf(how, sizeof(how), "exited with status %d", WEXITSTATUS(status));
            if (phase == WORKER_REFERENCE)
                *reply = task_error_reply(TEMPER_ECRASH, "task error: the reference crashed (%s) while %s", how,
                                          doing);
            else if (phase == WORKER_BUILDING)
                *reply = failed_reply(TEMPER_VERDICT_COMPILE_ERROR, "the compiler crashed (%s) while %s", how, doing);
            else
                *reply = failed_reply(TEMPER_VERDICT_RUNTIME_ERROR, "the device worker crashed (%s) while %s", how,
                                      doing);
            return 0;
        }
        uint64_t now = temper_now_ns();
        uint64_t busy = w->shared->busy_since_ns, since = w->shared->phase_since_ns;
        int phase = w->shared->phase;
        char doing[sizeof(w->shared->doing)];
        snprintf(doing, sizeof(doing), "%s", w->shared->doing);
        double limit_s = w->limits.launch_timeout_s + w->shared->busy_grace_s;
        if (busy && now > busy && (double)(now - busy) * 1e-9 > limit_s) {
            worker_kill(w);
            *reply = failed_reply(TEMPER_VERDICT_TIMEOUT, "a launch ran longer than the %.3g s limit while %s",
                                  limit_s, doing);
            return 0;
        }
        if (phase == WORKER_BUILDING && now > since && (double)(now - since) * 1e-9 > w->limits.compile_timeout_s) {
            worker_kill(w);
            *reply = failed_reply(TEMPER_VERDICT_COMPILE_ERROR, "compilation ran longer than the %.3g s limit while %s",
                                  w->limits.compile_timeout_s, doing);
            return 0;
        }
        if (phase == WORKER_REFERENCE && now > since &&
            (double)(now - since) * 1e-9 > w->limits.reference_timeout_s) {
            worker_kill(w);
            *reply = task_error_reply(TEMPER_ETIMEOUT, "task error: the reference ran past the %.3g s limit while %s",
                                      w->limits.reference_timeout_s, doing);
            return 0;
        }
        if (temper_now_s() - start > w->limits.job_timeout_s) {
            worker_kill(w);
            *reply = failed_reply(TEMPER_VERDICT_TIMEOUT, "the evaluation ran longer than %.3g s while %s",
                                  w->limits.job_timeout_s, doing);
            return 0;
        }
        if (now - mem_checked > 100000000ull) {
            mem_checked = now;
            uint64_t rss = resident_bytes(w->pid);
            if (rss > w->limits.mem_limit_bytes) {
                worker_kill(w);
                *reply = failed_reply(TEMPER_VERDICT_RUNTIME_ERROR,
                                      "the worker used %.1f GiB of host memory, over the %.1f GiB limit, while %s",
                                      (double)rss / (1 << 30), (double)w->limits.mem_limit_bytes / (1 << 30), doing);
                return 0;
            }
        }
    }
}
