/* reference.c: builds a task's trusted C reference with the system compiler into the build cache
 * (keyed by the source's hash and the compiler), sealed, and loads it with dlopen. The calling
 * program builds it before a job goes to a worker (a worker runs no compiler and writes no
 * cache); a worker gets its checked bytes from the calling program and loads them from a private
 * copy. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/seal.h"
#include "task/task_torch.h"
#include "temper/task.h"
#include "util/util.h"

#define REFERENCE_SOURCE_MAX (1u << 20)
#define REFERENCE_SO_MAX (64u << 20)
#define COMPILER_LOG_MAX (64u << 10)

/* Set in a worker: where reference bytes come from. */
static struct temper_reference_remote remote;

/* A Python reference: where its outputs come from, the task of the function handed out last (a
 * worker holds one task at a time), and the last call's failure. */
static temper_python_compute_fn python_compute;
static const struct temper_task *python_task;
static char python_failure[2048];

int temper_task_reference_is_python(const struct temper_task *task)
{
    size_t n = strlen(task->reference);
    return n > 3 && !strcmp(task->reference + n - 3, ".py");
}

void temper_task_python_set_compute(temper_python_compute_fn fn)
{
    python_compute = fn;
}

int temper_task_reference_failed(char *msg, size_t msg_size)
{
    if (!python_failure[0])
        return 0;
    snprintf(msg, msg_size, "%s", python_failure);
    python_failure[0] = 0;
    return 1;
}

void temper_task_shape_of_scalars(const struct temper_task *task, const long long *scalars, struct temper_shape *shape)
{
    memset(shape, 0, sizeof(*shape));
    for (int i = 0, k = 0; i < task->nargs && shape->n < TEMPER_MAX_SIZES; i++)
        if (task->args[i].role == TEMPER_ROLE_SCALAR) {
            snprintf(shape->names[shape->n], sizeof(shape->names[0]), "%s", task->args[i].name);
            shape->values[shape->n++] = scalars[k++];
        }
}

/* The function a Python reference's task gets: the outputs come from the compute hook; a failure
 * leaves them NaN and its message for temper_task_reference_failed. */
static void python_reference(double **out, const double **in, const long long *scalars)
{
    python_failure[0] = 0;
    if (!python_compute || !python_task)
        snprintf(python_failure, sizeof(python_failure), "no way to run a Python reference in this process");
    else
        python_compute(python_task, out, in, scalars, python_failure, sizeof(python_failure));
}

void temper_task_reference_set_remote(const struct temper_reference_remote *r)
{
    memset(&remote, 0, sizeof(remote));
    if (r)
        remote = *r;
}

/* The cache path of task's reference and the name its seal binds ("NAME-HASH"). */
static int reference_path(const struct temper_task *task, char *so, size_t so_size, char *name, size_t name_size,
                          char *msg, size_t msg_size)
{
    /* The name becomes part of a path in the cache: only a validated name may (no '/', no '..'). */
    if (!temper_task_name_ok(task->name))
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "'%s' is not a valid task name (a-z, 0-9 and _)",
                           task->name);
    char *src;
    size_t len;
    int err = temper_read_file(task->reference, REFERENCE_SOURCE_MAX, &src, &len, msg, msg_size);
    if (err)
        return err;
    const char *cc = getenv("CC");
    if (!cc || !*cc)
        cc = "cc";
    uint64_t h = temper_hash64(src, len, temper_hash64(cc, strlen(cc), 1));
    free(src);
    char hex[17], cache[TEMPER_PATH_MAX];
    temper_hash_hex(h, hex);
    snprintf(name, name_size, "%s-%s", task->name, hex);
    snprintf(so, so_size, "%.3000s/ref/%s.so", temper_cache_dir(cache, sizeof(cache)), name);
    return 0;
}

/* Compiles the reference into so, sealed under name. */
static int compile_reference(const struct temper_task *task, const char *so, const char *name, char *msg,
                             size_t msg_size)
{
    const char *cc = getenv("CC");
    if (!cc || !*cc)
        cc = "cc";
    char dir[TEMPER_PATH_MAX], tmp[TEMPER_PATH_MAX + 64];
    temper_dirname(so, dir, sizeof(dir));
    temper_mkdirs(dir);
    snprintf(tmp, sizeof(tmp), "%s.build.%d", so, (int)getpid());
    char *argv[] = {(char *)cc, "-O2", "-std=gnu11", "-shared", "-fPIC", "-o", tmp, (char *)task->reference, "-lm", NULL};
    struct temper_proc_result r;
    int err = temper_proc_run(argv, 120, COMPILER_LOG_MAX, &r, msg, msg_size);
    if (err)
        return err;
    if (r.exit_code != 0) {
        err = temper_fail(msg, msg_size, TEMPER_ECOMPILE, "%s: the reference does not compile with %s:\n%s",
                          task->reference, cc, r.output ? r.output : "");
        free(r.output);
        unlink(tmp);
        return err;
    }
    free(r.output);
    char *bytes;
    size_t n;
    err = temper_read_file(tmp, REFERENCE_SO_MAX, &bytes, &n, msg, msg_size);
    unlink(tmp);
    if (err)
        return err;
    err = temper_seal_write(so, "reference", name, bytes, n, msg, msg_size);
    free(bytes);
    return err;
}

/* Builds (when absent or its seal fails) and, if data is not NULL, returns the checked bytes. */
static int reference_get(const struct temper_task *task, char *so, size_t so_size, void **data, size_t *size,
                         char *msg, size_t msg_size)
{
    char name[TEMPER_NAME_MAX + 32];
    int err = reference_path(task, so, so_size, name, sizeof(name), msg, msg_size);
    if (err)
        return err;
    void *bytes = NULL;
    size_t n = 0;
    err = temper_seal_read(so, "reference", name, REFERENCE_SO_MAX, &bytes, &n, NULL, 0);
    if (err) {
        /* Missing, or not what this user's temper wrote (a worker elsewhere, another program):
         * built again, never loaded. */
        if ((err = compile_reference(task, so, name, msg, msg_size)))
            return err;
        if ((err = temper_seal_read(so, "reference", name, REFERENCE_SO_MAX, &bytes, &n, msg, msg_size)))
            return err;
    }
    if (data) {
        *data = bytes;
        *size = n;
    } else {
        free(bytes);
    }
    return 0;
}

int temper_task_reference_build(const struct temper_task *task, char *so, size_t so_size, char *msg, size_t msg_size)
{
    /* A Python reference is not built: the calling program runs it when a worker asks. */
    if (temper_task_reference_is_python(task)) {
        snprintf(so, so_size, "%s", task->reference);
        return 0;
    }
    return reference_get(task, so, so_size, NULL, NULL, msg, msg_size);
}

int temper_task_reference_bytes(const struct temper_task *task, void **data, size_t *size, char *msg, size_t msg_size)
{
    if (temper_task_reference_is_python(task))
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s: a Python reference has no shared object",
                           task->reference);
    char so[TEMPER_PATH_MAX];
    return reference_get(task, so, sizeof(so), data, size, msg, msg_size);
}

int temper_task_reference(const struct temper_task *task, temper_reference_fn *fn, char *msg, size_t msg_size)
{
    if (temper_task_reference_is_python(task)) {
        python_task = task;
        *fn = python_reference;
        return 0;
    }
    void *bytes = NULL;
    size_t n = 0;
    int err = remote.fetch ? remote.fetch(remote.user, task, &bytes, &n, msg, msg_size)
                           : temper_task_reference_bytes(task, &bytes, &n, msg, msg_size);
    if (err)
        return err;
    /* A private copy in this process's temporary folder (a worker's scratch folder), loaded and
     * then removed: the loaded bytes are the checked ones. */
    const char *tmpdir = getenv("TMPDIR");
    char path[TEMPER_PATH_MAX];
    snprintf(path, sizeof(path), "%.3000s/temper-ref-%s-XXXXXX.so", tmpdir && *tmpdir ? tmpdir : "/tmp", task->name);
    int fd = mkstemps(path, 3);
    int ok = fd >= 0 && write(fd, bytes, n) == (ssize_t)n;
    int e = errno;
    if (fd >= 0)
        ok &= close(fd) == 0;
    free(bytes);
    if (!ok) {
        if (fd >= 0)
            unlink(path);
        return temper_fail(msg, msg_size, TEMPER_EIO, "%s: cannot write the reference's private copy: %s", path,
                           strerror(e));
    }
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    unlink(path);
    if (!lib)
        return temper_fail(msg, msg_size, TEMPER_EIO, "%s: %s", task->reference, dlerror());
    *(void **)fn = dlsym(lib, "reference");
    if (!*fn)
        return temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "%s: no function 'reference' in it", task->reference);
    return 0;
}
