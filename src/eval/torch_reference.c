/* torch_reference.c: runs a task's PyTorch reference for the calling program (torch_reference.h).
 * The interpreter is $TEMPER_PYTHON (default python3 on the PATH); it runs as `temper-worker python`,
 * which confines it before it starts (namespaces, seccomp, Landlock: it reads the system, the
 * Python environment, temper's helper and the task; it writes only a scratch folder; no network),
 * so a task's program gets no more than a compile process. References are computed by one such
 * process serving a task's requests on a socket (its descriptors 0 and 1); an import is one process
 * of its own, its request and answer in memfds. Standard error goes to a memfd, whose tail says
 * what a crash printed. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "task/task_torch.h"
#include "torch_reference.h"
#include "util/seal.h"
#include "util/util.h"
#include "worker_impl.h"

#define PY_OUTPUT_MAX (1u << 30)
#define PY_STDERR_SHOWN 1500
#define IMPORT_TIMEOUT_S 300

/* The interpreter: its real file (the one exec may run) and the folders it reads from. */
struct python_info {
    char exe[PATH_MAX];     /* sys.executable: a virtual environment's is a link it is started by */
    char dirs[3][PATH_MAX]; /* sys.prefix, sys.base_prefix, the real file's prefix */
};

/* The facts of the interpreter TEMPER_PYTHON named when they were last asked (info_py), kept so that
 * each start of an interpreter does not first run it once more to ask; under info_lock. */
static pthread_mutex_t info_lock = PTHREAD_MUTEX_INITIALIZER;
static struct python_info info_kept;
static char info_py[PATH_MAX];

/* Asks the configured interpreter where it lives (it runs no task code for that). */
static int python_info(struct python_info *pi, char *msg, size_t msg_size)
{
    const char *py = getenv("TEMPER_PYTHON");
    py = py && *py ? py : "python3";
    char *argv[] = {(char *)py, "-I", "-c",
                    "import os, sys; print(sys.executable); print(sys.prefix); print(sys.base_prefix)",
                    NULL};
    struct temper_proc_result r;
    int err = temper_proc_run(argv, 60, 1 << 16, &r, msg, msg_size);
    if (err)
        return temper_fail(msg, msg_size, err, "cannot run the Python interpreter %s (TEMPER_PYTHON): %s", py, msg);
    memset(pi, 0, sizeof(*pi));
    char *save = NULL, *line = r.exit_code == 0 && r.output ? strtok_r(r.output, "\n", &save) : NULL;
    for (int i = 0; line && i < 3; i++, line = strtok_r(NULL, "\n", &save))
        snprintf(i ? pi->dirs[i - 1] : pi->exe, PATH_MAX, "%s", line);
    free(r.output);
    if (!pi->exe[0] || !pi->dirs[1][0])
        return temper_fail(msg, msg_size, TEMPER_EIO, "the Python interpreter %s (TEMPER_PYTHON) did not say where "
                           "it lives", py);
    char up[PATH_MAX], real[PATH_MAX];
    temper_dirname(realpath(pi->exe, real) ? real : pi->exe, up, sizeof(up));
    temper_dirname(up, pi->dirs[2], sizeof(pi->dirs[2]));
    return 0;
}

/* What every run of the interpreter needs: the configured interpreter's facts (python_info, asked
 * once per interpreter named) and temper's helper, python/temper_torch.py beside temper-worker (the build folder, or
 * PREFIX/libexec/temper in an install), into out. */
static int python_and_helper(struct python_info *pi, char *out, size_t size, char *msg, size_t msg_size)
{
    const char *py = getenv("TEMPER_PYTHON");
    py = py && *py ? py : "python3";
    int err = 0;
    pthread_mutex_lock(&info_lock);
    if (!info_py[0] || strcmp(info_py, py)) {
        err = python_info(&info_kept, msg, msg_size);
        snprintf(info_py, sizeof(info_py), "%s", err ? "" : py);
    }
    if (!err)
        *pi = info_kept;
    pthread_mutex_unlock(&info_lock);
    if (err)
        return err;
    char exe[PATH_MAX], dir[PATH_MAX];
    err = temper_worker_path(exe, sizeof(exe), msg, msg_size);
    if (err)
        return err;
    temper_dirname(exe, dir, sizeof(dir));
    if (snprintf(out, size, "%.3900s/python/temper_torch.py", dir) >= (int)size)
        return temper_fail(msg, msg_size, TEMPER_ERANGE, "%s: the path is too long", dir);
    if (access(out, R_OK))
        return temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "%s: temper's PyTorch helper is missing: %s", out,
                           strerror(errno));
    return 0;
}

/* The whole of a memfd, NUL-terminated (caller frees); NULL when it cannot be read. */
static char *memfd_all(int fd, size_t max, size_t *len)
{
    off_t size = lseek(fd, 0, SEEK_END);
    if (size < 0 || (size_t)size > max)
        return NULL;
    char *data = malloc((size_t)size + 1);
    if (data && pread(fd, data, (size_t)size, 0) != (ssize_t)size) {
        free(data);
        return NULL;
    }
    if (data)
        data[size] = 0;
    *len = (size_t)size;
    return data;
}

/* Waits for pid until timeout_s, killing it past that; its wait status, or -1 when it was killed
 * for the time. */
static int wait_limited(pid_t pid, double timeout_s)
{
    double until = temper_now_s() + timeout_s;
    for (;;) {
        int st = 0;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        if (r < 0 && errno != EINTR)
            return st;
        if (temper_now_s() > until) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
            return -1;
        }
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
}

/* The process's answer, or a message saying how it ended. */
struct py_run {
    char *out;     /* standard output (owned) */
    size_t out_len;
    char *err;     /* standard error (owned) */
    size_t err_len;
    int status;    /* wait status; -1: killed for the time */
};

/* Builds the confined process's argument list into argv (strings in the caller's arrays). */
static int python_argv(const struct python_info *pi, const char *scratch, const char *task_dir, const char *helper,
                       char *const *args, char **argv, char hides[4][PATH_MAX], char *exe, size_t exe_size,
                       char *msg, size_t msg_size)
{
    int err = temper_worker_path(exe, exe_size, msg, msg_size);
    if (err)
        return err;
    char *helper_dir = hides[3]; /* the caller's storage, like the folders hidden */
    temper_dirname(helper, helper_dir, PATH_MAX);
    temper_cache_dir(hides[0], PATH_MAX);
    temper_home_dir(hides[1], PATH_MAX);
    const char *home = getenv("HOME");
    snprintf(hides[2], PATH_MAX, "%s", home && *home ? home : "");
    int n = 0;
    argv[n++] = exe;
    argv[n++] = "python";
    argv[n++] = (char *)scratch;
    argv[n++] = (char *)pi->exe;
    for (int i = 0; i < 3; i++)
        argv[n++] = (char *)pi->dirs[i];
    argv[n++] = helper_dir;
    argv[n++] = (char *)task_dir;
    argv[n++] = "--hide";
    for (int i = 0; i < 3; i++)
        if (hides[i][0])
            argv[n++] = hides[i];
    argv[n++] = "--";
    argv[n++] = (char *)helper;
    for (int i = 0; args[i] && n < 30; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return 0;
}

/* Runs the helper with args, confined, reading task_dir, with in on its standard input. */
static int python_run(const char *task_dir, char *const *args, const void *in, size_t in_len, double timeout_s,
                      struct py_run *r, char *msg, size_t msg_size)
{
    memset(r, 0, sizeof(*r));
    struct python_info pi;
    char helper[PATH_MAX];
    int err = python_and_helper(&pi, helper, sizeof(helper), msg, msg_size);
    if (err)
        return err;
    const char *tmp = getenv("TMPDIR");
    char scratch[PATH_MAX], exe[PATH_MAX], hides[4][PATH_MAX];
    snprintf(scratch, sizeof(scratch), "%s/temper-compile-%d-XXXXXX", tmp && *tmp ? tmp : "/tmp", (int)getpid());
    if (!mkdtemp(scratch))
        return temper_fail(msg, msg_size, TEMPER_EIO, "%s: %s", scratch, strerror(errno));
    char *argv[32];
    int fds[3] = {memfd_create("temper-py-in", MFD_CLOEXEC), memfd_create("temper-py-out", MFD_CLOEXEC),
                  memfd_create("temper-py-err", MFD_CLOEXEC)};
    int ok = fds[0] >= 0 && fds[1] >= 0 && fds[2] >= 0 &&
             (in_len == 0 || write(fds[0], in, in_len) == (ssize_t)in_len) && lseek(fds[0], 0, SEEK_SET) == 0;
    pid_t pid = 0;
    if (!ok)
        err = temper_fail(msg, msg_size, TEMPER_EIO, "cannot hand the request to the Python reference");
    else if (!(err = python_argv(&pi, scratch, task_dir, helper, args, argv, hides, exe, sizeof(exe), msg, msg_size)))
        err = worker_spawn_exe(exe, argv, fds, 3, scratch, &pid, msg, msg_size);
    if (!err) {
        r->status = wait_limited(pid, timeout_s);
        r->out = memfd_all(fds[1], PY_OUTPUT_MAX, &r->out_len);
        r->err = memfd_all(fds[2], 1 << 24, &r->err_len);
    }
    for (int i = 0; i < 3; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    worker_remove_tree(scratch);
    return err;
}

static void py_run_free(struct py_run *r)
{
    free(r->out);
    free(r->err);
}

/* What a run that gave no answer did: the limit, the signal or the exit status, and stderr's tail. */
static int py_failed(const char *what, const struct py_run *r, double timeout_s, char *msg, size_t msg_size)
{
    const char *tail = r->err ? r->err + (r->err_len > PY_STDERR_SHOWN ? r->err_len - PY_STDERR_SHOWN : 0) : "";
    if (r->status == -1)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s ran past its limit of %.0f s and was killed", what,
                           timeout_s);
    if (WIFSIGNALED(r->status))
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s crashed (signal %d, %s)%s%s", what,
                           WTERMSIG(r->status), strsignal(WTERMSIG(r->status)), *tail ? ":\n" : "", tail);
    return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s failed (exit status %d)%s%s", what,
                       WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1, *tail ? ":\n" : "", tail);
}

/* The first line of a run's output as JSON, and where the bytes after it start. */
static json_t *first_line(const struct py_run *r, size_t *rest)
{
    char *nl = r->out ? memchr(r->out, '\n', r->out_len) : NULL;
    if (!nl)
        return NULL;
    *rest = (size_t)(nl - r->out) + 1;
    return json_loadb(r->out, *rest - 1, 0, NULL);
}

int torch_import(const char *kind, const char *file, int level, json_t **result, char *msg, size_t msg_size)
{
    *result = NULL;
    char real[PATH_MAX], dir[PATH_MAX], lv[16];
    if (!realpath(file, real))
        return temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "%s: %s", file, strerror(errno));
    temper_dirname(real, dir, sizeof(dir));
    snprintf(lv, sizeof(lv), "%d", level);
    char *args[] = {"import", (char *)kind, real, lv, NULL};
    struct py_run r;
    int err = python_run(dir, args, NULL, 0, IMPORT_TIMEOUT_S, &r, msg, msg_size);
    if (err)
        return err;
    size_t rest = 0;
    json_t *j = r.status == 0 ? first_line(&r, &rest) : NULL;
    if (!j) {
        char what[PATH_MAX + 64];
        snprintf(what, sizeof(what), "importing %s", file);
        err = py_failed(what, &r, IMPORT_TIMEOUT_S, msg, msg_size);
    }
    py_run_free(&r);
    *result = j;
    return err;
}

/* The request's first line: the task, the scalars by name, each input's shape and each output's
 * elements (the inputs' doubles follow it). */
static char *request_line(const struct temper_task *task, const struct temper_shape *shape, size_t inputs_len,
                          size_t *want_out, char *msg, size_t msg_size)
{
    json_t *sc = json_object(), *ins = json_array(), *outs = json_array();
    *want_out = 0;
    for (int i = 0; i < task->nargs; i++) {
        const struct temper_task_arg *a = &task->args[i];
        int64_t v = 0, n = 0;
        if (a->role == TEMPER_ROLE_SCALAR) {
            temper_shape_eval(shape, a->name, &v, msg, msg_size);
            json_object_set_new(sc, a->name, json_integer(v));
            continue;
        }
        json_t *dims = json_array();
        for (int d = 0; d < a->ndim; d++) {
            temper_shape_eval(shape, a->shape[d], &v, msg, msg_size);
            json_array_append_new(dims, json_integer(v));
        }
        temper_task_arg_elems(task, i, shape, &n, msg, msg_size);
        json_t *o = json_pack("{s:s, s:s, s:o, s:I}", "name", a->name, "dtype", temper_dtype_name(a->dtype), "shape",
                              dims, "elements", (json_int_t)n);
        json_array_append_new(a->role == TEMPER_ROLE_INPUT ? ins : outs, o);
        if (a->role == TEMPER_ROLE_OUTPUT)
            *want_out += (size_t)n * sizeof(double);
    }
    json_t *req = json_pack("{s:s, s:s, s:o, s:o, s:o, s:I}", "task_dir", task->dir, "reference", task->reference,
                            "scalars", sc, "inputs", ins, "outputs", outs, "bytes", (json_int_t)inputs_len);
    char *line = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    return line;
}

/* Where the outputs for these inputs are cached, and the name their seal binds. */
static int cache_path(const struct temper_task *task, const long long *scalars, int nscalars, const void *inputs,
                      size_t len, char *path, size_t path_size, char *name, size_t name_size, char *msg,
                      size_t msg_size)
{
    char content[17], hex[17], cache[PATH_MAX];
    int err = temper_task_content_hash(task, content, msg, msg_size);
    if (err)
        return err;
    uint64_t h = temper_hash64(content, 16, 30);
    h = temper_hash64(scalars, (size_t)nscalars * sizeof(*scalars), h);
    temper_hash_hex(temper_hash64(inputs, len, h), hex);
    snprintf(name, name_size, "%s-%s", task->name, hex);
    snprintf(path, path_size, "%.3000s/ref/torch/%s.bin", temper_cache_dir(cache, sizeof(cache)), name);
    return 0;
}

/* The interpreter that serves references: one at a time in this program, for one task folder (the
 * only task it can read), started again for another task or after a fault. It imports torch once
 * for all of a task's shapes and seeds, where a process per request would pay that every time. */
static struct {
    pid_t pid;               /* 0: none running */
    int sock;                /* its standard input and output (one end of a socket pair) */
    int err;                 /* its standard error (a memfd), for what a crash printed */
    char task_dir[PATH_MAX]; /* the task it reads */
    char scratch[PATH_MAX];  /* its scratch folder */
} srv = {0, -1, -1, "", ""};
static pthread_mutex_t srv_lock = PTHREAD_MUTEX_INITIALIZER;

/* Stops the server, killing it if it still runs; *r gets its wait status and standard error. */
static void server_stop(struct py_run *r)
{
    if (r)
        memset(r, 0, sizeof(*r));
    if (srv.sock >= 0)
        close(srv.sock);
    if (srv.pid) {
        int st = 0;
        /* Given a moment to end by itself (a crash is already over), then killed. */
        st = wait_limited(srv.pid, 2.0);
        if (r)
            r->status = st;
    }
    if (r && srv.err >= 0)
        r->err = memfd_all(srv.err, 1 << 24, &r->err_len);
    if (srv.err >= 0)
        close(srv.err);
    if (srv.scratch[0])
        worker_remove_tree(srv.scratch);
    srv.pid = 0;
    srv.sock = srv.err = -1;
    srv.task_dir[0] = srv.scratch[0] = 0;
}

static void server_atexit(void)
{
    pthread_mutex_lock(&srv_lock);
    server_stop(NULL);
    pthread_mutex_unlock(&srv_lock);
}

/* Starts the server for task_dir. */
static int server_start(const char *task_dir, char *msg, size_t msg_size)
{
    static int registered;
    if (!registered++)
        atexit(server_atexit);
    struct python_info pi;
    char helper[PATH_MAX], exe[PATH_MAX], hides[4][PATH_MAX];
    int err = python_and_helper(&pi, helper, sizeof(helper), msg, msg_size);
    if (err)
        return err;
    const char *tmp = getenv("TMPDIR");
    snprintf(srv.scratch, sizeof(srv.scratch), "%s/temper-compile-%d-XXXXXX", tmp && *tmp ? tmp : "/tmp",
             (int)getpid());
    if (!mkdtemp(srv.scratch)) {
        srv.scratch[0] = 0;
        return temper_fail(msg, msg_size, TEMPER_EIO, "%s: %s", srv.scratch, strerror(errno));
    }
    int sv[2] = {-1, -1};
    srv.err = memfd_create("temper-py-err", MFD_CLOEXEC);
    char *args[] = {"serve", NULL}, *argv[32];
    if (srv.err < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
        err = temper_fail(msg, msg_size, TEMPER_EIO, "cannot start the Python reference: %s", strerror(errno));
    else if (!(err = python_argv(&pi, srv.scratch, task_dir, helper, args, argv, hides, exe, sizeof(exe), msg,
                                 msg_size))) {
        int fds[3] = {sv[1], sv[1], srv.err};
        err = worker_spawn_exe(exe, argv, fds, 3, srv.scratch, &srv.pid, msg, msg_size);
    }
    if (sv[1] >= 0)
        close(sv[1]);
    srv.sock = sv[0];
    snprintf(srv.task_dir, sizeof(srv.task_dir), "%s", task_dir);
    if (err)
        server_stop(NULL);
    return err;
}

/* Sends or receives n bytes by the deadline; 0, or -1 (the server closed, or time ran out). */
static int transfer(int out, void *data, size_t n, double deadline)
{
    for (size_t done = 0; done < n;) {
        struct pollfd p = {srv.sock, out ? POLLOUT : POLLIN, 0};
        int ms = (int)((deadline - temper_now_s()) * 1e3);
        if (ms <= 0 || poll(&p, 1, ms) <= 0)
            return -1;
        ssize_t k = out ? send(srv.sock, (char *)data + done, n - done, MSG_NOSIGNAL)
                        : recv(srv.sock, (char *)data + done, n - done, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        done += (size_t)k;
    }
    return 0;
}

/* The answer's first line, read byte by byte (it is short) by the deadline. */
static json_t *answer_line(double deadline)
{
    char line[8192];
    size_t n = 0;
    while (n < sizeof(line) - 1 && !transfer(0, line + n, 1, deadline))
        if (line[n++] == '\n')
            return json_loadb(line, n - 1, 0, NULL);
    return NULL;
}

/* One request to the server; *out gets the outputs' bytes. Holds srv_lock. */
static int server_call(const struct temper_task *task, const char *line, const void *inputs, size_t len, size_t want,
                       double timeout_s, void **out, char *msg, size_t msg_size)
{
    if (srv.pid && strcmp(srv.task_dir, task->dir))
        server_stop(NULL);
    int err = srv.pid ? 0 : server_start(task->dir, msg, msg_size);
    if (err)
        return err;
    double deadline = temper_now_s() + timeout_s;
    size_t ll = strlen(line);
    json_t *head = NULL;
    if (!transfer(1, (void *)line, ll, deadline) && !transfer(1, "\n", 1, deadline) &&
        !transfer(1, (void *)inputs, len, deadline))
        head = answer_line(deadline);
    const char *fault = json_string_value(json_object_get(head, "error"));
    json_int_t got = json_integer_value(json_object_get(head, "bytes"));
    if (fault)
        err = temper_fail(msg, msg_size, TEMPER_EINVALID, "%s", fault);
    else if (head && (size_t)got != want)
        err = temper_fail(msg, msg_size, TEMPER_EINVALID, "the Python reference gave %lld bytes of outputs, not %zu",
                          (long long)got, want);
    else if (head && !(*out = malloc(want ? want : 1)))
        err = TEMPER_ENOMEM;
    else if (!head || transfer(0, *out, want, deadline)) {
        struct py_run r;
        int timed_out = temper_now_s() >= deadline;
        server_stop(&r);
        if (timed_out)
            r.status = -1;
        err = py_failed("the Python reference", &r, timeout_s, msg, msg_size);
        py_run_free(&r);
    }
    if (err) {
        free(*out);
        *out = NULL;
    }
    json_decref(head);
    return err;
}

int torch_reference_compute(const struct temper_task *task, const long long *scalars, const void *inputs,
                            size_t inputs_len, double timeout_s, void **out, size_t *out_len, char *msg,
                            size_t msg_size)
{
    *out = NULL;
    *out_len = 0;
    struct temper_shape shape;
    temper_task_shape_of_scalars(task, scalars, &shape);
    size_t want = 0, in_want = 0;
    for (int i = 0; i < task->nargs; i++) {
        int64_t n = 0;
        if (task->args[i].role == TEMPER_ROLE_INPUT && !temper_task_arg_elems(task, i, &shape, &n, msg, msg_size))
            in_want += (size_t)n * sizeof(double);
    }
    /* The worker's word is checked: inputs of another size are refused, never computed on. */
    if (in_want != inputs_len)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "the worker handed over %zu bytes of inputs for task %s, "
                           "not the %zu its shape gives", inputs_len, task->name, in_want);
    char *line = request_line(task, &shape, inputs_len, &want, msg, msg_size);
    if (!line)
        return TEMPER_ENOMEM;
    char path[PATH_MAX], name[TEMPER_NAME_MAX + 32], dir[PATH_MAX];
    int err = cache_path(task, scalars, shape.n, inputs, inputs_len, path, sizeof(path), name, sizeof(name), msg,
                         msg_size);
    size_t n = 0;
    if (!err && !temper_seal_read(path, "torch-reference", name, want + 1, out, &n, NULL, 0) && n == want) {
        *out_len = n;
        free(line);
        return 0;
    }
    free(*out);
    *out = NULL;
    if (!err) {
        pthread_mutex_lock(&srv_lock);
        err = server_call(task, line, inputs, inputs_len, want, timeout_s, out, msg, msg_size);
        pthread_mutex_unlock(&srv_lock);
    }
    if (!err) {
        *out_len = want;
        temper_dirname(path, dir, sizeof(dir));
        temper_mkdirs(dir);
        char ignored[256];
        temper_seal_write(path, "torch-reference", name, *out, want, ignored, sizeof(ignored));
    }
    free(line);
    return err;
}
