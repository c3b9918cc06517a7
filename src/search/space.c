/* space.c: the parameter space of a candidate: its knobs, optionally the compiler's controls,
 * and the constraints between knobs; enumeration, sampling and neighbourhoods. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernel_internal.h"
#include "temper/search.h"
#include "util/util.h"

/* Compiler controls searched with --compiler-knobs: value "none" (or "off") adds no option. */
static const struct {
    enum temper_lang lang;   /* which compiler */
    const char *name;        /* dimension name */
    const char *format;      /* the option, with %s for the value */
    const char *values[6];   /* values, NULL-terminated */
} compiler_controls[] = {
    {TEMPER_LANG_CUDA, "regcap", "--maxrregcount=%s", {"none", "32", "64", "128", NULL}},
    {TEMPER_LANG_CUDA, "fastmath", "--use_fast_math", {"off", "on", NULL}},
    /* ptxas's default cache operators: plain loads cached in L2 only (cg), plain stores marked
     * evict-first (cs); loads through the read-only path (__ldg) keep theirs. */
    {TEMPER_LANG_CUDA, "cache", "-Xptxas -%s", {"none", "dlcm=cg", "dscm=cs", NULL}},
    {TEMPER_LANG_OPENCL, "fastmath", "-cl-fast-relaxed-math", {"off", "on", NULL}},
    {TEMPER_LANG_OPENCL, "mad", "-cl-mad-enable", {"off", "on", NULL}},
};

static int all_integers_increasing(const struct temper_dim *d)
{
    long long prev = 0;
    for (int i = 0; i < d->nvalues; i++) {
        char *end;
        errno = 0;
        long long v = strtoll(d->values[i], &end, 10);
        if (*end || errno || end == d->values[i] || (i && v <= prev))
            return 0;
        prev = v;
    }
    return 1;
}

int temper_space_init(struct temper_space *s, const struct temper_candidate *cand, int compiler_knobs, char *msg,
                      size_t msg_size)
{
    memset(s, 0, sizeof(*s));
    s->cand = cand;
    s->size = 1;
    for (int i = 0; i < cand->nparams; i++) {
        struct temper_dim *d = &s->dims[s->ndims++];
        snprintf(d->name, sizeof(d->name), "%s", cand->params[i].name);
        d->nvalues = cand->params[i].nvalues;
        memcpy(d->values, cand->params[i].values, sizeof(d->values));
        d->ordered = all_integers_increasing(d);
        s->size *= d->nvalues;
    }
    for (size_t c = 0; compiler_knobs && c < sizeof(compiler_controls) / sizeof(compiler_controls[0]); c++) {
        if (compiler_controls[c].lang != cand->lang)
            continue;
        if (s->ndims == TEMPER_MAX_DIMS_SPACE)
            return temper_fail(msg, msg_size, TEMPER_ERANGE, "too many dimensions");
        struct temper_dim *d = &s->dims[s->ndims++];
        snprintf(d->name, sizeof(d->name), "%s", compiler_controls[c].name);
        snprintf(d->flag_format, sizeof(d->flag_format), "%s", compiler_controls[c].format);
        d->is_flag = 1;
        for (int v = 0; compiler_controls[c].values[v]; v++)
            snprintf(d->values[d->nvalues++], TEMPER_NAME_MAX, "%s", compiler_controls[c].values[v]);
        s->size *= d->nvalues;
    }
    if (temper_space_count(s, 1) == 0)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s: no combination of its params satisfies its requires",
                           cand->path);
    return 0;
}

static void to_knobs(const struct temper_space *s, const struct temper_config *c, struct temper_knobs *k)
{
    temper_knobs_default(s->cand, k);
    for (int i = 0; i < s->ndims; i++)
        if (!s->dims[i].is_flag)
            for (int j = 0; j < k->n; j++)
                if (!strcmp(k->names[j], s->dims[i].name))
                    snprintf(k->values[j], TEMPER_NAME_MAX, "%s", s->dims[i].values[c->v[i]]);
}

int temper_space_valid(const struct temper_space *s, const struct temper_config *c)
{
    struct temper_knobs k;
    to_knobs(s, c, &k);
    return temper_candidate_check(s->cand, &k, NULL, 0) == 0;
}

void temper_space_point(const struct temper_space *s, int64_t i, struct temper_config *c)
{
    memset(c, 0, sizeof(*c));
    for (int d = 0; d < s->ndims; d++) {
        c->v[d] = (int)(i % s->dims[d].nvalues);
        i /= s->dims[d].nvalues;
    }
}

int64_t temper_space_count(const struct temper_space *s, int64_t limit)
{
    int64_t total = (int64_t)s->size, valid = 0;
    if (s->size > 1e7)
        return -1;
    for (int64_t i = 0; i < total; i++) {
        struct temper_config c;
        temper_space_point(s, i, &c);
        if (temper_space_valid(s, &c) && ++valid > limit && limit > 0)
            return valid;
    }
    return valid;
}

int temper_space_sample(const struct temper_space *s, struct temper_rng *rng, struct temper_config *c)
{
    for (int tries = 0; tries < 10000; tries++) {
        memset(c, 0, sizeof(*c));
        for (int d = 0; d < s->ndims; d++)
            c->v[d] = (int)(temper_rng_next(rng) % (uint64_t)s->dims[d].nvalues);
        if (temper_space_valid(s, c))
            return 0;
    }
    return -1;
}

int temper_space_neighbour(const struct temper_space *s, struct temper_rng *rng, const struct temper_config *c,
                           struct temper_config *out)
{
    for (int tries = 0; tries < 200; tries++) {
        *out = *c;
        int d = (int)(temper_rng_next(rng) % (uint64_t)s->ndims);
        const struct temper_dim *dim = &s->dims[d];
        if (dim->nvalues < 2)
            continue;
        if (dim->ordered) {
            int step = temper_rng_next(rng) & 1 ? 1 : -1;
            int v = c->v[d] + step;
            if (v < 0 || v >= dim->nvalues)
                v = c->v[d] - step;
            out->v[d] = v;
        } else {
            int v = (int)(temper_rng_next(rng) % (uint64_t)(dim->nvalues - 1));
            out->v[d] = v >= c->v[d] ? v + 1 : v;
        }
        if (temper_space_valid(s, out))
            return 0;
    }
    return -1;
}

int temper_space_render(const struct temper_space *s, const struct temper_config *c, struct temper_knob_value *knobs,
                        char *flags, size_t flags_size)
{
    int n = 0;
    size_t used = 0;
    flags[0] = 0;
    for (int d = 0; d < s->ndims; d++) {
        const struct temper_dim *dim = &s->dims[d];
        const char *value = dim->values[c->v[d]];
        if (!dim->is_flag) {
            knobs[n++] = (struct temper_knob_value){.name = dim->name, .kind = TEMPER_KNOB_TEXT, .text = value};
        } else if (strcmp(value, "none") && strcmp(value, "off")) {
            char opt[128];
            snprintf(opt, sizeof(opt), dim->flag_format, value);
            used += (size_t)snprintf(flags + used, used < flags_size ? flags_size - used : 0, "%s%s",
                                     used ? " " : "", opt);
        }
    }
    return n;
}

void temper_space_format(const struct temper_space *s, const struct temper_config *c, char *out, size_t size)
{
    size_t used = 0;
    out[0] = 0;
    for (int d = 0; d < s->ndims && used < size; d++)
        used += (size_t)snprintf(out + used, size - used, "%s%s=%s", d ? " " : "", s->dims[d].name,
                                 s->dims[d].values[c->v[d]]);
}

int temper_config_equal(const struct temper_space *s, const struct temper_config *a, const struct temper_config *b)
{
    for (int d = 0; d < s->ndims; d++)
        if (a->v[d] != b->v[d])
            return 0;
    return 1;
}

int temper_space_options(const struct temper_space *s, const struct temper_config *c, char *out, size_t size)
{
    struct temper_knob_value values[TEMPER_MAX_DIMS_SPACE];
    char flags[512];
    int n = temper_space_render(s, c, values, flags, sizeof(flags));
    struct temper_knobs k;
    temper_knobs_default(s->cand, &k);
    for (int i = 0; i < n; i++) {
        char set[2 * TEMPER_NAME_MAX + 2];
        temper_knob_value_assignment(&values[i], set, sizeof(set));
        if (temper_knobs_set(s->cand, &k, set, NULL, 0))
            return -1;
    }
    if (temper_candidate_options(s->cand, &k, out, size, NULL, 0))
        return -1;
    if (flags[0]) {
        size_t used = strlen(out);
        snprintf(out + used, size - used, "%s%s", used ? " " : "", flags);
    }
    return 0;
}
