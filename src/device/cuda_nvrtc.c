/* cuda_nvrtc.c: compiling CUDA C++ to CUBIN or PTX with NVRTC, without a device context, so that
 * the caller can compile in a separate process; with the include folders nvcc would give (the
 * toolkit's include and include/cccl, found from the NVRTC that loaded) and a small prelude of the
 * math macros <math.h> gives nvcc users (docs/candidate.md). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr and Dl_info */
#endif
#include "cuda_impl.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The toolkit's include folders, found once after NVRTC loads and read-only afterwards. */
struct cuda_includes {
    pthread_once_t once;     /* guards the search */
    int n;                   /* folders found: 0 (none), 1 (include) or 2 (include, include/cccl) */
    char dirs[2][PATH_MAX];  /* the toolkit's include folder, then its cccl folder */
};
static struct cuda_includes cuda_inc = {PTHREAD_ONCE_INIT, 0, {"", ""}};

/* What <math.h> gives an nvcc user and NVRTC does not: pre-included (by name, from memory) in
 * every CUDA candidate, each macro only where the candidate or a header has not defined it. The
 * values are those of glibc's math.h; INFINITY and NAN are float constant expressions, as in C99
 * (NVRTC has no __builtin_huge_valf or __builtin_nanf, but takes __builtin_bit_cast). */
static const char cuda_prelude_name[] = "temper_prelude.h";
static const char cuda_prelude[] =
    "#pragma once\n"
    "#ifndef INFINITY\n#define INFINITY (__builtin_bit_cast(float, 0x7f800000u))\n#endif\n"
    "#ifndef NAN\n#define NAN (__builtin_bit_cast(float, 0x7fc00000u))\n#endif\n"
    "#ifndef HUGE_VALF\n#define HUGE_VALF (__builtin_bit_cast(float, 0x7f800000u))\n#endif\n"
    "#ifndef HUGE_VAL\n#define HUGE_VAL (__builtin_bit_cast(double, 0x7ff0000000000000ull))\n#endif\n"
    "#ifndef M_E\n#define M_E 2.7182818284590452354\n#endif\n"
    "#ifndef M_LOG2E\n#define M_LOG2E 1.4426950408889634074\n#endif\n"
    "#ifndef M_LOG10E\n#define M_LOG10E 0.43429448190325182765\n#endif\n"
    "#ifndef M_LN2\n#define M_LN2 0.69314718055994530942\n#endif\n"
    "#ifndef M_LN10\n#define M_LN10 2.30258509299404568402\n#endif\n"
    "#ifndef M_PI\n#define M_PI 3.14159265358979323846\n#endif\n"
    "#ifndef M_PI_2\n#define M_PI_2 1.57079632679489661923\n#endif\n"
    "#ifndef M_PI_4\n#define M_PI_4 0.78539816339744830962\n#endif\n"
    "#ifndef M_1_PI\n#define M_1_PI 0.31830988618379067154\n#endif\n"
    "#ifndef M_2_PI\n#define M_2_PI 0.63661977236758134308\n#endif\n"
    "#ifndef M_2_SQRTPI\n#define M_2_SQRTPI 1.12837916709551257390\n#endif\n"
    "#ifndef M_SQRT2\n#define M_SQRT2 1.41421356237309504880\n#endif\n"
    "#ifndef M_SQRT1_2\n#define M_SQRT1_2 0.70710678118654752440\n#endif\n";

/* 1 when path/name can be read. */
static int cuda_readable(const char *path, const char *name)
{
    char full[PATH_MAX + 64];
    snprintf(full, sizeof full, "%s/%s", path, name);
    return access(full, R_OK) == 0;
}

/* Takes dir as the toolkit's include folder if it holds cuda_fp16.h (and its cccl folder, where
 * cuda/std lives since CUDA 13, if that exists); 1 when taken. */
static int cuda_take_include(const char *dir)
{
    if (!cuda_readable(dir, "cuda_fp16.h"))
        return 0;
    if (!realpath(dir, cuda_inc.dirs[0]))
        snprintf(cuda_inc.dirs[0], sizeof cuda_inc.dirs[0], "%.*s", PATH_MAX - 8, dir);
    cuda_inc.n = 1;
    if (cuda_readable(cuda_inc.dirs[0], "cccl/cuda/std/version")) {
        snprintf(cuda_inc.dirs[1], sizeof cuda_inc.dirs[1], "%.*s/cccl", PATH_MAX - 8, cuda_inc.dirs[0]);
        cuda_inc.n = 2;
    }
    return 1;
}

/* The first toolkit include folder among: $CUDA_HOME/include, $CUDA_PATH/include, the include
 * folder beside the folder of the NVRTC that loaded (LIB/../include: /usr/local/cuda-13.0/lib and
 * .../targets/x86_64-linux/lib alike), LIB/../targets/ANY/include (a toolkit root's lib64 whose
 * headers are only under targets/), and /usr/local/cuda/include. */
static void cuda_find_includes(void)
{
    char dir[PATH_MAX + 32];
    const char *env[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH")};
    for (int i = 0; i < 2; i++) {
        if (!env[i] || !*env[i])
            continue;
        snprintf(dir, sizeof dir, "%.*s/include", PATH_MAX - 16, env[i]);
        if (cuda_take_include(dir))
            return;
    }
    Dl_info where;
    void *sym;
    memcpy(&sym, &cuda_nv.nvrtcVersion, sizeof sym);
    char lib[PATH_MAX];
    if (dladdr(sym, &where) && where.dli_fname && realpath(where.dli_fname, lib)) {
        char *slash = strrchr(lib, '/');
        if (slash) {
            *slash = '\0'; /* the library's folder */
            snprintf(dir, sizeof dir, "%.*s/../include", PATH_MAX - 16, lib);
            if (cuda_take_include(dir))
                return;
            snprintf(dir, sizeof dir, "%.*s/../targets", PATH_MAX - 16, lib);
            DIR *targets = opendir(dir);
            struct dirent *e;
            int found = 0;
            while (targets && !found && (e = readdir(targets))) {
                char sub[PATH_MAX + 32];
                if (e->d_name[0] == '.')
                    continue;
                snprintf(sub, sizeof sub, "%.*s/../targets/%.*s/include", PATH_MAX - 300, lib, 255, e->d_name);
                found = cuda_take_include(sub);
            }
            if (targets)
                closedir(targets);
            if (found)
                return;
        }
    }
    cuda_take_include("/usr/local/cuda/include");
}

int cuda_include_dirs(const char **dirs, int max)
{
    pthread_once(&cuda_inc.once, cuda_find_includes);
    int n = 0;
    for (int i = 0; i < cuda_inc.n && n < max; i++)
        dirs[n++] = cuda_inc.dirs[i];
    return n;
}

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
 * Returns a malloc'ed array of *argc + 4 slots (room for the added architecture, includes and prelude) pointing into
 * *storage, also malloc'ed; the caller frees both. NULL when out of memory. */
static char **cuda_split_options(const char *options, int *argc, char **storage)
{
    size_t len = options ? strlen(options) : 0;
    char *s = malloc(len + 1);
    char **argv = malloc((len / 2 + 6) * sizeof *argv); /* one word per two chars at most, plus 4 */
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
 * architecture (info may be NULL: NVRTC's default then), -I with the toolkit's include folders
 * where found (include and include/cccl, as nvcc gives them: cuda_fp16.h, cooperative_groups.h,
 * cub and cuda/std), and the prelude pre-included. The result is CUBIN for a real sm_
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
    /* after the caller's -I options, so theirs are searched first */
    const char *dirs[2];
    int ndirs = cuda_include_dirs(dirs, 2);
    char include_opt[2][PATH_MAX + 4];
    for (int i = 0; i < ndirs; i++) {
        snprintf(include_opt[i], sizeof include_opt[i], "-I%s", dirs[i]);
        argv[argc++] = include_opt[i];
    }
    char prelude_opt[64];
    snprintf(prelude_opt, sizeof prelude_opt, "--pre-include=%s", cuda_prelude_name);
    argv[argc++] = prelude_opt;
    int want_cubin = arch && strncmp(arch, "sm_", 3) == 0;

    nvrtcProgram prog = NULL;
    const char *headers[] = {cuda_prelude}, *header_names[] = {cuda_prelude_name};
    nvrtcResult r = cuda_nv.nvrtcCreateProgram(&prog, source, "candidate.cu", 1, headers, header_names);
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
