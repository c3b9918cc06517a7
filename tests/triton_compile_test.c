/* triton_compile_test.c: compiles Triton candidates the way an evaluation does, without a GPU:
 * each file is parsed (its directives, its kernels' parameter lists, the knobs' checks), its task
 * found, its compile request made with every knob at its first value (or the --set values given
 * before it), and compiled for sm_90 in a compile process (`temper-worker compile`, confined, the
 * Python of TEMPER_PYTHON running temper's helper). A file that expects nothing must give temper's
 * container: the magic line, a header naming its kernels with their warps and shared memory, and
 * an sm_90 cubin (an ELF image) for each. A file with `# @expect VERDICT` (invalid or
 * compile_error) must be refused so, and with `# @expect-message TEXT` its message must hold TEXT.
 *
 * usage: triton_compile_test [--set NAME=VALUE]... FILE...  (exit 77: no Python with Triton) */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "eval/triton_build.h"
#include "eval/worker_impl.h"
#include "kernel/kernel_internal.h"
#include "temper/error.h"
#include "temper/eval.h"
#include "temper/task.h"
#include "util/util.h"

#define SKIP 77

/* The text after `key ` on its line in source into out; "" when absent. */
static void expectation(const char *source, const char *key, char *out, size_t size)
{
    out[0] = 0;
    const char *p = strstr(source, key);
    if (!p)
        return;
    p += strlen(key);
    p += strspn(p, " \t");
    size_t n = strcspn(p, "\r\n");
    snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), p);
}

/* Runs a compile process on req (taken); its exit status in *status, its output frame returned. */
static json_t *compile_once(json_t *req, int *status, char *msg, size_t msg_size)
{
    struct compile_proc p;
    int err = compile_proc_start(req, &p, msg, msg_size);
    json_decref(req);
    if (err)
        return NULL;
    return compile_proc_end(&p, status);
}

/* Checks a built container: the magic, the header's kernels and an ELF image for each. */
static int check_container(const char *path, const char *bin, size_t size)
{
    static const char magic[] = "TEMPER-TRITON 1\n";
    const char *nl = size > sizeof(magic) ? memchr(bin + sizeof(magic) - 1, '\n', size - sizeof(magic) + 1) : NULL;
    if (!nl || memcmp(bin, magic, sizeof(magic) - 1)) {
        fprintf(stderr, "FAIL %s: the binary is not temper's Triton container\n", path);
        return 1;
    }
    json_t *h = json_loadb(bin + sizeof(magic) - 1, (size_t)(nl - bin) - (sizeof(magic) - 1), 0, NULL);
    size_t i;
    json_t *k;
    int bad = !json_array_size(json_object_get(h, "kernels"));
    json_array_foreach(json_object_get(h, "kernels"), i, k)
    {
        size_t off = (size_t)json_integer_value(json_object_get(k, "offset"));
        const char *elf = nl + 1 + off;
        bad |= elf + 4 > bin + size || memcmp(elf, "\x7f" "ELF", 4) ||
               json_integer_value(json_object_get(k, "num_warps")) < 1 || !json_object_get(k, "shared");
        printf("     kernel %s: %lld warps, %lld bytes of shared memory, cubin of %lld bytes (Triton %s)\n",
               json_string_value(json_object_get(k, "kernel")),
               (long long)json_integer_value(json_object_get(k, "num_warps")),
               (long long)json_integer_value(json_object_get(k, "shared")),
               (long long)json_integer_value(json_object_get(k, "size")),
               json_string_value(json_object_get(h, "triton")));
    }
    json_decref(h);
    if (bad)
        fprintf(stderr, "FAIL %s: the container's header or a cubin is malformed\n", path);
    return bad;
}

/* What an evaluation does before the device: parse, task, knobs, compile request. 0 with the
 * request's options in options; otherwise the refusal's message in msg. */
static int prepare(const char *path, char *const *sets, int nsets, struct temper_candidate *cand, char *options,
                   size_t size, char *msg, size_t msg_size)
{
    int err = temper_candidate_load(path, cand, msg, msg_size);
    if (err)
        return err;
    char dir[TEMPER_PATH_MAX];
    struct temper_task task;
    if ((err = temper_task_find(temper_tasks_root(NULL), cand->task, dir, sizeof(dir), msg, msg_size)) ||
        (err = temper_task_load(dir, &task, msg, msg_size)))
        return err;
    struct temper_knobs knobs;
    temper_knobs_default(cand, &knobs);
    for (int i = 0; i < nsets && !err; i++)
        err = temper_knobs_set(cand, &knobs, sets[i], msg, msg_size);
    if (!err)
        err = temper_candidate_check(cand, &knobs, msg, msg_size);
    if (!err)
        err = temper_triton_options(cand, &task, &knobs, options, size, msg, msg_size);
    return err;
}

static int check_file(const char *path, char *const *sets, int nsets)
{
    char *text = NULL, why[256], want[32], want_msg[256], msg[8192] = "", options[4096];
    size_t len = 0;
    if (temper_read_file(path, 1u << 20, &text, &len, why, sizeof(why))) {
        fprintf(stderr, "FAIL %s: %s\n", path, why);
        return 1;
    }
    expectation(text, "@expect ", want, sizeof(want));
    expectation(text, "@expect-message ", want_msg, sizeof(want_msg));
    free(text);
    struct temper_candidate cand;
    memset(&cand, 0, sizeof(cand));
    const char *got = "built";
    int err = prepare(path, sets, nsets, &cand, options, sizeof(options), msg, sizeof(msg)), status = 0, rc = 0;
    json_t *out = NULL;
    if (err) {
        got = "invalid";
    } else {
        out = compile_once(triton_compile_request(&cand, options, "sm_90", 8ull << 30), &status, msg, sizeof(msg));
        if (!out) {
            fprintf(stderr, "FAIL %s: no compile process: %s\n", path, msg);
            rc = 1;
        } else if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
            fprintf(stderr, "SKIP %s: Triton could not run: %s\n", path,
                    json_string_value(json_object_get(out, "log")));
            rc = SKIP;
        } else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
            got = triton_refusal(out, status, 0, 0, msg, sizeof(msg)) == TEMPER_VERDICT_INVALID ? "invalid"
                                                                                                 : "compile_error";
        }
    }
    temper_candidate_free(&cand);
    const char *expect = want[0] ? want : "built";
    if (!rc && strcmp(got, expect)) {
        fprintf(stderr, "FAIL %s: expected %s, got %s: %s\n", path, expect, got, msg);
        rc = 1;
    } else if (!rc && want_msg[0] && !strstr(msg, want_msg)) {
        fprintf(stderr, "FAIL %s: the message does not say '%s': %s\n", path, want_msg, msg);
        rc = 1;
    } else if (!rc && !strcmp(got, "built")) {
        json_t *bin = json_object_get(out, "binary");
        rc = check_container(path, json_string_value(bin), json_string_length(bin));
    }
    if (!rc)
        printf("ok   %s: %s%s%s\n", path, got, strcmp(got, "built") ? ": " : "", strcmp(got, "built") ? msg : "");
    json_decref(out);
    return rc;
}

int main(int argc, char **argv)
{
    char version[512], msg[4096];
    if (triton_probe(version, sizeof(version), msg, sizeof(msg))) {
        fprintf(stderr, "SKIP: no Python with Triton: %s\n", msg);
        return SKIP;
    }
    printf("Triton %s\n", version);
    char *sets[16];
    int nsets = 0, failed = 0, skipped = 0, checked = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--set") && i + 1 < argc && nsets < 16) {
            sets[nsets++] = argv[++i];
            continue;
        }
        int rc = check_file(argv[i], sets, nsets);
        failed += rc == 1;
        skipped += rc == SKIP;
        checked++;
        nsets = 0;
    }
    printf("%d files, %d failed, %d skipped\n", checked, failed, skipped);
    return failed ? 1 : skipped == checked && checked ? SKIP : 0;
}
