/* worker.c: the parent's side of a worker process. The worker is its own executable
 * (temper-worker), started with posix_spawn; the parent sends it requests over a socket and
 * watches it through the beats it sends there (worker_impl.h), each timed with the parent's own
 * clock: a launch that runs past its limit, a build that runs too long, or a worker that grows past
 * its memory limit is killed, and the request gets a verdict saying what happened; the next
 * request starts a fresh worker. A worker in which a candidate's kernel ran in-process (a CPU
 * device) is replaced after that job, whatever it replied: the kernel could have written anywhere
 * in it. A shared page (a memfd) holds only the sentence saying what the worker is doing.
 * Everything here is non-blocking underneath (send, service, a descriptor and a deadline for an
 * event loop); temper_worker_call is the blocking form built on them. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "temper/eval.h"
#include "eval/result_set.h"
#include "temper/result.h"
#include "util/util.h"
#include "worker_impl.h"

#define MEM_CHECK_NS 100000000ull /* resident memory is sampled this often while a job runs */
#define READ_DIRS_MAX 24           /* folders a worker may read besides the system's */

/* A worker process as the parent sees it. The lock guards pid, busy and cancelled, which
 * temper_worker_cancel reads and writes from another thread; everything else belongs to the
 * thread that sends and services. A pid is reaped only under the lock, so a cancel never signals
 * a recycled pid. */
struct temper_worker {
    pthread_mutex_t lock;          /* guards pid, busy, cancelled */
    pid_t pid;                     /* the process, 0 when none runs */
    int busy;                      /* 1 from a send until its reply is returned */
    int cancelled;                 /* 1 once the job in flight was cancelled */
    int fd;                        /* the parent's end of the socket (non-blocking), -1 if none */
    int shared_fd;                 /* the memfd behind shared */
    struct worker_shared *shared;  /* the watched page */
    char device_spec[64];          /* what the worker opens */
    struct temper_limits limits;   /* what is enforced */
    char *out;                     /* the request frame being sent, NULL when none */
    size_t out_len;                /* its size */
    size_t out_done;               /* bytes of it sent so far */
    char *in;                      /* reply bytes received so far */
    size_t in_len;                 /* how many */
    size_t in_cap;                 /* bytes allocated for in */
    double job_start_s;            /* when the job in flight was sent */
    uint64_t mem_checked_ns;       /* when resident memory was last sampled */
    char scratch[PATH_MAX];        /* the running worker's scratch folder, "" if none */
    struct cache_service *svc;     /* the running worker's cache service (cache_service.c) */
    struct cache_service_group *services; /* every cache service this worker started */
    const char *mode;              /* how temper-worker is started: "serve", or "selftest" */
    char *read_dirs[READ_DIRS_MAX]; /* folders its sandbox lets it read (tasks, the toolkit); owned */
    int nread;                     /* how many */
    /* From the beats, on the parent's clock (which no kernel in the worker can write): */
    uint64_t busy_since_ns;        /* when the device wait in progress began, 0 when none */
    double busy_grace_s;           /* its extra seconds (capped at WORKER_FIRST_LAUNCH_GRACE_S) */
    int phase;                     /* enum worker_phase */
    uint64_t phase_since_ns;       /* when it began */
    int tainted;                   /* 1: a candidate's kernel ran in the process: replace it after the job */
    int judge;                     /* 1: the job's reply is judged against truth (worker_truth.c) */
    int eval;                      /* 1: the job is an eval, whose reply is a result (result.h) */
    json_t *truth;                 /* where the reference's outputs lie, sent before a candidate ran */
    int truth_fd, outputs_fd;      /* the memfds the process writes them and its outputs into, or -1 */
    json_t *memo;                  /* what eval.c keeps across the processes of this handle (worker_memo) */
};

void temper_limits_default(struct temper_limits *l)
{
    l->launch_timeout_s = 5.0;
    l->compile_timeout_s = 120.0;
    l->job_timeout_s = 1800.0;
    l->reference_timeout_s = 120.0;
    l->mem_limit_bytes = 0; /* 0: three quarters of the machine's memory */
}

/* Closes the socket, kills (if kill_it) and reaps the process, and removes its scratch folder.
 * Whatever is left in its process group dies with it (where no PID namespace took everything it
 * started along, its filter kept those in its group). */
static void worker_reap(struct temper_worker *w, int kill_it, int *status)
{
    pthread_mutex_lock(&w->lock);
    if (w->pid) {
        if (kill_it)
            kill(w->pid, SIGKILL);
        /* Waited for without being reaped: while it is a zombie, its pid (its group's id) is
         * nobody else's, so the group kill reaches only what it started; its own status (a crash's
         * signal) is already decided. */
        siginfo_t info;
        while (waitid(P_PID, (id_t)w->pid, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR)
            ;
        kill(-w->pid, SIGKILL);
        int st = 0;
        while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR)
            ;
        if (status)
            *status = st;
        w->pid = 0;
    }
    pthread_mutex_unlock(&w->lock);
    cache_service_stop(w->svc);
    w->svc = NULL;
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    if (w->truth_fd >= 0)
        close(w->truth_fd);
    if (w->outputs_fd >= 0)
        close(w->outputs_fd);
    w->truth_fd = w->outputs_fd = -1;
    if (w->scratch[0])
        worker_remove_tree(w->scratch);
    w->scratch[0] = 0;
}

/* Whether path lies in a folder the worker may read. */
static int readable(const struct temper_worker *w, const char *path)
{
    for (int i = 0; i < w->nread; i++) {
        size_t n = strlen(w->read_dirs[i]);
        if (!strncmp(path, w->read_dirs[i], n) && (path[n] == '/' || !path[n] || (n && path[n - 1] == '/')))
            return 1;
    }
    return 0;
}

/* Lets the worker read path (a folder); 1 if that is new. */
static int add_readable(struct temper_worker *w, const char *path)
{
    if (!path || !*path || readable(w, path))
        return 0;
    if (w->nread == READ_DIRS_MAX) {
        free(w->read_dirs[0]);
        memmove(w->read_dirs, w->read_dirs + 1, sizeof(w->read_dirs[0]) * (READ_DIRS_MAX - 1));
        w->nread--;
    }
    /* As a full path: the worker resolves it from its scratch folder. */
    char full[PATH_MAX];
    char *copy = strdup(realpath(path, full) ? full : path);
    if (!copy)
        return 0;
    w->read_dirs[w->nread++] = copy;
    return 1;
}

/* add_readable for temper_search_path_each: every folder of a search path; never stops the walk. */
static int add_readable_each(void *w, const char *folder)
{
    add_readable(w, folder);
    return 0;
}

static int worker_spawn(struct temper_worker *w, char *msg, size_t n)
{
    char exe[PATH_MAX];
    int err = temper_worker_path(exe, sizeof(exe), msg, n);
    if (err)
        return err;
    int sv[2], cs[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
        return temper_fail(msg, n, TEMPER_EIO, "socketpair: %s", strerror(errno));
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cs)) {
        close(sv[0]);
        close(sv[1]);
        return temper_fail(msg, n, TEMPER_EIO, "socketpair: %s", strerror(errno));
    }
    memset(w->shared, 0, sizeof(*w->shared));
    w->busy_since_ns = 0;
    w->busy_grace_s = 0;
    w->phase = WORKER_IDLE;
    w->phase_since_ns = temper_now_ns();
    w->tainted = 0;
    const char *tmp = getenv("TMPDIR");
    tmp = tmp && *tmp ? tmp : "/tmp";
    worker_remove_stale_scratch(tmp);
    snprintf(w->scratch, sizeof(w->scratch), "%s/temper-worker-%d-XXXXXX", tmp, (int)getpid());
    if (!mkdtemp(w->scratch) || (err = cache_service_start(w->services, cs[0], w->device_spec, w->read_dirs,
                                                           w->nread, &w->limits, &w->svc, msg, n))) {
        if (!err)
            err = temper_fail(msg, n, TEMPER_EIO, "%s: %s", w->scratch, strerror(errno));
        else
            rmdir(w->scratch);
        w->scratch[0] = 0;
        close(sv[0]);
        close(sv[1]);
        close(cs[0]);
        close(cs[1]);
        return err;
    }
    char parent[24];
    snprintf(parent, sizeof(parent), "%d", (int)getpid());
    /* After the folders it reads, the ones its mount namespace hides: the caches, the store,
     * the caller's PoCL cache, the caller's folder and home (each unless it holds a folder the
     * worker reads). */
    char hide[5][PATH_MAX];
    temper_cache_dir(hide[0], sizeof(hide[0]));
    temper_home_dir(hide[1], sizeof(hide[1]));
    worker_pocl_cache_of_caller(hide[2], sizeof(hide[2]));
    if (!getcwd(hide[3], sizeof(hide[3])))
        hide[3][0] = 0;
    const char *home = getenv("HOME");
    snprintf(hide[4], sizeof(hide[4]), "%s", home && *home ? home : "");
    char *argv[12 + READ_DIRS_MAX] = {exe, (char *)(w->mode ? w->mode : "serve"), w->device_spec, parent, w->scratch};
    int na = 5;
    for (int i = 0; i < w->nread; i++)
        argv[na++] = w->read_dirs[i];
    argv[na++] = "--hide";
    for (int i = 0; i < 5; i++)
        if (hide[i][0])
            argv[na++] = hide[i];
    argv[na] = NULL;
    /* Descriptors 0, 1, 2 of the worker are /dev/null (2: unless kept for debugging), 3 is its
     * end of the socket, 4 the shared page, 5 its end of the cache service's socket, 6 and 7 the
     * memfds of what the parent judges itself (worker_impl.h; /dev/null when they cannot be made). */
    worker_truth_fds(&w->truth_fd, &w->outputs_fd);
    int devnull_r = open("/dev/null", O_RDONLY | O_CLOEXEC), devnull_w = open("/dev/null", O_WRONLY | O_CLOEXEC);
    int fds[8] = {-1, -1, -1, sv[1], w->shared_fd, cs[1], w->truth_fd >= 0 ? w->truth_fd : devnull_r,
                  w->outputs_fd >= 0 ? w->outputs_fd : devnull_r};
    const char *keep = getenv("TEMPER_WORKER_STDERR");
    fds[0] = devnull_r;
    fds[1] = devnull_w;
    fds[2] = keep && !strcmp(keep, "1") ? 2 : devnull_w;
    pid_t pid = 0;
    if (devnull_r < 0 || devnull_w < 0)
        err = temper_fail(msg, n, TEMPER_EIO, "/dev/null: %s", strerror(errno));
    else
        err = worker_spawn_exe(exe, argv, fds, 8, w->scratch, &pid, msg, n);
    if (devnull_r >= 0)
        close(devnull_r);
    if (devnull_w >= 0)
        close(devnull_w);
    close(sv[1]);
    close(cs[1]);
    if (err) {
        close(sv[0]);
        cache_service_stop(w->svc);
        w->svc = NULL;
        worker_remove_tree(w->scratch);
        w->scratch[0] = 0;
        return err;
    }
    int fl = fcntl(sv[0], F_GETFL);
    fcntl(sv[0], F_SETFL, fl | O_NONBLOCK);
    pthread_mutex_lock(&w->lock);
    w->pid = pid;
    pthread_mutex_unlock(&w->lock);
    w->fd = sv[0];
    return 0;
}

int temper_worker_start(const char *device_spec, const struct temper_limits *limits, struct temper_worker **out,
                        char *msg, size_t msg_size)
{
    *out = NULL;
    char exe[PATH_MAX];
    int err = temper_worker_path(exe, sizeof(exe), msg, msg_size);
    if (err)
        return err;
    struct temper_worker *w = calloc(1, sizeof(*w));
    if (!w)
        return TEMPER_ENOMEM;
    w->fd = w->truth_fd = w->outputs_fd = -1;
    w->shared_fd = memfd_create("temper-worker-page", MFD_CLOEXEC);
    if (w->shared_fd < 0 || ftruncate(w->shared_fd, sizeof(struct worker_shared))) {
        err = temper_fail(msg, msg_size, TEMPER_EIO, "memfd: %s", strerror(errno));
        if (w->shared_fd >= 0)
            close(w->shared_fd);
        free(w);
        return err;
    }
    w->shared = mmap(NULL, sizeof(struct worker_shared), PROT_READ | PROT_WRITE, MAP_SHARED, w->shared_fd, 0);
    if (w->shared == MAP_FAILED) {
        close(w->shared_fd);
        free(w);
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "mmap: %s", strerror(errno));
    }
    w->services = cache_service_group_new();
    if (!w->services) {
        munmap(w->shared, sizeof(struct worker_shared));
        close(w->shared_fd);
        free(w);
        return TEMPER_ENOMEM;
    }
    pthread_mutex_init(&w->lock, NULL);
    snprintf(w->device_spec, sizeof(w->device_spec), "%s", device_spec ? device_spec : "");
    if (limits)
        w->limits = *limits;
    else
        temper_limits_default(&w->limits);
    if (!w->limits.mem_limit_bytes) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        w->limits.mem_limit_bytes = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 4 * 3 : (16ull << 30);
    }
    /* What a worker reads besides the system: the toolkit (the folder above the worker's), the
     * source tree's tasks, $TEMPER_TASKS, the current folder; task folders of requests are added
     * as they come. */
    char toolkit[PATH_MAX], up[PATH_MAX], cwd[PATH_MAX];
    temper_dirname(exe, up, sizeof(up));
    temper_dirname(up, toolkit, sizeof(toolkit));
    add_readable(w, toolkit);
    temper_search_path_each(getenv("TEMPER_TASKS"), add_readable_each, w);
    /* Not the current folder: it is the caller's (its files, a store), and a task there reaches
     * the worker's sandbox as its request's task folder. */
    (void)cwd;
    *out = w;
    return 0;
}

static void job_clear(struct temper_worker *w)
{
    free(w->out);
    w->out = NULL;
    w->out_len = w->out_done = 0;
    w->in_len = 0;
    json_decref(w->truth);
    w->truth = NULL;
    pthread_mutex_lock(&w->lock);
    w->busy = 0;
    w->cancelled = 0;
    pthread_mutex_unlock(&w->lock);
}

void temper_worker_stop(struct temper_worker *w)
{
    if (!w)
        return;
    if (w->pid) {
        /* An idle worker exits when its socket closes: give it a moment, then make sure. */
        shutdown(w->fd, SHUT_RDWR);
        pid_t pid = w->pid;
        struct pollfd pfd = {w->fd, POLLIN, 0};
        siginfo_t info;
        for (int i = 0; i < 50; i++) {
            /* Not reaped here (WNOWAIT): worker_reap does, after its group is killed. */
            memset(&info, 0, sizeof(info));
            if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) || info.si_pid == pid)
                break;
            poll(&pfd, 1, 10);
        }
        worker_reap(w, 1, NULL);
    }
    if (w->fd >= 0)
        close(w->fd);
    cache_service_stop(w->svc);
    w->svc = NULL;
    /* What the workers reported they had to build is built before the program ends, so that the
     * next program's workers find it. */
    cache_service_group_drain(w->services, 2 * w->limits.compile_timeout_s);
    job_clear(w);
    free(w->in);
    json_decref(w->memo);
    for (int i = 0; i < w->nread; i++)
        free(w->read_dirs[i]);
    munmap(w->shared, sizeof(*w->shared));
    close(w->shared_fd);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

/* The reply that ends a job the worker did not answer (a crash, a limit, a cancel, a malformed
 * reply), after which the worker is replaced: verdict (NULL for a cancel) and message. An eval's is
 * a result, written by the generated writer; another op's reply (info, calibrate, devices, the
 * selftest) is not one, and keeps the few keys its readers take (worker_calls.c: the message). */
static json_t *ended_reply(const struct temper_worker *w, const char *verdict, const char *message)
{
    if (!w->eval)
        return verdict ? json_pack("{s:s, s:s, s:b}", "verdict", verdict, "message", message, "worker_restarted", 1)
                       : json_pack("{s:b, s:s, s:b}", "cancelled", 1, "message", message, "worker_restarted", 1);
    struct temper_result r;
    temper_result_own(&r, verdict, message, !verdict, 1);
    json_t *reply = temper_result_to_json(&r);
    temper_result_free(&r);
    return reply;
}

static json_t *failed_reply(const struct temper_worker *w, enum temper_verdict v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static json_t *failed_reply(const struct temper_worker *w, enum temper_verdict v, const char *fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    return ended_reply(w, temper_verdict_name(v), text);
}

/* The reply for a failure of the task itself (its reference or its baseline crashed or hung): an
 * error with its code, never a verdict, so nothing is recorded as the candidate's. */
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

int temper_worker_send(struct temper_worker *w, json_t *request, char *msg, size_t msg_size)
{
    pthread_mutex_lock(&w->lock);
    int busy = w->busy;
    w->busy = 1;
    w->cancelled = 0;
    pthread_mutex_unlock(&w->lock);
    if (busy)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "the worker already has a job in flight");
    /* The worker works in its own scratch folder: a task folder reaches it as a full path. */
    const char *rel = json_string_value(json_object_get(request, "task_dir"));
    char full[PATH_MAX];
    if (rel && *rel && *rel != '/' && realpath(rel, full))
        json_object_set_new(request, "task_dir", json_string(full));
    if (!request || worker_encode(request, &w->out, &w->out_len)) {
        job_clear(w);
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "cannot encode a request for the worker");
    }
    w->out_done = 0;
    w->in_len = 0;
    w->judge = worker_truth_wanted(request);
    const char *op = json_string_value(json_object_get(request, "op"));
    w->eval = op && !strcmp(op, "eval");
    w->job_start_s = temper_now_s();
    w->mem_checked_ns = 0;
    /* A task folder the running worker's sandbox does not cover: start one that covers it. */
    char task_dir[PATH_MAX];
    const char *td = json_string_value(json_object_get(request, "task_dir"));
    if (td && *td && (realpath(td, task_dir) || snprintf(task_dir, sizeof(task_dir), "%s", td) < (int)sizeof(task_dir))) {
        char parent[PATH_MAX];
        temper_dirname(task_dir, parent, sizeof(parent)); /* the folder of tasks, so its neighbours too */
        if (!readable(w, task_dir) && add_readable(w, parent) && w->pid)
            worker_reap(w, 1, NULL);
    }
    /* An idle worker may have died since its last job (a signal, the OOM killer): if its socket
     * is closed, start another before anything of this job is sent. */
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!w->pid) {
            int err = worker_spawn(w, msg, msg_size);
            if (err) {
                job_clear(w);
                return err;
            }
        }
        ssize_t r = send(w->fd, w->out, w->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r >= 0 || errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            w->out_done = r > 0 ? (size_t)r : 0;
            return 0;
        }
        worker_reap(w, 1, NULL);
    }
    job_clear(w);
    return temper_fail(msg, msg_size, TEMPER_EIO, "cannot send a request to the worker");
}

json_t *worker_memo(struct temper_worker *w)
{
    if (!w->memo)
        w->memo = json_array();
    return w->memo;
}

int temper_worker_fd(const struct temper_worker *w)
{
    return w->fd;
}

short temper_worker_events(const struct temper_worker *w)
{
    return (short)(POLLIN | (w->out && w->out_done < w->out_len ? POLLOUT : 0));
}

int temper_worker_timeout_ms(const struct temper_worker *w)
{
    if (!w->busy)
        return -1;
    uint64_t now = temper_now_ns();
    double left_s = w->job_start_s + w->limits.job_timeout_s - temper_now_s();
    /* A launch or a build that has not begun cannot pass its limit before now plus the limit. */
    uint64_t busy = w->busy_since_ns, since = w->phase_since_ns;
    double launch_s = w->limits.launch_timeout_s + (busy ? w->busy_grace_s : 0);
    double launch_left = busy ? launch_s - (double)(now > busy ? now - busy : 0) * 1e-9 : launch_s;
    double build_left = w->phase == WORKER_BUILDING
                            ? w->limits.compile_timeout_s - (double)(now > since ? now - since : 0) * 1e-9
                            : w->limits.compile_timeout_s;
    if (w->phase == WORKER_REFERENCE) {
        double ref_left = w->limits.reference_timeout_s - (double)(now > since ? now - since : 0) * 1e-9;
        if (ref_left < build_left)
            build_left = ref_left;
    }
    double mem_left = (double)(w->mem_checked_ns + MEM_CHECK_NS > now ? w->mem_checked_ns + MEM_CHECK_NS - now : 0) * 1e-9;
    double m = left_s;
    if (launch_left < m)
        m = launch_left;
    if (build_left < m)
        m = build_left;
    if (mem_left < m)
        m = mem_left;
    if (m <= 0)
        return 0;
    return m > 3600 ? 3600000 : (int)(m * 1e3) + 1;
}

int temper_worker_cancel(struct temper_worker *w)
{
    pthread_mutex_lock(&w->lock);
    int was_busy = w->busy && !w->cancelled;
    if (was_busy) {
        w->cancelled = 1;
        if (w->pid)
            kill(w->pid, SIGKILL); /* its socket closes: a thread polling it wakes */
    }
    pthread_mutex_unlock(&w->lock);
    return was_busy;
}

/* The sentence in the page saying what the worker is doing, for a message: at most the page's
 * field (a kernel may have written anything there, NUL or not), and, unless it is UTF-8, with every
 * byte that is not printable ASCII as '?'. */
static void page_doing(const struct temper_worker *w, char *out, size_t size)
{
    size_t n = 0;
    for (size_t i = 0; i < sizeof(w->shared->doing) && w->shared->doing[i] && n + 1 < size; i++)
        out[n++] = w->shared->doing[i];
    out[n] = 0;
    for (size_t i = 0; !worker_utf8_valid(out, n) && i < n; i++)
        if ((unsigned char)out[i] < 0x20 || (unsigned char)out[i] >= 0x7f)
            out[i] = '?';
}

/* The job ended without a reply: says why, from the process's status and the shared page. */
static json_t *death_reply(struct temper_worker *w)
{
    char doing[sizeof(w->shared->doing) + 1];
    page_doing(w, doing, sizeof(doing));
    int phase = w->phase, status = 0;
    worker_reap(w, 0, &status);
    char how[64]; /* the signal, or the exit status (a sanitizer reports a crash and exits 1) */
    if (WIFSIGNALED(status))
        snprintf(how, sizeof(how), "%s", strsignal(WTERMSIG(status)));
    else
        snprintf(how, sizeof(how), "exited with status %d", WEXITSTATUS(status));
    if (phase == WORKER_REFERENCE)
        return task_error_reply(TEMPER_ECRASH, TEMPER_TASK_ERROR_PREFIX "the reference crashed (%s) while %s", how,
                                doing);
    if (phase == WORKER_BASELINE)
        return task_error_reply(TEMPER_ECRASH, TEMPER_TASK_ERROR_PREFIX "the baseline crashed (%s) while %s", how,
                                doing);
    if (phase == WORKER_BUILDING)
        return failed_reply(w, TEMPER_VERDICT_COMPILE_ERROR, "the compiler crashed (%s) while %s", how, doing);
    return failed_reply(w, TEMPER_VERDICT_RUNTIME_ERROR, "the device worker crashed (%s) while %s", how, doing);
}

/* " (the machine was busy: ...)" when the load average exceeded the cores as a limit was hit, so a
 * timeout on a loaded machine says that the limit, not only the kernel, may be at fault; else "". */
static void busy_note(char *note, size_t size)
{
    double load;
    int cores;
    note[0] = 0;
    if (temper_machine_load(&load, &cores) && load > (double)cores)
        snprintf(note, size, " (the machine was busy: load average %.2f on %d cores)", load, cores);
}

/* Ends the job in flight with a watchdog's verdict: kills the worker. */
static json_t *watchdog(struct temper_worker *w)
{
    uint64_t now = temper_now_ns();
    uint64_t busy = w->busy_since_ns, since = w->phase_since_ns;
    int phase = w->phase;
    char doing[sizeof(w->shared->doing) + 1];
    page_doing(w, doing, sizeof(doing));
    double limit_s = w->limits.launch_timeout_s + w->busy_grace_s;
    json_t *r = NULL;
    char note[128];
    busy_note(note, sizeof(note));
    if (busy && now > busy && (double)(now - busy) * 1e-9 > limit_s && phase == WORKER_BASELINE)
        r = task_error_reply(TEMPER_ETIMEOUT,
                             TEMPER_TASK_ERROR_PREFIX "a launch of the baseline hung (ran longer than the %.3g s "
                             "limit) while %s%s",
                             limit_s, doing, note);
    else if (busy && now > busy && (double)(now - busy) * 1e-9 > limit_s)
        r = failed_reply(w, TEMPER_VERDICT_TIMEOUT, "a launch ran longer than the %.3g s limit while %s%s", limit_s,
                         doing, note);
    else if (phase == WORKER_BUILDING && now > since && (double)(now - since) * 1e-9 > w->limits.compile_timeout_s)
        r = failed_reply(w, TEMPER_VERDICT_COMPILE_ERROR, "compilation ran longer than the %.3g s limit while %s%s",
                         w->limits.compile_timeout_s, doing, note);
    else if (phase == WORKER_REFERENCE && now > since &&
             (double)(now - since) * 1e-9 > w->limits.reference_timeout_s)
        r = task_error_reply(TEMPER_ETIMEOUT,
                             TEMPER_TASK_ERROR_PREFIX "the reference ran past the %.3g s limit while %s%s",
                             w->limits.reference_timeout_s, doing, note);
    else if (temper_now_s() - w->job_start_s > w->limits.job_timeout_s)
        r = failed_reply(w, TEMPER_VERDICT_TIMEOUT, "the evaluation ran longer than %.3g s while %s%s",
                         w->limits.job_timeout_s, doing, note);
    else if (w->pid && now - w->mem_checked_ns >= MEM_CHECK_NS) {
        w->mem_checked_ns = now;
        uint64_t rss = worker_resident_bytes(w->pid);
        if (rss > w->limits.mem_limit_bytes)
            r = failed_reply(w, TEMPER_VERDICT_RUNTIME_ERROR,
                             "the worker used %.1f GiB of host memory, over the %.1f GiB limit, while %s",
                             (double)rss / (1 << 30), (double)w->limits.mem_limit_bytes / (1 << 30), doing);
    }
    if (r)
        worker_reap(w, 1, NULL);
    return r;
}

static uint32_t le32(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
}

/* Takes the beats at the front of what the socket gave (none lies inside a frame: the worker
 * sends both from one thread), each timed now. */
static void take_beats(struct temper_worker *w)
{
    size_t at = 0;
    uint64_t now = temper_now_ns();
    while (w->in_len - at >= 8 && (le32(w->in + at) & ~0xfu) == WORKER_BEAT) {
        uint32_t kind = le32(w->in + at) & 0xfu, value = le32(w->in + at + 4);
        if (kind == BEAT_BUSY) {
            w->busy_since_ns = now;
            w->busy_grace_s = value * 1e-3 < WORKER_FIRST_LAUNCH_GRACE_S ? value * 1e-3 : WORKER_FIRST_LAUNCH_GRACE_S;
        } else if (kind == BEAT_IDLE) {
            w->busy_since_ns = 0;
            w->busy_grace_s = 0;
        } else if (kind == BEAT_PHASE) {
            w->phase = (int)value;
            w->phase_since_ns = now;
        } else if (kind == BEAT_CANDIDATE) {
            w->tainted = 1;
        }
        at += 8;
    }
    if (at) {
        memmove(w->in, w->in + at, w->in_len - at);
        w->in_len -= at;
    }
}

/* Reads what the socket holds, taking the beats; 1 at end of file, -1 on a frame too large, else 0. */
static int read_available(struct temper_worker *w)
{
    for (;;) {
        if (w->in_cap - w->in_len < 65536) {
            size_t cap = w->in_cap ? w->in_cap * 2 : 1 << 16;
            char *p = realloc(w->in, cap);
            if (!p)
                return -1;
            w->in = p;
            w->in_cap = cap;
        }
        ssize_t r = recv(w->fd, w->in + w->in_len, w->in_cap - w->in_len, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : 1;
        if (r == 0)
            return 1;
        w->in_len += (size_t)r;
        take_beats(w);
        size_t want = worker_frame_size(w->in, w->in_len);
        if (want && want - 4 > WORKER_FRAME_MAX)
            return -1;
        if (want && w->in_len >= want)
            return 0;
    }
}

int temper_worker_service(struct temper_worker *w, json_t **reply, char *msg, size_t msg_size)
{
    (void)msg;
    (void)msg_size;
    *reply = NULL;
    if (!w->busy)
        return 0;
    pthread_mutex_lock(&w->lock);
    int cancelled = w->cancelled;
    pthread_mutex_unlock(&w->lock);
    if (cancelled) {
        worker_reap(w, 1, NULL);
        *reply = ended_reply(w, NULL, "the job was cancelled");
        job_clear(w);
        return 0;
    }
    int dead = 0;
    while (w->out_done < w->out_len) {
        ssize_t r = send(w->fd, w->out + w->out_done, w->out_len - w->out_done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            dead = errno != EAGAIN && errno != EWOULDBLOCK;
            break;
        }
        w->out_done += (size_t)r;
    }
    /* A worker that stopped reading may still have replied (an error about the request). */
    int eof = read_available(w);
    size_t want = worker_frame_size(w->in, w->in_len);
    /* The truth frame comes ahead of the reply (and of the beats that follow it). */
    while (eof >= 0 && want && w->in_len >= want && worker_truth_take(w->in, want, w->tainted, w->truth_fd, &w->truth)) {
        memmove(w->in, w->in + want, w->in_len - want);
        w->in_len -= want;
        take_beats(w);
        if (!eof)
            eof = read_available(w);
        want = worker_frame_size(w->in, w->in_len);
    }
    if (dead && !eof && !(want && w->in_len >= want))
        eof = 1;
    if (eof >= 0 && want && w->in_len >= want) {
        json_t *m = NULL;
        if (w->in_len > want || worker_decode_reply(w->in, want, &m)) {
            char doing[sizeof(w->shared->doing) + 1];
            page_doing(w, doing, sizeof(doing));
            worker_reap(w, 1, NULL);
            *reply = failed_reply(w, TEMPER_VERDICT_RUNTIME_ERROR, "the device worker sent a malformed reply while %s",
                                  doing);
        } else {
            /* A worker that says it restarts exits after its reply. One a candidate's kernel ran
             * in, which may have written anywhere in it (or whose truth is sealed, for this job
             * only), is replaced here, and its result says so: the next job gets a fresh one. */
            int exits = json_is_true(json_object_get(m, "worker_restarted"));
            int replace = !exits && (w->tainted || w->truth);
            *reply = m;
            worker_truth_reply(w->truth, w->judge, w->tainted, w->truth_fd, w->outputs_fd, replace, m);
            if (exits)
                worker_reap(w, 0, NULL);
            else if (replace)
                worker_reap(w, 1, NULL);
        }
        job_clear(w);
        return 0;
    }
    if (eof < 0) {
        char doing[sizeof(w->shared->doing) + 1];
        page_doing(w, doing, sizeof(doing));
        worker_reap(w, 1, NULL);
        *reply = failed_reply(w, TEMPER_VERDICT_RUNTIME_ERROR, "the device worker sent a reply over %u bytes while %s",
                              WORKER_FRAME_MAX, doing);
    } else if (eof) {
        pthread_mutex_lock(&w->lock);
        cancelled = w->cancelled;
        pthread_mutex_unlock(&w->lock);
        if (cancelled) {
            worker_reap(w, 1, NULL);
            *reply = ended_reply(w, NULL, "the job was cancelled");
        } else {
            *reply = death_reply(w);
        }
    } else {
        *reply = watchdog(w);
    }
    if (*reply)
        job_clear(w);
    return 0;
}

int temper_worker_call(struct temper_worker *w, json_t *request, json_t **reply, char *msg, size_t msg_size)
{
    *reply = NULL;
    int err = temper_worker_send(w, request, msg, msg_size);
    if (err)
        return err;
    for (;;) {
        err = temper_worker_service(w, reply, msg, msg_size);
        if (err || *reply)
            return err;
        struct pollfd pfd = {temper_worker_fd(w), temper_worker_events(w), 0};
        poll(&pfd, 1, temper_worker_timeout_ms(w));
    }
}

int temper_worker_selftest(json_t *targets, json_t **report, char *msg, size_t msg_size)
{
    *report = NULL;
    struct temper_worker *w;
    int err = temper_worker_start(NULL, NULL, &w, msg, msg_size);
    if (err)
        return err;
    /* The same start as a serving worker's, in the one mode that attacks instead of serving. */
    w->mode = "selftest";
    err = temper_worker_call(w, targets, report, msg, msg_size);
    temper_worker_stop(w);
    return err;
}
