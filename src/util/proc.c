/* proc.c: running a child command (posix_spawn, never a bare fork) with a time limit and a bounded
 * capture of its output. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/util.h"

void temper_spawnattr_init(posix_spawnattr_t *attr)
{
    sigset_t none, pipe_only;
    sigemptyset(&none);
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    posix_spawnattr_init(attr);
    posix_spawnattr_setsigmask(attr, &none);
    posix_spawnattr_setsigdefault(attr, &pipe_only);
    posix_spawnattr_setpgroup(attr, 0);
    posix_spawnattr_setflags(attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
}

int temper_search_path_each(const char *path, int (*fn)(void *user, const char *folder), void *user)
{
    for (const char *p = path; p && *p;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char folder[4096];
        if (len && len < sizeof(folder)) {
            memcpy(folder, p, len);
            folder[len] = 0;
            int r = fn(user, folder);
            if (r)
                return r;
        }
        p += len + (end != NULL);
    }
    return 0;
}

int temper_proc_run(char *const argv[], double timeout_s, size_t max_output, struct temper_proc_result *result,
                    char *msg, size_t msg_size)
{
    memset(result, 0, sizeof(*result));
    int fds[2];
    if (pipe2(fds, O_CLOEXEC))
        return temper_fail(msg, msg_size, TEMPER_EIO, "pipe: %s", strerror(errno));
    /* posix_spawn, not fork: a threaded caller's other threads and locks stay out of the child.
     * The child gets its own process group, so a time limit kills what it started too. */
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    temper_spawnattr_init(&attr);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid = 0;
    int spawn_err = posix_spawnp(&pid, argv[0], &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(fds[1]);
    if (spawn_err) {
        /* As a shell says it: the command could not run, exit status 127. */
        close(fds[0]);
        char text[1200];
        snprintf(text, sizeof(text), "cannot run %.1000s: %s\n", argv[0], strerror(spawn_err));
        result->output = strdup(text);
        if (!result->output)
            return TEMPER_ENOMEM;
        result->exit_code = 127;
        return 0;
    }
    struct temper_buf out;
    temper_buf_init(&out, max_output);
    temper_buf_append(&out, "", 0);
    double deadline = temper_now_s() + timeout_s;
    for (;;) {
        double left = deadline - temper_now_s();
        if (left <= 0) {
            result->timed_out = 1;
            kill(-pid, SIGKILL);
            break;
        }
        struct pollfd pfd = {fds[0], POLLIN, 0};
        int r = poll(&pfd, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue;
        char chunk[8192];
        ssize_t n = read(fds[0], chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        size_t room = out.max_bytes - out.len;
        temper_buf_append(&out, chunk, (size_t)n < room ? (size_t)n : room);
    }
    close(fds[0]);
    /* The child may close its output and still run: the time limit holds until it exits. */
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, result->timed_out ? 0 : WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR))
            break;
        if (r == 0 && temper_now_s() >= deadline) {
            result->timed_out = 1;
            kill(-pid, SIGKILL);
        } else if (r == 0) {
            usleep(1000);
        }
    }
    if (WIFEXITED(status)) {
        result->exit_code = WEXITSTATUS(status);
    } else {
        result->exit_code = -1;
        result->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    }
    result->output = out.data;
    return 0;
}

double temper_machine_busy_s(void)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return -1;
    unsigned long long user = 0, nice = 0, sys = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    int got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &sys, &idle, &iowait, &irq,
                     &softirq, &steal);
    fclose(f);
    long tick = sysconf(_SC_CLK_TCK);
    if (got < 7 || tick <= 0)
        return -1;
    /* Time the hypervisor gave to other machines (steal) was not ours either. */
    return (double)(user + nice + sys + irq + softirq + steal) / (double)tick;
}

int temper_machine_load(double *load1, int *cores)
{
    double l[1];
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (getloadavg(l, 1) != 1 || n < 1)
        return 0;
    *load1 = l[0];
    *cores = (int)n;
    return 1;
}
