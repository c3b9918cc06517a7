/* nvrtc_compile_test.c: compiles CUDA candidates through temper's own NVRTC path without a device
 * (the offline compile the compile processes use), so that what nvcc users include compiles on a
 * machine with NVRTC and no GPU: the verdict cases and the real-kernel set. Each file is parsed
 * (the include rule and the option allow-list), its options built with every knob at its first
 * value, and compiled for sm_90; a file expecting `compile_error` must fail to compile, one
 * expecting `invalid` is skipped when its parse already refuses it, and every other file must
 * compile. The prelude's math macros are checked on a source of their own.
 *
 * A path may follow `--set NAME=VALUE` options: that path's files (a folder's or one file) compile with
 * those knobs in place of the defaults, so that a tunable candidate's other code paths compile too.
 *
 * usage: nvrtc_compile_test [--set NAME=VALUE]... PATH...   (PATH: a folder of .cu files, or one
 * file; exit 77: NVRTC is not there) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "device/device.h"
#include "temper/error.h"
#include "kernel/kernel_internal.h"
#include "util/util.h"

#include "candidate_files.h"

#define SKIP 77

/* The verdict a case expects (`@expect VERDICT`) into out; "" when none. */
static void expected(const char *source, char *out, size_t size)
{
    out[0] = 0;
    const char *p = strstr(source, "@expect ");
    if (!p)
        return;
    p += 8;
    p += strspn(p, " \t");
    size_t n = strcspn(p, " \t\r\n");
    snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), p);
}

/* Compiles source with options for sm_90 through the CUDA backend's offline compile. Returns the
 * error (0 compiled); the log goes into log. */
static int compile(const char *source, const char *options, struct temper_buf *log, char *msg, size_t msg_size)
{
    const struct temper_device_ops *ops = temper_device_backend("cuda");
    if (!ops)
        return temper_fail(msg, msg_size, TEMPER_ENODEVICE, "this build has no CUDA backend");
    struct temper_device_info info;
    memset(&info, 0, sizeof(info));
    snprintf(info.arch, sizeof(info.arch), "sm_90");
    void *bin = NULL;
    size_t size = 0;
    int err = temper_device_compile_offline(ops, &info, source, options, log, &bin, &size, msg, msg_size);
    free(bin);
    return err;
}

/* Checks one file with its default knobs, then the nsets assignments ("NAME=VALUE") over them;
 * returns 0 when it behaves as it expects, 1 otherwise, SKIP without NVRTC. */
static int check_file(const char *path, char *const *sets, int nsets)
{
    struct temper_candidate cand;
    char msg[2048] = "", want[32];
    int err = temper_candidate_load(path, &cand, msg, sizeof(msg));
    if (err) {
        char *text = NULL;
        size_t len = 0;
        char why[256];
        temper_read_file(path, 1u << 20, &text, &len, why, sizeof(why));
        expected(text ? text : "", want, sizeof(want));
        free(text);
        if (!strcmp(want, "invalid"))
            return 0;
        fprintf(stderr, "FAIL %s: refused before compiling: %s\n", path, msg);
        return 1;
    }
    expected(cand.source, want, sizeof(want));
    struct temper_knobs knobs;
    temper_knobs_default(&cand, &knobs);
    for (int i = 0; i < nsets; i++)
        if (temper_knobs_set(&cand, &knobs, sets[i], msg, sizeof(msg))) {
            temper_candidate_free(&cand);
            fprintf(stderr, "FAIL %s: --set %s: %s\n", path, sets[i], msg);
            return 1;
        }
    char options[4096];
    err = temper_candidate_options(&cand, &knobs, options, sizeof(options), msg, sizeof(msg));
    if (err) {
        temper_candidate_free(&cand);
        if (!strcmp(want, "invalid"))
            return 0;
        fprintf(stderr, "FAIL %s: options refused: %s\n", path, msg);
        return 1;
    }
    struct temper_buf log;
    temper_buf_init(&log, 1u << 20);
    err = compile(cand.source, options, &log, msg, sizeof(msg));
    temper_candidate_free(&cand);
    int rc = 0;
    if (err == TEMPER_ENODEVICE) {
        fprintf(stderr, "SKIP: NVRTC is not there: %s\n", msg);
        rc = SKIP;
    } else if (!strcmp(want, "compile_error")) {
        if (err != TEMPER_ECOMPILE) {
            fprintf(stderr, "FAIL %s: expects compile_error, compile returned %d (%s)\n", path, err, msg);
            rc = 1;
        }
    } else if (err) {
        fprintf(stderr, "FAIL %s: %s\n%s\n", path, msg, log.data ? log.data : "");
        rc = 1;
    }
    if (!rc) {
        printf("ok   %s (%s)", path, want[0] ? want : "no expectation");
        for (int i = 0; i < nsets; i++)
            printf(" %s", sets[i]);
        printf("\n");
    }
    temper_buf_free(&log);
    return rc;
}

/* The prelude gives what <math.h> gives nvcc users; a candidate's own definition still wins. */
static int check_prelude(void)
{
    static const char *const sources[] = {
        "extern \"C\" __global__ void k(float *y) {\n"
        "    y[0] = -INFINITY; y[1] = NAN; y[2] = (float)M_PI; y[3] = (float)(M_SQRT1_2 * M_2_SQRTPI);\n"
        "    y[4] = HUGE_VALF; y[5] = (float)(M_E + M_LN2 + M_LN10 + M_LOG2E + M_LOG10E + M_PI_2 + M_PI_4);\n"
        "    y[6] = (float)(M_1_PI + M_2_PI + M_SQRT2 + HUGE_VAL);\n"
        "}\n",
        "#define M_PI 3.14159265358979323846\n#define INFINITY __int_as_float(0x7f800000)\n"
        "extern \"C\" __global__ void k(float *y) { y[0] = (float)M_PI + INFINITY; }\n",
        "static_assert(INFINITY > 1e38f && NAN != NAN && M_PI > 3.14159 && M_PI < 3.1416, \"constants\");\n"
        "extern \"C\" __global__ void k(float *y) { y[0] = 1; }\n",
    };
    for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++) {
        struct temper_buf log;
        temper_buf_init(&log, 1u << 20);
        char msg[1024];
        int err = compile(sources[i], "", &log, msg, sizeof(msg));
        if (err == TEMPER_ENODEVICE) {
            fprintf(stderr, "SKIP: NVRTC is not there: %s\n", msg);
            temper_buf_free(&log);
            return SKIP;
        }
        if (err) {
            fprintf(stderr, "FAIL prelude source %zu: %s\n%s\n", i, msg, log.data ? log.data : "");
            temper_buf_free(&log);
            return 1;
        }
        temper_buf_free(&log);
    }
    printf("ok   the prelude's math macros\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: nvrtc_compile_test [--set NAME=VALUE]... PATH...\n");
        return 2;
    }
    int rc = check_prelude();
    if (rc == SKIP)
        return SKIP;
    int failed = rc, checked = 0;
    int set0 = 1; /* the first --set of the path at d */
    for (int d = 1; d < argc; d++) {
        if (!strcmp(argv[d], "--set")) {
            if (d + 1 == argc) {
                fprintf(stderr, "usage: --set needs NAME=VALUE\n");
                return 2;
            }
            d++;
            continue;
        }
        char **sets = argv + set0; /* --set A --set B: every other word from set0 */
        int nsets = (d - set0) / 2;
        char *given[64];
        if (nsets > 64) {
            fprintf(stderr, "usage: at most 64 --set options per path\n");
            return 2;
        }
        for (int i = 0; i < nsets; i++)
            given[i] = sets[2 * i + 1];
        set0 = d + 1;
        struct stat st;
        if (stat(argv[d], &st) == 0 && S_ISREG(st.st_mode)) {
            int r = check_file(argv[d], given, nsets);
            if (r == SKIP)
                return SKIP;
            failed += r;
            checked++;
            continue;
        }
        char **names = NULL;
        int n = candidate_files(argv[d], "cuda", &names);
        if (n < 0) {
            fprintf(stderr, "FAIL: cannot read %s\n", argv[d]);
            failed++;
        }
        for (int i = 0; i < n; i++) {
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", argv[d], names[i]);
            int r = check_file(path, given, nsets);
            if (r == SKIP) {
                for (int j = i; j < n; j++)
                    free(names[j]);
                free(names);
                return SKIP;
            }
            failed += r;
            checked++;
            free(names[i]);
        }
        free(names);
    }
    printf("%d files compiled as they expect, %d not\n", checked - failed + rc, failed);
    return failed ? 1 : 0;
}
