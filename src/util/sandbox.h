/* sandbox.h: confining a process that handles strangers' code (a worker, a compile process) to
 * the fewest rights that work, with what Linux offers: namespaces of its own (a user namespace, a
 * PID namespace in which nothing it starts outlives it and no other process can be seen or
 * signalled, a mount namespace with its own /proc, the system read-only and the caches and the
 * store hidden), no new privileges, resource limits, a seccomp filter (no new sockets, no signals
 * to other processes, no new session; no exec and no new process where the backend needs none),
 * and a Landlock ruleset (read the system's libraries and programs, the toolkit and the tasks;
 * write only a scratch folder; run only the system's programs, never a file it wrote). CUDA's needs
 * stay allowed: the driver's /dev/nvidia* nodes (read, write, ioctl), the process's own /proc
 * entries, /sys, /dev/shm and the libraries under /usr and /opt. Each part is applied where the
 * kernel offers it; the status says what holds and why a part does not. */
#ifndef TEMPER_SANDBOX_H
#define TEMPER_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

/* What a process asks for. Folder lists are NULL-terminated; NULL means none. */
struct temper_sandbox_config {
    const char *const *read_dirs;  /* folders (and files) readable, beside the system's own */
    const char *const *write_dirs; /* folders writable (the scratch folder, the cache) */
    int allow_exec;                /* 1: the process may still run the system's programs (PoCL runs
                                    * the linker, task references are built with the C compiler) */
    const char *why_exec;          /* with allow_exec: why, for the status's reason; NULL: none given */
    uint64_t file_size_bytes;      /* largest file it may write (RLIMIT_FSIZE); 0: no limit */
    uint64_t open_files;           /* descriptors it may hold (RLIMIT_NOFILE); 0: no limit */
    int allow_network;             /* 1: sockets stay allowed (a profiler's injected library may talk
                                    * to its front end over TCP; the CUDA driver's cuInit fails
                                    * without them); 0 normally */
    const char *why_network;       /* with allow_network: why, for the status's reason */
    const char *const *exec_files; /* with allow_exec: programs outside the system's folders it may
                                    * run too (the configured Python interpreter of a task's PyTorch
                                    * reference); NULL: none */
};

/* What holds after temper_sandbox_namespaces and temper_sandbox_apply. */
struct temper_sandbox_status {
    int no_new_privs;  /* 1: PR_SET_NO_NEW_PRIVS is set */
    int rlimits;       /* 1: core 0, file size, open files and processes are limited */
    int seccomp;       /* 1: the seccomp filter is installed */
    int exec_blocked;  /* 1: the filter refuses execve */
    int network_blocked; /* 1: the filter refuses network sockets */
    int sockets_blocked; /* 1: the filter refuses every new socket but an unnamed pair (socketpair)
                          * and every connect and bind: only inherited sockets reach out */
    int signals_blocked; /* 1: the filter refuses signals to any process but itself, and new sessions
                          * and process groups (what it starts stays in its group) */
    int landlock;      /* the Landlock ABI version enforced, 0 if none */
    int user_ns;       /* 1: in a user namespace of its own, its capabilities dropped */
    int pid_ns;        /* 1: in a PID namespace of its own: it sees and signals no process outside it,
                        * and every process it starts dies with it */
    int mount_ns;      /* 1: in a mount namespace of its own: the system read-only but for its
                        * scratch folder, the caches and the store hidden */
    int proc_private;  /* 1: /proc shows only its own processes (its own /proc, or Landlock lets it
                        * read only its own entries) */
    int env_clean;     /* 1: its environment holds only the variables a runtime needs */
    int cwd_scratch;   /* 1: its working folder is its scratch folder */
    char reason[512];  /* what does not hold and why; "" when everything does */
};

/* Where a process is started in namespaces of its own (temper_sandbox_namespaces). */
struct temper_sandbox_ns_config {
    const char *const *write_dirs; /* folders that stay writable in the read-only system */
    const char *const *hide_dirs;  /* folders covered by an empty read-only one (the caches, the
                                    * store, the caller's PoCL cache); one holding a write or read
                                    * folder is left visible */
    const char *const *keep_dirs;  /* folders that must stay visible (the toolkit, the tasks) */
    int shared_shm;                /* 1: /dev/shm stays the system's (a profiler's library in the
                                    * process may talk to its tool through it); 0: a private one */
};

/* Starts the calling process over in namespaces of its own, where the kernel allows (as root and
 * as an unprivileged user where unprivileged user namespaces are on): a user namespace (root
 * inside, the caller's uid outside), a mount namespace (its own /proc, a private /dev/shm, the
 * system read-only but for cfg->write_dirs, cfg->hide_dirs covered) and a PID namespace. The
 * calling process stays outside and only waits: it forks the namespace's first process, which
 * forks the one that returns from this call (so signals and crashes behave as usual), and exits
 * as that one does (the same status, or the same signal). Each waits on its parent's death, and
 * when the first process ends the kernel ends every process in the namespace. Call it first in a
 * process that is still single-threaded; st says what holds (a part refused is said in
 * st->reason, and the process goes on without it). Returns 0 in the process that goes on. */
int temper_sandbox_namespaces(const struct temper_sandbox_ns_config *cfg, struct temper_sandbox_status *st);

/* Whether the environment variable NAME=VALUE (or NAME) is one a worker may get: what a runtime
 * needs (PATH, the dynamic linker's path, POCL_*, CUDA_*, NVIDIA_*, the OpenCL loader's, the
 * sanitizers' options, temper's own sandbox and fault settings); never one that names where the
 * caller keeps its data. */
int temper_sandbox_env_allowed(const char *entry);

/* The Landlock ABI version this kernel offers, 0 if none. */
int temper_landlock_abi(void);

/* Applies the sandbox to the calling process, for good (there is no undoing it); st says what
 * holds. What st already says of namespaces, /proc, the environment and the working folder (from
 * temper_sandbox_namespaces and the caller's checks; zero it where there were none) is kept, and
 * decides how much of /proc Landlock lets it read. Returns 0 when no_new_privs, the resource limits and seccomp hold (Landlock is applied
 * where offered, and its absence is said in st->reason), else a TEMPER_E* code with st->reason
 * saying why. Call it from a process of its own, before any untrusted input is read. */
int temper_sandbox_apply(const struct temper_sandbox_config *cfg, struct temper_sandbox_status *st);

/* Refuses exec and new processes from now on in a process whose sandbox kept them (a worker
 * whose device turned out to need no program: CUDA), by stacking a second seccomp filter; st
 * then says exec is blocked. 0 when it holds (or held already); TEMPER_EUNSUPPORTED when the
 * first filter is not installed (left out, or refused) or this one is refused. */
int temper_sandbox_block_exec(struct temper_sandbox_status *st);

#endif
