/* expr.c: the integer expression evaluator for shapes, grids, constraints, FLOP and byte counts.
 * A recursive-descent parser that evaluates as it parses; errors name the column. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util/util.h"

/* Parser state over one expression string. */
struct expr_parser {
    const char *src;           /* the whole expression, for column numbers */
    const char *p;             /* the next character to read */
    temper_expr_lookup lookup; /* resolves names */
    void *user;                /* passed to lookup */
    char *msg;                 /* where errors go */
    size_t msg_size;           /* size of msg */
    int err;                   /* first error, 0 if none */
    int depth;                 /* operators and parentheses open around the next operand */
};

/* Nesting deeper than this is an error, not a stack overflow (a require line may be long). */
#define EXPR_MAX_DEPTH 200

static int64_t parse_or(struct expr_parser *e);
static int64_t parse_unary(struct expr_parser *e);

static void skip_space(struct expr_parser *e)
{
    while (isspace((unsigned char)*e->p))
        e->p++;
}

static int64_t expr_error(struct expr_parser *e, const char *what)
{
    /* A long expression is quoted in part, so that the reason still fits the message. */
    if (!e->err)
        e->err = temper_fail(e->msg, e->msg_size, TEMPER_EPARSE, "column %d of '%.100s%s': %s",
                             (int)(e->p - e->src) + 1, e->src, strlen(e->src) > 100 ? "..." : "", what);
    return 0;
}

static int accept(struct expr_parser *e, const char *tok)
{
    skip_space(e);
    size_t n = strlen(tok);
    if (strncmp(e->p, tok, n))
        return 0;
    /* "<" must not match the start of "<=", nor "=" of "==": callers try longer tokens first. */
    e->p += n;
    return 1;
}

static int64_t parse_call(struct expr_parser *e, const char *name, size_t len)
{
    int64_t a = parse_or(e);
    if (!accept(e, ","))
        return expr_error(e, "expected ',' between a function's two arguments");
    int64_t b = parse_or(e);
    if (!accept(e, ")"))
        return expr_error(e, "expected ')' after a function's arguments");
    if (e->err)
        return 0;
    if (len == 3 && !strncmp(name, "min", 3))
        return a < b ? a : b;
    if (len == 3 && !strncmp(name, "max", 3))
        return a > b ? a : b;
    if (b == 0)
        return expr_error(e, "ceil_div by zero");
    if (a == INT64_MIN && b == -1)
        return expr_error(e, "ceil_div overflows");
    int64_t q = a / b;
    return a % b != 0 && (a > 0) == (b > 0) ? q + 1 : q;
}

static int64_t parse_primary(struct expr_parser *e)
{
    skip_space(e);
    if (e->err)
        return 0;
    if (accept(e, "(")) {
        int64_t v = parse_or(e);
        if (!accept(e, ")"))
            return expr_error(e, "expected ')'");
        return v;
    }
    if (isdigit((unsigned char)*e->p)) {
        int64_t v = 0;
        while (isdigit((unsigned char)*e->p)) {
            int digit = *e->p - '0';
            if (v > (INT64_MAX - digit) / 10)
                return expr_error(e, "number too large");
            v = v * 10 + digit;
            e->p++;
        }
        if (isalpha((unsigned char)*e->p) || *e->p == '.' || *e->p == '_')
            return expr_error(e, "not an integer");
        return v;
    }
    if (isalpha((unsigned char)*e->p) || *e->p == '_') {
        const char *name = e->p;
        while (isalnum((unsigned char)*e->p) || *e->p == '_')
            e->p++;
        size_t len = (size_t)(e->p - name);
        skip_space(e);
        if (*e->p == '(') {
            int known = (len == 3 && (!strncmp(name, "min", 3) || !strncmp(name, "max", 3))) ||
                        (len == 8 && !strncmp(name, "ceil_div", 8));
            if (!known) {
                e->p = name;
                return expr_error(e, "unknown function (min, max and ceil_div are known)");
            }
            e->p++;
            return parse_call(e, name, len);
        }
        int64_t v = 0;
        if (!e->lookup || e->lookup(e->user, name, len, &v)) {
            char what[160];
            snprintf(what, sizeof(what), "unknown name '%.*s'", (int)len, name);
            e->p = name;
            return expr_error(e, what);
        }
        return v;
    }
    return expr_error(e, *e->p ? "expected a number, a name or '('" : "unexpected end of expression");
}

/* Checked arithmetic: an expression that overflows 64 bits is an error, not a wrapped value. */
static int64_t checked(struct expr_parser *e, int overflowed, int64_t v)
{
    return overflowed ? expr_error(e, "integer overflow") : v;
}

static int64_t parse_unary_at_depth(struct expr_parser *e)
{
    if (accept(e, "-")) {
        int64_t v = parse_unary(e);
        /* -INT64_MIN is not representable: test before negating */
        return v == INT64_MIN ? expr_error(e, "integer overflow") : -v;
    }
    if (accept(e, "+"))
        return parse_unary(e);
    if (accept(e, "!"))
        return !parse_unary(e);
    return parse_primary(e);
}

/* Every nested operand (in parentheses, a function's arguments, after a unary operator) passes
 * through here, so this is where the depth is counted. */
static int64_t parse_unary(struct expr_parser *e)
{
    if (e->err)
        return 0;
    if (e->depth >= EXPR_MAX_DEPTH) {
        char what[64];
        snprintf(what, sizeof(what), "nested more than %d deep", EXPR_MAX_DEPTH);
        return expr_error(e, what);
    }
    e->depth++;
    int64_t v = parse_unary_at_depth(e);
    e->depth--;
    return v;
}

static int64_t parse_mul(struct expr_parser *e)
{
    int64_t v = parse_unary(e);
    for (;;) {
        if (accept(e, "*")) {
            int64_t r = parse_unary(e), out = 0;
            int overflowed = __builtin_mul_overflow(v, r, &out);
            v = checked(e, overflowed, out);
        } else if (accept(e, "/") || accept(e, "%")) {
            char op = e->p[-1];
            int64_t d = parse_unary(e);
            if (e->err)
                return 0;
            if (d == 0)
                return expr_error(e, "division by zero");
            if (v == INT64_MIN && d == -1)
                return expr_error(e, "integer overflow");
            v = op == '/' ? v / d : v % d;
        } else {
            return v;
        }
    }
}

static int64_t parse_add(struct expr_parser *e)
{
    int64_t v = parse_mul(e);
    for (;;) {
        int64_t r, out = 0;
        int overflowed;
        if (accept(e, "+")) {
            r = parse_mul(e);
            overflowed = __builtin_add_overflow(v, r, &out);
            v = checked(e, overflowed, out);
        } else if (accept(e, "-")) {
            r = parse_mul(e);
            overflowed = __builtin_sub_overflow(v, r, &out);
            v = checked(e, overflowed, out);
        } else {
            return v;
        }
    }
}

static int64_t parse_cmp(struct expr_parser *e)
{
    int64_t v = parse_add(e);
    for (;;) {
        if (accept(e, "<="))
            v = v <= parse_add(e);
        else if (accept(e, ">="))
            v = v >= parse_add(e);
        else if (accept(e, "<"))
            v = v < parse_add(e);
        else if (accept(e, ">"))
            v = v > parse_add(e);
        else
            return v;
    }
}

static int64_t parse_eq(struct expr_parser *e)
{
    int64_t v = parse_cmp(e);
    for (;;) {
        if (accept(e, "=="))
            v = v == parse_cmp(e);
        else if (accept(e, "!="))
            v = v != parse_cmp(e);
        else
            return v;
    }
}

static int64_t parse_and(struct expr_parser *e)
{
    int64_t v = parse_eq(e);
    while (accept(e, "&&")) {
        int64_t r = parse_eq(e);
        v = v && r;
    }
    return v;
}

static int64_t parse_or(struct expr_parser *e)
{
    int64_t v = parse_and(e);
    while (accept(e, "||")) {
        int64_t r = parse_and(e);
        v = v || r;
    }
    return v;
}

int temper_expr_eval(const char *expr, temper_expr_lookup lookup, void *user, int64_t *value, char *msg,
                     size_t msg_size)
{
    struct expr_parser e = {expr, expr, lookup, user, msg, msg_size, 0, 0};
    int64_t v = parse_or(&e);
    skip_space(&e);
    if (!e.err && *e.p)
        expr_error(&e, "unexpected text after the expression");
    if (e.err)
        return e.err;
    *value = v;
    return 0;
}
