/* cache_service.c: what stands between a worker and everything a later evaluation loads. A worker
 * runs candidates (on PoCL, native code in its own address space), so it neither writes nor reads
 * the caches: a thread of the calling program answers it on a socket of its own (descriptor 5)
 * with kernel binaries from the build cache and task references, each checked against its seal
 * (seal.h), and builds in compile processes (`temper-worker compile`, which run no candidate) what
 * the worker reports it had to build, so that the next worker finds it. Compile processes hand
 * their binary back in a memfd; only this side writes (and seals) the cache. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device/device.h"
#include "kernel/kernel_internal.h"
#include "task/task_torch.h"
#include "temper/task.h"
#include "torch_reference.h"
#include "util/util.h"
#include "worker_impl.h"

#define SERVICE_FRAME_MAX (64u << 20) /* a worker's request: a report of sources, at most this */
#define BUILDS_MAX 16                 /* builds queued per worker; more are dropped */
#define BUILDS_LIFETIME 256           /* builds one worker process may ask for in all: a worker that
                                       * a candidate took over cannot keep the machine compiling */
#define COMPILE_OUTPUT_MAX (300u << 20)
#define SPECS_MAX 24                  /* specialisations one binary is built with */

/* A build a worker asked for. */
struct build {
    uint64_t claimed;  /* the key the worker computed (only to skip work already done) */
    char *source;      /* the source (owned) */
    size_t len;        /* its bytes */
    char *options;     /* compiler options (owned) */
    char *specs;       /* specialisations wanted, comma-separated (owned) */
    char device[4][256]; /* the worker's backend, device name, arch and compiler version: an offline
                          * compiler (NVRTC) builds for these, a device's own compiler for itself */
    int missed;        /* 1: the worker found no binary at all */
};

struct cache_service {
    pthread_t thread;                 /* serves fd until it closes, then builds what is queued */
    struct cache_service_group *group; /* the temper_worker's threads */
    pthread_mutex_t lock;             /* guards refs */
    int refs;                         /* 2 while both the thread and the worker's owner hold it */
    int fd;                           /* the calling program's end of the worker's socket */
    char device_spec[64];             /* the worker's device, for compile processes */
    char **read_dirs;                 /* folders whose tasks' references it may ask for (owned) */
    int nread;                        /* how many */
    struct temper_limits limits;      /* compile time and memory */
    struct build queue[BUILDS_MAX];   /* builds not yet done */
    int nqueue;                       /* how many */
    int asked;                        /* builds accepted so far, at most BUILDS_LIFETIME */
};

/* The service threads of one temper_worker (one per worker process it started), so that stopping
 * it waits for their builds, and for no other worker's. Freed by the last of its holders: the
 * temper_worker and each thread. */
struct cache_service_group {
    pthread_mutex_t lock; /* guards running and refs */
    pthread_cond_t done;  /* signalled when a thread ends */
    int running;          /* threads not yet ended */
    int refs;             /* holders */
};

struct cache_service_group *cache_service_group_new(void)
{
    struct cache_service_group *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->done, NULL);
    g->refs = 1;
    return g;
}

static void group_release(struct cache_service_group *g)
{
    pthread_mutex_lock(&g->lock);
    int last = --g->refs == 0;
    pthread_mutex_unlock(&g->lock);
    if (!last)
        return;
    pthread_cond_destroy(&g->done);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

/* ---- compile processes ---- */

int compile_proc_start(json_t *req, struct compile_proc *p, char *msg, size_t msg_size)
{
    memset(p, 0, sizeof(*p));
    p->out_fd = -1;
    char exe[PATH_MAX];
    int err = temper_worker_path(exe, sizeof(exe), msg, msg_size);
    if (err)
        return err;
    const char *tmp = getenv("TMPDIR");
    snprintf(p->scratch, sizeof(p->scratch), "%s/temper-compile-%d-XXXXXX", tmp && *tmp ? tmp : "/tmp", (int)getpid());
    if (!mkdtemp(p->scratch)) {
        err = temper_fail(msg, msg_size, TEMPER_EIO, "%s: %s", p->scratch, strerror(errno));
        p->scratch[0] = 0;
        return err;
    }
    char *frame = NULL;
    size_t len = 0;
    int req_fd = memfd_create("temper-compile-request", MFD_CLOEXEC);
    p->out_fd = memfd_create("temper-compile-output", MFD_CLOEXEC);
    int ok = req_fd >= 0 && p->out_fd >= 0 && !worker_encode(req, &frame, &len) &&
             write(req_fd, frame, len) == (ssize_t)len && lseek(req_fd, 0, SEEK_SET) == 0;
    free(frame);
    char *argv[] = {exe, "compile", p->scratch, NULL};
    int fds[2] = {req_fd, p->out_fd};
    err = ok ? worker_spawn_exe(exe, argv, fds, 2, p->scratch, &p->pid, msg, msg_size)
             : temper_fail(msg, msg_size, TEMPER_EIO, "cannot hand a request to a compile process");
    if (req_fd >= 0)
        close(req_fd);
    if (err) {
        compile_proc_end(p, NULL);
        return err;
    }
    p->start_s = temper_now_s();
    return 0;
}

json_t *compile_proc_end(struct compile_proc *p, int *status)
{
    json_t *out = NULL;
    if (p->pid) {
        int st = 0;
        while (waitpid(p->pid, &st, 0) < 0 && errno == EINTR)
            ;
        if (status)
            *status = st;
        p->pid = 0;
    }
    if (p->out_fd >= 0) {
        off_t size = lseek(p->out_fd, 0, SEEK_END);
        char *data = size > 0 && (size_t)size <= COMPILE_OUTPUT_MAX ? malloc((size_t)size) : NULL;
        if (data && pread(p->out_fd, data, (size_t)size, 0) == (ssize_t)size &&
            worker_frame_size(data, (size_t)size) == (size_t)size)
            worker_decode_request(data, (size_t)size, &out);
        free(data);
        close(p->out_fd);
        p->out_fd = -1;
    }
    if (p->scratch[0])
        worker_remove_tree(p->scratch);
    p->scratch[0] = 0;
    return out;
}

/* ---- builds ---- */

/* Whether every specialisation of want is in have (both comma-separated). */
static int covers(const char *have, const char *want)
{
    for (const char *p = want; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        int found = 0;
        for (const char *q = have; q && *q && !found;) {
            const char *qe = strchr(q, ',');
            size_t ql = qe ? (size_t)(qe - q) : strlen(q);
            found = ql == len && !strncmp(p, q, len);
            q += ql + (qe != NULL);
        }
        if (len && !found)
            return 0;
        p += len + (end != NULL);
    }
    return 1;
}

/* Builds b in a compile process and stores it, sealed, under the key the compile process's own
 * device gives (never the one the worker claimed). */
static void run_build(struct cache_service *s, struct build *b)
{
    char have[4096] = "";
    int exists = temper_build_cache_has(b->claimed);
    if (exists)
        temper_build_cache_specs(b->claimed, have, sizeof(have));
    if (exists && covers(have, b->specs))
        return;
    /* A binary that already exists is built again with specialisations only once it is asked
     * for twice (a candidate a search evaluates once is not compiled a second time): the first
     * report leaves its wish in the metadata. */
    char all[8300];
    snprintf(all, sizeof(all), "%s%s%.4000s", have, have[0] && b->specs[0] ? "," : "", b->specs);
    if (exists && !b->missed && !have[0]) {
        temper_build_cache_put_specs(b->claimed, NULL, 0, "wanted");
        return;
    }
    int count = 0;
    char specs[4096] = "";
    for (const char *p = all; *p && count < SPECS_MAX;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char one[80];
        snprintf(one, sizeof(one), "%.*s", (int)(len < 79 ? len : 79), p);
        if (len && strcmp(one, "wanted") && !covers(specs, one)) {
            snprintf(specs + strlen(specs), sizeof(specs) - strlen(specs), "%s%s", specs[0] ? "," : "", one);
            count++;
        }
        p += len + (end != NULL);
    }
    /* An offline compiler (NVRTC) builds for the device the worker named (a wrong name only builds
     * a binary for that device, under its own key); any other backend's device builds for itself. */
    const struct temper_device_ops *ops = temper_device_backend(b->device[0]);
    int offline = ops && ops->compile;
    json_t *req = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I}", "backend", offline ? ops->name : "device", "device",
                            s->device_spec, "name", b->device[1], "arch", b->device[2], "compiler", b->device[3],
                            "options", b->options, "mem_limit_bytes", (json_int_t)s->limits.mem_limit_bytes);
    json_object_set_new(req, "specs", json_string(specs));
    json_object_set_new(req, "source", json_stringn_nocheck(b->source, b->len));
    struct compile_proc p;
    char msg[512];
    int err = compile_proc_start(req, &p, msg, sizeof(msg));
    json_decref(req);
    if (err)
        return;
    /* Bounded by the compile limit like any build. */
    int status = 0;
    for (;;) {
        pid_t r = waitpid(p.pid, &status, WNOHANG);
        if (r == p.pid) {
            p.pid = 0;
            break;
        }
        if (r < 0 && errno != EINTR)
            break;
        if (temper_now_s() - p.start_s > s->limits.compile_timeout_s) {
            kill(p.pid, SIGKILL);
            break;
        }
        usleep(20000);
    }
    json_t *out = compile_proc_end(&p, &status);
    json_t *bin = json_object_get(out, "binary");
    const char *compiler = json_string_value(json_object_get(out, "compiler"));
    const char *target = json_string_value(json_object_get(out, "target"));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && json_is_string(bin) && compiler && target) {
        uint64_t key = temper_build_key(b->source, b->len, b->options, compiler, target);
        temper_build_cache_put_specs(key, json_string_value(bin), json_string_length(bin),
                                     json_string_value(json_object_get(out, "specs")));
    }
    json_decref(out);
}

static void build_free(struct build *b)
{
    free(b->source);
    free(b->options);
    free(b->specs);
    memset(b, 0, sizeof(*b));
}

/* ---- requests ---- */

/* Whether path lies in one of the folders the worker was started to read. */
static int task_allowed(const struct cache_service *s, const char *path)
{
    char real[PATH_MAX];
    if (!realpath(path, real))
        return 0;
    for (int i = 0; i < s->nread; i++) {
        char dir[PATH_MAX];
        if (!realpath(s->read_dirs[i], dir))
            continue;
        size_t n = strlen(dir);
        if (!strncmp(real, dir, n) && (real[n] == '/' || !real[n] || (n == 1 && dir[0] == '/')))
            return 1;
    }
    return 0;
}

/* A Python reference's outputs for the inputs the worker drew (torch_reference.h). The worker's own
 * watch on the reference phase kills it at the reference limit; the interpreter is stopped a little
 * before, so that the message says what the reference did. */
static json_t *answer_torch(struct cache_service *s, json_t *req)
{
    const char *dir = json_string_value(json_object_get(req, "task_dir"));
    json_t *in = json_object_get(req, "inputs"), *sc = json_object_get(req, "scalars");
    char msg[4096];
    struct temper_task task;
    long long scalars[TEMPER_MAX_ARGS];
    void *out = NULL;
    size_t n = 0, i;
    json_t *v;
    int err;
    if (!dir || !task_allowed(s, dir) || !json_is_string(in) || json_array_size(sc) > TEMPER_MAX_ARGS)
        err = temper_fail(msg, sizeof(msg), TEMPER_EINVALID, "%s: not a task folder this worker was started for",
                          dir ? dir : "(none)");
    else if (!(err = temper_task_load(dir, &task, msg, sizeof(msg)))) {
        int nscalars = 0;
        for (int a = 0; a < task.nargs; a++)
            nscalars += task.args[a].role == TEMPER_ROLE_SCALAR;
        json_array_foreach(sc, i, v) scalars[i] = (long long)json_integer_value(v);
        if (json_array_size(sc) != (size_t)nscalars)
            return json_pack("{s:s, s:i}", "error",
                             "the worker handed over another number of scalars than the task has", "code",
                             TEMPER_EINVALID);
        double limit = s->limits.reference_timeout_s > 10 ? s->limits.reference_timeout_s - 5 : 5;
        err = temper_task_reference_is_python(&task)
                  ? torch_reference_compute(&task, scalars, json_string_value(in), json_string_length(in), limit,
                                            &out, &n, msg, sizeof(msg))
                  : temper_fail(msg, sizeof(msg), TEMPER_EINVALID, "%s: not a Python reference", task.reference);
    }
    if (err)
        return json_pack("{s:s, s:i}", "error", msg, "code", err);
    json_t *r = json_object();
    json_object_set_new(r, "outputs", json_stringn_nocheck(out, n));
    free(out);
    return r;
}

static json_t *answer(struct cache_service *s, json_t *req)
{
    const char *op = json_string_value(json_object_get(req, "op"));
    if (op && !strcmp(op, "binary")) {
        const char *hex = json_string_value(json_object_get(req, "key"));
        char *end = NULL;
        uint64_t key = hex ? strtoull(hex, &end, 16) : 0;
        void *bin = NULL;
        size_t size = 0;
        if (!hex || strlen(hex) != 16 || *end || temper_build_cache_get(key, &bin, &size))
            return json_pack("{s:b}", "missing", 1);
        char specs[4096];
        temper_build_cache_specs(key, specs, sizeof(specs));
        json_t *r = json_pack("{s:s}", "specs", covers("", specs) ? "" : specs);
        json_object_set_new(r, "binary", json_stringn_nocheck(bin, size));
        free(bin);
        return r;
    }
    if (op && !strcmp(op, "reference")) {
        const char *dir = json_string_value(json_object_get(req, "task_dir"));
        char msg[2048];
        struct temper_task task;
        void *bytes = NULL;
        size_t n = 0;
        int err;
        if (!dir || !task_allowed(s, dir))
            err = temper_fail(msg, sizeof(msg), TEMPER_EINVALID, "%s: not a task folder this worker was started for",
                              dir ? dir : "(none)");
        else if (!(err = temper_task_load(dir, &task, msg, sizeof(msg))))
            err = temper_task_reference_bytes(&task, &bytes, &n, msg, sizeof(msg));
        if (err)
            return json_pack("{s:s, s:i}", "error", msg, "code", err);
        json_t *r = json_object();
        json_object_set_new(r, "reference", json_stringn_nocheck(bytes, n));
        free(bytes);
        return r;
    }
    if (op && !strcmp(op, "torch_reference"))
        return answer_torch(s, req);
    if (op && !strcmp(op, "built")) {
        size_t i;
        json_t *m;
        json_array_foreach(json_object_get(req, "modules"), i, m)
        {
            json_t *src = json_object_get(m, "source");
            const char *hex = json_string_value(json_object_get(m, "key"));
            const char *options = json_string_value(json_object_get(m, "options"));
            const char *specs = json_string_value(json_object_get(m, "specs"));
            if (s->nqueue == BUILDS_MAX || s->asked >= BUILDS_LIFETIME || !json_is_string(src) || !hex || !options ||
                !specs)
                continue;
            s->asked++;
            struct build *b = &s->queue[s->nqueue];
            b->claimed = strtoull(hex, NULL, 16);
            b->len = json_string_length(src);
            b->source = malloc(b->len + 1);
            b->options = strdup(options);
            b->specs = strdup(specs);
            b->missed = json_is_true(json_object_get(m, "missed"));
            static const char *const device_keys[4] = {"backend", "name", "arch", "compiler"};
            for (int k = 0; k < 4; k++) {
                const char *v = json_string_value(json_object_get(m, device_keys[k]));
                snprintf(b->device[k], sizeof(b->device[k]), "%s", v ? v : "");
            }
            if (!b->source || !b->options || !b->specs) {
                build_free(b);
                continue;
            }
            memcpy(b->source, json_string_value(src), b->len);
            b->source[b->len] = 0;
            s->nqueue++;
        }
        return NULL; /* no answer: the worker does not wait */
    }
    return json_pack("{s:s, s:i}", "error", "an unknown request to the cache service", "code", TEMPER_EINVALID);
}

/* One request frame, or NULL at end of file or on a malformed or oversized frame. */
static json_t *receive(int fd)
{
    unsigned char head[4];
    size_t got = 0;
    while (got < 4) {
        ssize_t r = read(fd, head + got, 4 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return NULL;
        got += (size_t)r;
    }
    size_t size = worker_frame_size(head, 4);
    if (size < 4 || size - 4 > SERVICE_FRAME_MAX)
        return NULL;
    char *frame = malloc(size);
    if (!frame)
        return NULL;
    memcpy(frame, head, 4);
    for (got = 4; got < size;) {
        ssize_t r = read(fd, frame + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            free(frame);
            return NULL;
        }
        got += (size_t)r;
    }
    json_t *req = NULL;
    worker_decode_request(frame, size, &req);
    free(frame);
    return req;
}

/* Drops one hold on s; the last one closes the socket and frees it. */
static void service_release(struct cache_service *s)
{
    pthread_mutex_lock(&s->lock);
    int last = --s->refs == 0;
    pthread_mutex_unlock(&s->lock);
    if (!last)
        return;
    close(s->fd);
    for (int i = 0; i < s->nread; i++)
        free(s->read_dirs[i]);
    free(s->read_dirs);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static void *serve(void *arg)
{
    struct cache_service *s = arg;
    for (;;) {
        struct pollfd p = {s->fd, POLLIN, 0};
        int r = poll(&p, 1, s->nqueue ? 0 : -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r > 0) {
            json_t *req = receive(s->fd);
            if (!req)
                break;
            json_t *reply = answer(s, req);
            json_decref(req);
            if (reply) {
                worker_send(s->fd, reply);
                json_decref(reply);
            }
            continue;
        }
        /* Idle: one queued build, then look at the socket again. */
        run_build(s, &s->queue[0]);
        build_free(&s->queue[0]);
        memmove(s->queue, s->queue + 1, sizeof(s->queue[0]) * (size_t)(--s->nqueue));
    }
    /* The worker is gone: what it reported is built for the next one. */
    for (int i = 0; i < s->nqueue; i++) {
        run_build(s, &s->queue[i]);
        build_free(&s->queue[i]);
    }
    s->nqueue = 0;
    struct cache_service_group *g = s->group;
    service_release(s);
    pthread_mutex_lock(&g->lock);
    g->running--;
    pthread_cond_broadcast(&g->done);
    pthread_mutex_unlock(&g->lock);
    group_release(g);
    OPENSSL_thread_stop(); /* the seals' per-thread state (libcrypto's), freed as the thread ends */
    return NULL;
}

int cache_service_start(struct cache_service_group *group, int fd, const char *device_spec, char *const *read_dirs,
                        int nread, const struct temper_limits *limits, struct cache_service **out, char *msg,
                        size_t msg_size)
{
    *out = NULL;
    struct cache_service *s = calloc(1, sizeof(*s));
    if (!s || !(s->read_dirs = calloc((size_t)nread + 1, sizeof(char *)))) {
        free(s);
        return TEMPER_ENOMEM;
    }
    s->fd = fd;
    s->refs = 2;
    pthread_mutex_init(&s->lock, NULL);
    snprintf(s->device_spec, sizeof(s->device_spec), "%s", device_spec ? device_spec : "");
    s->limits = *limits;
    for (int i = 0; i < nread; i++)
        if ((s->read_dirs[s->nread] = strdup(read_dirs[i])))
            s->nread++;
    s->group = group;
    pthread_mutex_lock(&group->lock);
    group->running++;
    group->refs++;
    pthread_mutex_unlock(&group->lock);
    /* The thread frees s when the worker's side closes and its builds are done. */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int err = pthread_create(&s->thread, &attr, serve, s);
    pthread_attr_destroy(&attr);
    if (err) {
        pthread_mutex_lock(&group->lock);
        group->running--;
        group->refs--;
        pthread_mutex_unlock(&group->lock);
        s->refs = 1;
        s->fd = -1; /* the caller keeps (and closes) fd */
        service_release(s);
        return temper_fail(msg, msg_size, TEMPER_EIO, "cannot start the cache service thread: %s", strerror(err));
    }
    *out = s;
    return 0;
}

void cache_service_stop(struct cache_service *s)
{
    if (!s)
        return;
    shutdown(s->fd, SHUT_RDWR);
    service_release(s);
}

void cache_service_group_drain(struct cache_service_group *g, double timeout_s)
{
    if (!g)
        return;
    double until = temper_now_s() + timeout_s;
    pthread_mutex_lock(&g->lock);
    while (g->running > 0 && temper_now_s() < until) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&g->done, &g->lock, &ts);
    }
    pthread_mutex_unlock(&g->lock);
    group_release(g);
}
