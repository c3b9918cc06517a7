/* option_rule.c: which compiler options a candidate may set (its `@temper flags` lines and the
 * knob values they name). Options are an allow-list per language, so that no option can name a
 * file to read or write (-I, -include, --pre-include, --time=FILE, --create-pch, ...): with the
 * include rule, nothing of the host's files reaches the compiler. Quotes and backslashes are
 * refused outright, so that every compiler splits the options into the same words this check
 * sees. */
#include <string.h>

#include "temper/error.h"
#include "kernel/kernel_internal.h"

/* Options a CUDA candidate may give as one word. */
static const char *const cuda_exact[] = {
    "--use_fast_math", "-use_fast_math", "--extra-device-vectorization", "-extra-device-vectorization",
    "--restrict", "-restrict", "-default-device", "--device-as-default-execution-space", "-lineinfo",
    "--generate-line-info", "-G", "--device-debug", "-w", "--disable-warnings", "--display-error-number",
    "-err-no", "--no-display-error-number", "-no-err-no", "-dlto", "--dlink-time-opt", "-ewp",
    "--extensible-whole-program", "--fdevice-syntax-only", "-Wreorder", "--Wreorder",
    "-Wno-deprecated-declarations", "--Wno-deprecated-declarations", "-Werror", NULL,
};

/* Options a CUDA candidate may give as PREFIX and a value of letters, digits and "_.,+-". */
static const char *const cuda_valued[] = {
    "--maxrregcount=", "-maxrregcount=", "--ftz=", "-ftz=", "--prec-sqrt=", "-prec-sqrt=", "--prec-div=",
    "-prec-div=", "--fmad=", "-fmad=", "--std=", "-std=", "--gpu-architecture=", "-arch=", "--dopt=", "-dopt=",
    "--relocatable-device-code=", "-rdc=", "--diag-suppress=", "-diag-suppress=", "--diag-error=", "-diag-error=",
    "--diag-warn=", "-diag-warn=", "--split-compile=", "-split-compile=", "--builtin-move-forward=",
    "--builtin-initializer-list=", NULL,
};

/* ptxas options, after -Xptxas or in --ptxas-options=: exact words, then prefixes with values. */
static const char *const ptxas_exact[] = {
    "-v", "--verbose", "--warn-on-spills", "-warn-spills", "--warn-on-local-memory-usage", "-warn-lmem-usage",
    "--warn-on-double-precision-use", "-warn-double-usage", "-O0", "-O1", "-O2", "-O3", NULL,
};
static const char *const ptxas_valued[] = {
    "-dlcm=", "--def-load-cache=", "-dscm=", "--def-store-cache=", "--opt-level=", "-maxrregcount=",
    "--maxrregcount=", "--allow-expensive-optimizations=", "-allow-expensive-optimizations=", NULL,
};

/* Options an OpenCL candidate may give as one word, besides -cl-* and -D/-U. */
static const char *const opencl_exact[] = {"-w", "-Werror", "-g", "-O0", "-O1", "-O2", "-O3", NULL};

static int in_list(const char *const *list, const char *w, size_t n)
{
    for (; *list; list++)
        if (strlen(*list) == n && !memcmp(*list, w, n))
            return 1;
    return 0;
}

static int is_ident(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
}

/* A value after PREFIX: letters, digits and "_.,+-", not empty. */
static int valued(const char *const *list, const char *w, size_t n)
{
    for (; *list; list++) {
        size_t p = strlen(*list);
        if (n <= p || memcmp(*list, w, p))
            continue;
        size_t i = p;
        while (i < n && (is_ident(w[i]) || strchr("_.,+-", w[i])))
            i++;
        if (i == n)
            return 1;
    }
    return 0;
}

/* A ptxas option list ("-v,-dlcm=cg"). */
static int ptxas_ok(const char *w, size_t n)
{
    while (n) {
        const char *comma = memchr(w, ',', n);
        size_t part = comma ? (size_t)(comma - w) : n;
        if (!in_list(ptxas_exact, w, part) && !valued(ptxas_valued, w, part))
            return 0;
        if (!comma)
            return 1;
        w += part + 1;
        n -= part + 1;
    }
    return 0;
}

/* -DNAME, -DNAME=VALUE, -UNAME. */
static int define_ok(const char *w, size_t n)
{
    if (n < 3 || w[0] != '-' || (w[1] != 'D' && w[1] != 'U') || (w[2] >= '0' && w[2] <= '9'))
        return 0;
    size_t i = 2;
    while (i < n && is_ident(w[i]))
        i++;
    if (i == 2)
        return 0;
    return i == n || (w[1] == 'D' && w[i] == '=');
}

int temper_compiler_options_check(enum temper_lang lang, const char *options, char *msg, size_t msg_size)
{
    for (const char *p = options; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if ((ch < 0x20 && ch != ' ' && ch != '\t') || ch >= 0x7f || strchr("\"'\\`", ch))
            return temper_fail(msg, msg_size, TEMPER_EPARSE,
                               "compiler options: byte 0x%02x at column %d is not allowed (no quotes, backslashes, "
                               "control or non-ASCII bytes)",
                               ch, (int)(p - options) + 1);
    }
    const char *p = options;
    int after_xptxas = 0, after_arch = 0;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        const char *w = p;
        while (*p && *p != ' ' && *p != '\t')
            p++;
        size_t n = (size_t)(p - w);
        int ok;
        if (after_xptxas) {
            ok = ptxas_ok(w, n);
        } else if (after_arch) {
            ok = n > 3 && (!memcmp(w, "sm_", 3) || (n > 8 && !memcmp(w, "compute_", 8)));
            for (size_t i = 0; ok && i < n; i++)
                ok = is_ident(w[i]);
        } else if (define_ok(w, n)) {
            ok = 1;
        } else if (lang == TEMPER_LANG_CUDA) {
            ok = in_list(cuda_exact, w, n) || valued(cuda_valued, w, n) ||
                 (n > 16 && !memcmp(w, "--ptxas-options=", 16) && ptxas_ok(w + 16, n - 16)) ||
                 (n > 8 && !memcmp(w, "-Xptxas=", 8) && ptxas_ok(w + 8, n - 8)) ||
                 (n == 7 && !memcmp(w, "-Xptxas", 7)) || (n == 5 && !memcmp(w, "-arch", 5));
        } else {
            ok = in_list(opencl_exact, w, n) || (n > 4 && !memcmp(w, "-cl-", 4));
            for (size_t i = 4; ok && n > 4 && i < n; i++)
                ok = is_ident(w[i]) || strchr("-=.", w[i]);
        }
        if (!ok)
            return temper_fail(msg, msg_size, TEMPER_EPARSE,
                               "compiler option '%.*s' is not allowed for %s (see docs/candidate.md: no option "
                               "may name a file)",
                               (int)(n < 200 ? n : 200), w, lang == TEMPER_LANG_CUDA ? "CUDA" : "OpenCL");
        int was_xptxas = !after_xptxas && !after_arch && n == 7 && !memcmp(w, "-Xptxas", 7);
        int was_arch = !after_xptxas && !after_arch && n == 5 && !memcmp(w, "-arch", 5);
        after_xptxas = was_xptxas;
        after_arch = was_arch;
    }
    if (after_xptxas || after_arch)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "compiler options: %s needs a value after it",
                           after_xptxas ? "-Xptxas" : "-arch");
    return 0;
}
