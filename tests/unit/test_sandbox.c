/* test_sandbox.c: unit tests of sandbox.h. Each case applies the sandbox in a child process of
 * its own (a sandbox cannot be undone) and reports back through a pipe what the child could
 * still do: network and local sockets, exec, a new process, a thread, signals to its parent, a new
 * session, writes inside and outside its scratch folder, and reads outside the allowed folders
 * (/etc/shadow among them). Landlock's parts are checked where the kernel offers it, and the status
 * must then say it is enforced. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/sandbox.h"

/* What the child could do after applying the sandbox: 1 yes, 0 refused. */
struct outcome {
    int applied;                    /* temper_sandbox_apply returned 0 */
    struct temper_sandbox_status st; /* what it said holds */
    int inet_socket;                /* socket(AF_INET) */
    int inet6_socket;               /* socket(AF_INET6) */
    int unix_socket;                /* socket(AF_UNIX) */
    int exec;                       /* execve of /bin/true (observed: it would not come back) */
    int exec_scratch;               /* execve of a copy of it in the scratch folder */
    int new_process;                /* fork */
    int thread;                     /* pthread_create */
    int write_scratch;              /* create a file in the scratch folder */
    int write_outside;              /* create a file beside the scratch folder */
    int read_outside;               /* read a file outside every allowed folder */
    int read_system;                /* read /etc/passwd (the system's configuration) */
    int read_shadow;                /* read /etc/shadow (where it exists and the user could) */
    int socket_pair;                /* socketpair(AF_UNIX): an unnamed pair reaches nobody */
    int signal_parent;              /* kill(parent, 0): may it signal another process */
    int signal_self;                /* kill(self, 0) */
    int new_session;                /* setsid in a child (it would leave the process group) */
    long core_limit;                /* RLIMIT_CORE afterwards */
};

static void *noop(void *arg)
{
    return arg;
}

static int can_create(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

static int can_read(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    char c;
    int ok = read(fd, &c, 1) == 1;
    close(fd);
    return ok;
}

static int can_socket(int domain)
{
    int fd = socket(domain, SOCK_STREAM, 0);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

/* Runs the probes in a child under cfg; root holds scratch/ and secret.txt. */
/* allow_exec 2: applied with exec allowed, then refused by temper_sandbox_block_exec (a CUDA
 * worker once its device is open). */
static void probe(const char *root, int allow_exec, int allow_network, struct outcome *o)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        struct outcome r;
        memset(&r, 0, sizeof(r));
        char scratch[512], outside[512], secret[512];
        snprintf(scratch, sizeof(scratch), "%s/scratch", root);
        snprintf(outside, sizeof(outside), "%s/outside.txt", root);
        snprintf(secret, sizeof(secret), "%s/secret.txt", root);
        const char *writes[] = {scratch, NULL};
        struct temper_sandbox_config cfg = {NULL,    writes, allow_exec, allow_exec ? "for a test" : NULL,
                                            1 << 20, 256,    allow_network, NULL, NULL};
        r.applied = temper_sandbox_apply(&cfg, &r.st) == 0;
        if (allow_exec == 2)
            r.applied = r.applied && temper_sandbox_block_exec(&r.st) == 0;
        r.inet_socket = can_socket(AF_INET);
        r.inet6_socket = can_socket(AF_INET6);
        r.unix_socket = can_socket(AF_UNIX);
        pthread_t t;
        r.thread = pthread_create(&t, NULL, noop, NULL) == 0;
        if (r.thread)
            pthread_join(t, NULL);
        pid_t child = fork();
        if (child == 0)
            _exit(0);
        r.new_process = child > 0;
        if (child > 0)
            waitpid(child, NULL, 0);
        char inside[600];
        snprintf(inside, sizeof(inside), "%s/made.txt", scratch);
        r.write_scratch = can_create(inside);
        r.write_outside = can_create(outside);
        r.read_outside = can_read(secret);
        r.read_system = can_read("/etc/passwd");
        r.read_shadow = can_read("/etc/shadow");
        int sv[2];
        r.socket_pair = socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0;
        if (r.socket_pair) {
            close(sv[0]);
            close(sv[1]);
        }
        r.signal_parent = kill(getppid(), 0) == 0;
        r.signal_self = kill(getpid(), 0) == 0;
        r.new_session = setsid() != -1 || errno != EPERM;
        struct rlimit rl;
        getrlimit(RLIMIT_CORE, &rl);
        r.core_limit = (long)rl.rlim_cur;
        /* exec last: where one works, the child becomes true and reports nothing more; each
         * refused exec writes a marker. */
        if (write(fds[1], &r, sizeof(r)) != (ssize_t)sizeof(r))
            _exit(3);
        char copy[600];
        snprintf(copy, sizeof(copy), "%s/true", scratch);
        char *argv_copy[] = {copy, NULL}, *argv[] = {"/bin/true", NULL};
        int marker = 0;
        execv(argv_copy[0], argv_copy);
        if (write(fds[1], &marker, sizeof(marker)) != (ssize_t)sizeof(marker))
            _exit(3);
        execv(argv[0], argv);
        if (write(fds[1], &marker, sizeof(marker)) != (ssize_t)sizeof(marker))
            _exit(3);
        _exit(0);
    }
    close(fds[1]);
    assert_int_equal(read(fds[0], o, sizeof(*o)), sizeof(*o));
    int marker, refused = 0;
    while (read(fds[0], &marker, sizeof(marker)) == sizeof(marker))
        refused++;
    o->exec_scratch = refused == 0;
    o->exec = refused == 1;
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void make_root(char *root, size_t size)
{
    snprintf(root, size, "/tmp/temper-sandbox-XXXXXX");
    assert_non_null(mkdtemp(root));
    char path[600];
    snprintf(path, sizeof(path), "%s/scratch", root);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/secret.txt", root);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("a token the sandboxed process must not read\n", f);
    fclose(f);
    /* A program in the scratch folder: the sandbox may let its process write it, never run it. */
    snprintf(path, sizeof(path), "cp /bin/true %s/scratch/true", root);
    assert_int_equal(system(path), 0);
}

static void test_no_exec(void **state)
{
    (void)state;
    char root[64];
    make_root(root, sizeof(root));
    struct outcome o;
    probe(root, 0, 0, &o);
    assert_true(o.applied);
    assert_true(o.st.no_new_privs && o.st.seccomp && o.st.rlimits && o.st.exec_blocked && o.st.network_blocked);
    assert_false(o.inet_socket);
    assert_false(o.inet6_socket);
    /* No socket it could name a host service with; an unnamed pair stays. */
    assert_false(o.unix_socket);
    assert_true(o.socket_pair);
    assert_true(o.st.sockets_blocked && o.st.signals_blocked);
    /* Signals to itself only, and no new session. */
    assert_false(o.signal_parent);
    assert_true(o.signal_self);
    assert_false(o.new_session);
    assert_false(o.exec);
    assert_false(o.exec_scratch);
    assert_false(o.new_process);
    assert_true(o.thread);
    assert_int_equal(o.core_limit, 0);
    assert_true(o.write_scratch);
    assert_true(o.read_system);
    if (temper_landlock_abi()) {
        assert_int_equal(o.st.landlock, temper_landlock_abi());
        assert_false(o.write_outside);
        assert_false(o.read_outside);
        assert_false(o.read_shadow); /* the dynamic linker's and loader's files, not all of /etc */
    } else {
        /* Without Landlock, the status must say so. */
        assert_int_equal(o.st.landlock, 0);
        assert_non_null(strstr(o.st.reason, "Landlock"));
        print_message("Landlock is not enabled in this kernel: file access not checked\n");
    }
    nftw(root, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void test_exec_allowed(void **state)
{
    (void)state;
    char root[64];
    make_root(root, sizeof(root));
    struct outcome o;
    probe(root, 1, 0, &o);
    assert_true(o.applied);
    assert_true(o.st.seccomp && !o.st.exec_blocked);
    assert_non_null(strstr(o.st.reason, "exec stays allowed (for a test)"));
    assert_false(o.inet_socket);
    assert_true(o.new_process);
    if (temper_landlock_abi()) {
        assert_false(o.exec_scratch); /* refused: the system's programs only */
        assert_true(o.exec);
        assert_false(o.write_outside);
        assert_false(o.read_outside);
    } else {
        assert_true(o.exec_scratch || o.exec);
    }
    nftw(root, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* Exec refused after the fact, by a second filter: no program and no new process any more, threads
 * still, and the status no longer says exec stays allowed. */
static void test_exec_blocked_later(void **state)
{
    (void)state;
    char root[64];
    make_root(root, sizeof(root));
    struct outcome o;
    probe(root, 2, 0, &o);
    assert_true(o.applied);
    assert_true(o.st.seccomp && o.st.exec_blocked && o.st.network_blocked);
    assert_null(strstr(o.st.reason, "exec stays allowed"));
    assert_false(o.exec);
    assert_false(o.exec_scratch);
    assert_false(o.new_process);
    assert_true(o.thread);
    assert_false(o.inet_socket);
    assert_true(o.write_scratch);
    nftw(root, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* A profiler's run keeps network sockets, and the status says so; the rest still holds. */
static void test_network_allowed(void **state)
{
    (void)state;
    char root[64];
    make_root(root, sizeof(root));
    struct outcome o;
    probe(root, 0, 1, &o);
    assert_true(o.applied);
    assert_false(o.st.network_blocked);
    assert_non_null(strstr(o.st.reason, "network sockets stay allowed"));
    assert_true(o.inet_socket);
    assert_false(o.exec);
    if (temper_landlock_abi())
        assert_false(o.read_outside);
    nftw(root, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_exec),
        cmocka_unit_test(test_exec_allowed),
        cmocka_unit_test(test_exec_blocked_later),
        cmocka_unit_test(test_network_allowed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
