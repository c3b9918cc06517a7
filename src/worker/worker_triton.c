/* worker_triton.c: the compile process's Triton path (`temper-worker compile` with backend
 * "triton"). It confines itself, then runs the configured Python on temper's helper
 * (python/temper_triton.py, beside this executable) and hands back what the helper made: temper's
 * container of cubins and launch metadata, which the CUDA backend loads (device/cuda_triton.c).
 *
 * What the interpreter may do, exactly: it runs in namespaces of its own (a PID namespace, so
 * nothing it starts outlives the compile process; a mount namespace with the system read-only),
 * with no new privileges, no network sockets, resource limits and Landlock: it reads the system's
 * folders (/usr, /lib, /opt, ...), temper's toolkit folder (which holds the helper), the
 * interpreter's installation and its virtual environment; it writes only the compile process's
 * scratch folder (the candidate's file, Triton's cache, ptxas's temporary files); it runs only the
 * system's programs and those of the interpreter's installation and environment (Triton's own
 * ptxas), never a file it wrote. Its environment is HOME, TMPDIR, TRITON_CACHE_DIR and
 * TRITON_HOME in the scratch folder, and PATH. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "eval/worker_impl.h"
#include "util/sandbox.h"
#include "util/util.h"
#include "worker_triton.h"

#define OUTPUT_MAX (256u << 20)
#define LOG_MAX (64u << 10)

/* The folder two levels above path's real file (an interpreter's prefix: PREFIX/bin/python3). */
static void prefix_of(const char *path, char *out, size_t size)
{
    char real[PATH_MAX], dir[PATH_MAX];
    if (!realpath(path, real))
        snprintf(real, sizeof(real), "%s", path);
    temper_dirname(real, dir, sizeof(dir));
    temper_dirname(dir, out, size);
}

/* Runs python on the helper with the request file as its standard input; its standard output and
 * error go to files of the scratch folder. Returns the exit status (-1: it could not start). */
static int run_helper(const char *python, const char *helper, const char *scratch)
{
    char home[PATH_MAX + 16], tmp[PATH_MAX + 16], cache[PATH_MAX + 32], thome[PATH_MAX + 32];
    snprintf(home, sizeof(home), "HOME=%s", scratch);
    snprintf(tmp, sizeof(tmp), "TMPDIR=%s", scratch);
    snprintf(cache, sizeof(cache), "TRITON_CACHE_DIR=%s/triton-cache", scratch);
    snprintf(thome, sizeof(thome), "TRITON_HOME=%s", scratch);
    char *env[] = {home, tmp, cache, thome, "PATH=/usr/local/bin:/usr/bin:/bin", NULL};
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int in = open("request.json", O_RDONLY), out = open("output.json", O_WRONLY | O_CREAT | O_TRUNC, 0600),
            err = open("stderr.txt", O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (in < 0 || out < 0 || err < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
            _exit(127);
        char *argv[] = {(char *)python, "-I", "-B", (char *)helper, NULL};
        execve(python, argv, env);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* Confines this process for the helper (the header's comment says what it may do). */
static int confine(const char *python, const char *toolkit, const char *scratch, char *msg, size_t msg_size)
{
    static char prefix[PATH_MAX], venv[PATH_MAX], real[PATH_MAX];
    prefix_of(python, prefix, sizeof(prefix));
    char dir[PATH_MAX];
    temper_dirname(python, dir, sizeof(dir));
    temper_dirname(dir, venv, sizeof(venv)); /* a virtual environment's root: ENV/bin/python3 */
    if (!realpath(python, real))
        snprintf(real, sizeof(real), "%s", python);
    const char *reads[] = {toolkit, prefix, venv, NULL};
    const char *writes[] = {scratch, NULL};
    const char *execs[] = {real, prefix, venv, NULL};
    struct temper_sandbox_ns_config ns = {writes, NULL, reads, 0};
    struct temper_sandbox_status st;
    memset(&st, 0, sizeof(st));
    temper_sandbox_namespaces(&ns, &st);
    if (chdir(scratch))
        return temper_fail(msg, msg_size, TEMPER_EIO, "cannot enter %s: %s", scratch, strerror(errno));
    struct temper_sandbox_config cfg = {reads, writes, 1, "Triton's Python and its ptxas", 16ull << 30, 4096, 0,
                                        NULL, execs};
    if (temper_sandbox_apply(&cfg, &st))
        return temper_fail(msg, msg_size, TEMPER_EUNSUPPORTED, "cannot confine Triton's compile: %s", st.reason);
    return 0;
}

/* Writes the helper's request (the candidate's source, its compile request from options, the
 * architecture) to request.json; 0 or an error. */
static int write_request(json_t *req, char *msg, size_t msg_size)
{
    const char *options = json_string_value(json_object_get(req, "options"));
    const char *arch = json_string_value(json_object_get(req, "arch"));
    json_t *spec = options ? json_loads(options, 0, NULL) : NULL;
    if (!json_is_object(spec) || !arch || strncmp(arch, "sm_", 3) || atoi(arch + 3) < 70) {
        json_decref(spec);
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "a Triton compile request needs its options and an "
                           "architecture sm_NN (NN >= 70), not '%s'", arch ? arch : "");
    }
    json_object_set(spec, "source", json_object_get(req, "source"));
    json_object_set_new(spec, "arch", json_integer(atoi(arch + 3)));
    int err = json_dump_file(spec, "request.json", JSON_COMPACT) ? TEMPER_EIO : 0;
    json_decref(spec);
    return err ? temper_fail(msg, msg_size, err, "cannot write the helper's request") : 0;
}

int worker_triton_compile(json_t *req, const char *toolkit, const char *scratch, struct worker_triton_out *out)
{
    memset(out, 0, sizeof(*out));
    const char *python = json_string_value(json_object_get(req, "python"));
    char self[PATH_MAX], dir[PATH_MAX], helper[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    self[n > 0 ? n : 0] = 0;
    temper_dirname(self, dir, sizeof(dir));
    snprintf(helper, sizeof(helper), "%s/python/temper_triton.py", dir);
    if (!python || python[0] != '/' || access(python, X_OK))
        return temper_fail(out->log, sizeof(out->log), TEMPER_ENOTFOUND, "no Python interpreter '%s' (TEMPER_PYTHON)",
                           python ? python : "");
    if (access(helper, R_OK))
        return temper_fail(out->log, sizeof(out->log), TEMPER_ENOTFOUND, "temper's Triton helper %s is missing",
                           helper);
    int err = confine(python, toolkit, scratch, out->log, sizeof(out->log));
    if (!err && !json_is_true(json_object_get(req, "probe")))
        err = write_request(req, out->log, sizeof(out->log));
    else if (!err && json_dump_file(json_pack("{s:b}", "probe", 1), "request.json", 0))
        err = temper_fail(out->log, sizeof(out->log), TEMPER_EIO, "cannot write the helper's request");
    if (err)
        return err;
    int status = run_helper(python, helper, scratch);
    json_t *reply = json_load_file("output.json", 0, NULL);
    const char *verdict = json_string_value(json_object_get(reply, "verdict"));
    const char *text = json_string_value(json_object_get(reply, "message"));
    snprintf(out->version, sizeof(out->version), "%s", json_string_value(json_object_get(reply, "triton")) ?: "");
    if (!json_is_true(json_object_get(reply, "ok"))) {
        char tail[2048] = "";
        FILE *f = fopen("stderr.txt", "r");
        size_t got = f ? fread(tail, 1, sizeof(tail) - 1, f) : 0;
        tail[got] = 0;
        if (f)
            fclose(f);
        snprintf(out->verdict, sizeof(out->verdict), "%s", verdict ? verdict : "unavailable");
        err = temper_fail(out->log, sizeof(out->log), verdict && strcmp(verdict, "unavailable") ? TEMPER_ECOMPILE
                                                                                                : TEMPER_EUNSUPPORTED,
                          "%s%s%s", text ? text : "Triton's helper failed", text ? "" : (status < 0 ? ": no start"
                                                                                                     : ":\n"),
                          text ? "" : tail);
        json_decref(reply);
        return err;
    }
    const char *b64 = json_string_value(json_object_get(reply, "binary"));
    if (json_is_true(json_object_get(req, "probe")))
        b64 = NULL;
    else if (!b64 || worker_b64_decode(b64, strlen(b64), &out->binary, &out->size))
        err = temper_fail(out->log, sizeof(out->log), TEMPER_EIO, "the helper's binary is not base64");
    json_decref(reply);
    return err;
}
