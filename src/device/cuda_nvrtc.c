/* cuda_nvrtc.c: compiling CUDA C++ to CUBIN or PTX with NVRTC, without a device context, so that
 * the caller can compile in a separate process. */
#include "cuda_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends n bytes of text to log (may be NULL), truncating at the log's maximum. */
static void cuda_log_append(struct temper_buf *log, const char *text, size_t n)
{
    if (!log || !n)
        return;
    if (temper_buf_append(log, text, n) == 0)
        return;
    if (log->max_bytes > log->len + 1)
        temper_buf_append(log, text, log->max_bytes - log->len - 1);
}

/* Splits options on whitespace; a double-quoted stretch stays in one word, without its quotes.
 * Returns a malloc'ed array of *argc + 2 slots (room for the added architecture and include) pointing into
 * *storage, also malloc'ed; the caller frees both. NULL when out of memory. */
static char **cuda_split_options(const char *options, int *argc, char **storage)
{
    size_t len = options ? strlen(options) : 0;
    char *s = malloc(len + 1);
    char **argv = malloc((len / 2 + 4) * sizeof *argv); /* one word per two chars at most, plus 2 */
    if (!s || !argv) {
        free(s);
        free(argv);
        return NULL;
    }
    int n = 0;
    size_t i = 0, o = 0;
    while (i < len) {
        while (i < len && (options[i] == ' ' || options[i] == '\t' || options[i] == '\n' || options[i] == '\r'))
            i++;
        if (i >= len)
            break;
        argv[n++] = s + o;
        int quoted = 0;
        while (i < len) {
            char ch = options[i];
            if (ch == '"') {
                quoted = !quoted;
                i++;
                continue;
            }
            if (!quoted && (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'))
                break;
            s[o++] = ch;
            i++;
        }
        s[o++] = '\0';
    }
    *argc = n;
    *storage = s;
    return argv;
}

/* The architecture an option names ("sm_90a" from "-arch=sm_90a" or "--gpu-architecture=sm_90a"),
 * "" for "-arch" with the value in the next word, or NULL when the option names none. */
static const char *cuda_option_arch(const char *opt)
{
    static const char *const prefixes[] = {"--gpu-architecture", "-arch", NULL};
    for (int i = 0; prefixes[i]; i++) {
        size_t n = strlen(prefixes[i]);
        if (strncmp(opt, prefixes[i], n) == 0 && (opt[n] == '=' || opt[n] == '\0'))
            return opt[n] == '=' ? opt + n + 1 : "";
    }
    return NULL;
}

/* Compiles CUDA C++ source with NVRTC, without a device context. options are split on whitespace
 * (double quotes group) and "--gpu-architecture=<info->arch>" is added unless they name an
 * architecture (info may be NULL: NVRTC's default then), and -I with the toolkit's include
 * folder where one was found, so that cuda_fp16.h and cuda_bf16.h can be included. The result is CUBIN for a real sm_
 * architecture, else NUL-terminated PTX; *binary is malloc'ed and the caller frees it. The
 * compiler's log is appended to log (may be NULL) in every case. */
int cuda_compile(const struct temper_device_info *info, const char *source, const char *options,
                        struct temper_buf *log, void **binary, size_t *binary_size, char *msg, size_t msg_size)
{
    *binary = NULL;
    *binary_size = 0;
    int err = cuda_load_nvrtc(msg, msg_size);
    if (err)
        return err;
    int argc = 0;
    char *storage = NULL;
    char **argv = cuda_split_options(options, &argc, &storage);
    if (!argv)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory splitting compiler options");
    const char *arch = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = cuda_option_arch(argv[i]);
        if (a)
            arch = *a || i + 1 >= argc ? a : argv[i + 1];
    }
    char arch_opt[64];
    if (!arch && info && info->arch[0]) {
        snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s", info->arch);
        argv[argc++] = arch_opt;
        arch = info->arch;
    }
    char include_opt[PATH_MAX + 4];
    if (cuda_include_dir[0]) { /* after the caller's -I options, so theirs are searched first */
        snprintf(include_opt, sizeof include_opt, "-I%s", cuda_include_dir);
        argv[argc++] = include_opt;
    }
    int want_cubin = arch && strncmp(arch, "sm_", 3) == 0;

    nvrtcProgram prog = NULL;
    nvrtcResult r = cuda_nv.nvrtcCreateProgram(&prog, source, "candidate.cu", 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        err = temper_fail(msg, msg_size, TEMPER_ECOMPILE, "nvrtcCreateProgram: %s", cuda_nv.nvrtcGetErrorString(r));
        goto done;
    }
    nvrtcResult cr = cuda_nv.nvrtcCompileProgram(prog, argc, (const char *const *)argv);
    size_t log_size = 0;
    if (cuda_nv.nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
        char *text = malloc(log_size);
        if (text && cuda_nv.nvrtcGetProgramLog(prog, text) == NVRTC_SUCCESS)
            cuda_log_append(log, text, strnlen(text, log_size));
        free(text);
    }
    if (cr != NVRTC_SUCCESS) {
        if (cr == NVRTC_ERROR_COMPILATION) {
            err = temper_fail(msg, msg_size, TEMPER_ECOMPILE, "NVRTC compilation failed");
        } else {
            /* e.g. an unknown option: say so in the log too, which may otherwise be empty */
            char line[256];
            int n = snprintf(line, sizeof line, "nvrtcCompileProgram: %s\n", cuda_nv.nvrtcGetErrorString(cr));
            cuda_log_append(log, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
            err = temper_fail(msg, msg_size, TEMPER_ECOMPILE, "NVRTC compilation failed: %s",
                              cuda_nv.nvrtcGetErrorString(cr));
        }
        goto done;
    }
    size_t size = 0;
    r = want_cubin ? cuda_nv.nvrtcGetCUBINSize(prog, &size) : cuda_nv.nvrtcGetPTXSize(prog, &size);
    if (r != NVRTC_SUCCESS || size == 0) {
        err = temper_fail(msg, msg_size, TEMPER_ECOMPILE, "NVRTC produced no %s: %s", want_cubin ? "CUBIN" : "PTX",
                          cuda_nv.nvrtcGetErrorString(r));
        goto done;
    }
    char *out = malloc(size);
    if (!out) {
        err = temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory for a %zu-byte binary", size);
        goto done;
    }
    r = want_cubin ? cuda_nv.nvrtcGetCUBIN(prog, out) : cuda_nv.nvrtcGetPTX(prog, out);
    if (r != NVRTC_SUCCESS) {
        free(out);
        err = temper_fail(msg, msg_size, TEMPER_ECOMPILE, "NVRTC: %s", cuda_nv.nvrtcGetErrorString(r));
        goto done;
    }
    *binary = out;
    *binary_size = size;
done:
    if (prog)
        cuda_nv.nvrtcDestroyProgram(&prog);
    free(argv);
    free(storage);
    return err;
}
