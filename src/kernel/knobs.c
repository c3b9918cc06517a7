/* knobs.c: a candidate's knob values (their defaults and --set NAME=VALUE), its require lines
 * held against them, and the launch expressions evaluated over a shape, the knobs and the
 * device's attributes. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernel_internal.h"
#include "util/util.h"

void temper_knobs_default(const struct temper_candidate *c, struct temper_knobs *k)
{
    memset(k, 0, sizeof(*k));
    for (int i = 0; i < c->nparams; i++) {
        snprintf(k->names[i], TEMPER_NAME_MAX, "%s", c->params[i].name);
        snprintf(k->values[i], TEMPER_NAME_MAX, "%s", c->params[i].values[0]);
    }
    k->n = c->nparams;
}

/* A decimal integer that fits 64 bits, written plainly: an optional sign, then digits only (no
 * spaces, which would split the -D option it becomes). */
static int is_integer(const char *s)
{
    const char *digits = s + (*s == '-' || *s == '+');
    if (!isdigit((unsigned char)*digits))
        return 0;
    char *end;
    errno = 0;
    strtoll(s, &end, 10);
    return !*end && !errno;
}

int temper_knobs_set(const struct temper_candidate *c, struct temper_knobs *k, const char *assignment, char *msg,
                     size_t msg_size)
{
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "--set %s: expected NAME=VALUE", assignment);
    size_t n = (size_t)(eq - assignment);
    const char *value = eq + 1;
    for (int i = 0; i < k->n; i++) {
        if (strlen(k->names[i]) != n || strncmp(k->names[i], assignment, n))
            continue;
        const struct temper_param *p = &c->params[i];
        int listed = 0;
        for (int v = 0; v < p->nvalues; v++)
            listed |= !strcmp(p->values[v], value);
        if (!listed && !(is_integer(value) && is_integer(p->values[0]))) {
            char values[512];
            size_t used = 0;
            values[0] = 0;
            for (int v = 0; v < p->nvalues && used < sizeof(values); v++)
                used += (size_t)snprintf(values + used, sizeof(values) - used, "%s%s", v ? " " : "", p->values[v]);
            const char *digits = value + (*value == '-' || *value == '+');
            int too_long = *digits && strspn(digits, "0123456789") == strlen(digits); /* digits, past 64 bits */
            return temper_fail(msg, msg_size, TEMPER_EINVALID,
                               "--set %s: '%s' is not one of %s's values (%s, line %d)%s", assignment, value,
                               p->name, values, p->line,
                               !is_integer(p->values[0]) ? ""
                               : too_long                ? ", and as an integer it does not fit in 64 bits"
                                                         : " nor an integer");
        }
        if (strlen(value) >= TEMPER_NAME_MAX)
            return temper_fail(msg, msg_size, TEMPER_EINVALID, "--set %s: value too long", assignment);
        snprintf(k->values[i], TEMPER_NAME_MAX, "%s", value);
        return 0;
    }
    return temper_fail(msg, msg_size, TEMPER_EINVALID, "--set %s: the candidate has no param '%.*s'", assignment,
                       (int)n, assignment);
}

int temper_knobs_int(const struct temper_knobs *k, const char *name, size_t len, int64_t *value)
{
    for (int i = 0; i < k->n; i++)
        if (strlen(k->names[i]) == len && !strncmp(k->names[i], name, len) && is_integer(k->values[i])) {
            *value = strtoll(k->values[i], NULL, 10);
            return 0;
        }
    return 1;
}

static int knob_lookup(void *user, const char *name, size_t len, int64_t *value)
{
    return temper_knobs_int(user, name, len, value);
}

int temper_candidate_check(const struct temper_candidate *c, const struct temper_knobs *k, char *msg,
                           size_t msg_size)
{
    for (int i = 0; i < c->nrequires; i++) {
        int64_t v;
        char err_msg[512];
        if (temper_expr_eval(c->requires[i], knob_lookup, (void *)k, &v, err_msg, sizeof(err_msg)))
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s:%d: require: %s", c->path, c->require_lines[i],
                               err_msg);
        if (!v)
            return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s:%d: require %s does not hold for these knobs",
                               c->path, c->require_lines[i], c->requires[i]);
    }
    return 0;
}

/* What an expression may name: a shape's sizes, then the knobs, then the device's attributes. */
struct dev_scope {
    const struct temper_shape *shape;     /* sizes; may be NULL */
    const struct temper_knobs *knobs;     /* knobs; may be NULL */
    const struct temper_dev_attrs *attrs; /* device attributes; may be NULL */
};

static int dev_lookup(void *user, const char *name, size_t len, int64_t *value)
{
    const struct dev_scope *s = user;
    for (int i = 0; s->shape && i < s->shape->n; i++)
        if (strlen(s->shape->names[i]) == len && !strncmp(s->shape->names[i], name, len)) {
            *value = s->shape->values[i];
            return 0;
        }
    if (s->knobs && !temper_knobs_int(s->knobs, name, len, value))
        return 0;
    for (int i = 0; s->attrs && i < TEMPER_DEV_ATTRS; i++)
        if (strlen(s->attrs->names[i]) == len && !strncmp(s->attrs->names[i], name, len)) {
            *value = s->attrs->values[i];
            return 0;
        }
    return 1;
}

int temper_launch_eval_dev(const struct temper_shape *shape, const struct temper_knobs *knobs,
                           const struct temper_dev_attrs *attrs, const char *expr, int64_t *value, char *msg,
                           size_t msg_size)
{
    struct dev_scope s = {shape, knobs, attrs};
    return temper_expr_eval(expr, dev_lookup, &s, value, msg, msg_size);
}

int temper_launch_eval(const struct temper_shape *shape, const struct temper_knobs *knobs, const char *expr,
                       int64_t *value, char *msg, size_t msg_size)
{
    return temper_launch_eval_dev(shape, knobs, NULL, expr, value, msg, msg_size);
}
