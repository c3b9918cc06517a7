/* reference.c: builds a task's trusted C reference with the system compiler into the build
 * cache (keyed by the source's hash and the compiler) and loads it with dlopen. The parent builds
 * it before a job goes to a worker, so that a worker whose device needs no program may refuse
 * exec; the worker only loads it (and builds it itself only where it was not built). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "temper/task.h"

#define REFERENCE_SOURCE_MAX (1u << 20)
#define COMPILER_LOG_MAX (64u << 10)

int temper_task_reference_build(const struct temper_task *task, char *so, size_t so_size, char *msg, size_t msg_size)
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
    char hex[17], tmp[TEMPER_PATH_MAX + 64], cache[TEMPER_PATH_MAX];
    temper_hash_hex(h, hex);
    snprintf(so, so_size, "%.3000s/ref/%s-%s.so", temper_cache_dir(cache, sizeof(cache)), task->name, hex);
    if (access(so, R_OK)) {
        char dir[TEMPER_PATH_MAX];
        temper_dirname(so, dir, sizeof(dir));
        temper_mkdirs(dir);
        snprintf(tmp, sizeof(tmp), "%s.tmp.%d", so, (int)getpid());
        char *argv[] = {(char *)cc, "-O2", "-std=gnu11", "-shared", "-fPIC", "-o", tmp,
                        (char *)task->reference, "-lm", NULL};
        struct temper_proc_result r;
        err = temper_proc_run(argv, 120, COMPILER_LOG_MAX, &r, msg, msg_size);
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
        if (rename(tmp, so)) {
            unlink(tmp);
            return temper_fail(msg, msg_size, TEMPER_EIO, "%s: cannot move the built reference into place", so);
        }
    }
    return 0;
}

int temper_task_reference(const struct temper_task *task, temper_reference_fn *fn, char *msg, size_t msg_size)
{
    char so[TEMPER_PATH_MAX];
    int err = temper_task_reference_build(task, so, sizeof(so), msg, msg_size);
    if (err)
        return err;
    void *lib = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return temper_fail(msg, msg_size, TEMPER_EIO, "%s: %s", so, dlerror());
    *(void **)fn = dlsym(lib, "reference");
    if (!*fn)
        return temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "%s: no function 'reference' in it", task->reference);
    return 0;
}
