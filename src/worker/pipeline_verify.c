/* pipeline_verify.c: the correctness protocol of the worker's pipeline: comparisons with the C
 * reference and with the baseline's outputs, the messages that name a mismatch, and the checks at
 * one check shape and seed (with the determinism reruns). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

#include "task/task_torch.h"
#include "pipeline_impl.h"

#define EXTRA_RERUNS 8     /* more runs for a kernel seen to be nondeterministic */

const char *const check_seed_names[2] = {"public", "secret"};

/* Formats the multi-dimensional position of flat index i of argument arg: "[3, 17]". */
static void format_index(const struct arena *a, int arg, int64_t i, char *out, size_t size)
{
    const struct temper_task_arg *ta = &a->task->args[arg];
    int64_t dims[TEMPER_MAX_DIMS], coord[TEMPER_MAX_DIMS];
    char msg[256];
    for (int d = 0; d < ta->ndim; d++)
        if (temper_shape_eval(&a->shape, ta->shape[d], &dims[d], msg, sizeof(msg)) || dims[d] <= 0)
            dims[d] = 1;
    for (int d = ta->ndim - 1; d >= 0; d--) {
        coord[d] = i % dims[d];
        i /= dims[d];
    }
    size_t used = (size_t)snprintf(out, size, "[");
    for (int d = 0; d < ta->ndim && used < size; d++)
        used += (size_t)snprintf(out + used, size - used, "%s%lld", d ? ", " : "", (long long)coord[d]);
    if (used < size)
        snprintf(out + used, size - used, "]");
}

/* Describes a failed comparison: the message names the shape, output, position, values, the
 * tolerance and how many elements are wrong. */
static int mismatch_failure(struct arena *a, int arg, const struct temper_compare *r, double atol, double rtol,
                            const char *where, const char *against, struct compared *check, struct failure *f)
{
    char idx[128];
    format_index(a, arg, r->first_bad, idx, sizeof(idx));
    int poisoned = isnan(r->first_got) && r->mismatches == r->nonfinite;
    char why[96] = "";
    if (poisoned)
        snprintf(why, sizeof(why), "%s", r->mismatches < r->count ? " (NaN: never written, or computed as NaN)" :
                                                                    " (every element is NaN)");
    else if (r->nonfinite)
        snprintf(why, sizeof(why), " (%lld of them NaN or inf where the answer is finite)",
                 (long long)r->nonfinite);
    const char *name = a->task->args[arg].name;
    check->mismatched = 1;
    check->output = name;
    check->index = r->first_bad;
    snprintf(check->position, sizeof(check->position), "%s", idx);
    check->got = r->first_got;
    check->expected = r->first_want;
    snprintf(check->got_text, sizeof(check->got_text), "%.9g", r->first_got);
    return fail_with(f, TEMPER_VERDICT_INCORRECT,
                     "wrong output at %s: %s%s = %.9g, expected %.9g (%s; atol %g, rtol %g); %lld of %lld elements "
                     "wrong%s",
                     where, name, idx, r->first_got, r->first_want, against, atol, rtol, (long long)r->mismatches,
                     (long long)r->count, why);
}

/* What the comparisons of one check add up: the largest errors, the mismatches, and the first
 * failure (reported once). */
struct tally {
    double max_abs; /* largest absolute error over the outputs */
    double max_rel; /* largest relative error */
    int64_t mismatches; /* elements outside the tolerance */
    int64_t nonfinite;  /* of those, NaN or inf where the answer is finite */
    int64_t elements;   /* elements compared */
    int rc;         /* -1 once a mismatch was reported */
};

static void record_errors(struct compared *check, const struct tally *t)
{
    check->recorded = 1;
    check->max_abs_err = t->max_abs;
    check->max_rel_err = t->max_rel;
    check->mismatches = t->mismatches;
    check->nonfinite = t->nonfinite;
    check->elements = t->elements;
}

void compared_mismatch(struct temper_result_mismatch **first, const struct compared *c)
{
    struct temper_result_mismatch *m = *first ? *first : calloc(1, sizeof(*m));
    if (!m)
        return;
    temper_result_mismatch_free(m);
    m->output = strdup(c->output);
    m->index = opt_int(c->index);
    m->position = strdup(c->position);
    /* JSON has no NaN or infinity: such a value is null, and got_text says which it was (the
     * commonest failure, an element never written, reads NaN). */
    m->got.set = isfinite(c->got);
    m->got.v = c->got;
    m->got_text = strdup(c->got_text);
    m->expected.set = isfinite(c->expected);
    m->expected.v = c->expected;
    *first = m;
}

static void tally_add(struct tally *t, struct arena *a, int arg, const struct temper_compare *r, double atol,
                      double rtol, const char *where, const char *against, struct compared *check, struct failure *f)
{
    t->max_abs = fmax(t->max_abs, r->max_abs_err);
    t->max_rel = fmax(t->max_rel, r->max_rel_err);
    t->mismatches += r->mismatches;
    t->nonfinite += r->nonfinite;
    t->elements += r->count;
    if (r->mismatches && !t->rc)
        t->rc = mismatch_failure(a, arg, r, atol, rtol, where, against, check, f);
}

static int tally_done(struct tally *t, struct compared *check)
{
    record_errors(check, t);
    return t->rc;
}

int compare_with_reference(struct arena *a, void **got, const char *where, struct compared *check, struct failure *f)
{
    struct tally t = {0};
    want_open(a, 1);
    for (int i = 0; i < a->task->nargs; i++) {
        const struct temper_task_arg *arg = &a->task->args[i];
        if (arg->role != TEMPER_ROLE_OUTPUT)
            continue;
        struct temper_compare r;
        temper_compare_values(arg->dtype, got[i], a->want[i], a->elems[i], a->task->atol, a->task->rtol, &r);
        tally_add(&t, a, i, &r, a->task->atol, a->task->rtol, where,
                  temper_task_reference_is_python(a->task) ? "the PyTorch reference" : "the C reference", check, f);
    }
    want_open(a, 0);
    return tally_done(&t, check);
}

/* Compares two device arrays of n elements of type t on the host (integer types, and every type
 * on a CPU device, whose buffers are host memory), as temper_compare_values does. */
static int compare_on_host(struct worker_state *ws, enum temper_dtype t, struct slot *got, struct slot *want,
                           int64_t n, double atol, double rtol, struct temper_compare *r, char *msg, size_t msg_size)
{
    void *g = malloc(got->bytes + 1), *w = malloc(want->bytes + 1);
    int err = !g || !w ? TEMPER_ENOMEM : 0;
    if (!err)
        err = temper_dev_read(&ws->dev, got->view, 0, g, got->bytes, msg, msg_size);
    if (!err)
        err = temper_dev_read(&ws->dev, want->view, 0, w, want->bytes, msg, msg_size);
    if (!err)
        temper_compare_arrays(t, g, w, n, atol, rtol, r);
    free(g);
    free(w);
    return err;
}

/* Compares the outputs of one set with the baseline's expected outputs for a variant, on the
 * device for floating-point types and on the host for integers. The baseline's output is itself
 * rounded to the output type, so two correct kernels may land one rounding step apart: for 16-bit
 * floats the comparison allows that step on top of the task's tolerance (bf16 2^-8, f16 2^-11
 * relative); an f32 tolerance covers it already. */
int compare_with_expected(struct worker_state *ws, struct arena *a, int set, int variant, const char *where,
                          struct compared *check, struct failure *f)
{
    return compare_sets(ws, a, set, OUT_EXPECT + variant, "the baseline on this device", where, check, f);
}

int compare_sets(struct worker_state *ws, struct arena *a, int set, int answer, const char *who, const char *where,
                 struct compared *check, struct failure *f)
{
    struct tally t = {0};
    char msg[1024];
    for (int i = 0; i < a->task->nargs; i++) {
        const struct temper_task_arg *arg = &a->task->args[i];
        if (arg->role != TEMPER_ROLE_OUTPUT)
            continue;
        double atol = a->task->atol;
        double rtol = a->task->rtol + (arg->dtype == TEMPER_DTYPE_BF16 ? 0x1p-8 :
                                       arg->dtype == TEMPER_DTYPE_F16  ? 0x1p-11 : 0);
        struct temper_compare r;
        struct slot *got = &a->out[set][i], *want = &a->out[answer][i];
        /* On a CPU device the buffers are host memory: reading them back is a copy, and the host
         * compares faster than the OpenCL runtime runs the comparison kernel. */
        int err = ws->dev.info.is_gpu && devcheck_compares(arg->dtype, a->elems[i]) ?
                      devcheck_compare(ws, arg->dtype, got->view, want->view, a->elems[i], atol, rtol, &r, msg,
                                       sizeof(msg)) :
                      compare_on_host(ws, arg->dtype, got, want, a->elems[i], atol, rtol, &r, msg, sizeof(msg));
        if (err)
            return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "comparing %s with %s failed: %s", arg->name, who,
                             msg);
        tally_add(&t, a, i, &r, atol, rtol, where, who, check, f);
    }
    return tally_done(&t, check);
}

/* Bitwise comparison of two runs' outputs; returns the first differing flat index or -1. */
static int64_t first_difference(struct arena *a, void **x, void **y, int *arg_out)
{
    for (int i = 0; i < a->task->nargs; i++) {
        if (a->task->args[i].role != TEMPER_ROLE_OUTPUT)
            continue;
        size_t es = temper_dtype_size(a->task->args[i].dtype);
        if (!memcmp(x[i], y[i], (size_t)a->elems[i] * es))
            continue;
        for (int64_t e = 0; e < a->elems[i]; e++)
            if (memcmp((char *)x[i] + e * es, (char *)y[i] + e * es, es)) {
                *arg_out = i;
                return e;
            }
    }
    return -1;
}

/* Every output element the reference gives must be a finite number (outputs start as NaN, so an
 * element it never wrote is caught too): otherwise no candidate can be judged against it, and it
 * is the task's error, naming the output, the element and the shape. */
static int reference_finite(const struct arena *a, struct failure *f)
{
    const struct temper_task *t = a->task;
    for (int i = 0; i < t->nargs; i++) {
        if (t->args[i].role != TEMPER_ROLE_OUTPUT || !a->want[i])
            continue;
        for (int64_t e = 0; e < a->elems[i]; e++)
            if (!isfinite(a->want[i][e])) {
                f->task_error = 1;
                return fail_with(f, TEMPER_VERDICT_INVALID,
                                 TEMPER_TASK_ERROR_PREFIX "the reference of task %s gave %s[%lld] = %g at shape %s "
                                 "(never written, or computed so): every output element must be a finite number",
                                 t->name, t->args[i].name, (long long)e, a->want[i][e], a->shape_text);
            }
    }
    return 0;
}

/* Runs the C reference on the arena's variant-0 inputs into a->want. The worker says it is in the
 * reference phase while it runs, so that the parent makes a crash or a hang there the task's
 * error, not the candidate's verdict. */
static int run_reference(struct worker_shared *shared, struct arena *a, temper_reference_fn ref, struct failure *f)
{
    const struct temper_task *t = a->task;
    double *in_d[TEMPER_MAX_ARGS] = {0}, *out_d[TEMPER_MAX_ARGS] = {0};
    long long scalars[TEMPER_MAX_ARGS];
    int nin = 0, nout = 0, ns = 0, rc = 0;
    for (int i = 0; i < t->nargs && !rc; i++) {
        const struct temper_task_arg *arg = &t->args[i];
        if (arg->role == TEMPER_ROLE_SCALAR) {
            scalars[ns++] = a->scalars[i];
            continue;
        }
        double *d = arg->role == TEMPER_ROLE_OUTPUT ? want_alloc(a->elems[i])
                                                    : calloc((size_t)(a->elems[i] ? a->elems[i] : 1), sizeof(double));
        if (!d) {
            rc = fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "out of host memory for the reference");
            break;
        }
        if (arg->role == TEMPER_ROLE_INPUT) {
            for (int64_t e = 0; e < a->elems[i]; e++)
                d[e] = temper_dtype_load(arg->dtype, a->host_in[0][i], (size_t)e);
            in_d[nin++] = d;
        } else {
            for (int64_t e = 0; e < a->elems[i]; e++)
                d[e] = NAN;
            out_d[nout++] = d;
            a->want[i] = d;
        }
    }
    if (!rc) {
        char doing[sizeof(shared->doing)];
        snprintf(doing, sizeof(doing), "%s", shared ? shared->doing : "");
        worker_doing(shared, WORKER_REFERENCE, "running the reference of task %s at shape %s", t->name,
                     a->shape_text);
        ref(out_d, (const double **)in_d, scalars);
        worker_doing(shared, WORKER_RUNNING, "%s", doing);
        /* A Python reference that raised, crashed or hung (task_torch.h) is the task's error. */
        char why[2048];
        if (temper_task_reference_failed(why, sizeof(why))) {
            f->task_error = 1;
            rc = fail_with(f, TEMPER_VERDICT_INVALID,
                           TEMPER_TASK_ERROR_PREFIX "the reference of task %s at shape %s: %s", t->name,
                           a->shape_text, why);
        } else {
            rc = reference_finite(a, f);
        }
    }
    want_open(a, 0);
    for (int i = 0; i < nin; i++)
        free(in_d[i]);
    return rc;
}

struct arena *check_arena(struct worker_state *ws, int shape_index, int seed_index, struct phases *ph,
                          struct failure *f)
{
    struct task_state *s = &ws->s;
    struct arena **slot = &s->check[shape_index][seed_index];
    if (*slot)
        return *slot;
    double t0 = temper_now_s();
    uint64_t seed = seed_index ? s->secret : s->seed;
    *slot = arena_new(ws, &s->task, &s->task.check[shape_index], 1, 1, &seed, s->secret, f);
    double t1 = temper_now_s();
    ph->inputs_ms += (t1 - t0) * 1e3;
    if (!*slot || run_reference(ws->shared, *slot, s->ref, f)) {
        task_state_drop(ws, slot);
        return NULL;
    }
    ph->reference_ms += (temper_now_s() - t1) * 1e3;
    return *slot;
}

/* Writes n bytes at *at of fd, moving *at past them; 0, or -1 when they did not all go. */
static int write_at(int fd, const void *data, size_t n, off_t *at)
{
    for (size_t done = 0; done < n;) {
        ssize_t w = pwrite(fd, (const char *)data + done, n - done, *at + (off_t)done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        done += (size_t)w;
    }
    *at += (off_t)n;
    return 0;
}

/* Where the next candidate output goes in WORKER_OUTPUTS_FD (a worker that ran a candidate is
 * replaced, so this only grows within one candidate's evaluation). */
static off_t outputs_at;

/* For the calling program's own judgement (worker_truth.c): the candidate's outputs of its first
 * run at a check, written to WORKER_OUTPUTS_FD, where the check's "outputs_at" says. */
static void hand_over_outputs(const struct arena *a, void **got, json_t **outputs_at_out)
{
    int fd = worker_truth_out(WORKER_OUTPUTS_FD);
    if (fd < 0)
        return;
    json_t *outs = json_object();
    for (int i = 0; i < a->task->nargs; i++) {
        const struct temper_task_arg *arg = &a->task->args[i];
        off_t at = outputs_at;
        if (arg->role == TEMPER_ROLE_OUTPUT && got[i] &&
            !write_at(fd, got[i], (size_t)a->elems[i] * temper_dtype_size(arg->dtype), &outputs_at))
            json_object_set_new(outs, arg->name, json_integer((json_int_t)at));
    }
    json_decref(*outputs_at_out);
    *outputs_at_out = outs;
}

int truth_add(json_t *checks, struct arena *a, const char *shape_text, int seed_index, int fd, off_t *at)
{
    json_t *outs = json_array();
    int rc = 0;
    want_open(a, 1);
    for (int i = 0; i < a->task->nargs && !rc; i++) {
        const struct temper_task_arg *arg = &a->task->args[i];
        if (arg->role != TEMPER_ROLE_OUTPUT || !a->want[i])
            continue;
        json_int_t where = (json_int_t)*at;
        rc = write_at(fd, a->want[i], (size_t)a->elems[i] * sizeof(double), at);
        json_array_append_new(outs, json_pack("{s:s, s:s, s:I, s:I}", "name", arg->name, "dtype",
                                              temper_dtype_name(arg->dtype), "elements", (json_int_t)a->elems[i],
                                              "at", where));
    }
    want_open(a, 0);
    json_array_append_new(checks, json_pack("{s:s, s:s, s:o}", "shape", shape_text, "seed",
                                            check_seed_names[seed_index], "outputs", outs));
    return rc;
}

/* Compares outputs with the C reference (compare_with_reference) into a check record. */
static int compare_into(struct arena *a, void **got, const char *where, struct temper_result_check *check,
                        struct failure *f)
{
    struct compared c;
    memset(&c, 0, sizeof(c));
    int rc = compare_with_reference(a, got, where, &c, f);
    COMPARED_INTO(check, &c);
    return rc;
}

/* The correctness protocol at one check shape and seed. */
int check_shape(struct worker_state *ws, struct plan *p, int shape_index, int seed_index,
                struct temper_result_check *check, json_t **outputs_at, struct phases *ph, struct failure *f)
{
    struct task_state *s = &ws->s;
    const struct temper_task *t = &s->task;
    char where[512], shape_text[256];
    temper_shape_format(&t->check[shape_index], shape_text, sizeof(shape_text));
    snprintf(where, sizeof(where), "shape %s, %s seed", shape_text, check_seed_names[seed_index]);
    check->shape = strdup(shape_text);
    check->seed = strdup(check_seed_names[seed_index]);
    worker_doing(ws->shared, WORKER_RUNNING, "checking %s at %s", p->cand.path, where);
    struct arena **slot = &s->check[shape_index][seed_index];
    struct arena *a = check_arena(ws, shape_index, seed_index, ph, f);
    if (!a)
        return -1;
    double t0 = temper_now_s();
    void *got[TEMPER_MAX_ARGS] = {0}, *again[TEMPER_MAX_ARGS] = {0};
    int rc = plan_run(ws, p, a, 0, OUT_CAND, 0, f);
    if (!rc && (rc = check_memory(ws, a, 0, OUT_CAND, f)))
        task_state_drop(ws, slot);
    if (!rc)
        rc = read_outputs(ws, a, OUT_CAND, got, f);
    double t1 = temper_now_s();
    ph->device_ms += (t1 - t0) * 1e3;
    if (!rc && (ws->dev.info.caps & TEMPER_DEVICE_CAP_IN_PROCESS))
        hand_over_outputs(a, got, outputs_at);
    if (!rc && ws->dev.faults.forged)
        check->passed = opt_bool(1); /* TEMPER_FAULT=forge (device.h) */
    else if (!rc)
        rc = compare_into(a, got, where, check, f);
    double t2 = temper_now_s();
    ph->compare_ms += (t2 - t1) * 1e3;
    /* The determinism rerun: the same inputs, the other poison, compared bit for bit. */
    if (!rc)
        rc = plan_run(ws, p, a, 0, OUT_CAND, 1, f);
    if (!rc)
        rc = read_outputs(ws, a, OUT_CAND, again, f);
    double t3 = temper_now_s();
    ph->device_ms += (t3 - t2) * 1e3;
    int diff_arg = 0;
    int64_t diff = rc ? -1 : first_difference(a, got, again, &diff_arg);
    check->deterministic = opt_bool(diff < 0);
    if (!rc && diff >= 0) {
        /* Differing runs may be legitimate (atomics) or a race that passed by luck: every further
         * run must also pass. */
        char rerun_where[600];
        char idx[128];
        format_index(a, diff_arg, diff, idx, sizeof(idx));
        check->nondeterministic_at = calloc(1, sizeof(*check->nondeterministic_at));
        if (check->nondeterministic_at) {
            check->nondeterministic_at->output = strdup(t->args[diff_arg].name);
            check->nondeterministic_at->position = strdup(idx);
        }
        rc = compare_into(a, again, where, check, f);
        for (int r = 0; r < EXTRA_RERUNS && !rc; r++) {
            snprintf(rerun_where, sizeof(rerun_where), "%s, rerun %d of a kernel whose runs differ", where, r + 3);
            free_outputs(again, t->nargs);
            rc = plan_run(ws, p, a, 0, OUT_CAND, r & 1, f);
            if (!rc)
                rc = read_outputs(ws, a, OUT_CAND, again, f);
            if (!rc)
                rc = compare_into(a, again, rerun_where, check, f);
        }
        ph->compare_ms += (temper_now_s() - t3) * 1e3;
    }
    free_outputs(got, t->nargs);
    free_outputs(again, t->nargs);
    return rc;
}
