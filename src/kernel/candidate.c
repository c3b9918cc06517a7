/* candidate.c: parsing the @temper directives of a candidate kernel, and its compiler options
 * for a set of knob values (the knobs themselves: knobs.c). Every error names the file and line. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernel_internal.h"
#include "util/util.h"

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

static int is_word_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
}

/* Reads a word of letters, digits and '_' into out; returns the position after it. A word that
 * does not fit leaves out empty and sets *too_long (may be NULL: then it is cut). */
static const char *read_name(const char *p, char *out, size_t out_size, int *too_long)
{
    size_t n = 0;
    if (too_long)
        *too_long = 0;
    while (is_word_char(*p)) {
        if (n + 1 < out_size)
            out[n++] = *p;
        else if (too_long)
            *too_long = 1;
        else
            break;
        p++;
    }
    out[too_long && *too_long ? 0 : n] = 0;
    return p;
}

static const char *read_word(const char *p, char *out, size_t out_size)
{
    return read_name(p, out, out_size, NULL);
}

/* Reads a token up to whitespace into out. */
static const char *read_token(const char *p, char *out, size_t out_size, int *too_long)
{
    size_t n = 0;
    *too_long = 0;
    while (*p && *p != ' ' && *p != '\t') {
        if (n + 1 < out_size)
            out[n++] = *p;
        else
            *too_long = 1;
        p++;
    }
    out[n] = 0;
    return p;
}

/* Splits "a, f(b, c), d" at top-level commas into at most max parts of part_size bytes; -1 for an
 * empty part or too many parts, -2 for a part too long. */
static int split_list(const char *text, size_t len, char *parts, size_t part_size, int max, int *count)
{
    int depth = 0, n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        char c = i < len ? text[i] : ',';
        if (c == '(')
            depth++;
        else if (c == ')')
            depth--;
        if (c != ',' || depth)
            continue;
        const char *s = text + start;
        size_t l = i - start;
        while (l && isspace((unsigned char)*s))
            s++, l--;
        while (l && isspace((unsigned char)s[l - 1]))
            l--;
        if (!l || n == max)
            return -1;
        if (l >= part_size) {
            *count = n; /* the part that is too long */
            return -2;
        }
        memcpy(parts + (size_t)n * part_size, s, l);
        parts[(size_t)n * part_size + l] = 0;
        n++;
        start = i + 1;
    }
    *count = n;
    return 0;
}

int temper_launch_arg_tensormap(const char *arg, struct temper_tensormap_arg *out, char *msg, size_t msg_size)
{
    static const char head[] = "tensormap";
    const char *p = arg;
    while (*p == ' ' || *p == '\t')
        p++;
    if (strncmp(p, head, sizeof head - 1))
        return 1;
    p += sizeof head - 1;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p != '(')
        return 1;
    memset(out, 0, sizeof(*out));
    const char *open = ++p, *close = NULL;
    for (int depth = 1; *p; p++) {
        depth += *p == '(';
        depth -= *p == ')';
        if (!depth) {
            close = p;
            break;
        }
    }
    for (const char *q = close ? close + 1 : p; close && *q; q++)
        if (*q != ' ' && *q != '\t')
            close = NULL;
    if (!close)
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "'%s': expected tensormap(NAME, SWIZZLE, BOX0[, BOX1 ...]) with nothing after it", arg);
    /* name, swizzle, then one box expression per dimension */
    char parts[7][TEMPER_NAME_MAX];
    int n = 0;
    if (split_list(open, (size_t)(close - open), parts[0], TEMPER_NAME_MAX, 7, &n) || n < 3)
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "'%s': tensormap(...) takes a task argument's name, a swizzle span and 1 to 5 box "
                           "sizes, none empty",
                           arg);
    if (!temper_launch_arg_is_name(parts[0]))
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "'%s': tensormap(...)'s first entry must be a task argument's "
                           "name, not '%s'", arg, parts[0]);
    memcpy(out->name, parts[0], TEMPER_NAME_MAX);
    memcpy(out->swizzle, parts[1], TEMPER_NAME_MAX);
    out->rank = n - 2;
    for (int i = 0; i < out->rank; i++)
        memcpy(out->box[i], parts[2 + i], TEMPER_NAME_MAX);
    return 0;
}

/* grid(...) or block(...) (clause, its list at open, len bytes): 1 to 3 expressions. */
static int parse_dims_clause(const char *clause, const char *open, size_t len, struct temper_launch *l,
                             const char *where, char *msg, size_t msg_size)
{
    int n = 0, is_grid = clause[0] == 'g';
    int split = split_list(open, len, is_grid ? l->grid[0] : l->block[0], TEMPER_EXPR_MAX, 3, &n);
    if (split == -2)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: launch: an expression in %s(...) is longer than %d bytes",
                           where, clause, TEMPER_EXPR_MAX - 1);
    if (split || n < 1)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: launch: %s(...) needs 1 to 3 expressions", where, clause);
    *(is_grid ? &l->grid_n : &l->block_n) = n;
    return 0;
}

/* smem(...) or when(...) (clause, its text at open, len bytes): one expression, into out. */
static int parse_expr_clause(const char *clause, const char *open, size_t len, char out[TEMPER_EXPR_MAX],
                             const char *where, char *msg, size_t msg_size)
{
    if (len >= TEMPER_EXPR_MAX)
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "%s: launch: the expression in %s(...) is longer than %d bytes", where, clause,
                           TEMPER_EXPR_MAX - 1);
    if (len == 0)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: launch: %s(...) needs one expression", where, clause);
    snprintf(out, TEMPER_EXPR_MAX, "%.*s", (int)len, open);
    return 0;
}

/* args(...) (its list at open, len bytes): names, tensor maps or integer expressions. */
static int parse_args_clause(const char *open, size_t len, struct temper_launch *l, const char *where, char *msg,
                             size_t msg_size)
{
    if (len == 0) {
        l->nargs = 0;
        return 0;
    }
    int n = 0;
    int split = split_list(open, len, l->args[0], TEMPER_NAME_MAX, TEMPER_MAX_LAUNCH_ARGS, &n);
    if (split == -2) {
        const char *e = open; /* entry n (from 0) of the list: its first bytes, to name it */
        for (int k = 0, depth = 0; k < n && e < open + len; e++) {
            depth += *e == '(';
            depth -= *e == ')';
            k += *e == ',' && !depth;
        }
        while (*e == ' ' || *e == '\t')
            e++;
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "%s: launch: args(...)'s entry %d ('%.24s...') is longer than %d bytes", where, n + 1, e,
                           TEMPER_NAME_MAX - 1);
    }
    if (split)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: launch: args(...) must be up to %d names or expressions",
                           where, TEMPER_MAX_LAUNCH_ARGS);
    for (int a = 0; a < n; a++) {
        const char *arg = l->args[a];
        if (temper_launch_arg_is_name(arg))
            continue;
        struct temper_tensormap_arg tm;
        char why[512];
        int form = temper_launch_arg_tensormap(arg, &tm, why, sizeof(why));
        if (form < 0)
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: launch: args(...): %s", where, why);
        if (!form)
            continue;
        /* An expression: only what expressions are made of (checked fully when evaluated). */
        for (const char *q = arg; *q; q++)
            if (!is_word_char(*q) && !strchr(" \t+-*/%()<>=!&|,", *q))
                return temper_fail(msg, msg_size, TEMPER_EPARSE,
                                   "%s: launch: args(...): '%s' is neither a name nor an integer expression", where,
                                   arg);
    }
    l->nargs = n;
    return 0;
}

/* A launch line: the kernel's name, then its clauses, grid(...) and block(...) among them. */
static int parse_launch(const char *p, struct temper_launch *l, int triton, int *block_given, const char *where,
                        char *msg, size_t msg_size)
{
    int too_long;
    p = read_name(skip_ws(p), l->kernel, sizeof(l->kernel), &too_long);
    if (too_long)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: launch: the kernel name is longer than %zu bytes",
                           where, sizeof(l->kernel) - 1);
    if (!l->kernel[0] || *p == '(' || !strcmp(l->kernel, "grid") || !strcmp(l->kernel, "block"))
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: launch: expected a kernel name first", where);
    l->nargs = -1;
    int have_grid = 0, have_block = 0;
    for (;;) {
        p = skip_ws(p);
        if (!*p)
            break;
        char clause[16];
        const char *start = p;
        p = read_word(p, clause, sizeof(clause));
        if (*p != '(')
            return temper_fail(msg, msg_size, TEMPER_EPARSE,
                               "%s: launch: expected grid(...), block(...), smem(...), args(...) or when(...) at '%.20s'",
                               where,
                               start);
        const char *open = ++p;
        int depth = 1;
        while (*p && depth) {
            if (*p == '(')
                depth++;
            else if (*p == ')')
                depth--;
            p++;
        }
        if (depth)
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: launch: %s( has no closing parenthesis", where,
                               clause);
        size_t len = (size_t)(p - 1 - open);
        int err;
        if (!strcmp(clause, "grid") || !strcmp(clause, "block")) {
            err = parse_dims_clause(clause, open, len, l, where, msg, msg_size);
            *(clause[0] == 'g' ? &have_grid : &have_block) = 1;
        } else if (!strcmp(clause, "smem")) {
            err = parse_expr_clause(clause, open, len, l->smem, where, msg, msg_size);
        } else if (!strcmp(clause, "args")) {
            err = parse_args_clause(open, len, l, where, msg, msg_size);
        } else if (!strcmp(clause, "when")) {
            err = parse_expr_clause(clause, open, len, l->when, where, msg, msg_size);
        } else {
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: launch: unknown clause '%s'", where, clause);
        }
        if (err)
            return err;
    }
    *block_given = have_block;
    /* A Triton launch's block is 32 * num_warps threads (set once every knob is known). */
    if (!have_grid || (!have_block && !triton))
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: launch: needs both grid(...) and block(...)", where);
    if (triton && !have_grid)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: launch: needs grid(...)", where);
    return 0;
}

/* With when(...) on any launch line, the first line must carry one: each line with when(...)
 * begins a launch group, and a line before the first would belong to none. */
static int launch_groups_check(const struct temper_candidate *c, char *msg, size_t msg_size)
{
    int any = 0;
    for (int l = 0; l < c->nlaunches; l++)
        any |= c->launches[l].when[0] != 0;
    if (any && !c->launches[0].when[0])
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "%s:%d: launch: when(...) is on a later launch line but not on this first one: every "
                           "launch must belong to a group that begins with a when(...) line (write when(1) for one "
                           "that always runs)",
                           c->path, c->launches[0].line);
    return 0;
}

/* Checks a flags line's options against the allow-list where it can already: a line that names a
 * knob ($NAME) is checked once the knob's value is known, by temper_candidate_options. */
static int flags_check(const struct temper_candidate *c, const char *text, const char *where, char *msg,
                       size_t msg_size)
{
    char why[512];
    if (strchr(text, '$') || !temper_compiler_options_check(c->lang, text, why, sizeof(why)))
        return 0;
    return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: flags: %s", where, why);
}

/* "@temper param NAME VALUE...": a knob and the values it may take. */
static int parse_param(struct temper_candidate *c, const char *rest, int line, const char *where, char *msg,
                       size_t msg_size)
{
    int too_long = 0;
    if (c->nparams == TEMPER_MAX_PARAMS)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: more than %d params", where, TEMPER_MAX_PARAMS);
    struct temper_param *prm = &c->params[c->nparams];
    const char *p = read_name(rest, prm->name, sizeof(prm->name), &too_long);
    if (too_long)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: param: the name is longer than %d bytes", where,
                           TEMPER_NAME_MAX - 1);
    if ((*p && *p != ' ' && *p != '\t') || !prm->name[0] || isdigit((unsigned char)prm->name[0]))
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: param: expected a name", where);
    for (int i = 0; i < c->nparams; i++)
        if (!strcmp(c->params[i].name, prm->name))
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: param %s: declared twice (first on line %d)", where,
                               prm->name, c->params[i].line);
    while (*(p = skip_ws(p))) {
        if (prm->nvalues == TEMPER_MAX_VALUES)
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: param %s: more than %d values", where, prm->name,
                               TEMPER_MAX_VALUES);
        p = read_token(p, prm->values[prm->nvalues++], TEMPER_NAME_MAX, &too_long);
        if (too_long)
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: param %s: a value is longer than %d bytes", where,
                               prm->name, TEMPER_NAME_MAX - 1);
        const char *bad = strpbrk(prm->values[prm->nvalues - 1], "\"'\\`$");
        if (bad)
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: param %s: a value may not hold '%c'", where,
                               prm->name, *bad);
    }
    if (!prm->nvalues)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: param %s: needs at least one value", where, prm->name);
    prm->line = line;
    c->nparams++;
    return 0;
}

/* "@temper launch ...": one launch; tensor maps only in CUDA. */
static int parse_launch_line(struct temper_candidate *c, const char *rest, int line, const char *where, char *msg,
                             size_t msg_size)
{
    if (c->nlaunches == TEMPER_MAX_LAUNCHES)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: more than %d launches", where, TEMPER_MAX_LAUNCHES);
    struct temper_launch *l = &c->launches[c->nlaunches];
    int err = parse_launch(rest, l, c->lang == TEMPER_LANG_TRITON, &c->block_given[c->nlaunches], where, msg,
                           msg_size);
    if (err)
        return err;
    for (int a = 0; a < l->nargs && c->lang != TEMPER_LANG_CUDA; a++) {
        struct temper_tensormap_arg tm;
        if (!temper_launch_arg_tensormap(l->args[a], &tm, NULL, 0))
            return temper_fail(msg, msg_size, TEMPER_EPARSE,
                               "%s: launch: args(...): '%s': tensor maps are CUDA's (TMA, compute capability 9.0 "
                               "and later); %s kernel takes the buffer itself",
                               where, l->args[a], c->lang == TEMPER_LANG_OPENCL ? "an OpenCL" : "a Triton");
    }
    l->line = line;
    c->nlaunches++;
    return 0;
}

/* "@temper scratch NAME DTYPE COUNT": a buffer of the candidate's own. */
static int parse_scratch(struct temper_candidate *c, const char *rest, int line, const char *where, char *msg,
                         size_t msg_size)
{
    int too_long = 0;
    if (c->nscratch == TEMPER_MAX_SCRATCH)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: more than %d scratch buffers", where,
                           TEMPER_MAX_SCRATCH);
    struct temper_scratch *s = &c->scratch[c->nscratch];
    char dtype[32];
    const char *p = read_name(rest, s->name, sizeof(s->name), &too_long);
    if (too_long)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: scratch: the name is longer than %d bytes", where,
                           TEMPER_NAME_MAX - 1);
    p = read_word(skip_ws(p), dtype, sizeof(dtype));
    p = skip_ws(p);
    int dt = temper_dtype_parse(dtype);
    if (s->name[0] && dt >= 0 && strlen(p) >= TEMPER_EXPR_MAX)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: scratch %s: the count is %zu bytes, over the limit of %d",
                           where, s->name, strlen(p), TEMPER_EXPR_MAX - 1);
    if (!s->name[0] || dt < 0 || !*p)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: scratch: expected NAME DTYPE COUNT", where);
    s->dtype = (enum temper_dtype)dt;
    snprintf(s->count, sizeof(s->count), "%s", p);
    s->line = line;
    c->nscratch++;
    return 0;
}

static int parse_directive(struct temper_candidate *c, const char *p, int line, char *msg, size_t msg_size)
{
    char where[TEMPER_PATH_MAX + 32], word[32];
    snprintf(where, sizeof(where), "%s:%d", c->path, line);
    p = read_word(skip_ws(p), word, sizeof(word));
    const char *rest = skip_ws(p);
    int too_long = 0;
    if (!strcmp(word, "task")) {
        if (c->task[0])
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: a second task directive", where);
        p = read_name(rest, c->task, sizeof(c->task), &too_long);
        if (too_long)
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: task: the name is longer than %d bytes", where,
                               TEMPER_NAME_MAX - 1);
        if (!c->task[0] || *skip_ws(p))
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: task: expected one task name", where);
        c->task_line = line;
    } else if (!strcmp(word, "param")) {
        return parse_param(c, rest, line, where, msg, msg_size);
    } else if (!strcmp(word, "require")) {
        if (c->nrequires == TEMPER_MAX_REQUIRES)
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: more than %d requires", where, TEMPER_MAX_REQUIRES);
        if (!*rest)
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: require: expected one expression", where);
        if (strlen(rest) >= TEMPER_EXPR_MAX)
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: require: the expression is %zu bytes, over the limit of %d",
                               where, strlen(rest), TEMPER_EXPR_MAX - 1);
        snprintf(c->requires[c->nrequires], TEMPER_EXPR_MAX, "%s", rest);
        c->require_lines[c->nrequires++] = line;
    } else if (!strcmp(word, "launch")) {
        return parse_launch_line(c, rest, line, where, msg, msg_size);
    } else if (!strcmp(word, "scratch")) {
        return parse_scratch(c, rest, line, where, msg, msg_size);
    } else if (!strcmp(word, "flags")) {
        if (c->lang == TEMPER_LANG_TRITON)
            return temper_fail(msg, msg_size, TEMPER_EPARSE,
                               "%s: flags: a Triton candidate takes no compiler options (its knobs are tl.constexpr "
                               "parameters, num_warps and num_stages)", where);
        size_t used = strlen(c->flags);
        if (used + strlen(rest) + 2 >= sizeof(c->flags))
            return temper_fail(msg, msg_size, TEMPER_EPARSE,
                               "%s: flags: the flags of all lines together are over the limit of %zu bytes", where,
                               sizeof(c->flags) - 2);
        int err = flags_check(c, rest, where, msg, msg_size);
        if (err)
            return err;
        snprintf(c->flags + used, sizeof(c->flags) - used, "%s%s", used ? " " : "", rest);
    } else {
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "%s: unknown directive '@temper %s' (task, param, require, launch, scratch, flags)", where,
                           word);
    }
    return 0;
}

int temper_lang_parse(const char *name)
{
    if (name && !strcmp(name, "cuda"))
        return TEMPER_LANG_CUDA;
    if (name && !strcmp(name, "opencl"))
        return TEMPER_LANG_OPENCL;
    if (name && !strcmp(name, "triton"))
        return TEMPER_LANG_TRITON;
    return -1;
}

const char *temper_lang_name(enum temper_lang lang)
{
    return lang == TEMPER_LANG_CUDA ? "cuda" : lang == TEMPER_LANG_TRITON ? "triton" : "opencl";
}

/* The length of the line at p (of the n bytes left) without its end (\n, \r\n or a lone \r, as
 * compilers count lines); *next is where the following line begins. */
static size_t line_length(const char *p, size_t n, size_t *next)
{
    size_t i = 0;
    while (i < n && p[i] != '\n' && p[i] != '\r')
        i++;
    *next = i + (i < n ? (p[i] == '\r' && i + 1 < n && p[i + 1] == '\n' ? 2 : 1) : 0);
    return i;
}

/* Checks, on a flags line (text: the directive after "@temper"), that every $NAME is a param:
 * run once every directive has been read, since a param may come after the flags naming it. */
static int flags_names_check(const struct temper_candidate *c, const char *text, int line, char *msg,
                             size_t msg_size)
{
    char word[32];
    const char *p = read_word(skip_ws(text), word, sizeof(word));
    if (strcmp(word, "flags"))
        return 0;
    for (p = strchr(p, '$'); p; p = strchr(p + 1, '$')) {
        char name[TEMPER_NAME_MAX];
        read_word(p + 1, name, sizeof(name));
        int found = 0;
        for (int i = 0; i < c->nparams && !found; i++)
            found = !strcmp(c->params[i].name, name);
        if (!found)
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s:%d: flags: '$%s' is not a param%s", c->path, line,
                               name, c->nparams ? "" : " (the candidate has none)");
    }
    return 0;
}

/* Parses the directive on one line of n bytes (not NUL-terminated), if it holds one; with
 * names_pass, only checks the names a flags line uses (flags_names_check). */
static int parse_line(struct temper_candidate *c, const char *text, size_t n, int line, int names_pass, char *msg,
                      size_t msg_size)
{
    size_t i = 0;
    while (i < n && (text[i] == ' ' || text[i] == '\t'))
        i++;
    if (c->lang == TEMPER_LANG_TRITON ? !(i < n && text[i] == '#')
                                      : !(n - i >= 2 && text[i] == '/' && (text[i + 1] == '/' || text[i + 1] == '*')) &&
                                            !(i < n && text[i] == '*'))
        return 0;
    const char *at = memmem(text + i, n - i, "@temper", 7);
    if (!at)
        return 0;
    size_t from = (size_t)(at - text) + 7;
    if (from < n && text[from] != ' ' && text[from] != '\t')
        return 0;
    size_t to = n;
    const char *close = c->lang == TEMPER_LANG_TRITON ? NULL : memmem(text + from, n - from, "*/", 2);
    if (close)
        to = (size_t)(close - text);
    /* A directive is ASCII: every field ends up in compiler options, JSON and messages. */
    for (size_t k = from; k < to; k++) {
        unsigned char ch = (unsigned char)text[k];
        if ((ch < 0x20 && ch != '\t') || ch >= 0x7f)
            return temper_fail(msg, msg_size, TEMPER_EPARSE,
                               "%s:%d: column %zu: byte 0x%02x is not allowed in a directive (directives are ASCII "
                               "text)",
                               c->path, line, k + 1, ch);
    }
    char *copy = malloc(to - from + 1);
    if (!copy)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "%s:%d: out of memory", c->path, line);
    while (to > from && (text[to - 1] == ' ' || text[to - 1] == '\t'))
        to--;
    memcpy(copy, text + from, to - from);
    copy[to - from] = 0;
    int err = names_pass ? flags_names_check(c, copy, line, msg, msg_size) : parse_directive(c, copy, line, msg, msg_size);
    free(copy);
    return err;
}

int temper_candidate_parse_lang(const char *path, const char *lang, const char *source, size_t len,
                                struct temper_candidate *c, char *msg, size_t msg_size)
{
    memset(c, 0, sizeof(*c));
    if (!path || !*path)
        path = "<source>";
    snprintf(c->path, sizeof(c->path), "%s", path);
    const char *ext = strrchr(path, '.');
    if (lang) {
        int l = temper_lang_parse(lang);
        if (l < 0) {
            char shown[33];
            size_t n = 0;
            for (; lang[n] && n + 1 < sizeof(shown); n++) /* a message carries text only */
                shown[n] = lang[n] >= 0x20 && lang[n] < 0x7f ? lang[n] : '?';
            shown[n] = 0;
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: unknown language '%s' (cuda, opencl or triton)",
                               path, shown);
        }
        c->lang = (enum temper_lang)l;
    } else if (ext && !strcmp(ext, ".cu")) {
        c->lang = TEMPER_LANG_CUDA;
    } else if (ext && !strcmp(ext, ".cl")) {
        c->lang = TEMPER_LANG_OPENCL;
    } else if (ext && !strcmp(ext, ".py")) {
        c->lang = TEMPER_LANG_TRITON;
    } else {
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "%s: a candidate is a .cu (CUDA), .cl (OpenCL) or .py (Triton) file, or its language must "
                           "be given", path);
    }
    if (!source)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: no source", path);
    if (len > TEMPER_SOURCE_MAX)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: the source is %zu bytes, over the limit of %u", path,
                           len, TEMPER_SOURCE_MAX);
    const char *nul = memchr(source, 0, len);
    if (nul) {
        int line = 1;
        for (const char *q = source; q < nul; q++)
            line += *q == '\n' || (*q == '\r' && q[1] != '\n');
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "%s: contains a NUL byte at byte offset %zu (line %d); a candidate is text", path,
                           (size_t)(nul - source), line);
    }
    c->source = malloc(len + 1);
    if (!c->source)
        return TEMPER_ENOMEM;
    memcpy(c->source, source, len);
    c->source[len] = 0;
    c->source_len = len;
    c->source_hash = temper_hash64(source, len, 0);

    int err = 0, line = 1;
    for (size_t pos = 0, next = 0; pos < len && !err; pos += next, line++) {
        size_t n = line_length(c->source + pos, len - pos, &next);
        err = parse_line(c, c->source + pos, n, line, 0, msg, msg_size);
    }
    line = 1;
    for (size_t pos = 0, next = 0; !err && strchr(c->flags, '$') && pos < len; pos += next, line++) {
        size_t n = line_length(c->source + pos, len - pos, &next);
        err = parse_line(c, c->source + pos, n, line, 1, msg, msg_size);
    }
    const char *missing = err ? NULL : !c->task[0] ? "no '@temper task NAME' directive" :
                                       !c->nlaunches ? "no '@temper launch' directive" : NULL;
    if (missing)
        err = temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %s", path, missing);
    /* A Triton candidate is Python, which the include rule does not read: what it may reach is
     * bounded by the compile process's sandbox instead (docs/candidate.md, "Triton"). */
    if (!err && c->lang != TEMPER_LANG_TRITON)
        err = temper_candidate_check_includes(c->lang, path, c->source, len, msg, msg_size);
    if (!err)
        err = launch_groups_check(c, msg, msg_size);
    if (!err && c->lang == TEMPER_LANG_TRITON)
        err = temper_triton_finish(c, c->block_given, msg, msg_size);
    for (int l = 0; !err && c->lang != TEMPER_LANG_TRITON && l < c->nlaunches; l++) {
        struct temper_launch *ln = &c->launches[l];
        int certain = 0;
        int n = temper_kernel_params(c->source, len, ln->kernel, ln->arg_kind, TEMPER_MAX_LAUNCH_ARGS, &certain);
        if (n < 0)
            memset(ln->arg_kind, 0, sizeof(ln->arg_kind));
        ln->kernel_nparams = certain ? n : -1;
        if (ln->kernel_nparams >= 0 && ln->nargs >= 0 && ln->nargs != ln->kernel_nparams)
            err = temper_fail(msg, msg_size, TEMPER_EPARSE,
                              "%s:%d: launch %s: args(...) passes %d argument%s but kernel %s takes %d parameter%s",
                              path, ln->line, ln->kernel, ln->nargs, ln->nargs == 1 ? "" : "s", ln->kernel,
                              ln->kernel_nparams, ln->kernel_nparams == 1 ? "" : "s");
    }
    if (err)
        temper_candidate_free(c);
    return err;
}

int temper_candidate_parse(const char *path, const char *source, size_t len, struct temper_candidate *c, char *msg,
                           size_t msg_size)
{
    return temper_candidate_parse_lang(path, NULL, source, len, c, msg, msg_size);
}

int temper_candidate_load(const char *path, struct temper_candidate *c, char *msg, size_t msg_size)
{
    char *text;
    size_t len;
    int err = temper_read_file(path, TEMPER_SOURCE_READ_MAX, &text, &len, msg, msg_size);
    if (err)
        return err;
    err = temper_candidate_parse(path, text, len, c, msg, msg_size);
    free(text);
    return err;
}

void temper_candidate_free(struct temper_candidate *c)
{
    free(c->source);
    c->source = NULL;
}

int temper_candidate_options(const struct temper_candidate *c, const struct temper_knobs *k, char *out,
                             size_t out_size, char *msg, size_t msg_size)
{
    struct temper_buf b;
    temper_buf_init(&b, out_size - 1);
    int err = temper_buf_append(&b, "", 0);
    for (int i = 0; i < k->n && !err; i++)
        err = temper_buf_printf(&b, "%s-D%s=%s", i ? " " : "", k->names[i], k->values[i]);
    if (!err && c->flags[0] && b.len)
        err = temper_buf_append(&b, " ", 1);
    for (const char *p = c->flags; *p && !err;) {
        if (*p != '$') {
            err = temper_buf_append(&b, p, 1);
            p++;
            continue;
        }
        char name[TEMPER_NAME_MAX];
        const char *after = read_word(p + 1, name, sizeof(name));
        int found = 0;
        for (int i = 0; i < k->n && !found; i++)
            if (!strcmp(k->names[i], name)) {
                found = 1;
                err = temper_buf_printf(&b, "%s", strcmp(k->values[i], "none") ? k->values[i] : "");
            }
        if (!found)
            err = temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: flags: '$%s' is not a param", c->path, name);
        p = after;
    }
    if (err == TEMPER_ERANGE)
        err = temper_fail(msg, msg_size, err, "%s: compiler options longer than %zu characters", c->path, out_size);
    char why[512];
    if (!err && temper_compiler_options_check(c->lang, b.data, why, sizeof(why)))
        err = temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %s", c->path, why);
    if (!err)
        snprintf(out, out_size, "%s", b.data);
    temper_buf_free(&b);
    return err;
}
