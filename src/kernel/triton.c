/* triton.c: what temper reads of a Triton candidate (a .py file of @triton.jit kernels with
 * `# @temper` directives) beyond the directives themselves: each launched kernel's parameter list
 * (which parameters are tl.constexpr), the checks that tie knobs to those parameters and to the
 * launch options Triton takes, and the compile request a set of knob values gives (the kernels'
 * signatures from the task's element types, their constexprs, num_warps and num_stages). The
 * compile itself runs in a compile process (python/temper_triton.py). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernel_internal.h"
#include "util/util.h"

/* Triton's launch options that a knob may name: the two temper passes to triton.compile. */
static const char *const launch_options[] = {"num_warps", "num_stages", NULL};
/* Options of triton.compile (or of Triton's launcher) that temper does not pass or cannot launch;
 * a knob by one of these names would be read as a constexpr and is refused instead. */
static const char *const refused_options[] = {"num_ctas", "maxnreg", "enable_fp_fusion", "launch_cooperative_grid",
                                              "launch_pdl", "num_buffers_warp_spec", "num_consumer_groups",
                                              "reg_dec_producer", "reg_inc_consumer", "debug", NULL};

static int listed(const char *const *list, const char *name)
{
    for (int i = 0; list[i]; i++)
        if (!strcmp(list[i], name))
            return 1;
    return 0;
}

static int word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The start of the line holding p. */
static const char *line_start(const char *src, const char *p)
{
    while (p > src && p[-1] != '\n' && p[-1] != '\r')
        p--;
    return p;
}

/* Whether the lines just above the one at def (blank lines and comments skipped) hold a decorator
 * naming jit: `@triton.jit`, `@triton.jit(...)`, `@jit`. */
static int decorated_jit(const char *src, const char *def)
{
    const char *p = line_start(src, def);
    while (p > src) {
        const char *end = p - 1;
        if (end > src && *end == '\n' && end[-1] == '\r')
            end--;
        const char *start = line_start(src, end);
        const char *q = start;
        while (q < end && (*q == ' ' || *q == '\t'))
            q++;
        if (q < end && *q == '@') {
            for (const char *w = q; w + 3 <= end; w++)
                if (!strncmp(w, "jit", 3) && !word_char(w[3]) && (w == q + 1 || w[-1] == '.'))
                    return 1;
        } else if (q < end && *q != '#') {
            return 0;
        }
        p = start;
    }
    return 0;
}

/* Finds `def kernel(` at the start of a line under a jit decorator; returns the position after
 * its '(' or NULL. */
static const char *find_def(const char *src, size_t len, const char *kernel)
{
    size_t n = strlen(kernel);
    for (const char *p = src; (p = strstr(p, "def ")) && p < src + len; p += 4) {
        const char *s = line_start(src, p);
        while (s < p && (*s == ' ' || *s == '\t'))
            s++;
        if (s != p)
            continue;
        const char *q = p + 4;
        while (*q == ' ' || *q == '\t')
            q++;
        if (strncmp(q, kernel, n) || word_char(q[n]))
            continue;
        q += n;
        while (*q == ' ' || *q == '\t')
            q++;
        if (*q == '(' && decorated_jit(src, p))
            return q + 1;
    }
    return NULL;
}

/* Reads one parameter (text of len bytes, a comment already removed) into p. */
static int read_param(const char *text, size_t len, struct temper_triton_param *p)
{
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
        i++;
    size_t start = i;
    while (i < len && word_char(text[i]))
        i++;
    if (i == start || i - start >= sizeof(p->name))
        return -1;
    snprintf(p->name, sizeof(p->name), "%.*s", (int)(i - start), text + start);
    p->constexpr_ = 0;
    for (size_t k = i; k + 9 <= len && text[k] != '='; k++)
        if (!strncmp(text + k, "constexpr", 9))
            p->constexpr_ = 1;
    return 0;
}

int temper_triton_params(const char *source, size_t len, const char *kernel, struct temper_triton_param *params,
                         int max)
{
    const char *p = find_def(source, len, kernel);
    if (!p)
        return -1;
    int n = 0, depth = 0;
    char buf[512];
    size_t used = 0;
    for (; p < source + len; p++) {
        if (*p == '#') { /* a comment runs to the end of its line */
            while (p < source + len && *p != '\n')
                p++;
            continue;
        }
        int end = depth == 0 && (*p == ')' || *p == ',');
        if (!end) {
            depth += *p == '(' || *p == '[';
            depth -= *p == ')' || *p == ']';
            if (used + 1 < sizeof(buf))
                buf[used++] = *p;
            continue;
        }
        size_t k = 0;
        while (k < used && (buf[k] == ' ' || buf[k] == '\t' || buf[k] == '\n' || buf[k] == '\r'))
            k++;
        if (k < used) { /* a trailing comma leaves an empty entry */
            if (n == max || buf[k] == '*' || buf[k] == '/' || read_param(buf, used, &params[n]))
                return -2;
            n++;
        }
        used = 0;
        if (*p == ')')
            return n;
    }
    return -2;
}

/* Whether name is a tl.constexpr parameter of a kernel some launch names. */
static int constexpr_of_any(const struct temper_candidate *c, const char *name)
{
    for (int l = 0; l < c->nlaunches; l++) {
        struct temper_triton_param ps[TEMPER_MAX_LAUNCH_ARGS * 2];
        int n = temper_triton_params(c->source, c->source_len, c->launches[l].kernel, ps, TEMPER_MAX_LAUNCH_ARGS * 2);
        for (int i = 0; i < n; i++)
            if (ps[i].constexpr_ && !strcmp(ps[i].name, name))
                return 1;
    }
    return 0;
}

/* One launch of a Triton candidate: its kernel must be a @triton.jit function of the source, and
 * args(...) must give one value to each of its parameters that is not a tl.constexpr. */
static int launch_check(struct temper_candidate *c, struct temper_launch *ln, char *msg, size_t msg_size)
{
    struct temper_triton_param ps[TEMPER_MAX_LAUNCH_ARGS * 2];
    int n = temper_triton_params(c->source, c->source_len, ln->kernel, ps, TEMPER_MAX_LAUNCH_ARGS * 2);
    if (n == -1)
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "%s:%d: launch: no kernel %s: expected `def %s(...)` under @triton.jit", c->path, ln->line,
                           ln->kernel, ln->kernel);
    if (n < 0)
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "%s:%d: launch %s: temper cannot read its parameter list (plain names, annotations and "
                           "defaults only; no *args, **kwargs or /; at most %d)",
                           c->path, ln->line, ln->kernel, TEMPER_MAX_LAUNCH_ARGS * 2);
    int plain = 0;
    for (int i = 0; i < n; i++) {
        if (ps[i].constexpr_) {
            int knob = 0;
            for (int k = 0; k < c->nparams && !knob; k++)
                knob = !strcmp(c->params[k].name, ps[i].name);
            if (!knob)
                return temper_fail(msg, msg_size, TEMPER_EPARSE,
                                   "%s:%d: launch %s: tl.constexpr parameter %s has no knob: add `# @temper param "
                                   "%s VALUE...`",
                                   c->path, ln->line, ln->kernel, ps[i].name, ps[i].name);
            continue;
        }
        if (plain < TEMPER_MAX_LAUNCH_ARGS)
            ln->arg_kind[plain] = TEMPER_PARAM_I32; /* an integer expression goes as Triton's i32 */
        plain++;
    }
    ln->kernel_nparams = plain;
    if (ln->nargs >= 0 && ln->nargs != plain)
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "%s:%d: launch %s: args(...) passes %d argument%s but kernel %s takes %d that %s not "
                           "tl.constexpr",
                           c->path, ln->line, ln->kernel, ln->nargs, ln->nargs == 1 ? "" : "s", ln->kernel, plain,
                           plain == 1 ? "is" : "are");
    return 0;
}

int temper_triton_finish(struct temper_candidate *c, const int *block_given, char *msg, size_t msg_size)
{
    if (c->flags[0])
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "%s: flags: a Triton candidate takes no compiler options (its knobs are tl.constexpr "
                           "parameters, num_warps and num_stages)", c->path);
    for (int i = 0; i < c->nparams; i++) {
        const struct temper_param *p = &c->params[i];
        if (listed(refused_options, p->name))
            return temper_fail(msg, msg_size, TEMPER_EPARSE,
                               "%s:%d: param %s: the launch option %s is not supported (knobs may be num_warps, "
                               "num_stages and the kernels' tl.constexpr parameters)",
                               c->path, p->line, p->name, p->name);
        if (!listed(launch_options, p->name) && !constexpr_of_any(c, p->name))
            return temper_fail(msg, msg_size, TEMPER_EPARSE,
                               "%s:%d: param %s: not a tl.constexpr parameter of a launched kernel, nor num_warps or "
                               "num_stages: Triton would take it as nothing",
                               c->path, p->line, p->name);
    }
    int have_warps = 0;
    for (int i = 0; i < c->nparams; i++)
        have_warps |= !strcmp(c->params[i].name, "num_warps");
    for (int l = 0; l < c->nlaunches; l++) {
        struct temper_launch *ln = &c->launches[l];
        if (block_given[l] || ln->smem[0])
            return temper_fail(msg, msg_size, TEMPER_EPARSE,
                               "%s:%d: launch %s: a Triton launch takes no %s: its block is 32 * num_warps threads and "
                               "its shared memory what Triton's compiler reports",
                               c->path, ln->line, ln->kernel, block_given[l] ? "block(...)" : "smem(...)");
        ln->block_n = 1;
        snprintf(ln->block[0], TEMPER_EXPR_MAX, "%s", have_warps ? "32 * num_warps" : "128");
        int err = launch_check(c, ln, msg, msg_size);
        if (err)
            return err;
    }
    return 0;
}

/* Triton's name of an element type in a signature ("fp32", "bf16", "i32", ...). */
static const char *triton_type(enum temper_dtype t)
{
    static const char *const names[TEMPER_DTYPE_COUNT] = {"fp32", "fp16", "bf16", "i8", "u8", "i32", "i64"};
    return (unsigned)t < TEMPER_DTYPE_COUNT ? names[t] : "i32";
}

/* The signature entry of one args(...) entry: a task array or scratch buffer is a pointer to its
 * element type, a task scalar its type, anything else an integer expression (i32). */
static void arg_type(const struct temper_candidate *c, const struct temper_task *task, const char *arg, char *out,
                     size_t size)
{
    for (int a = 0; a < task->nargs; a++)
        if (!strcmp(task->args[a].name, arg)) {
            int scalar = task->args[a].role == TEMPER_ROLE_SCALAR;
            snprintf(out, size, "%s%s", scalar ? "" : "*", triton_type(task->args[a].dtype));
            return;
        }
    for (int s = 0; s < c->nscratch; s++)
        if (!strcmp(c->scratch[s].name, arg)) {
            snprintf(out, size, "*%s", triton_type(c->scratch[s].dtype));
            return;
        }
    snprintf(out, size, "i32");
}

/* The request entry of one launched kernel: its parameter names, the signature of those that are
 * not tl.constexpr, and the knob text of those that are. */
static json_t *kernel_entry(const struct temper_candidate *c, const struct temper_task *task,
                            const struct temper_launch *ln, const struct temper_knobs *k)
{
    struct temper_triton_param ps[TEMPER_MAX_LAUNCH_ARGS * 2];
    int n = temper_triton_params(c->source, c->source_len, ln->kernel, ps, TEMPER_MAX_LAUNCH_ARGS * 2);
    json_t *names = json_array(), *sig = json_object(), *consts = json_object();
    for (int i = 0, plain = 0; i < n; i++) {
        json_array_append_new(names, json_string(ps[i].name));
        if (ps[i].constexpr_) {
            for (int j = 0; j < k->n; j++)
                if (!strcmp(k->names[j], ps[i].name))
                    json_object_set_new(consts, ps[i].name, json_string(k->values[j]));
            continue;
        }
        const char *arg = ln->nargs >= 0 ? (plain < ln->nargs ? ln->args[plain] : "")
                                         : (plain < task->nargs ? task->args[plain].name : "");
        char type[16];
        arg_type(c, task, arg, type, sizeof(type));
        json_object_set_new(sig, ps[i].name, json_string(type));
        plain++;
    }
    return json_pack("{s:s, s:o, s:o, s:o}", "name", ln->kernel, "params", names, "signature", sig, "constexprs",
                     consts);
}

int temper_triton_options(const struct temper_candidate *c, const struct temper_task *task,
                          const struct temper_knobs *k, char *out, size_t out_size, char *msg, size_t msg_size)
{
    json_t *kernels = json_array();
    for (int l = 0; l < c->nlaunches; l++) {
        int seen = 0;
        for (int m = 0; m < l && !seen; m++)
            seen = !strcmp(c->launches[m].kernel, c->launches[l].kernel);
        if (!seen)
            json_array_append_new(kernels, kernel_entry(c, task, &c->launches[l], k));
    }
    json_int_t warps = 4, stages = 3;
    for (int j = 0; j < k->n; j++) {
        char *end = NULL;
        long long v = strtoll(k->values[j], &end, 10);
        int is_warps = !strcmp(k->names[j], "num_warps"), is_stages = !strcmp(k->names[j], "num_stages");
        if ((is_warps || is_stages) && (*end || end == k->values[j] || v < 1 || v > (is_warps ? 32 : 16))) {
            json_decref(kernels);
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %s=%s: expected an integer from 1 to %d", c->path,
                               k->names[j], k->values[j], is_warps ? 32 : 16);
        }
        if (is_warps)
            warps = v;
        if (is_stages)
            stages = v;
    }
    if (warps & (warps - 1)) {
        json_decref(kernels);
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: num_warps=%lld: Triton takes a power of two", c->path,
                           (long long)warps);
    }
    json_t *req = json_pack("{s:o, s:I, s:I}", "kernels", kernels, "num_warps", warps, "num_stages", stages);
    char *text = req ? json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(req);
    int err = 0;
    if (!text)
        err = temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    else if (strlen(text) >= out_size)
        err = temper_fail(msg, msg_size, TEMPER_ERANGE, "%s: the Triton compile request is over %zu bytes", c->path,
                          out_size - 1);
    else
        snprintf(out, out_size, "%s", text);
    free(text);
    return err;
}
