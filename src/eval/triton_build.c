/* triton_build.c: the calling program's side of Triton candidates: which Python compiles them
 * (TEMPER_PYTHON, else the python3 on the PATH), the request a compile process gets for one, what
 * its refusal means for the verdict, and the version probe `temper devices` shows. The compile
 * itself runs in a compile process (worker/worker_triton.c), never here. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "eval/triton_build.h"
#include "temper/eval.h"
#include "kernel/kernel_internal.h"
#include "util/util.h"
#include "worker_impl.h"

/* Where the PATH search of triton_python stands: the program's name, and the buffer that gets its
 * first executable match. */
struct path_find {
    const char *want;
    char *out;
    size_t size;
};

/* For temper_search_path_each: 1 (stop) where folder holds an executable want, written to out. */
static int path_find_each(void *user, const char *folder)
{
    struct path_find *f = user;
    return folder[0] == '/' && snprintf(f->out, f->size, "%s/%s", folder, f->want) < (int)f->size &&
           !access(f->out, X_OK);
}

int triton_python(char *out, size_t size, char *msg, size_t msg_size)
{
    const char *want = getenv("TEMPER_PYTHON");
    if (!want || !*want)
        want = "python3";
    if (strchr(want, '/')) {
        if (access(want, X_OK))
            return temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "TEMPER_PYTHON=%s: %s", want, strerror(errno));
        /* Absolute, so that the compile process (in its scratch folder) runs the same file; the
         * path itself is kept (not its link's target): a virtual environment's interpreter finds
         * its environment from the path it was started by. */
        char cwd[PATH_MAX];
        if (want[0] != '/' && getcwd(cwd, sizeof(cwd)))
            snprintf(out, size, "%s/%s", cwd, want);
        else
            snprintf(out, size, "%s", want);
        return 0;
    }
    struct path_find f = {want, out, size};
    if (temper_search_path_each(getenv("PATH"), path_find_each, &f))
        return 0;
    return temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "no %s on the PATH (set TEMPER_PYTHON to the Python that has "
                       "Triton)", want);
}

json_t *triton_compile_request(const struct temper_candidate *c, const char *options, const char *arch,
                               uint64_t mem_limit_bytes)
{
    char python[PATH_MAX], why[512];
    if (triton_python(python, sizeof(python), why, sizeof(why)))
        python[0] = 0;
    json_t *req = json_pack("{s:s, s:s, s:s, s:s, s:I}", "backend", "triton", "python", python, "arch", arch,
                            "options", options, "mem_limit_bytes", (json_int_t)mem_limit_bytes);
    if (req)
        json_object_set_new(req, "source", json_stringn_nocheck(c->source, c->source_len));
    return req;
}

int triton_refusal(json_t *out, int status, int overdue, double timeout_s, char *why, size_t why_size)
{
    const char *log = json_string_value(json_object_get(out, "log"));
    const char *verdict = json_string_value(json_object_get(out, "verdict"));
    if (overdue)
        snprintf(why, why_size, "Triton's compile ran longer than the %.3g s limit", timeout_s);
    else if (WIFSIGNALED(status))
        snprintf(why, why_size, "Triton's compile process crashed (%s)", strsignal(WTERMSIG(status)));
    else
        snprintf(why, why_size, "%s", log && *log ? log : "Triton's compile gave no binary and no message");
    return verdict && !strcmp(verdict, "invalid") ? TEMPER_VERDICT_INVALID : TEMPER_VERDICT_COMPILE_ERROR;
}

int triton_probe(char *version, size_t size, char *msg, size_t msg_size)
{
    char python[PATH_MAX];
    int err = triton_python(python, sizeof(python), msg, msg_size);
    if (err)
        return err;
    json_t *req = json_pack("{s:s, s:s, s:b, s:I}", "backend", "triton", "python", python, "probe", 1,
                            "mem_limit_bytes", (json_int_t)(8ull << 30));
    struct compile_proc p;
    err = compile_proc_start(req, &p, msg, msg_size);
    json_decref(req);
    if (err)
        return err;
    /* Bounded like a compile: an import that hangs is killed. */
    int status = 0;
    for (double start = temper_now_s();;) {
        pid_t r = waitpid(p.pid, &status, WNOHANG);
        if (r == p.pid || (r < 0 && errno != EINTR)) {
            p.pid = 0;
            break;
        }
        if (temper_now_s() - start > 60) {
            kill(p.pid, SIGKILL); /* compile_proc_end reaps it */
            break;
        }
        usleep(20000);
    }
    json_t *out = compile_proc_end(&p, NULL);
    const char *compiler = json_string_value(json_object_get(out, "compiler"));
    const char *log = json_string_value(json_object_get(out, "log"));
    if (compiler && !strncmp(compiler, "triton ", 7) && compiler[7])
        snprintf(version, size, "%s (%s)", compiler + 7, python);
    else
        err = temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "%s: %s", python, log && *log ? log : "no answer");
    json_decref(out);
    return err;
}
