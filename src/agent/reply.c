/* reply.c: reading what a model wrote: <think> blocks apart from the answer, the fenced kernel
 * in the answer, and the features of a kernel's text (tiling, vector width, shared memory, tensor
 * cores, shuffles, launches) that keep the agent's population diverse. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "temper/error.h"
#include "util/util.h"

int temper_agent_split_think(const char *text, char **answer, char **reasoning)
{
    struct temper_buf a, r;
    temper_buf_init(&a, 1u << 26);
    temper_buf_init(&r, 1u << 26);
    int err = 0;
    const char *p = text;
    for (;;) {
        const char *open = strstr(p, "<think>");
        if (!open) {
            err |= temper_buf_append(&a, p, strlen(p));
            break;
        }
        err |= temper_buf_append(&a, p, (size_t)(open - p));
        const char *in = open + 7;
        const char *close = strstr(in, "</think>");
        size_t n = close ? (size_t)(close - in) : strlen(in);
        if (r.len)
            err |= temper_buf_append(&r, "\n\n", 2);
        err |= temper_buf_append(&r, in, n);
        if (!close)
            break;
        p = close + 8;
    }
    /* no leading blank lines left where a block was */
    const char *s = a.data ? a.data : "";
    while (*s == '\n' || *s == ' ' || *s == '\r' || *s == '\t')
        s++;
    *answer = strdup(s);
    *reasoning = strdup(r.data ? r.data : "");
    temper_buf_free(&a);
    temper_buf_free(&r);
    if (err || !*answer || !*reasoning) {
        free(*answer);
        free(*reasoning);
        *answer = *reasoning = NULL;
        return TEMPER_ENOMEM;
    }
    return 0;
}

/* The start of the line after p's line, or NULL at the end. */
static const char *next_line(const char *p)
{
    const char *nl = strchr(p, '\n');
    return nl ? nl + 1 : NULL;
}

/* 1 if the line at p opens or closes a fence (``` after at most three spaces). */
static int is_fence(const char *p)
{
    int sp = 0;
    while (*p == ' ' && sp < 4) {
        p++;
        sp++;
    }
    return sp < 4 && !strncmp(p, "```", 3);
}

enum temper_agent_code temper_agent_extract_code(const char *text, char **code)
{
    *code = NULL;
    const char *best = NULL, *first_directive = NULL;
    size_t best_len = 0, directive_len = 0;
    int unclosed = 0;
    for (const char *line = text; line;) {
        if (!is_fence(line)) {
            line = next_line(line);
            continue;
        }
        const char *body = next_line(line);
        const char *end = body;
        while (end && !is_fence(end))
            end = next_line(end);
        if (!body || !end) {
            unclosed = 1;
            break;
        }
        size_t len = (size_t)(end - body);
        /* the first block with a directive is the kernel; else the longest */
        if (!first_directive) {
            const char *d = strstr(body, "@temper");
            if (d && d < end) {
                first_directive = body;
                directive_len = len;
            }
        }
        if (len > best_len) {
            best = body;
            best_len = len;
        }
        line = next_line(end);
    }
    if (first_directive) {
        best = first_directive;
        best_len = directive_len;
    }
    if (!best)
        return unclosed ? TEMPER_AGENT_CODE_CUTOFF : TEMPER_AGENT_CODE_NONE;
    *code = strndup(best, best_len);
    return *code ? TEMPER_AGENT_CODE_FOUND : TEMPER_AGENT_CODE_NONE;
}

/* Counts the occurrences of word in s as a whole identifier. */
static int count_word(const char *s, const char *word)
{
    int n = 0;
    size_t len = strlen(word);
    for (const char *p = strstr(s, word); p; p = strstr(p + len, word)) {
        int before = p > s && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
        int after = isalnum((unsigned char)p[len]) || p[len] == '_';
        n += !before && !after;
    }
    return n;
}

/* The widest vector named: a type such as float4 / half2 / int4, or vloadN / vstoreN. */
static int vector_width(const char *s)
{
    static const char *const types[] = {"float", "half", "int", "uint", "double", "char", "uchar", "bfloat16", "vload",
                                        "vstore", "vload_half", "__half", "__nv_bfloat16"};
    int w = 1;
    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
        size_t len = strlen(types[t]);
        for (const char *p = strstr(s, types[t]); p; p = strstr(p + 1, types[t])) {
            if (p > s && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
                continue;
            const char *q = p + len;
            int v = 0;
            while (isdigit((unsigned char)*q))
                v = v * 10 + (*q++ - '0');
            if (isalnum((unsigned char)*q) || *q == '_')
                continue;
            if ((v == 2 || v == 4 || v == 8 || v == 16) && v > w)
                w = v;
        }
    }
    return w;
}

void temper_kernel_features_detect(const char *s, struct temper_kernel_features *f)
{
    memset(f, 0, sizeof(*f));
    f->shared_mem = count_word(s, "__shared__") + count_word(s, "__local") > 0;
    /* OpenCL's qualifier also goes without underscores: "local float buf[...]" */
    static const char *const types[] = {"float", "half", "int", "uint", "double", "char", "uchar", "short", "long"};
    for (const char *p = strstr(s, "local "); p && !f->shared_mem; p = strstr(p + 6, "local ")) {
        if (p > s && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
            continue;
        for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++)
            if (!strncmp(p + 6, types[t], strlen(types[t])))
                f->shared_mem = 1;
    }
    f->vector_width = vector_width(s);
    f->tensor_cores = strstr(s, "wmma") || strstr(s, "mma.sync") || strstr(s, "wgmma") || strstr(s, "mma_sync") ||
                      strstr(s, "intel_sub_group_") != NULL;
    f->warp_shuffle = strstr(s, "__shfl") || strstr(s, "sub_group_reduce") || strstr(s, "sub_group_broadcast") ||
                      strstr(s, "sub_group_shuffle") || strstr(s, "__reduce_") != NULL;
    /* tiling: a tile-sized constant, or a 2-D shared array */
    f->tiled = strstr(s, "TILE") || strstr(s, "tile") || strstr(s, "BLOCK_K") != NULL;
    if (!f->tiled && f->shared_mem) {
        for (const char *p = strstr(s, "__shared__"); p && !f->tiled; p = strstr(p + 1, "__shared__")) {
            const char *semi = strchr(p, ';'), *b = strstr(p, "][");
            f->tiled = b && semi && b < semi;
        }
        for (const char *p = strstr(s, "__local"); p && !f->tiled; p = strstr(p + 1, "__local")) {
            const char *semi = strchr(p, ';'), *b = strstr(p, "][");
            f->tiled = b && semi && b < semi;
        }
    }
    for (const char *p = strstr(s, "@temper"); p; p = strstr(p + 7, "@temper")) {
        const char *q = p + 7;
        while (*q == ' ' || *q == '\t')
            q++;
        if (!strncmp(q, "launch", 6) && (q[6] == ' ' || q[6] == '\t'))
            f->launches++;
        else if (!strncmp(q, "param", 5) && (q[5] == ' ' || q[5] == '\t'))
            f->knobs++;
    }
}

void temper_kernel_features_format(const struct temper_kernel_features *f, char *out, size_t size)
{
    snprintf(out, size, "%s vec%d%s%s%s launches=%d knobs=%d", f->tiled ? "tiled" : "untiled", f->vector_width,
             f->shared_mem ? " shared" : "", f->tensor_cores ? " tensor-cores" : "", f->warp_shuffle ? " shuffle" : "",
             f->launches, f->knobs);
}
