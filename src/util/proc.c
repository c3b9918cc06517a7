/* proc.c: running a child command with a time limit and a bounded capture of its output. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "temper/util.h"

int temper_proc_run(char *const argv[], double timeout_s, size_t max_output, struct temper_proc_result *result,
                    char *msg, size_t msg_size)
{
    memset(result, 0, sizeof(*result));
    int fds[2];
    if (pipe2(fds, O_CLOEXEC))
        return temper_fail(msg, msg_size, TEMPER_EIO, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return temper_fail(msg, msg_size, TEMPER_EIO, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        setpgid(0, 0);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, 0);
        execvp(argv[0], argv);
        dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);
    close(fds[1]);
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
