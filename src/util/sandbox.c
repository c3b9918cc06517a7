/* sandbox.c: confines the calling process (a worker or a compile process) with no_new_privs,
 * resource limits, a seccomp filter and, where the kernel offers it, a Landlock ruleset. See
 * sandbox.h for what each part allows; sandbox_ns.c makes the namespaces. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "temper/error.h"
#include "util/sandbox.h"

#if defined(__x86_64__)
#define SANDBOX_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SANDBOX_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

int temper_landlock_abi(void)
{
#ifdef SYS_landlock_create_ruleset
    long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return v > 0 ? (int)v : 0;
#else
    return 0;
#endif
}

static void add_reason(struct temper_sandbox_status *st, const char *text)
{
    size_t used = strlen(st->reason);
    snprintf(st->reason + used, sizeof(st->reason) - used, "%s%s", used ? "; " : "", text);
}

/* ---- seccomp ---- */

#ifdef SANDBOX_AUDIT_ARCH
#define LOAD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define LOAD_ARG0 BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]))
/* The upper half of the first argument (little-endian: the word after the lower one). */
#define LOAD_ARG0_HI BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]) + 4)
#define ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define DENY(e) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))

/* Appends to f (at *n) the instructions that refuse exec and new processes (threads stay allowed);
 * the accumulator holds the system call number. */
static void put_exec_rules(struct sock_filter *f, int *np)
{
    int n = *np;
#define PUT(x) (f[n++] = (struct sock_filter)x)
    PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execve, 0, 1));
    PUT(DENY(EPERM));
    PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execveat, 0, 1));
    PUT(DENY(EPERM));
#ifdef SYS_fork
    PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fork, 0, 1));
    PUT(DENY(EPERM));
#endif
#ifdef SYS_vfork
    PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_vfork, 0, 1));
    PUT(DENY(EPERM));
#endif
    /* clone3 passes its flags in memory the filter cannot read: ENOSYS makes the C library
     * fall back to clone, whose flags it can. Threads are allowed, new processes not. */
#ifdef SYS_clone3
    PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1));
    PUT(DENY(ENOSYS));
#endif
    PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4));
    PUT(LOAD_ARG0);
    PUT(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1));
    PUT(ALLOW);
    PUT(DENY(EPERM));
#undef PUT
    *np = n;
}

/* Namespace flags of clone and unshare: a process in its own namespaces makes no new ones (in a
 * user namespace of its own it would get capabilities back there). */
#define CLONE_NEW_ANY                                                                                             \
    (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET)

/* Appends the rules that keep signals to the process itself: kill, tgkill and rt_(tg)sigqueueinfo
 * only with its own pid as the first argument (self, as this process sees pids), tkill and pidfd
 * signals never; and no new session or process group, so what it starts stays in its group. */
static void put_signal_rules(struct sock_filter *f, int *np, pid_t self)
{
    int n = *np;
    static const int by_pid[] = {SYS_kill, SYS_tgkill, SYS_rt_sigqueueinfo, SYS_rt_tgsigqueueinfo};
    for (int i = 0; i < 4; i++) {
        /* if nr == this: load arg0; low word == self and high word == 0: allow; else deny. */
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)by_pid[i], 0, 6);
        f[n++] = (struct sock_filter)LOAD_ARG0;
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)self, 0, 3);
        f[n++] = (struct sock_filter)LOAD_ARG0_HI;
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1);
        f[n++] = (struct sock_filter)ALLOW;
        f[n++] = (struct sock_filter)DENY(EPERM);
    }
    static const int never[] = {SYS_tkill, SYS_setsid, SYS_setpgid,
#ifdef SYS_pidfd_send_signal
                                SYS_pidfd_send_signal,
#endif
#ifdef SYS_pidfd_open
                                SYS_pidfd_open,
#endif
#ifdef SYS_pidfd_getfd
                                SYS_pidfd_getfd,
#endif
                                -1};
    for (int i = 0; never[i] >= 0; i++) {
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)never[i], 0, 1);
        f[n++] = (struct sock_filter)DENY(EPERM);
    }
    *np = n;
}

/* Appends the rules that keep mounts and namespaces as they were set up: mounting, unmounting,
 * new namespaces, joining others. The accumulator holds the system call number. */
static void put_mount_rules(struct sock_filter *f, int *np)
{
    int n = *np;
    static const int never[] = {SYS_mount, SYS_umount2, SYS_pivot_root, SYS_chroot, SYS_setns, SYS_unshare,
#ifdef SYS_mount_setattr
                                SYS_mount_setattr,
#endif
#ifdef SYS_open_tree
                                SYS_open_tree, SYS_move_mount, SYS_fsopen, SYS_fsconfig, SYS_fsmount, SYS_fspick,
#endif
                                -1};
    for (int i = 0; never[i] >= 0; i++) {
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)never[i], 0, 1);
        f[n++] = (struct sock_filter)DENY(EPERM);
    }
    /* clone with a namespace flag (clone3 is refused below: its flags are in memory). */
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4);
    f[n++] = (struct sock_filter)LOAD_ARG0;
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NEW_ANY, 0, 1);
    f[n++] = (struct sock_filter)DENY(EPERM);
    f[n++] = (struct sock_filter)LOAD_NR;
#ifdef SYS_clone3
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1);
    f[n++] = (struct sock_filter)DENY(ENOSYS);
#endif
    *np = n;
}

static int install_seccomp(int allow_exec, int allow_network)
{
    /* Instructions are appended in order; jumps are relative, so each test is written as "if nr
     * is not this, skip the next k instructions". */
    struct sock_filter f[160];
    int n = 0;
#define PUT(x) (f[n++] = (struct sock_filter)x)
    PUT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
    PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SANDBOX_AUDIT_ARCH, 1, 0));
    PUT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
    PUT(LOAD_NR);
#if defined(__x86_64__)
    /* x32 system calls are another table: refuse them all. */
    PUT(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1));
    PUT(DENY(EPERM));
#endif
    /* Sockets: none but the ones it inherited and unnamed local pairs: no network of any kind,
     * and no local socket that could reach a service on the host (a named or abstract AF_UNIX
     * one), so no connect and no bind either. */
    if (!allow_network) {
        PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 1));
        PUT(DENY(EACCES));
        PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_connect, 0, 1));
        PUT(DENY(EACCES));
        PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_bind, 0, 1));
        PUT(DENY(EACCES));
        PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socketpair, 0, 4));
        PUT(LOAD_ARG0);
        PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 1));
        PUT(ALLOW);
        PUT(DENY(EACCES));
    }
    /* Signals only to itself; mounts and namespaces as they are. */
    put_signal_rules(f, &n, getpid());
    put_mount_rules(f, &n);
    /* io_uring can open sockets and files past these checks; tracing other processes is never
     * needed. */
    PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_io_uring_setup, 0, 1));
    PUT(DENY(EPERM));
    PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ptrace, 0, 1));
    PUT(DENY(EPERM));
    PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_writev, 0, 1));
    PUT(DENY(EPERM));
    if (!allow_exec)
        put_exec_rules(f, &n);
    PUT(ALLOW);
#undef PUT
    struct sock_fprog prog = {(unsigned short)n, f};
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) ? -1 : 0;
}

/* A second filter, stacked on the first (the kernel applies both, the stricter answer wins): it
 * refuses exec and new processes only. */
static int install_exec_filter(void)
{
    struct sock_filter f[32];
    int n = 0;
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SANDBOX_AUDIT_ARCH, 1, 0);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    f[n++] = (struct sock_filter)LOAD_NR;
    put_exec_rules(f, &n);
    f[n++] = (struct sock_filter)ALLOW;
    struct sock_fprog prog = {(unsigned short)n, f};
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) ? -1 : 0;
}
#endif

/* ---- Landlock ---- */

#ifdef SYS_landlock_create_ruleset
/* Rights newer than some system headers. */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif

/* File-system rights each ABI version knows. */
static uint64_t landlock_fs_rights(int abi)
{
    uint64_t r = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;
    if (abi >= 2)
        r |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3)
        r |= LANDLOCK_ACCESS_FS_TRUNCATE;
    if (abi >= 5)
        r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
    return r;
}

#define READ_RIGHTS (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define FILE_RIGHTS                                                                                                  \
    (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_EXECUTE |                     \
     LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV)

/* Allows rights under path (a folder) or on it (a file); a path that does not exist is skipped. */
static int landlock_allow(int ruleset, const char *path, uint64_t rights, uint64_t handled)
{
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int is_dir = 0;
    int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        is_dir = 1;
        close(dfd);
    }
    uint64_t allowed = rights & handled;
    if (!is_dir)
        allowed &= FILE_RIGHTS;
    struct landlock_path_beneath_attr pb = {allowed, fd};
    int rc = allowed ? (int)syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) : 0;
    close(fd);
    return rc;
}

/* The system's programs and libraries: readable, and where exec is allowed the only programs that
 * may run (a compiler, a linker), never one written by the process itself. */
static const char *const system_programs[] = {"/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/opt", NULL};
/* The system's other read-only parts a runtime reads: the dynamic linker's and the OpenCL loader's
 * configuration (not the rest of /etc: /etc/shadow), device descriptions, and the devices that
 * are not disks. /proc is added by install_landlock: all of it where the process has a /proc of
 * its own (its PID namespace's), else its own entries and the system-wide files. */
static const char *const system_read[] = {"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
                                          "/etc/OpenCL", "/etc/nvidia", "/etc/alternatives", "/etc/localtime",
                                          "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/sys",
                                          "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
                                          "/dev/shm", "/dev/dri", "/dev/fd", NULL};
/* Without a /proc of its own: the process's own entries (the rule resolves /proc/self when the
 * ruleset is made) and the files that describe the machine. */
static const char *const proc_shared_read[] = {"/proc/self", "/proc/cpuinfo", "/proc/meminfo", "/proc/stat",
                                               "/proc/sys", "/proc/driver", "/proc/devices", "/proc/filesystems",
                                               "/proc/version", "/proc/loadavg", "/proc/modules", NULL};
/* Files a runtime opens for writing: the null device, the NVIDIA driver's nodes (added by prefix
 * below), and the process's own /proc entries (cuInit fails with CUDA_ERROR_OPERATING_SYSTEM when
 * it cannot write under /proc/self: measured on an H200 with bench/landlock_cuda_probe.c). The
 * rule resolves /proc/self when the ruleset is made, so it covers this process only. */
static const char *const device_write[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/shm", "/dev/dri",
                                           "/dev/nvidia-caps", "/dev/nvidia-uvm", "/proc/self", NULL};

static int install_landlock(int abi, const struct temper_sandbox_config *cfg, int proc_private)
{
    uint64_t handled = landlock_fs_rights(abi);
    struct landlock_ruleset_attr attr = {.handled_access_fs = handled};
    int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
    if (rs < 0)
        return -1;
    int err = 0;
    for (int i = 0; system_programs[i] && !err; i++)
        err = landlock_allow(rs, system_programs[i], READ_RIGHTS | LANDLOCK_ACCESS_FS_EXECUTE, handled);
    for (int i = 0; system_read[i] && !err; i++)
        err = landlock_allow(rs, system_read[i], READ_RIGHTS, handled);
    if (proc_private && !err)
        err = landlock_allow(rs, "/proc", READ_RIGHTS, handled);
    for (int i = 0; !proc_private && proc_shared_read[i] && !err; i++)
        err = landlock_allow(rs, proc_shared_read[i], READ_RIGHTS, handled);
    for (int i = 0; device_write[i] && !err; i++)
        err = landlock_allow(rs, device_write[i], handled & ~(uint64_t)LANDLOCK_ACCESS_FS_EXECUTE, handled);
    DIR *dev = opendir("/dev");
    for (struct dirent *e; dev && !err && (e = readdir(dev));) {
        if (strncmp(e->d_name, "nvidia", 6))
            continue;
        char path[300];
        snprintf(path, sizeof(path), "/dev/%s", e->d_name);
        err = landlock_allow(rs, path, FILE_RIGHTS & ~(uint64_t)LANDLOCK_ACCESS_FS_EXECUTE, handled);
    }
    if (dev)
        closedir(dev);
    /* The NVIDIA driver's run-time files (/run/nvidia-*), readable; nothing else under /run (the
     * host's sockets and services live there). */
    DIR *run = opendir("/run");
    for (struct dirent *e; run && !err && (e = readdir(run));) {
        if (strncmp(e->d_name, "nvidia", 6))
            continue;
        char path[300];
        snprintf(path, sizeof(path), "/run/%s", e->d_name);
        err = landlock_allow(rs, path, READ_RIGHTS, handled);
    }
    if (run)
        closedir(run);
    for (int i = 0; cfg->read_dirs && cfg->read_dirs[i] && !err; i++)
        err = landlock_allow(rs, cfg->read_dirs[i], READ_RIGHTS, handled);
    for (int i = 0; cfg->write_dirs && cfg->write_dirs[i] && !err; i++)
        err = landlock_allow(rs, cfg->write_dirs[i], handled & ~(uint64_t)LANDLOCK_ACCESS_FS_EXECUTE, handled);
    for (int i = 0; cfg->allow_exec && cfg->exec_files && cfg->exec_files[i] && !err; i++)
        err = landlock_allow(rs, cfg->exec_files[i], READ_RIGHTS | LANDLOCK_ACCESS_FS_EXECUTE, handled);
    if (!err)
        err = (int)syscall(SYS_landlock_restrict_self, rs, 0);
    close(rs);
    return err ? -1 : 0;
}
#endif

/* Whether $TEMPER_SANDBOX leaves out a part: "off", or a comma-separated list of parts
 * ("landlock", "seccomp", "rlimits"). For finding which part a runtime trips on, and for tools
 * that must run unconfined; the status says what was left out. */
static int left_out(const char *part)
{
    const char *env = getenv("TEMPER_SANDBOX");
    if (!env || !*env)
        return 0;
    if (!strcmp(env, "off"))
        return 1;
    size_t n = strlen(part);
    for (const char *p = env; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && !strncmp(p, part, n))
            return 1;
        p += len + (end != NULL);
    }
    return 0;
}

int temper_sandbox_apply(const struct temper_sandbox_config *cfg, struct temper_sandbox_status *st)
{
    /* What temper_sandbox_namespaces (and the caller's own checks) found stays. */
    struct temper_sandbox_status before = *st;
    memset(st, 0, sizeof(*st));
    st->user_ns = before.user_ns;
    st->pid_ns = before.pid_ns;
    st->mount_ns = before.mount_ns;
    st->proc_private = before.proc_private;
    st->env_clean = before.env_clean;
    st->cwd_scratch = before.cwd_scratch;
    memcpy(st->reason, before.reason, sizeof(st->reason));
    st->reason[sizeof(st->reason) - 1] = 0;
    int err = 0;
    if (left_out("rlimits") && left_out("landlock") && left_out("seccomp")) {
        add_reason(st, "the sandbox is off (TEMPER_SANDBOX=off)");
        return 0;
    }
    /* Resource limits: no core files (a crash's memory may hold another task's inputs), bounded
     * files and descriptors. Processes: new ones are refused by the filter where exec is; the
     * count limit is the backstop where the runtime must start its linker. */
    struct rlimit core = {0, 0};
    int rl_ok = !left_out("rlimits") && !setrlimit(RLIMIT_CORE, &core);
    if (left_out("rlimits")) {
        add_reason(st, "resource limits left out (TEMPER_SANDBOX)");
        goto privs;
    }
    if (cfg->file_size_bytes) {
        struct rlimit fs = {cfg->file_size_bytes, cfg->file_size_bytes};
        rl_ok &= !setrlimit(RLIMIT_FSIZE, &fs);
    }
    if (cfg->open_files) {
        struct rlimit nf = {cfg->open_files, cfg->open_files};
        rl_ok &= !setrlimit(RLIMIT_NOFILE, &nf);
    }
    struct rlimit np;
    if (!getrlimit(RLIMIT_NPROC, &np) && (np.rlim_cur == RLIM_INFINITY || np.rlim_cur > 65536)) {
        np.rlim_cur = np.rlim_max = 65536;
        rl_ok &= !setrlimit(RLIMIT_NPROC, &np);
    }
    st->rlimits = rl_ok;
    if (!rl_ok) {
        add_reason(st, "a resource limit could not be set");
        err = TEMPER_EIO;
    }
privs:
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
        add_reason(st, "no_new_privs refused by the kernel");
        return TEMPER_EUNSUPPORTED;
    }
    st->no_new_privs = 1;
#ifdef SYS_landlock_create_ruleset
    int abi = temper_landlock_abi();
    if (left_out("landlock")) {
        add_reason(st, "Landlock left out (TEMPER_SANDBOX)");
    } else if (!abi) {
        add_reason(st, "Landlock is not enabled in this kernel");
    } else if (install_landlock(abi, cfg, before.proc_private)) {
        char text[128];
        snprintf(text, sizeof(text), "the Landlock ruleset could not be applied: %s", strerror(errno));
        add_reason(st, text);
    } else {
        st->landlock = abi;
        /* Its own /proc entries only, where it shares /proc with the system. */
        st->proc_private = 1;
    }
#else
    add_reason(st, "built without Landlock headers");
#endif
#ifdef SANDBOX_AUDIT_ARCH
    if (left_out("seccomp")) {
        add_reason(st, "the seccomp filter left out (TEMPER_SANDBOX)");
        return err;
    }
    if (install_seccomp(cfg->allow_exec, cfg->allow_network)) {
        add_reason(st, "the seccomp filter was refused by the kernel");
        return TEMPER_EUNSUPPORTED;
    }
    st->seccomp = 1;
    st->exec_blocked = !cfg->allow_exec;
    st->network_blocked = !cfg->allow_network;
    st->sockets_blocked = !cfg->allow_network;
    st->signals_blocked = 1;
    if (cfg->allow_network)
        add_reason(st, cfg->why_network ? cfg->why_network : "network sockets stay allowed");
    if (cfg->allow_exec) {
        char text[200];
        snprintf(text, sizeof(text), "exec stays allowed%s%s%s", cfg->why_exec ? " (" : "",
                 cfg->why_exec ? cfg->why_exec : "", cfg->why_exec ? ")" : "");
        add_reason(st, text);
    }
#else
    add_reason(st, "no seccomp filter for this processor architecture");
    return TEMPER_EUNSUPPORTED;
#endif
    return err;
}

/* Removes the clause of st->reason that begins with prefix (and its separator). */
static void drop_reason(struct temper_sandbox_status *st, const char *prefix)
{
    char *at = strstr(st->reason, prefix);
    if (!at)
        return;
    char *end = strstr(at, "; ");
    if (end)
        memmove(at, end + 2, strlen(end + 2) + 1);
    else if (at >= st->reason + 2 && at[-1] == ' ' && at[-2] == ';')
        at[-2] = 0;
    else
        *at = 0;
}

int temper_sandbox_block_exec(struct temper_sandbox_status *st)
{
    if (st->exec_blocked)
        return 0;
    if (!st->seccomp)
        return TEMPER_EUNSUPPORTED;
#ifdef SANDBOX_AUDIT_ARCH
    if (install_exec_filter())
        return TEMPER_EUNSUPPORTED;
    st->exec_blocked = 1;
    drop_reason(st, "exec stays allowed");
    return 0;
#else
    return TEMPER_EUNSUPPORTED;
#endif
}
