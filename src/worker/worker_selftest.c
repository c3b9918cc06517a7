/* worker_selftest.c: the attacks a candidate's code could make from inside a worker on a device
 * whose kernels run in the worker's address space (PoCL), tried for real by `temper-worker
 * selftest`, which applies exactly the confinement a serving worker gets and then runs these
 * instead of serving. The calling program chooses that mode when it starts the executable; a
 * candidate never can (it runs in a worker already confined, which may run only the system's
 * programs). Each attack reports "blocked: WHY" or "ESCAPED: WHAT"; tests require every one
 * blocked (tests/untrusted_test.sh). The targets (the caches, the store, a file in the caller's
 * folder, a listening socket, the parent's pid and environment) come from the calling program,
 * as an attacker would know them. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker_selftest.h"

extern char **environ;

/* Records one attack's outcome: escaped (nonzero) with what it got, else blocked with why. */
static void outcome(json_t *r, const char *name, int escaped, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void outcome(json_t *r, const char *name, int escaped, const char *fmt, ...)
{
    char text[600], line[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    snprintf(line, sizeof(line), "%s: %s", escaped ? "ESCAPED" : "blocked", text);
    json_object_set_new(r, name, json_string(line));
}

static const char *target(json_t *t, const char *key)
{
    const char *v = json_string_value(json_object_get(t, key));
    return v && *v ? v : NULL;
}

/* Tries to open path for writing (creating it when create); the outcome under name. */
static void try_write(json_t *r, const char *name, const char *path, int create)
{
    if (!path) {
        outcome(r, name, 0, "no such target here");
        return;
    }
    int fd = open(path, O_WRONLY | O_CLOEXEC | (create ? O_CREAT | O_EXCL : O_APPEND), 0644);
    if (fd < 0) {
        outcome(r, name, 0, "%s: %s", path, strerror(errno));
        return;
    }
    close(fd);
    if (create)
        unlink(path);
    outcome(r, name, 1, "%s opened for writing", path);
}

/* Tries to read path; escaped when it reads and (if secret is given) what it read holds secret. */
static void try_read(json_t *r, const char *name, const char *path, const char *secret)
{
    if (!path) {
        outcome(r, name, 0, "no such target here");
        return;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        outcome(r, name, 0, "%s: %s", path, strerror(errno));
        return;
    }
    char buf[65536];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n < 0) {
        outcome(r, name, 0, "%s: read: %s", path, strerror(errno));
        return;
    }
    if (n == 0) {
        outcome(r, name, 0, "%s reads as empty", path);
        return;
    }
    buf[n] = 0;
    for (ssize_t i = 0; i < n; i++)
        if (!buf[i])
            buf[i] = '\n';
    if (secret && !strstr(buf, secret)) {
        outcome(r, name, 0, "%s read, without the secret", path);
        return;
    }
    outcome(r, name, 1, "%s read (%zd bytes)", path, n);
}

/* The first entry of folder dir whose name ends with suffix, as a path, into out; 0 if none. */
static int first_entry(const char *dir, const char *suffix, char *out, size_t size)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d));) {
        size_t n = strlen(e->d_name), m = strlen(suffix);
        if (e->d_name[0] != '.' && n >= m && !strcmp(e->d_name + n - m, suffix)) {
            snprintf(out, size, "%s/%s", dir, e->d_name);
            found = 1;
        }
    }
    closedir(d);
    return found;
}

/* The caches a later evaluation loads: the reference libraries, the build cache's binaries, the
 * key that seals them, and PoCL's own kernel cache. */
static void attack_caches(json_t *r, json_t *t)
{
    const char *cache = target(t, "cache");
    char path[4200], dir[4200];
    snprintf(dir, sizeof(dir), "%s/ref", cache ? cache : "/nonexistent");
    try_write(r, "write_reference_library", first_entry(dir, ".so", path, sizeof(path)) ? path : NULL, 0);
    snprintf(path, sizeof(path), "%s/ref/planted.so", cache ? cache : "/nonexistent");
    try_write(r, "plant_reference_library", cache ? path : NULL, 1);
    /* A binary of the build cache: the first one of the first folder that has one. */
    char found[4900] = "";
    snprintf(dir, sizeof(dir), "%s/build", cache ? cache : "/nonexistent");
    DIR *d = opendir(dir);
    for (struct dirent *e; d && !found[0] && (e = readdir(d));) {
        char sub[4600];
        snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
        if (e->d_name[0] != '.' && !first_entry(sub, ".bin", found, sizeof(found)))
            found[0] = 0;
    }
    if (d)
        closedir(d);
    try_write(r, "write_build_cache", found[0] ? found : NULL, 0);
    snprintf(path, sizeof(path), "%s/build/planted.bin", cache ? cache : "/nonexistent");
    try_write(r, "plant_build_cache", cache ? path : NULL, 1);
    snprintf(path, sizeof(path), "%s/key", cache ? cache : "/nonexistent");
    try_read(r, "read_cache_key", cache ? path : NULL, NULL);
    const char *pocl = target(t, "pocl_cache");
    snprintf(path, sizeof(path), "%s/planted", pocl ? pocl : "/nonexistent");
    try_write(r, "plant_pocl_cache", pocl ? path : NULL, 1);
}

/* The caller's secrets: its environment, its folder, the store, the system's password hashes,
 * a file beside the scratch folder. */
static void attack_reads(json_t *r, json_t *t)
{
    const char *secret = target(t, "secret_value");
    /* The worker's own environment must not hold the caller's secret, nor anything outside the
     * allowlist (the calling program says which names it passed). */
    int found = 0, n = 0;
    for (char **e = environ; e && *e; e++, n++)
        if (secret && strstr(*e, secret))
            found = 1;
    if (found)
        outcome(r, "environment_secret", 1, "the caller's secret is in the worker's environment");
    else
        outcome(r, "environment_secret", 0, "not in the environment (%d variables)", n);
    try_read(r, "proc_self_environ", "/proc/self/environ", secret ? secret : "\x01");
    char path[4200];
    const char *parent = target(t, "parent_pid");
    snprintf(path, sizeof(path), "/proc/%s/environ", parent ? parent : "0");
    try_read(r, "parent_environ", parent ? path : NULL, secret);
    snprintf(path, sizeof(path), "/proc/%s/cmdline", parent ? parent : "0");
    try_read(r, "parent_cmdline", parent ? path : NULL, target(t, "parent_cmdline"));
    const char *cwd_file = target(t, "cwd_file");
    try_read(r, "caller_folder_file", cwd_file, NULL);
    const char *store = target(t, "store");
    try_read(r, "store", store, NULL);
    try_read(r, "etc_shadow", "/etc/shadow", NULL);
    const char *beside = target(t, "beside_scratch");
    try_write(r, "write_beside_scratch", beside, 1);
    const char *cwd = target(t, "cwd");
    snprintf(path, sizeof(path), "%s/planted-by-worker", cwd ? cwd : "/nonexistent");
    try_write(r, "write_caller_folder", cwd ? path : NULL, 1);
    /* Other processes: any numeric /proc entry that is neither this process nor one of its own
     * (its namespace's first process). */
    DIR *d = opendir("/proc");
    int others = 0;
    long self = (long)getpid(), up = (long)getppid();
    for (struct dirent *e; d && (e = readdir(d));) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0 || pid == self || pid == up || (self == 2 && pid == 1))
            continue;
        char comm[4400];
        snprintf(comm, sizeof(comm), "/proc/%ld/cmdline", pid);
        int fd = open(comm, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            others++;
            close(fd);
        }
    }
    if (d)
        closedir(d);
    outcome(r, "other_processes", others > 0, "%d other processes' command lines readable", others);
}

/* Signals to the parent: SIGURG, which it ignores, so a delivered one harms nothing and a call
 * that returns 0 shows that SIGSTOP or SIGKILL would have been delivered too. */
static void attack_signals(json_t *r, json_t *t)
{
    const char *parent = target(t, "parent_pid");
    pid_t pid = parent ? (pid_t)atol(parent) : 0;
    if (!pid) {
        outcome(r, "signal_parent", 0, "no parent pid given");
        return;
    }
    int rc = kill(pid, SIGURG);
    outcome(r, "signal_parent", rc == 0, "kill(%d): %s", (int)pid, rc ? strerror(errno) : "delivered");
    rc = (int)syscall(SYS_tgkill, pid, pid, SIGURG);
    outcome(r, "tgkill_parent", rc == 0, "tgkill(%d): %s", (int)pid, rc ? strerror(errno) : "delivered");
    rc = (int)syscall(SYS_tkill, pid, SIGURG);
    outcome(r, "tkill_parent", rc == 0, "tkill(%d): %s", (int)pid, rc ? strerror(errno) : "delivered");
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd >= 0) {
        rc = (int)syscall(SYS_pidfd_send_signal, fd, SIGURG, NULL, 0);
        close(fd);
        outcome(r, "pidfd_signal_parent", rc == 0, "pidfd_send_signal: %s", rc ? strerror(errno) : "delivered");
    } else {
        outcome(r, "pidfd_signal_parent", 0, "pidfd_open(%d): %s", (int)pid, strerror(errno));
    }
#endif
}

/* A process that detaches (new session) and sleeps, named so the test can look for it after
 * the worker is gone. */
static void attack_outlive(json_t *r, json_t *t)
{
    const char *name = target(t, "escapee_name");
    int ready[2];
    if (pipe(ready)) {
        outcome(r, "detached_process", 0, "pipe: %s", strerror(errno));
        return;
    }
    pid_t child = fork();
    if (child < 0) {
        outcome(r, "detached_process", 0, "fork: %s", strerror(errno));
        close(ready[0]);
        close(ready[1]);
        return;
    }
    if (child == 0) {
        pid_t grandchild = fork();
        if (grandchild == 0) {
            setsid();
            prctl(PR_SET_NAME, name ? name : "temper-escapee");
            /* Named: the calling program can look for it once the worker is gone. */
            if (write(ready[1], "x", 1) != 1)
                _exit(1);
            for (int fd = 0; fd < 64; fd++)
                close(fd);
            for (int i = 0; i < 120; i++)
                sleep(1);
            _exit(0);
        }
        _exit(grandchild > 0 ? 0 : 1);
    }
    close(ready[1]);
    int status = 0;
    waitpid(child, &status, 0);
    char c;
    while (read(ready[0], &c, 1) < 0 && errno == EINTR)
        ;
    close(ready[0]);
    /* Whether it outlives the worker is for the calling program to see; here it only started. */
    outcome(r, "detached_process", 0, "started (%s); the caller checks it died with the worker",
            WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "forked" : "fork refused");
}

/* A socket bound on the host outside the sandbox, and a new network socket. */
static void attack_sockets(json_t *r, json_t *t)
{
    const char *path = target(t, "host_socket");
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        outcome(r, "connect_host_socket", 0, "socket(AF_UNIX): %s", strerror(errno));
    } else if (!path) {
        outcome(r, "connect_host_socket", 1, "socket(AF_UNIX) made (no host socket given to try)");
        close(fd);
    } else {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
        outcome(r, "connect_host_socket", rc == 0, "connect(%s): %s", path, rc ? strerror(errno) : "connected");
        close(fd);
    }
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    outcome(r, "network_socket", fd >= 0, "socket(AF_INET): %s", fd >= 0 ? "made" : strerror(errno));
    if (fd >= 0)
        close(fd);
}

json_t *worker_selftest_run(json_t *targets)
{
    json_t *r = json_object();
    attack_caches(r, targets);
    attack_reads(r, targets);
    attack_signals(r, targets);
    attack_sockets(r, targets);
    attack_outlive(r, targets);
    char cwd[4096];
    json_object_set_new(r, "working_folder", json_string(getcwd(cwd, sizeof(cwd)) ? cwd : ""));
    json_t *names = json_array();
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        json_array_append_new(names, json_stringn(*e, eq ? (size_t)(eq - *e) : strlen(*e)));
    }
    json_object_set_new(r, "environment_names", names);
    return r;
}
