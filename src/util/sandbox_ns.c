/* sandbox_ns.c: namespaces for a process that runs strangers' code (a worker): a user namespace
 * (its capabilities reach only its own namespaces, and are dropped once those are set up), a PID
 * namespace (nothing it starts outlives it; no process outside can be seen or signalled) and a
 * mount namespace (its own /proc, a private /dev/shm, the system read-only but for its scratch
 * folder, the caches and the store hidden). See sandbox.h. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "temper/error.h"
#include "util/sandbox.h"

#ifndef SECBIT_NOROOT
#define SECBIT_NOROOT (1 << 0)
#define SECBIT_NOROOT_LOCKED (1 << 1)
#define SECBIT_NO_SETUID_FIXUP (1 << 2)
#define SECBIT_NO_SETUID_FIXUP_LOCKED (1 << 3)
#define SECBIT_KEEP_CAPS_LOCKED (1 << 5)
#endif

static void ns_reason(struct temper_sandbox_status *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void ns_reason(struct temper_sandbox_status *st, const char *fmt, ...)
{
    size_t used = strlen(st->reason);
    if (used + 3 >= sizeof(st->reason))
        return;
    if (used) {
        memcpy(st->reason + used, "; ", 3);
        used += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->reason + used, sizeof(st->reason) - used, fmt, ap);
    va_end(ap);
}

/* Whether $TEMPER_SANDBOX leaves out the namespaces ("off", or a list naming "namespaces"). */
static int namespaces_left_out(void)
{
    const char *env = getenv("TEMPER_SANDBOX");
    if (!env || !*env)
        return 0;
    if (!strcmp(env, "off"))
        return 1;
    for (const char *p = env; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 10 && !strncmp(p, "namespaces", 10))
            return 1;
        p += len + (end != NULL);
    }
    return 0;
}

static int write_text(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    int e = errno;
    close(fd);
    errno = e;
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Waits for child and ends this process the way it ended: the same exit status, or the same
 * signal (a namespace's first process cannot be killed by its own signal, so it reports one as
 * 128 + the signal, and decode says to read it back). Never returns. */
static void exit_like(pid_t child, int decode)
{
    int status = 0;
    for (;;) {
        pid_t r = waitpid(-1, &status, 0);
        if (r == child)
            break;
        if (r < 0 && errno != EINTR)
            _exit(2);
    }
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 2;
    if (decode && !sig && code > 128 && code < 128 + 65)
        sig = code - 128;
    if (!sig)
        _exit(code);
    if (!decode)
        _exit(128 + sig); /* the namespace's first process: its parent reads it back */
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none); /* the worker's crash was reported; this one leaves no core */
    signal(sig, SIG_DFL);
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_UNBLOCK, &all, NULL);
    kill(getpid(), sig);
    _exit(128 + sig);
}

/* Whether path lies under (or is) dir. */
static int under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    return !strncmp(path, dir, n) && (path[n] == '/' || !path[n]);
}

/* The mount namespace's view: its own /proc (done by the caller), a private /dev/shm, hidden
 * folders, and the whole system read-only but for the write folders. */
static void set_up_mounts(const struct temper_sandbox_ns_config *cfg, struct temper_sandbox_status *st)
{
    if (cfg->shared_shm)
        ns_reason(st, "/dev/shm stays shared (for a profiler)");
    else if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"))
        ns_reason(st, "/dev/shm stays shared (%s)", strerror(errno));
    for (int i = 0; cfg->hide_dirs && cfg->hide_dirs[i]; i++) {
        const char *h = cfg->hide_dirs[i];
        struct stat sb;
        if (!*h || stat(h, &sb) || !S_ISDIR(sb.st_mode))
            continue;
        int holds = 0;
        for (int k = 0; cfg->write_dirs && cfg->write_dirs[k]; k++)
            holds |= *cfg->write_dirs[k] && under(cfg->write_dirs[k], h);
        for (int k = 0; cfg->keep_dirs && cfg->keep_dirs[k]; k++)
            holds |= *cfg->keep_dirs[k] && under(cfg->keep_dirs[k], h);
        if (holds) {
            ns_reason(st, "%s stays visible (it holds a folder the worker needs)", h);
            continue;
        }
        if (mount("tmpfs", h, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0555"))
            ns_reason(st, "%s could not be hidden (%s)", h, strerror(errno));
    }
    /* The system's password hashes, which no runtime reads: an empty file over each (what
     * Landlock also refuses, for where it is not). */
    static const char *const secrets[] = {"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", NULL};
    for (int i = 0; secrets[i]; i++)
        if (!access(secrets[i], F_OK) && mount("/dev/null", secrets[i], NULL, MS_BIND, NULL))
            ns_reason(st, "%s could not be hidden (%s)", secrets[i], strerror(errno));
    /* Each write folder its own mount (a bind onto itself), so that it can stay writable when
     * everything else becomes read-only. */
    for (int i = 0; cfg->write_dirs && cfg->write_dirs[i]; i++)
        if (*cfg->write_dirs[i] && mount(cfg->write_dirs[i], cfg->write_dirs[i], NULL, MS_BIND | MS_REC, NULL))
            ns_reason(st, "%s: bind: %s", cfg->write_dirs[i], strerror(errno));
#ifdef SYS_mount_setattr
    struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY};
    if (syscall(SYS_mount_setattr, AT_FDCWD, "/", AT_RECURSIVE, &ro, sizeof(ro))) {
        ns_reason(st, "the system stays writable in the mount namespace (mount_setattr: %s)", strerror(errno));
        return;
    }
    struct mount_attr rw = {.attr_clr = MOUNT_ATTR_RDONLY};
    const char *fixed[] = {"/proc", "/dev/shm", NULL};
    for (int i = 0; fixed[i]; i++)
        syscall(SYS_mount_setattr, AT_FDCWD, fixed[i], 0, &rw, sizeof(rw));
    for (int i = 0; cfg->write_dirs && cfg->write_dirs[i]; i++)
        if (*cfg->write_dirs[i] && syscall(SYS_mount_setattr, AT_FDCWD, cfg->write_dirs[i], 0, &rw, sizeof(rw)))
            ns_reason(st, "%s: stays read-only (%s)", cfg->write_dirs[i], strerror(errno));
    st->mount_ns = 1;
#else
    ns_reason(st, "the system stays writable in the mount namespace (no mount_setattr in this build)");
#endif
}

/* Drops every capability, for good: a process of uid 0 in its user namespace would otherwise get
 * them back on exec (securebits), and could undo its mounts with them. */
static int drop_capabilities(void)
{
    if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                                     SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED))
        return -1;
    for (int cap = 0; cap <= 63; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) && errno != EINVAL)
            return -1;
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    struct __user_cap_header_struct head = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof(data));
    return (int)syscall(SYS_capset, &head, data);
}

int temper_sandbox_namespaces(const struct temper_sandbox_ns_config *cfg, struct temper_sandbox_status *st)
{
    memset(st, 0, sizeof(*st));
    if (namespaces_left_out()) {
        ns_reason(st, "namespaces left out (TEMPER_SANDBOX)");
        return 0;
    }
    uid_t uid = geteuid();
    gid_t gid = getegid();
    int user = 1;
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID)) {
        int e = errno;
        user = 0;
        /* Root without user namespaces still has the other two. */
        if (uid != 0 || unshare(CLONE_NEWNS | CLONE_NEWPID)) {
            ns_reason(st, "no namespaces (unshare: %s; unprivileged user namespaces may be off): processes it "
                          "starts are killed with its process group, /proc is narrowed by Landlock",
                      strerror(e));
            return 0;
        }
    }
    if (user) {
        char map[64];
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
        int ok = !write_text("/proc/self/uid_map", map);
        write_text("/proc/self/setgroups", "deny\n");
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
        ok &= !write_text("/proc/self/gid_map", map);
        if (!ok)
            ns_reason(st, "the user namespace's id maps were refused (%s)", strerror(errno));
    }
    /* This process stays outside the PID namespace and only relays how the worker ends. */
    pid_t outer = getpid();
    pid_t first = fork();
    if (first < 0) {
        ns_reason(st, "no PID namespace (fork: %s)", strerror(errno));
        return 0;
    }
    if (first > 0) {
        for (int fd = 3; fd < 64; fd++)
            close(fd);
        exit_like(first, 1);
    }
    /* The namespace's first process: dies with the outer one (its parent, outside the namespace,
     * where getppid() cannot see it: had the outer one died before this call, the worker's
     * socket watcher ends it); everything in the namespace dies with it. */
    (void)outer;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
        ns_reason(st, "mounts stay shared (%s)", strerror(errno));
    else if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
        ns_reason(st, "no /proc of its own (%s)", strerror(errno));
    else
        st->proc_private = 1;
    set_up_mounts(cfg, st);
    pid_t worker = fork();
    if (worker < 0)
        _exit(2);
    if (worker > 0) {
        for (int fd = 3; fd < 64; fd++)
            close(fd);
        exit_like(worker, 0);
    }
    st->pid_ns = 1;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (drop_capabilities())
        ns_reason(st, "capabilities could not be dropped (%s)", strerror(errno));
    else
        st->user_ns = user;
    if (!user)
        ns_reason(st, "no user namespace (root without one: capabilities dropped)");
    return 0;
}

int temper_sandbox_env_allowed(const char *entry)
{
    /* What runtimes read: the loader's search path (and a profiler's preloaded library), the
     * OpenCL loader's vendor files, PoCL's and CUDA's settings, the sanitizers' options, and
     * temper's own settings for the worker. HOME, TMPDIR and the two kernel caches are the
     * worker's scratch folder, set by whoever starts it. */
    static const char *const names[] = {"PATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "HOME", "TMPDIR",
                                        "OCL_ICD_VENDORS", "OCL_ICD_FILENAMES", "OPENCL_VENDOR_PATH",
                                        "ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS",
                                        "TEMPER_SANDBOX", "TEMPER_SANDBOX_NETWORK", "TEMPER_FAULT", "TEMPER_FAULT_ONCE",
                                        "TEMPER_WORKER_STDERR", "TEMPER_EXPERT_TRACE", "TEMPER_EXPERT_LT_WORKSPACE_KIB",
                                        NULL};
    static const char *const prefixes[] = {"POCL_", "CUDA_", "NVIDIA_", "NV_", NULL};
    const char *eq = strchr(entry, '=');
    size_t len = eq ? (size_t)(eq - entry) : strlen(entry);
    for (int i = 0; names[i]; i++)
        if (strlen(names[i]) == len && !strncmp(entry, names[i], len))
            return 1;
    for (int i = 0; prefixes[i]; i++)
        if (len > strlen(prefixes[i]) && !strncmp(entry, prefixes[i], strlen(prefixes[i])))
            return 1;
    return 0;
}
