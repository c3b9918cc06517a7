/* worker_spawn.c: finding and starting the temper-worker executable (a worker, a compile
 * process) with the environment it needs, and removing the scratch folders they leave. A child
 * gets only what its runtimes need (temper_sandbox_env_allowed), with HOME, TMPDIR and the kernel
 * caches of PoCL and CUDA inside its own scratch folder, which is also its working folder, so that
 * nothing it writes outlives it and no secret of the caller (a token in a variable) reaches it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "temper/eval.h"
#include "util/sandbox.h"
#include "util/util.h"
#include "worker_impl.h"

extern char **environ;

/* Variables the child gets from scratch, never from the caller. */
static int set_here(const char *entry)
{
    static const char *const names[] = {"HOME=", "TMPDIR=", "POCL_CACHE_DIR=", "CUDA_CACHE_PATH=", NULL};
    for (int i = 0; names[i]; i++)
        if (!strncmp(entry, names[i], strlen(names[i])))
            return 1;
    return 0;
}

char **worker_child_env(const char *scratch)
{
    size_t n = 0;
    for (char **e = environ; e && *e; e++)
        n++;
    char **env = calloc(n + 8, sizeof(*env));
    if (!env)
        return NULL;
    size_t k = 0;
    for (char **e = environ; e && *e; e++) {
        if (!temper_sandbox_env_allowed(*e) || set_here(*e))
            continue;
        if ((env[k] = strdup(*e)))
            k++;
    }
    if (scratch && *scratch) {
        const char *fmt[] = {"HOME=%s", "TMPDIR=%s", "POCL_CACHE_DIR=%s/pocl", "CUDA_CACHE_PATH=%s/nv", NULL};
        for (int i = 0; fmt[i]; i++) {
            size_t size = strlen(scratch) + 32;
            char *v = malloc(size);
            if (v) {
                snprintf(v, size, fmt[i], scratch);
                env[k++] = v;
            }
        }
    }
    env[k] = NULL;
    return env;
}

void worker_child_env_free(char **env)
{
    for (char **e = env; e && *e; e++)
        free(*e);
    free(env);
}

int temper_worker_path(char *out, size_t out_size, char *msg, size_t msg_size)
{
    const char *env = getenv("TEMPER_WORKER");
    if (env && *env) {
        if (access(env, X_OK))
            return temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "TEMPER_WORKER=%s: %s", env, strerror(errno));
        snprintf(out, out_size, "%s", env);
        return 0;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = 0;
            if (snprintf(out, out_size, "%s/temper-worker", self) < (int)out_size && !access(out, X_OK))
                return 0;
            /* An installed tree moved as a whole: PREFIX/bin/temper beside PREFIX/libexec. */
            if (snprintf(out, out_size, "%s/../libexec/temper/temper-worker", self) < (int)out_size &&
                !access(out, X_OK))
                return 0;
        }
    }
#ifdef TEMPER_WORKER_INSTALL_PATH
    if (!access(TEMPER_WORKER_INSTALL_PATH, X_OK)) {
        snprintf(out, out_size, "%s", TEMPER_WORKER_INSTALL_PATH);
        return 0;
    }
#define WORKER_INSTALLED_AT ", nor at " TEMPER_WORKER_INSTALL_PATH
#else
#define WORKER_INSTALLED_AT ""
#endif
    return temper_fail(msg, msg_size, TEMPER_ENOTFOUND,
                       "cannot find the worker executable temper-worker: TEMPER_WORKER is not set, and it is not "
                       "beside the running program, nor in ../libexec/temper from it%s",
                       WORKER_INSTALLED_AT);
}

int worker_spawn_exe(const char *exe, char *const argv[], const int *fds, int nfds, const char *scratch, pid_t *pid,
                     char *msg, size_t msg_size)
{
    /* Each descriptor is first copied above the ones it will take, so that no copy lands on a
     * descriptor still to be placed; copies are close-on-exec, and dup2 in the child clears it
     * on the ones placed. */
    int high[8];
    if (nfds > 8)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "too many descriptors for a worker");
    for (int i = 0; i < nfds; i++) {
        high[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 16);
        if (high[i] < 0) {
            int e = errno;
            while (i--)
                close(high[i]);
            return temper_fail(msg, msg_size, TEMPER_EIO, "dup: %s", strerror(e));
        }
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    /* A process group of its own: Ctrl-C at the terminal reaches the program, which stops what it
     * runs and keeps what it has, never the worker, whose death by that signal would read as a
     * crash of the candidate in flight. */
    temper_spawnattr_init(&attr);
    for (int i = 0; i < nfds; i++)
        posix_spawn_file_actions_adddup2(&fa, high[i], i);
    /* What runtimes print (PoCL's "1 error generated.") is not for the user: the build log and
     * the verdict carry it. TEMPER_WORKER_STDERR=1 keeps it, for debugging. */
    const char *keep = getenv("TEMPER_WORKER_STDERR");
    for (int i = nfds; i < 3; i++)
        if (i < 2 || !keep || strcmp(keep, "1"))
            posix_spawn_file_actions_addopen(&fa, i, "/dev/null", i ? O_WRONLY : O_RDONLY, 0);
    /* Its scratch folder is its working folder, and its environment only what it needs. */
    if (scratch && *scratch)
        posix_spawn_file_actions_addchdir_np(&fa, scratch);
    char **env = worker_child_env(scratch);
    int err = env ? posix_spawn(pid, exe, &fa, &attr, argv, env) : ENOMEM;
    worker_child_env_free(env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    for (int i = 0; i < nfds; i++)
        close(high[i]);
    if (err)
        return temper_fail(msg, msg_size, TEMPER_EIO, "cannot start %s: %s", exe, strerror(err));
    return 0;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

void worker_remove_tree(const char *path)
{
    nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Removes scratch folders of workers and compile processes whose parent died without cleaning up
 * (killed): named temper-worker-PID-* or temper-compile-PID-*, owned by this user, PID no longer
 * running. */
void worker_remove_stale_scratch(const char *tmp)
{
    DIR *d = opendir(tmp);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        char *end;
        /* A worker's, or a compile process's (cache_service.c). */
        size_t skip = !strncmp(e->d_name, "temper-worker-", 14) ? 14 : !strncmp(e->d_name, "temper-compile-", 15) ? 15 : 0;
        if (!skip)
            continue;
        long pid = strtol(e->d_name + skip, &end, 10);
        if (end == e->d_name + skip || *end != '-' || pid <= 0 || pid == (long)getpid())
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char path[PATH_MAX];
        struct stat st;
        if (snprintf(path, sizeof(path), "%s/%s", tmp, e->d_name) < (int)sizeof(path) && !lstat(path, &st) &&
            S_ISDIR(st.st_mode) && st.st_uid == geteuid())
            worker_remove_tree(path);
    }
    closedir(d);
}

/* The PoCL kernel cache of the calling program ($POCL_CACHE_DIR, else $XDG_CACHE_HOME/pocl, else
 * ~/.cache/pocl): one of the folders a worker's mount namespace hides. */
void worker_pocl_cache_of_caller(char *out, size_t size)
{
    const char *v = getenv("POCL_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (v && *v)
        snprintf(out, size, "%s", v);
    else if (xdg && *xdg)
        snprintf(out, size, "%s/pocl", xdg);
    else
        snprintf(out, size, "%s/.cache/pocl", home && *home ? home : "/nonexistent");
}

/* Resident bytes of pid and, a few generations down, what it started: the process the parent
 * starts waits outside the worker's PID namespace while the worker runs two generations below. */
static uint64_t resident_bytes_depth(pid_t pid, int depth)
{
    char path[96];
    snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    unsigned long long size = 0, rss = 0;
    int ok = fscanf(f, "%llu %llu", &size, &rss) == 2;
    fclose(f);
    uint64_t total = ok ? rss * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
    if (depth <= 0 || !(f = fopen(path, "r")))
        return total;
    long child;
    while (fscanf(f, "%ld", &child) == 1)
        total += resident_bytes_depth((pid_t)child, depth - 1);
    fclose(f);
    return total;
}

uint64_t worker_resident_bytes(pid_t pid)
{
    return resident_bytes_depth(pid, 3);
}

int worker_profiled(void)
{
    const char *net = getenv("TEMPER_SANDBOX_NETWORK");
    return net && !strcmp(net, "1");
}
