/* signature.c: what launch lines need beyond the directives: the kernel's own parameter list read
 * from the source (so an integer expression in args(...) goes as i32 or i64, as the kernel
 * declares it) and the device attributes expressions may name (SMS, WARP, ...). */
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "kernel/kernel_internal.h"
#include "util/util.h"

void temper_dev_attrs_fill(const struct temper_device_info *info, struct temper_dev_attrs *attrs)
{
    static const char *const names[TEMPER_DEV_ATTRS] = {
        "SMS",   "SMEM_PER_BLOCK", "SMEM_PER_BLOCK_OPTIN", "SMEM_PER_SM", "WARP", "L2_BYTES",
        "MAX_THREADS_PER_BLOCK", "CC", "MEM_BYTES",
    };
    int64_t values[TEMPER_DEV_ATTRS] = {
        info->compute_units,
        (int64_t)info->local_mem_bytes,
        (int64_t)(info->local_mem_optin_bytes ? info->local_mem_optin_bytes : info->local_mem_bytes),
        (int64_t)(info->local_mem_per_cu_bytes ? info->local_mem_per_cu_bytes : info->local_mem_bytes),
        info->warp_size > 0 ? info->warp_size : 1,
        (int64_t)info->cache_bytes,
        (int64_t)info->max_work_group,
        info->cc_major * 10 + info->cc_minor,
        (int64_t)info->global_mem_bytes,
    };
    for (int i = 0; i < TEMPER_DEV_ATTRS; i++) {
        attrs->names[i] = names[i];
        attrs->values[i] = values[i];
    }
}

static int is_word(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

int temper_launch_arg_is_name(const char *arg)
{
    if (!*arg || (*arg >= '0' && *arg <= '9'))
        return 0;
    for (const char *p = arg; *p; p++)
        if (!is_word((unsigned char)*p))
            return 0;
    return 1;
}

/* The source with comments, string and character literals turned into spaces (same length), so
 * that the search below sees code only. Caller frees. NULL when out of memory. */
static char *code_only(const char *src, size_t len)
{
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    size_t i = 0;
    while (i < len) {
        if (src[i] == '/' && i + 1 < len && src[i + 1] == '/') {
            while (i < len && src[i] != '\n')
                out[i++] = ' ';
        } else if (src[i] == '/' && i + 1 < len && src[i + 1] == '*') {
            out[i++] = ' ';
            out[i++] = ' ';
            while (i < len && !(src[i] == '*' && i + 1 < len && src[i + 1] == '/'))
                out[i] = src[i] == '\n' ? '\n' : ' ', i++;
            for (int k = 0; k < 2 && i < len; k++)
                out[i++] = ' ';
        } else if (src[i] == '"' || src[i] == '\'') {
            char q = src[i];
            out[i++] = ' ';
            while (i < len && src[i] != q && src[i] != '\n') {
                if (src[i] == '\\' && i + 1 < len)
                    out[i++] = ' ';
                out[i++] = ' ';
            }
            if (i < len)
                out[i++] = ' ';
        } else {
            out[i] = src[i];
            i++;
        }
    }
    out[len] = 0;
    return out;
}

/* 1 when the word w (n bytes) appears as a whole word in text[from, to). */
static int has_word(const char *text, size_t from, size_t to, const char *w)
{
    size_t n = strlen(w);
    for (size_t i = from; i + n <= to; i++)
        if (!memcmp(text + i, w, n) && (i == from || !is_word((unsigned char)text[i - 1])) &&
            (i + n == to || !is_word((unsigned char)text[i + n])))
            return 1;
    return 0;
}

/* The kind of one parameter's declaration, text[from, to). */
static enum temper_param_kind param_kind(const char *text, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (text[i] == '*' || text[i] == '&' || text[i] == '[')
            return TEMPER_PARAM_OTHER;
    if (memchr(text + from, '<', to - from)) /* a template's type: its arguments say nothing of it */
        return TEMPER_PARAM_UNKNOWN;
    static const char *const other[] = {"float", "double", "half", "short", "char", "bool", "__half",
                                        "__nv_bfloat16", "ushort", "uchar", "float2", "float4", "int2",
                                        "int4", "uint2", "uint4", NULL};
    for (int k = 0; other[k]; k++)
        if (has_word(text, from, to, other[k]))
            return TEMPER_PARAM_OTHER;
    static const char *const u64[] = {"uint64_t", "size_t", "uintptr_t", "ulong", NULL};
    static const char *const i64[] = {"int64_t", "ptrdiff_t", "intptr_t", "ssize_t", "long", NULL};
    for (int k = 0; u64[k]; k++)
        if (has_word(text, from, to, u64[k]))
            return TEMPER_PARAM_U64;
    for (int k = 0; i64[k]; k++)
        if (has_word(text, from, to, i64[k]))
            return has_word(text, from, to, "unsigned") ? TEMPER_PARAM_U64 : TEMPER_PARAM_I64;
    if (has_word(text, from, to, "uint32_t") || has_word(text, from, to, "uint") ||
        has_word(text, from, to, "unsigned"))
        return TEMPER_PARAM_U32;
    if (has_word(text, from, to, "int32_t") || has_word(text, from, to, "int") || has_word(text, from, to, "signed"))
        return TEMPER_PARAM_I32;
    if (has_word(text, from, to, "__grid_constant__"))
        return TEMPER_PARAM_GRID_CONSTANT;
    return TEMPER_PARAM_UNKNOWN;
}

/* Bounds that keep the search linear in the source's length whatever it holds: a declaration's
 * name comes within this many bytes after its __global__ / __kernel keyword, and at most this many
 * keywords are looked at. */
#define SIG_KEYWORD_REACH 1024
#define SIG_KEYWORDS_MAX 256

/* The number of words (runs of letters, digits and '_') in text[from, to). */
static int count_words(const char *text, size_t from, size_t to)
{
    int n = 0;
    for (size_t i = from; i < to; i++)
        n += is_word((unsigned char)text[i]) && (i == from || !is_word((unsigned char)text[i - 1]));
    return n;
}

/* Parses the parameter list opening at code[open] ('('): fills up to max kinds and returns the
 * number of parameters, or -1 when the list does not close. *certain is 1 when that number is the
 * compiler's too: no preprocessor line inside the list, and every entry at least a type and a
 * name (or a pointer, reference or array), so none is a macro standing for several. */
static int param_list(const char *code, size_t len, size_t open, enum temper_param_kind *kinds, int max,
                      int *certain)
{
    size_t p = open + 1, from = p;
    int depth = 0, n = 0;
    *certain = 1;
    for (; p < len; p++) {
        char c = code[p];
        if (c == '#')
            *certain = 0;
        if (c == '(' || c == '<' || c == '[')
            depth++;
        else if ((c == ')' || c == '>' || c == ']') && depth)
            depth--;
        else if ((c == ',' || c == ')') && !depth) {
            size_t a = from, b = p;
            while (a < b && (code[a] == ' ' || code[a] == '\t' || code[a] == '\n' || code[a] == '\r'))
                a++;
            while (b > a && (code[b - 1] == ' ' || code[b - 1] == '\t' || code[b - 1] == '\n' || code[b - 1] == '\r'))
                b--;
            int none = a == b || (b - a == 4 && !memcmp(code + a, "void", 4)); /* f() or f(void) */
            if (!(c == ')' && n == 0 && none)) {
                if (n < max)
                    kinds[n] = param_kind(code, from, p);
                n++;
                if (count_words(code, a, b) < 2 && !memchr(code + a, '*', b - a) && !memchr(code + a, '&', b - a) &&
                    !memchr(code + a, '[', b - a))
                    *certain = 0;
            }
            from = p + 1;
            if (c == ')')
                return n;
        }
    }
    return -1;
}

int temper_kernel_params(const char *source, size_t len, const char *kernel, enum temper_param_kind *kinds, int max,
                          int *certain)
{
    *certain = 0;
    size_t kn = strlen(kernel);
    if (!kn)
        return -1;
    char *code = code_only(source, len);
    if (!code)
        return -1;
    static const char *const keywords[] = {"__global__", "__kernel", "kernel", NULL};
    int found = -1, seen = 0, done = 0;
    for (size_t i = 0; i < len && !done && seen < SIG_KEYWORDS_MAX; i++) {
        if (i && is_word((unsigned char)code[i - 1]))
            continue;
        size_t kw = 0;
        for (int k = 0; keywords[k] && !kw; k++) {
            size_t n = strlen(keywords[k]);
            if (i + n <= len && !memcmp(code + i, keywords[k], n) && (i + n == len || !is_word((unsigned char)code[i + n])))
                kw = n;
        }
        if (!kw)
            continue;
        seen++;
        /* The kernel's name after the keyword (attributes, `void`, `extern "C"` between), before
         * the declaration ends. */
        size_t end = i + kw + SIG_KEYWORD_REACH < len ? i + kw + SIG_KEYWORD_REACH : len;
        for (size_t j = i + kw; j + kn <= end; j++) {
            if (code[j] == ';' || code[j] == '{' || code[j] == '}')
                break;
            if (code[j] != kernel[0] || is_word((unsigned char)code[j - 1]) || memcmp(code + j, kernel, kn) ||
                (j + kn < len && is_word((unsigned char)code[j + kn])))
                continue;
            size_t open = j + kn;
            while (open < len && (code[open] == ' ' || code[open] == '\t' || code[open] == '\n' || code[open] == '\r'))
                open++;
            if (open < len && code[open] == '(' && found < 0) {
                /* The first declaration decides the kinds, whether its list closes or not. */
                found = param_list(code, len, open, kinds, max, certain);
                done = found < 0;
                if (found < 0)
                    *certain = 0;
                break;
            }
            if (open < len && code[open] == '(') {
                /* Another declaration of the name (a prototype, or one of #if's branches): the
                 * count is certain only if every one has it. */
                enum temper_param_kind other[TEMPER_MAX_LAUNCH_ARGS];
                int also = 1;
                if (param_list(code, len, open, other, TEMPER_MAX_LAUNCH_ARGS, &also) != found || !also) {
                    *certain = 0;
                    done = 1;
                }
                break;
            }
        }
        i += kw - 1;
    }
    free(code);
    return found;
}

int temper_kernel_param_kinds(const char *source, size_t len, const char *kernel, enum temper_param_kind *kinds,
                              int max)
{
    int certain;
    return temper_kernel_params(source, len, kernel, kinds, max, &certain);
}
