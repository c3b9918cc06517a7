/* sandbox.h: confining a process that handles strangers' code (a worker, a compile process) to
 * the fewest rights that work, with what Linux offers: no new privileges, resource limits, a
 * seccomp filter (no network sockets; no exec and no new process where the backend needs none),
 * and a Landlock ruleset (read the system, the toolkit, the tasks and the cache; write only a
 * scratch folder and the cache; run only the system's programs, never a file it wrote). CUDA's
 * needs stay allowed: the driver's /dev/nvidia* nodes (read, write, ioctl), /proc, /sys, /dev/shm
 * and the libraries under /usr and /opt. Each part is applied where the kernel offers it; the status
 * says what holds and why a part does not. */
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
    int allow_network;             /* 1: network sockets stay allowed (a profiler's injected library
                                    * may talk to its front end over TCP); 0 normally */
};

/* What holds after temper_sandbox_apply. */
struct temper_sandbox_status {
    int no_new_privs;  /* 1: PR_SET_NO_NEW_PRIVS is set */
    int rlimits;       /* 1: core 0, file size, open files and processes are limited */
    int seccomp;       /* 1: the seccomp filter is installed */
    int exec_blocked;  /* 1: the filter refuses execve */
    int network_blocked; /* 1: the filter refuses network sockets */
    int landlock;      /* the Landlock ABI version enforced, 0 if none */
    char reason[256];  /* what does not hold and why; "" when everything does */
};

/* The Landlock ABI version this kernel offers, 0 if none. */
int temper_landlock_abi(void);

/* Applies the sandbox to the calling process, for good (there is no undoing it); st says what
 * holds. Returns 0 when no_new_privs, the resource limits and seccomp hold (Landlock is applied
 * where offered, and its absence is said in st->reason), else a TEMPER_E* code with st->reason
 * saying why. Call it from a process of its own, before any untrusted input is read. */
int temper_sandbox_apply(const struct temper_sandbox_config *cfg, struct temper_sandbox_status *st);

/* Refuses exec and new processes from now on in a process whose sandbox kept them (a worker
 * whose device turned out to need no program: CUDA), by stacking a second seccomp filter; st
 * then says exec is blocked. 0 when it holds (or held already); TEMPER_EUNSUPPORTED when the
 * first filter is not installed (left out, or refused) or this one is refused. */
int temper_sandbox_block_exec(struct temper_sandbox_status *st);

#endif
