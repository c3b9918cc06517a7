/* pipeline.c: the worker side of an evaluation: builds (through the build cache), the
 * correctness protocol and the timing protocol of DESIGN.md, and calibration. Runs only inside
 * the worker process; the parent sees JSON results. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "temper/device.h"
#include "temper/eval.h"
#include "worker_impl.h"

#define MAX_VARIANTS 2         /* input sets alternated between timed launches */
#define COMPILE_LOG_MAX (64u << 10)
#define EXTRA_RERUNS 8         /* more runs for a kernel seen to be nondeterministic */
#define MIN_SAMPLES 10         /* timed samples at least */
#define MAX_SAMPLES 2000       /* timed samples at most */
#define TARGET_SPREAD 0.01     /* stop timing once the relative IQR is below this */

/* The worker's long-lived state. */
struct worker_state {
    char device_spec[64];          /* what to open */
    struct worker_shared *shared;  /* the page the parent watches */
    int open;                      /* 1 once dev is open */
    struct temper_device dev;      /* the device */
};

/* A candidate built and ready to launch. */
struct plan {
    struct temper_candidate cand;                     /* the parsed source */
    struct temper_knobs knobs;                        /* its knob values */
    char options[2048];                               /* compiler options */
    struct temper_dmodule *mod;                       /* the built program */
    struct temper_dkernel *kernels[TEMPER_MAX_LAUNCHES]; /* one per launch line */
    struct temper_dbuf *scratch[TEMPER_MAX_SCRATCH];  /* scratch buffers at the current shape */
    size_t scratch_bytes[TEMPER_MAX_SCRATCH];         /* their sizes */
    int cache_hit;                                    /* 1 if the binary came from the build cache */
};

/* A device buffer with guard zones on both sides; kernels see only the view. */
struct slot {
    struct temper_dbuf *whole; /* guard + data + guard */
    struct temper_dbuf *view;  /* the data */
    size_t bytes;              /* bytes of data */
    unsigned char canary;      /* the byte its guard zones are filled with */
};

/* Every buffer of one shape: inputs per variant, outputs for the candidate (set 0) and the
 * baseline (set 1). */
struct arena {
    const struct temper_task *task;            /* the task */
    struct temper_shape shape;                 /* sizes */
    int nvariants;                             /* input sets */
    size_t guard;                              /* guard bytes on each side */
    unsigned char canary;                      /* seeds the guard bytes; each buffer gets its own */
    int nslots;                                /* buffers allocated so far */
    int64_t elems[TEMPER_MAX_ARGS];            /* elements per argument */
    int64_t scalars[TEMPER_MAX_ARGS];          /* values of scalar arguments */
    struct slot in[MAX_VARIANTS][TEMPER_MAX_ARGS];  /* inputs */
    struct slot out[2][TEMPER_MAX_ARGS];       /* outputs: candidate, baseline */
    void *host_in[MAX_VARIANTS][TEMPER_MAX_ARGS];   /* host copies of the inputs */
    uint64_t in_hash[MAX_VARIANTS][TEMPER_MAX_ARGS]; /* their hashes */
};

/* A failure found by a check: the verdict and a sentence. */
struct failure {
    enum temper_verdict verdict; /* what it means */
    char message[2048];          /* what failed, where and why */
};

static int fail_with(struct failure *f, enum temper_verdict v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail_with(struct failure *f, enum temper_verdict v, const char *fmt, ...)
{
    f->verdict = v;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof(f->message), fmt, ap);
    va_end(ap);
    return -1;
}

struct worker_state *worker_state_new(const char *device_spec, struct worker_shared *shared)
{
    struct worker_state *ws = calloc(1, sizeof(*ws));
    if (!ws)
        return NULL;
    snprintf(ws->device_spec, sizeof(ws->device_spec), "%s", device_spec ? device_spec : "");
    ws->shared = shared;
    return ws;
}

static json_t *error_reply(const char *msg, int code)
{
    return json_pack("{s:s, s:i}", "error", msg, "code", code);
}

static json_t *device_json(const struct temper_device_info *i)
{
    char id[48];
    snprintf(id, sizeof(id), "%s:%d", i->backend, i->index);
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:I, s:I, s:I, s:I, s:I}",
                     "id", id, "name", i->name, "vendor", i->vendor, "platform", i->platform, "driver",
                     i->driver_version, "compiler", i->compiler_version, "arch", i->arch, "class",
                     i->is_gpu ? "gpu" : "cpu", "compute_units", i->compute_units, "cc_major", i->cc_major,
                     "cc_minor", i->cc_minor, "clock_mhz", i->clock_mhz, "mem_bus_bits", i->mem_bus_bits,
                     "global_mem_bytes", (json_int_t)i->global_mem_bytes, "local_mem_bytes",
                     (json_int_t)i->local_mem_bytes, "local_mem_optin_bytes", (json_int_t)i->local_mem_optin_bytes,
                     "cache_bytes", (json_int_t)i->cache_bytes, "max_work_group", (json_int_t)i->max_work_group);
}

static int ensure_open(struct worker_state *ws, char *msg, size_t n)
{
    if (ws->open)
        return 0;
    worker_doing(ws->shared, WORKER_OPENING, "opening device %s", ws->device_spec[0] ? ws->device_spec : "(default)");
    int err = temper_device_open(ws->device_spec, &ws->dev, msg, n);
    if (err)
        return err;
    ws->dev.busy_since_ns = &ws->shared->busy_since_ns;
    ws->open = 1;
    return 0;
}

/* ---- builds ---- */

/* Builds source with options through the build cache. */
static int build_module(struct worker_state *ws, const char *source, size_t len, const char *options,
                        struct temper_buf *log, struct temper_dmodule **mod, int *cache_hit, char *msg, size_t n)
{
    struct temper_device *d = &ws->dev;
    uint64_t key = temper_build_key(source, len, options, d->info.compiler_version,
                                    d->info.arch[0] ? d->info.arch : d->info.name);
    void *bin = NULL;
    size_t size = 0;
    *cache_hit = 0;
    if (!temper_build_cache_get(key, &bin, &size)) {
        int err = d->ops->load(d->ctx, bin, size, mod, msg, n);
        free(bin);
        if (!err) {
            *cache_hit = 1;
            return 0;
        }
    }
    int err;
    if (d->ops->compile) {
        err = d->ops->compile(&d->info, source, options, log, &bin, &size, msg, n);
        if (err)
            return err;
        temper_build_cache_put(key, bin, size);
        err = d->ops->load(d->ctx, bin, size, mod, msg, n);
        free(bin);
        return err;
    }
    err = d->ops->build(d->ctx, source, options, log, mod, msg, n);
    if (err)
        return err;
    if (d->ops->binary && !d->ops->binary(d->ctx, *mod, &bin, &size)) {
        temper_build_cache_put(key, bin, size);
        free(bin);
    }
    return 0;
}

static void plan_free(struct worker_state *ws, struct plan *p)
{
    for (int i = 0; i < TEMPER_MAX_SCRATCH; i++)
        temper_dev_release(&ws->dev, p->scratch[i]);
    if (p->mod)
        ws->dev.ops->module_free(ws->dev.ctx, p->mod);
    temper_candidate_free(&p->cand);
    memset(p, 0, sizeof(*p));
}

/* Parses and builds a candidate with the given knob values (an object, or NULL for defaults).
 * A build failure gives verdict compile_error (or invalid for a launch naming no kernel). */
static int plan_build(struct worker_state *ws, const char *path, const char *source, json_t *knobs,
                      struct temper_buf *log, struct plan *p, struct failure *f)
{
    char msg[2048];
    memset(p, 0, sizeof(*p));
    int err = source ? temper_candidate_parse(path, source, strlen(source), &p->cand, msg, sizeof(msg))
                     : temper_candidate_load(path, &p->cand, msg, sizeof(msg));
    if (err)
        return fail_with(f, TEMPER_VERDICT_INVALID, "%s", msg);
    temper_knobs_default(&p->cand, &p->knobs);
    const char *name;
    json_t *value;
    json_object_foreach(knobs, name, value)
    {
        char set[256];
        snprintf(set, sizeof(set), "%s=%s", name, json_string_value(value) ? json_string_value(value) : "");
        if (temper_knobs_set(&p->cand, &p->knobs, set, msg, sizeof(msg)))
            return fail_with(f, TEMPER_VERDICT_INVALID, "%s", msg);
    }
    if (temper_candidate_options(&p->cand, &p->knobs, p->options, sizeof(p->options), msg, sizeof(msg)))
        return fail_with(f, TEMPER_VERDICT_INVALID, "%s", msg);
    worker_doing(ws->shared, WORKER_BUILDING, "building %s", path);
    err = build_module(ws, p->cand.source, p->cand.source_len, p->options, log, &p->mod, &p->cache_hit, msg,
                       sizeof(msg));
    if (err)
        return fail_with(f, TEMPER_VERDICT_COMPILE_ERROR, "%s: %s", path, msg);
    for (int i = 0; i < p->cand.nlaunches; i++) {
        err = ws->dev.ops->kernel(ws->dev.ctx, p->mod, p->cand.launches[i].kernel, &p->kernels[i], msg, sizeof(msg));
        if (err)
            return fail_with(f, TEMPER_VERDICT_INVALID, "%s:%d: launch: %s", path, p->cand.launches[i].line, msg);
    }
    return 0;
}

/* ---- buffers ---- */

/* Each buffer's guard byte differs from every other buffer's, so a kernel that copies one
 * buffer's guard into another's is still seen, and all lie in 0x30..0x4f, whose floats are
 * finite and normal at every width, so arithmetic on them always changes the bytes. */
static int slot_alloc(struct worker_state *ws, struct arena *a, size_t bytes, struct slot *s, char *msg, size_t n)
{
    s->bytes = bytes;
    s->canary = (unsigned char)(0x30 + (a->canary + 7 * a->nslots++) % 32);
    size_t data = (bytes + a->guard - 1) / a->guard * a->guard;
    int err = temper_dev_alloc(&ws->dev, a->guard + data + a->guard, &s->whole, msg, n);
    if (!err)
        err = temper_dev_fill(&ws->dev, s->whole, 0, a->guard + data + a->guard, &s->canary, 1, msg, n);
    if (!err)
        err = temper_dev_view(&ws->dev, s->whole, a->guard, bytes ? bytes : 1, &s->view, msg, n);
    return err;
}

static void slot_free(struct worker_state *ws, struct slot *s)
{
    temper_dev_release(&ws->dev, s->view);
    temper_dev_release(&ws->dev, s->whole);
    memset(s, 0, sizeof(*s));
}

static void arena_free(struct worker_state *ws, struct arena *a)
{
    for (int v = 0; v < MAX_VARIANTS; v++)
        for (int i = 0; i < TEMPER_MAX_ARGS; i++) {
            slot_free(ws, &a->in[v][i]);
            free(a->host_in[v][i]);
            a->host_in[v][i] = NULL;
        }
    for (int o = 0; o < 2; o++)
        for (int i = 0; i < TEMPER_MAX_ARGS; i++)
            slot_free(ws, &a->out[o][i]);
}

/* Allocates every buffer of a shape and uploads fresh inputs drawn from the seeds. */
static int arena_init(struct worker_state *ws, struct arena *a, const struct temper_task *t,
                      const struct temper_shape *shape, int nvariants, int out_sets, const uint64_t *seeds,
                      unsigned char canary, struct failure *f)
{
    char msg[1024], where[256];
    memset(a, 0, sizeof(*a));
    a->task = t;
    a->shape = *shape;
    a->nvariants = nvariants;
    a->canary = canary;
    a->guard = 4096;
    while (a->guard % (ws->dev.info.base_align_bytes ? ws->dev.info.base_align_bytes : 1))
        a->guard += 4096;
    temper_shape_format(shape, where, sizeof(where));
    for (int i = 0; i < t->nargs; i++) {
        const struct temper_task_arg *arg = &t->args[i];
        if (arg->role == TEMPER_ROLE_SCALAR) {
            temper_shape_eval(shape, arg->name, &a->scalars[i], msg, sizeof(msg));
            continue;
        }
        if (temper_task_arg_elems(t, i, shape, &a->elems[i], msg, sizeof(msg)))
            return fail_with(f, TEMPER_VERDICT_INVALID, "task %s at %s: %s", t->name, where, msg);
        size_t bytes = (size_t)a->elems[i] * temper_dtype_size(arg->dtype);
        int err = 0;
        if (arg->role == TEMPER_ROLE_OUTPUT) {
            for (int o = 0; o < out_sets && !err; o++)
                err = slot_alloc(ws, a, bytes, &a->out[o][i], msg, sizeof(msg));
        } else {
            for (int v = 0; v < nvariants && !err; v++) {
                a->host_in[v][i] = malloc(bytes ? bytes : 1);
                if (!a->host_in[v][i])
                    return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "out of host memory for %s at %s", arg->name,
                                     where);
                temper_task_fill_input(t, i, seeds[v], a->host_in[v][i], a->elems[i]);
                a->in_hash[v][i] = temper_hash64(a->host_in[v][i], bytes, 0);
                err = slot_alloc(ws, a, bytes, &a->in[v][i], msg, sizeof(msg));
                if (!err && bytes)
                    err = temper_dev_write(&ws->dev, a->in[v][i].view, 0, a->host_in[v][i], bytes, msg, sizeof(msg));
            }
        }
        if (err)
            return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "cannot set up %s at %s: %s", arg->name, where, msg);
    }
    return 0;
}

/* The poison written over outputs before each run: a NaN (or an unlikely integer) with a payload
 * that differs between the two patterns, so an element left unwritten is seen either way. */
static size_t poison_pattern(enum temper_dtype t, int which, unsigned char out[8])
{
    static const uint32_t f32[2] = {0x7fc0dead, 0x7fa0beef};
    static const uint16_t f16[2] = {0x7e5a, 0x7d3c}, bf16[2] = {0x7fda, 0x7fbc};
    static const uint32_t i32[2] = {0xdeadbeef, 0x21524110};
    static const uint64_t i64[2] = {0xdeadbeefcafef00dull, 0x2152411035010ff2ull};
    static const unsigned char b8[2] = {0xa7, 0x3c};
    switch (t) {
    case TEMPER_DTYPE_F32:
        memcpy(out, &f32[which], 4);
        return 4;
    case TEMPER_DTYPE_F16:
        memcpy(out, &f16[which], 2);
        return 2;
    case TEMPER_DTYPE_BF16:
        memcpy(out, &bf16[which], 2);
        return 2;
    case TEMPER_DTYPE_I32:
        memcpy(out, &i32[which], 4);
        return 4;
    case TEMPER_DTYPE_I64:
        memcpy(out, &i64[which], 8);
        return 8;
    default:
        out[0] = b8[which];
        return 1;
    }
}

/* Poisons the outputs of one set and every scratch buffer of the plan. */
static int poison_outputs(struct worker_state *ws, struct arena *a, struct plan *p, int set, int which, char *msg,
                          size_t n)
{
    for (int i = 0; i < a->task->nargs; i++) {
        if (a->task->args[i].role != TEMPER_ROLE_OUTPUT || !a->out[set][i].bytes)
            continue;
        unsigned char pat[8];
        size_t ps = poison_pattern(a->task->args[i].dtype, which, pat);
        int err = temper_dev_fill(&ws->dev, a->out[set][i].view, 0, a->out[set][i].bytes, pat, ps, msg, n);
        if (err)
            return err;
    }
    for (int s = 0; s < p->cand.nscratch; s++) {
        unsigned char pat[8];
        size_t ps = poison_pattern(p->cand.scratch[s].dtype, which, pat);
        size_t bytes = p->scratch_bytes[s] / ps * ps;
        int err = bytes ? temper_dev_fill(&ws->dev, p->scratch[s], 0, bytes, pat, ps, msg, n) : 0;
        if (err)
            return err;
    }
    return 0;
}

/* Sizes the plan's scratch buffers for the arena's shape. */
static int plan_scratch(struct worker_state *ws, struct plan *p, struct arena *a, struct failure *f)
{
    char msg[1024];
    for (int s = 0; s < p->cand.nscratch; s++) {
        const struct temper_scratch *sc = &p->cand.scratch[s];
        int64_t count;
        if (temper_launch_eval(&a->shape, &p->knobs, sc->count, &count, msg, sizeof(msg)))
            return fail_with(f, TEMPER_VERDICT_INVALID, "%s:%d: scratch %s: %s", p->cand.path, sc->line, sc->name, msg);
        if (count < 0)
            return fail_with(f, TEMPER_VERDICT_INVALID, "%s:%d: scratch %s: negative size", p->cand.path, sc->line,
                             sc->name);
        size_t bytes = (size_t)count * temper_dtype_size(sc->dtype);
        if (p->scratch[s] && p->scratch_bytes[s] == bytes)
            continue;
        temper_dev_release(&ws->dev, p->scratch[s]);
        p->scratch[s] = NULL;
        if (temper_dev_alloc(&ws->dev, bytes, &p->scratch[s], msg, sizeof(msg)))
            return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "%s:%d: scratch %s of %zu bytes: %s", p->cand.path,
                             sc->line, sc->name, bytes, msg);
        p->scratch_bytes[s] = bytes;
    }
    return 0;
}

/* Resolves one launch's geometry and arguments at the arena's shape. */
static int plan_launch_args(struct worker_state *ws, struct plan *p, int li, struct arena *a, int variant, int set,
                            struct temper_launch_dims *dims, struct temper_karg *args, int *nargs, struct failure *f)
{
    const struct temper_launch *l = &p->cand.launches[li];
    const struct temper_task *t = a->task;
    char msg[1024];
    size_t threads = 1;
    for (int d = 0; d < 3; d++) {
        int64_t g = 1, b = 1;
        if (d < l->grid_n && temper_launch_eval(&a->shape, &p->knobs, l->grid[d], &g, msg, sizeof(msg)))
            return fail_with(f, TEMPER_VERDICT_INVALID, "%s:%d: grid: %s", p->cand.path, l->line, msg);
        if (d < l->block_n && temper_launch_eval(&a->shape, &p->knobs, l->block[d], &b, msg, sizeof(msg)))
            return fail_with(f, TEMPER_VERDICT_INVALID, "%s:%d: block: %s", p->cand.path, l->line, msg);
        if (g < 1 || b < 1 || g > (1ll << 31) || b > 4096)
            return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "%s:%d: launch %s: grid %lld x block %lld in dimension "
                             "%d is out of range", p->cand.path, l->line, l->kernel, (long long)g, (long long)b, d);
        dims->grid[d] = (size_t)g;
        dims->block[d] = (size_t)b;
        threads *= (size_t)b;
    }
    if (threads > ws->dev.info.max_work_group)
        return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR,
                         "%s:%d: launch %s: a block of %zu threads exceeds the device's limit of %zu", p->cand.path,
                         l->line, l->kernel, threads, ws->dev.info.max_work_group);
    int64_t smem = 0;
    if (l->smem[0] && temper_launch_eval(&a->shape, &p->knobs, l->smem, &smem, msg, sizeof(msg)))
        return fail_with(f, TEMPER_VERDICT_INVALID, "%s:%d: smem: %s", p->cand.path, l->line, msg);
    if (smem < 0)
        return fail_with(f, TEMPER_VERDICT_INVALID, "%s:%d: smem is negative", p->cand.path, l->line);
    dims->smem_bytes = (size_t)smem;
    int n = l->nargs < 0 ? t->nargs : l->nargs;
    for (int i = 0; i < n; i++) {
        const char *name = l->nargs < 0 ? t->args[i].name : l->args[i];
        int found = 0;
        for (int j = 0; j < t->nargs && !found; j++) {
            if (strcmp(t->args[j].name, name))
                continue;
            found = 1;
            const struct temper_task_arg *arg = &t->args[j];
            if (arg->role == TEMPER_ROLE_SCALAR) {
                if (arg->dtype == TEMPER_DTYPE_I64) {
                    args[i].kind = TEMPER_KARG_I64;
                    args[i].v.i64 = a->scalars[j];
                } else {
                    args[i].kind = TEMPER_KARG_I32;
                    args[i].v.i32 = (int32_t)a->scalars[j];
                }
            } else {
                args[i].kind = TEMPER_KARG_BUFFER;
                args[i].v.buf = arg->role == TEMPER_ROLE_OUTPUT ? a->out[set][j].view : a->in[variant][j].view;
            }
        }
        for (int s = 0; s < p->cand.nscratch && !found; s++)
            if (!strcmp(p->cand.scratch[s].name, name)) {
                found = 1;
                args[i].kind = TEMPER_KARG_BUFFER;
                args[i].v.buf = p->scratch[s];
            }
        int64_t knob;
        if (!found && !temper_knobs_int(&p->knobs, name, strlen(name), &knob)) {
            found = 1;
            args[i].kind = TEMPER_KARG_I32;
            args[i].v.i32 = (int32_t)knob;
        }
        if (!found)
            return fail_with(f, TEMPER_VERDICT_INVALID,
                             "%s:%d: args(...) names '%s', which is not an argument of task %s, a scratch buffer or "
                             "an integer param", p->cand.path, l->line, name, t->name);
    }
    *nargs = n;
    return 0;
}

/* Queues every launch of the plan. */
static int plan_launch(struct worker_state *ws, struct plan *p, struct arena *a, int variant, int set,
                       struct failure *f)
{
    char msg[1024];
    for (int li = 0; li < p->cand.nlaunches; li++) {
        struct temper_launch_dims dims;
        struct temper_karg args[TEMPER_MAX_LAUNCH_ARGS];
        int nargs = 0;
        if (plan_launch_args(ws, p, li, a, variant, set, &dims, args, &nargs, f))
            return -1;
        if (temper_dev_launch(&ws->dev, p->kernels[li], &dims, nargs, args, msg, sizeof(msg)))
            return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "launch of %s failed: %s", p->cand.launches[li].kernel,
                             msg);
    }
    return 0;
}

/* One untimed run: poison, launch, wait. */
static int plan_run(struct worker_state *ws, struct plan *p, struct arena *a, int variant, int set, int which,
                    struct failure *f)
{
    char msg[1024];
    if (plan_scratch(ws, p, a, f))
        return -1;
    if (poison_outputs(ws, a, p, set, which, msg, sizeof(msg)))
        return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "cannot poison the outputs: %s", msg);
    if (plan_launch(ws, p, a, variant, set, f))
        return -1;
    if (temper_dev_sync(&ws->dev, msg, sizeof(msg)))
        return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "the kernel failed while running: %s", msg);
    return 0;
}

/* Reads every output of a set into malloc'ed host arrays (caller frees each). */
static int read_outputs(struct worker_state *ws, struct arena *a, int set, void **host, struct failure *f)
{
    char msg[1024];
    for (int i = 0; i < a->task->nargs; i++) {
        host[i] = NULL;
        if (a->task->args[i].role != TEMPER_ROLE_OUTPUT)
            continue;
        host[i] = malloc(a->out[set][i].bytes ? a->out[set][i].bytes : 1);
        if (!host[i])
            return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "out of host memory reading %s", a->task->args[i].name);
        if (a->out[set][i].bytes &&
            temper_dev_read(&ws->dev, a->out[set][i].view, 0, host[i], a->out[set][i].bytes, msg, sizeof(msg)))
            return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "reading output %s failed: %s", a->task->args[i].name,
                             msg);
    }
    return 0;
}

static void free_outputs(void **host, int n)
{
    for (int i = 0; i < n; i++) {
        free(host[i]);
        host[i] = NULL;
    }
}

/* Checks one slot's guard zones. */
static int check_guards(struct worker_state *ws, struct arena *a, struct slot *s, const char *name, const char *where,
                        struct failure *f)
{
    char msg[1024];
    size_t data = (s->bytes + a->guard - 1) / a->guard * a->guard;
    unsigned char *g = malloc(a->guard + (data - s->bytes));
    if (!g)
        return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "out of host memory");
    size_t after = a->guard + (data - s->bytes);
    int err = temper_dev_read(&ws->dev, s->whole, 0, g, a->guard, msg, sizeof(msg));
    for (size_t i = 0; !err && i < a->guard; i++)
        if (g[i] != s->canary) {
            free(g);
            return fail_with(f, TEMPER_VERDICT_INCORRECT,
                             "out-of-bounds write at %s: the guard zone before %s was overwritten %zu bytes before "
                             "its start",
                             where, name, a->guard - i);
        }
    if (!err)
        err = temper_dev_read(&ws->dev, s->whole, a->guard + s->bytes, g, after, msg, sizeof(msg));
    for (size_t i = 0; !err && i < after; i++)
        if (g[i] != s->canary) {
            free(g);
            return fail_with(f, TEMPER_VERDICT_INCORRECT,
                             "out-of-bounds write at %s: the guard zone after %s was overwritten %zu bytes past its "
                             "end",
                             where, name, i);
        }
    free(g);
    if (err)
        return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "reading guard zones failed: %s", msg);
    return 0;
}

/* After a run: guards of every buffer intact, inputs unchanged. */
static int check_memory(struct worker_state *ws, struct arena *a, int variant, int set, const char *where,
                        struct failure *f)
{
    char msg[1024];
    for (int i = 0; i < a->task->nargs; i++) {
        const struct temper_task_arg *arg = &a->task->args[i];
        if (arg->role == TEMPER_ROLE_SCALAR)
            continue;
        struct slot *s = arg->role == TEMPER_ROLE_OUTPUT ? &a->out[set][i] : &a->in[variant][i];
        if (check_guards(ws, a, s, arg->name, where, f))
            return -1;
        if (arg->role != TEMPER_ROLE_INPUT || !s->bytes)
            continue;
        unsigned char *now = malloc(s->bytes);
        if (!now)
            return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "out of host memory");
        if (temper_dev_read(&ws->dev, s->view, 0, now, s->bytes, msg, sizeof(msg))) {
            free(now);
            return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "reading input %s failed: %s", arg->name, msg);
        }
        if (temper_hash64(now, s->bytes, 0) != a->in_hash[variant][i]) {
            size_t first = 0;
            const unsigned char *was = a->host_in[variant][i];
            while (first < s->bytes && now[first] == was[first])
                first++;
            size_t es = temper_dtype_size(arg->dtype);
            double before = temper_dtype_load(arg->dtype, was, first / es);
            double after = temper_dtype_load(arg->dtype, now, first / es);
            free(now);
            return fail_with(f, TEMPER_VERDICT_INCORRECT,
                             "the kernel changed its input %s at %s (first changed element %zu: was %.9g, now %.9g)",
                             arg->name, where, first / es, before, after);
        }
        free(now);
    }
    return 0;
}

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

/* Compares every output with want[i] (doubles); fills the check object; fails with a message. */
static int compare_outputs(struct arena *a, void **got, double **want, double atol, double rtol, const char *where,
                           const char *against, json_t *check, struct failure *f)
{
    double max_abs = 0, max_rel = 0;
    int64_t mismatches = 0;
    int rc = 0;
    for (int i = 0; i < a->task->nargs; i++) {
        const struct temper_task_arg *arg = &a->task->args[i];
        if (arg->role != TEMPER_ROLE_OUTPUT)
            continue;
        struct temper_compare r;
        temper_compare_values(arg->dtype, got[i], want[i], a->elems[i], atol, rtol, &r);
        max_abs = fmax(max_abs, r.max_abs_err);
        max_rel = fmax(max_rel, r.max_rel_err);
        mismatches += r.mismatches;
        if (r.mismatches && !rc) {
            char idx[128];
            format_index(a, i, r.first_bad, idx, sizeof(idx));
            int poisoned = isnan(r.first_got) && r.mismatches == r.nonfinite;
            const char *why = poisoned && r.mismatches < r.count ? " (NaN: never written, or computed as NaN)" :
                              poisoned ? " (every element is NaN)" :
                              r.nonfinite ? " (NaN or inf where the answer is finite)" : "";
            json_object_set_new(check, "first_mismatch",
                                json_pack("{s:s, s:I, s:s, s:f, s:f}", "output", arg->name, "index",
                                          (json_int_t)r.first_bad, "position", idx, "got", r.first_got, "expected",
                                          r.first_want));
            rc = fail_with(f, TEMPER_VERDICT_INCORRECT,
                           "wrong output at %s: %s%s = %.9g, expected %.9g (%s; atol %g, rtol %g); %lld of %lld "
                           "elements wrong%s",
                           where, arg->name, idx, r.first_got, r.first_want, against, atol, rtol,
                           (long long)r.mismatches, (long long)r.count, why);
        }
    }
    json_object_set_new(check, "max_abs_err", json_real(max_abs));
    json_object_set_new(check, "max_rel_err", json_real(max_rel));
    json_object_set_new(check, "mismatches", json_integer(mismatches));
    json_object_set_new(check, "passed", json_boolean(!rc));
    return rc;
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

/* Timings of the pipeline's stages, in milliseconds. */
struct phases {
    double build_ms;     /* building candidate and baseline */
    double inputs_ms;    /* drawing inputs, allocating and uploading them */
    double reference_ms; /* loading and running the C reference */
    double device_ms;    /* device runs, uploads and reads */
    double compare_ms;   /* comparisons */
    double timing_ms;    /* the timing protocol */
};

/* Runs the C reference on the arena's variant-0 inputs; want[i] are malloc'ed doubles. */
static int run_reference(struct arena *a, temper_reference_fn ref, double **want, struct failure *f)
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
        double *d = calloc((size_t)(a->elems[i] ? a->elems[i] : 1), sizeof(double));
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
            want[i] = d;
        }
    }
    if (!rc)
        ref(out_d, (const double **)in_d, scalars);
    for (int i = 0; i < nin; i++)
        free(in_d[i]);
    return rc;
}

/* The correctness protocol at one check shape and seed. */
static int check_shape(struct worker_state *ws, struct plan *p, const struct temper_task *t,
                       const struct temper_shape *shape, uint64_t seed, const char *seed_name, unsigned char canary,
                       temper_reference_fn ref, json_t *checks, struct phases *ph, struct failure *f)
{
    char where[512], shape_text[256];
    temper_shape_format(shape, shape_text, sizeof(shape_text));
    snprintf(where, sizeof(where), "shape %s, %s seed", shape_text, seed_name);
    json_t *check = json_pack("{s:s, s:s}", "shape", shape_text, "seed", seed_name);
    json_array_append_new(checks, check);
    struct arena a;
    double *want[TEMPER_MAX_ARGS] = {0};
    void *got[TEMPER_MAX_ARGS] = {0}, *again[TEMPER_MAX_ARGS] = {0};
    int rc = 0;
    double t0 = temper_now_s();
    worker_doing(ws->shared, WORKER_RUNNING, "checking %s at %s", p->cand.path, where);
    rc = arena_init(ws, &a, t, shape, 1, 1, &seed, canary, f);
    double t1 = temper_now_s();
    ph->inputs_ms += (t1 - t0) * 1e3;
    if (!rc)
        rc = run_reference(&a, ref, want, f);
    double t2 = temper_now_s();
    ph->reference_ms += (t2 - t1) * 1e3;
    if (!rc)
        rc = plan_run(ws, p, &a, 0, 0, 0, f);
    if (!rc)
        rc = check_memory(ws, &a, 0, 0, where, f);
    if (!rc)
        rc = read_outputs(ws, &a, 0, got, f);
    double t3 = temper_now_s();
    ph->device_ms += (t3 - t2) * 1e3;
    if (!rc)
        rc = compare_outputs(&a, got, want, t->atol, t->rtol, where, "the C reference", check, f);
    double t4 = temper_now_s();
    ph->compare_ms += (t4 - t3) * 1e3;
    /* The determinism rerun: the same inputs, the other poison, compared bit for bit. */
    if (!rc)
        rc = plan_run(ws, p, &a, 0, 0, 1, f);
    if (!rc)
        rc = read_outputs(ws, &a, 0, again, f);
    double t5 = temper_now_s();
    ph->device_ms += (t5 - t4) * 1e3;
    int diff_arg = 0;
    int64_t diff = rc ? -1 : first_difference(&a, got, again, &diff_arg);
    json_object_set_new(check, "deterministic", json_boolean(diff < 0));
    if (!rc && diff >= 0) {
        /* Differing runs may be legitimate (atomics) or a race that passed by luck: every further
         * run must also pass. */
        char rerun_where[600];
        for (int r = 0; r < EXTRA_RERUNS && !rc; r++) {
            snprintf(rerun_where, sizeof(rerun_where), "%s, rerun %d of a nondeterministic kernel", where, r + 2);
            free_outputs(again, t->nargs);
            rc = plan_run(ws, p, &a, 0, 0, r & 1, f);
            if (!rc)
                rc = read_outputs(ws, &a, 0, again, f);
            if (!rc)
                rc = compare_outputs(&a, again, want, t->atol, t->rtol, rerun_where, "the C reference", check, f);
        }
        char idx[128];
        format_index(&a, diff_arg, diff, idx, sizeof(idx));
        json_object_set_new(check, "nondeterministic_at",
                            json_pack("{s:s, s:s}", "output", t->args[diff_arg].name, "position", idx));
        ph->compare_ms += (temper_now_s() - t5) * 1e3;
    }
    free_outputs(got, t->nargs);
    free_outputs(again, t->nargs);
    for (int i = 0; i < t->nargs; i++)
        free(want[i]);
    arena_free(ws, &a);
    return rc;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Median and relative interquartile range of samples (sorted in place). */
static void summarize(double *s, int n, double *median, double *spread, double *min)
{
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    *median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    *spread = *median > 0 ? (s[(3 * n) / 4] - s[n / 4]) / *median : 0;
    *min = s[0];
}

/* Times one plan run: poison the outputs, evict the cache (both untimed), then events around the
 * launches. */
static int timed_run(struct worker_state *ws, struct plan *p, struct arena *a, int variant, int set, double *ms,
                     struct failure *f)
{
    char msg[1024];
    if (poison_outputs(ws, a, p, set, variant & 1, msg, sizeof(msg)) ||
        temper_dev_flush_cache(&ws->dev, msg, sizeof(msg)))
        return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "preparing a timed run failed: %s", msg);
    if (temper_dev_timer_start(&ws->dev, msg, sizeof(msg)))
        return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "%s", msg);
    if (plan_launch(ws, p, a, variant, set, f))
        return -1;
    if (temper_dev_timer_stop(&ws->dev, ms, msg, sizeof(msg)))
        return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "the kernel failed during timing: %s", msg);
    return 0;
}

/* Bench shapes: the candidate checked against the trusted baseline on the device, then (unless
 * check-only) timed interleaved with the baseline, with inputs alternating between timed launches
 * and the last timed output verified. */
static int bench_shape(struct worker_state *ws, struct plan *cand, struct plan *base, const struct temper_task *t,
                       const struct temper_shape *shape, uint64_t secret, unsigned char canary, int timing,
                       double budget_s, json_t *calib, json_t *bench_checks, json_t **timing_out, struct phases *ph,
                       struct failure *f)
{
    char where[512], shape_text[256];
    temper_shape_format(shape, shape_text, sizeof(shape_text));
    snprintf(where, sizeof(where), "bench shape %s", shape_text);
    json_t *check = json_pack("{s:s, s:s}", "shape", shape_text, "against", "baseline");
    json_array_append_new(bench_checks, check);
    uint64_t seeds[MAX_VARIANTS] = {secret ^ 0xbe9c4a11ull, secret ^ 0x5eed2222ull};
    struct arena a;
    void *expect[MAX_VARIANTS][TEMPER_MAX_ARGS] = {{0}};
    double *want[TEMPER_MAX_ARGS] = {0};
    void *got[TEMPER_MAX_ARGS] = {0};
    double *samples = NULL, *base_samples = NULL;
    int rc = 0;
    double t0 = temper_now_s();
    worker_doing(ws->shared, WORKER_RUNNING, "checking %s at %s against the baseline", cand->cand.path, where);
    rc = arena_init(ws, &a, t, shape, MAX_VARIANTS, 2, seeds, canary, f);
    ph->inputs_ms += (temper_now_s() - t0) * 1e3;
    double t1 = temper_now_s();
    for (int v = 0; v < MAX_VARIANTS && !rc; v++) {
        rc = plan_run(ws, base, &a, v, 1, v, f);
        if (!rc)
            rc = read_outputs(ws, &a, 1, expect[v], f);
        if (rc) {
            char inner[2048];
            snprintf(inner, sizeof(inner), "%s", f->message);
            fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "the task's baseline failed at %s: %s", where, inner);
        }
    }
    if (!rc)
        rc = plan_run(ws, cand, &a, 0, 0, 0, f);
    if (!rc)
        rc = check_memory(ws, &a, 0, 0, where, f);
    if (!rc)
        rc = read_outputs(ws, &a, 0, got, f);
    double t2 = temper_now_s();
    ph->device_ms += (t2 - t1) * 1e3;
    for (int i = 0; i < t->nargs && !rc; i++)
        if (t->args[i].role == TEMPER_ROLE_OUTPUT) {
            want[i] = malloc((size_t)(a.elems[i] ? a.elems[i] : 1) * sizeof(double));
            if (!want[i])
                rc = fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "out of host memory");
            for (int64_t e = 0; !rc && e < a.elems[i]; e++)
                want[i][e] = temper_dtype_load(t->args[i].dtype, expect[0][i], (size_t)e);
        }
    if (!rc)
        rc = compare_outputs(&a, got, want, t->atol, t->rtol, where, "the baseline on this device", check, f);
    ph->compare_ms += (temper_now_s() - t2) * 1e3;

    if (!rc && timing) {
        double t3 = temper_now_s();
        worker_doing(ws->shared, WORKER_RUNNING, "timing %s at %s", cand->cand.path, where);
        double ms, warm_until = temper_now_s() + fmin(0.2, budget_s * 0.1);
        for (int w = 0; !rc && (w < 2 || temper_now_s() < warm_until) && w < 50; w++) {
            rc = timed_run(ws, cand, &a, w & 1, 0, &ms, f);
            if (!rc)
                rc = timed_run(ws, base, &a, w & 1, 1, &ms, f);
        }
        samples = malloc(MAX_SAMPLES * sizeof(double));
        base_samples = malloc(MAX_SAMPLES * sizeof(double));
        if (!samples || !base_samples)
            rc = fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "out of host memory");
        int n = 0, last_variant = 0;
        double end = temper_now_s() + budget_s;
        while (!rc && n < MAX_SAMPLES) {
            last_variant = n % MAX_VARIANTS;
            rc = timed_run(ws, cand, &a, last_variant, 0, &samples[n], f);
            if (!rc)
                rc = timed_run(ws, base, &a, last_variant, 1, &base_samples[n], f);
            if (rc)
                break;
            n++;
            if (n >= MIN_SAMPLES && (n % 5) == 0) {
                double *tmp = malloc((size_t)n * sizeof(double)), med, spread, mn;
                if (tmp) {
                    memcpy(tmp, samples, (size_t)n * sizeof(double));
                    summarize(tmp, n, &med, &spread, &mn);
                    free(tmp);
                }
                if ((tmp && spread < TARGET_SPREAD && n >= 2 * MIN_SAMPLES) || temper_now_s() > end)
                    break;
            } else if (n >= MIN_SAMPLES && temper_now_s() > end) {
                break;
            }
        }
        /* The last timed output must be right for the inputs of the last timed launch. */
        if (!rc) {
            free_outputs(got, t->nargs);
            rc = read_outputs(ws, &a, 0, got, f);
            for (int i = 0; i < t->nargs && !rc; i++)
                if (t->args[i].role == TEMPER_ROLE_OUTPUT)
                    for (int64_t e = 0; e < a.elems[i]; e++)
                        want[i][e] = temper_dtype_load(t->args[i].dtype, expect[last_variant][i], (size_t)e);
            char timed_where[600];
            snprintf(timed_where, sizeof(timed_where), "%s, last of %d timed launches with changing inputs", where, n);
            json_t *timed_check = json_object();
            if (!rc)
                rc = compare_outputs(&a, got, want, t->atol, t->rtol, timed_where, "the baseline on this device",
                                     timed_check, f);
            json_object_set(check, "timed_output_verified", json_boolean(!rc));
            json_decref(timed_check);
        }
        if (!rc) {
            double med, spread, mn, bmed, bspread, bmn;
            summarize(samples, n, &med, &spread, &mn);
            summarize(base_samples, n, &bmed, &bspread, &bmn);
            int64_t flops = 0, bytes = 0;
            char msg[256];
            temper_shape_eval(shape, t->flops, &flops, msg, sizeof(msg));
            temper_shape_eval(shape, t->bytes, &bytes, msg, sizeof(msg));
            json_t *tm = json_pack("{s:s, s:f, s:f, s:f, s:i, s:f, s:f, s:f, s:I, s:I, s:f, s:f}", "shape",
                                   shape_text, "median_ms", med, "min_ms", mn, "spread", spread, "samples", n,
                                   "baseline_median_ms", bmed, "baseline_spread", bspread, "speedup", bmed / med,
                                   "flops", (json_int_t)flops, "bytes", (json_int_t)bytes, "gbps",
                                   (double)bytes / (med * 1e-3) * 1e-9, "tflops", (double)flops / (med * 1e-3) * 1e-12);
            double copy_gbs = json_number_value(json_object_get(calib, "copy_gbs"));
            double fma_gflops = json_number_value(json_object_get(calib, "fma_gflops"));
            if (copy_gbs > 0 && fma_gflops > 0) {
                double floor_ms = fmax((double)bytes / (copy_gbs * 1e9), (double)flops / (fma_gflops * 1e9)) * 1e3;
                json_object_set_new(tm, "roofline_floor_ms", json_real(floor_ms));
                json_object_set_new(tm, "roofline_share", json_real(floor_ms / med));
                json_object_set_new(tm, "baseline_roofline_share", json_real(floor_ms / bmed));
                json_object_set_new(tm, "bound", json_string((double)bytes / (copy_gbs * 1e9) >=
                                                                     (double)flops / (fma_gflops * 1e9) ?
                                                                 "memory" :
                                                                 "compute"));
                /* Faster than the measured ceilings allow by a clear margin: not a win, a sign that
                 * the work was not done. */
                json_object_set_new(tm, "impossible", json_boolean(med < 0.8 * floor_ms));
                json_object_set(tm, "ceilings", calib);
            }
            *timing_out = tm;
        }
        ph->timing_ms += (temper_now_s() - t3) * 1e3;
    }
    free(samples);
    free(base_samples);
    free_outputs(got, t->nargs);
    for (int v = 0; v < MAX_VARIANTS; v++)
        free_outputs(expect[v], t->nargs);
    for (int i = 0; i < t->nargs; i++)
        free(want[i]);
    arena_free(ws, &a);
    return rc;
}

static json_t *eval_job(struct worker_state *ws, json_t *req, int *fatal)
{
    double start = temper_now_s();
    char msg[8192];
    struct temper_task task;
    const char *task_dir = json_string_value(json_object_get(req, "task_dir"));
    if (temper_task_load(task_dir ? task_dir : "", &task, msg, sizeof(msg)))
        return error_reply(msg, TEMPER_EPARSE);
    const char *path = json_string_value(json_object_get(req, "path"));
    const char *source = json_string_value(json_object_get(req, "source"));
    uint64_t seed = (uint64_t)json_integer_value(json_object_get(req, "seed"));
    uint64_t secret = (uint64_t)json_integer_value(json_object_get(req, "secret_seed"));
    int timing = !json_is_true(json_object_get(req, "no_timing"));
    double budget = json_number_value(json_object_get(req, "time_budget_s"));
    json_t *calib = json_object_get(req, "calibration");
    const char *base_path = !strcmp(ws->dev.ops->name, "cuda") ? task.baseline_cuda : task.baseline_opencl;

    json_t *result = json_object();
    json_t *checks = json_array(), *bench_checks = json_array();
    struct phases ph = {0};
    struct failure f = {TEMPER_VERDICT_CORRECT, ""};
    struct plan cand, base;
    struct temper_buf log;
    temper_buf_init(&log, COMPILE_LOG_MAX);
    temper_buf_append(&log, "", 0);
    memset(&base, 0, sizeof(base));
    unsigned char canary = (unsigned char)((secret >> 8) | 1);
    temper_reference_fn ref = NULL;

    double t0 = temper_now_s();
    int rc = plan_build(ws, path, source, json_object_get(req, "knobs"), &log, &cand, &f);
    json_object_set_new(result, "compile_log", json_string(log.data));
    json_object_set_new(result, "options", json_string(cand.options));
    json_object_set_new(result, "cache_hit", json_boolean(cand.cache_hit));
    if (!rc) {
        if (!base_path[0]) {
            rc = fail_with(&f, TEMPER_VERDICT_RUNTIME_ERROR, "task %s has no %s baseline to check bench shapes with",
                           task.name, ws->dev.ops->name);
        } else {
            struct temper_buf base_log;
            temper_buf_init(&base_log, COMPILE_LOG_MAX);
            if (plan_build(ws, base_path, NULL, NULL, &base_log, &base, &f)) {
                json_decref(result);
                json_decref(checks);
                json_decref(bench_checks);
                snprintf(msg, sizeof(msg), "the task's baseline %s does not build: %s\n%s", base_path, f.message,
                         base_log.data ? base_log.data : "");
                temper_buf_free(&base_log);
                temper_buf_free(&log);
                plan_free(ws, &cand);
                plan_free(ws, &base);
                return error_reply(msg, TEMPER_ECOMPILE);
            }
            temper_buf_free(&base_log);
        }
    }
    ph.build_ms = (temper_now_s() - t0) * 1e3;
    if (!rc && temper_task_reference(&task, &ref, msg, sizeof(msg))) {
        json_decref(result);
        json_decref(checks);
        json_decref(bench_checks);
        temper_buf_free(&log);
        plan_free(ws, &cand);
        plan_free(ws, &base);
        return error_reply(msg, TEMPER_ECOMPILE);
    }
    ph.reference_ms += (temper_now_s() - t0) * 1e3 - ph.build_ms;

    static const char *const seed_names[2] = {"public", "secret"};
    uint64_t seeds[2] = {seed, secret};
    for (int s = 0; s < task.ncheck && !rc; s++)
        for (int k = 0; k < 2 && !rc; k++)
            rc = check_shape(ws, &cand, &task, &task.check[s], seeds[k], seed_names[k], canary, ref, checks, &ph, &f);

    json_t *timings = json_array();
    const struct temper_shape *bench = ws->dev.info.is_gpu ? task.bench_gpu : task.bench_cpu;
    int nbench = ws->dev.info.is_gpu ? task.nbench_gpu : task.nbench_cpu;
    for (int b = 0; b < nbench && !rc; b++) {
        json_t *tm = NULL;
        rc = bench_shape(ws, &cand, &base, &task, &bench[b], secret + (uint64_t)b, canary, timing,
                         budget > 0 ? budget : 2.0, calib, bench_checks, &tm, &ph, &f);
        if (tm)
            json_array_append_new(timings, tm);
    }
    if (!rc && json_array_size(timings)) {
        json_t *first = json_array_get(timings, 0);
        if (json_is_true(json_object_get(first, "impossible"))) {
            f.verdict = TEMPER_VERDICT_INCORRECT;
            snprintf(f.message, sizeof(f.message),
                     "timed at %.4g ms, under the roofline floor of %.4g ms for this device's measured ceilings: "
                     "impossible, so the work cannot all have been done",
                     json_number_value(json_object_get(first, "median_ms")),
                     json_number_value(json_object_get(first, "roofline_floor_ms")));
        }
    }
    if (f.verdict == TEMPER_VERDICT_CORRECT)
        snprintf(f.message, sizeof(f.message), "passed %d check shapes x 2 seeds and %d bench shape%s%s", task.ncheck,
                 nbench, nbench == 1 ? "" : "s", timing ? ", timed" : "");
    if (f.verdict == TEMPER_VERDICT_RUNTIME_ERROR)
        *fatal = 1;
    json_object_set_new(result, "verdict", json_string(temper_verdict_name(f.verdict)));
    json_object_set_new(result, "message", json_string(f.message));
    json_object_set_new(result, "task", json_string(task.name));
    json_object_set_new(result, "baseline", json_string(base_path));
    json_object_set_new(result, "device_class", json_string(ws->dev.info.is_gpu ? "gpu" : "cpu"));
    json_object_set_new(result, "checks", checks);
    json_object_set_new(result, "bench_checks", bench_checks);
    json_object_set_new(result, "timings", timings);
    json_object_set_new(result, "phases_ms",
                        json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "build", ph.build_ms, "inputs",
                                  ph.inputs_ms, "reference", ph.reference_ms,
                                  "device", ph.device_ms, "compare", ph.compare_ms, "timing", ph.timing_ms, "worker",
                                  (temper_now_s() - start) * 1e3));
    temper_buf_free(&log);
    plan_free(ws, &cand);
    plan_free(ws, &base);
    return result;
}

/* ---- calibration ---- */

const char worker_calibrate_cl[] =
    "__kernel void copy4(__global float4 *dst, __global const float4 *src, long n) {\n"
    "  for (long i = get_global_id(0); i < n; i += get_global_size(0)) dst[i] = src[i];\n"
    "}\n"
    "__kernel void copy1(__global float4 *dst, __global const float4 *src, long n) {\n"
    "  long i = get_global_id(0); if (i < n) dst[i] = src[i];\n"
    "}\n"
    "__kernel void fma16(__global float *out, int iters, float k) {\n"
    "  float16 a0 = (float16)(get_global_id(0) * 1e-7f), a1 = a0 + 1e-7f, a2 = a0 + 2e-7f, a3 = a0 + 3e-7f;\n"
    "  for (int i = 0; i < iters; i++) {\n"
    "    a0 = fma(a0, k, 1e-7f); a1 = fma(a1, k, 1e-7f); a2 = fma(a2, k, 1e-7f); a3 = fma(a3, k, 1e-7f);\n"
    "  }\n"
    "  float16 s = a0 + a1 + a2 + a3;\n"
    "  out[get_global_id(0)] = s.s0 + s.s1 + s.s2 + s.s3 + s.s4 + s.s5 + s.s6 + s.s7 + s.s8 + s.s9 + s.sa + s.sb + "
    "s.sc + s.sd + s.se + s.sf;\n"
    "}\n";

const char worker_calibrate_cu[] =
    "extern \"C\" __global__ void copy4(float4 *dst, const float4 *src, long long n) {\n"
    "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * "
    "blockDim.x) dst[i] = src[i];\n"
    "}\n"
    "extern \"C\" __global__ void copy1(float4 *dst, const float4 *src, long long n) {\n"
    "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) dst[i] = src[i];\n"
    "}\n"
    "extern \"C\" __global__ void fma16(float *out, int iters, float k) {\n"
    "  float a[16];\n"
    "  long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "  #pragma unroll\n"
    "  for (int j = 0; j < 16; j++) a[j] = (float)(g + j) * 1e-7f;\n"
    "  for (int i = 0; i < iters; i++) {\n"
    "    #pragma unroll\n"
    "    for (int j = 0; j < 16; j++) a[j] = fmaf(a[j], k, 1e-7f);\n"
    "  }\n"
    "  float s = 0; for (int j = 0; j < 16; j++) s += a[j];\n"
    "  out[g] = s;\n"
    "}\n";

/* Best of several timed runs of one launch. */
static int best_time(struct worker_state *ws, struct temper_dkernel *k, const struct temper_launch_dims *dims,
                     int nargs, const struct temper_karg *args, int reps, double *best_ms, char *msg, size_t n)
{
    *best_ms = INFINITY;
    for (int r = 0; r < reps; r++) {
        double ms;
        int err = temper_dev_flush_cache(&ws->dev, msg, n);
        if (!err)
            err = temper_dev_timer_start(&ws->dev, msg, n);
        if (!err)
            err = temper_dev_launch(&ws->dev, k, dims, nargs, args, msg, n);
        if (!err)
            err = temper_dev_timer_stop(&ws->dev, &ms, msg, n);
        if (err)
            return err;
        if (r && ms < *best_ms) /* the first run warms up */
            *best_ms = ms;
    }
    return 0;
}

static json_t *calibrate_job(struct worker_state *ws, int *fatal)
{
    char msg[2048];
    struct temper_device *d = &ws->dev;
    int cuda = !strcmp(d->ops->name, "cuda");
    const char *src = cuda ? worker_calibrate_cu : worker_calibrate_cl;
    struct temper_buf log;
    temper_buf_init(&log, COMPILE_LOG_MAX);
    struct temper_dmodule *mod = NULL;
    struct temper_dkernel *copy = NULL, *copy1 = NULL, *fma = NULL;
    struct temper_dbuf *a = NULL, *b = NULL;
    int hit;
    worker_doing(ws->shared, WORKER_BUILDING, "building the calibration kernels");
    int err = build_module(ws, src, strlen(src), cuda ? "-O3" : "", &log, &mod, &hit, msg, sizeof(msg));
    if (!err)
        err = d->ops->kernel(d->ctx, mod, "copy4", &copy, msg, sizeof(msg));
    if (!err)
        err = d->ops->kernel(d->ctx, mod, "copy1", &copy1, msg, sizeof(msg));
    if (!err)
        err = d->ops->kernel(d->ctx, mod, "fma16", &fma, msg, sizeof(msg));
    /* Copy: a buffer many times the last-level cache, capped by device memory. */
    size_t bytes = d->info.is_gpu ? (size_t)1 << 30 : (size_t)256 << 20;
    while (bytes > d->info.global_mem_bytes / 4)
        bytes /= 2;
    worker_doing(ws->shared, WORKER_RUNNING, "measuring copy bandwidth with %zu MiB buffers", bytes >> 20);
    if (!err)
        err = temper_dev_alloc(d, bytes, &a, msg, sizeof(msg));
    if (!err)
        err = temper_dev_alloc(d, bytes, &b, msg, sizeof(msg));
    float zero = 0;
    if (!err)
        err = temper_dev_fill(d, b, 0, bytes, &zero, 4, msg, sizeof(msg));
    double copy_ms = 0, fma_ms = 0;
    size_t threads = d->info.max_work_group >= 256 ? 256 : d->info.max_work_group;
    if (!err) {
        struct temper_karg args[3] = {{TEMPER_KARG_BUFFER, {.buf = a}}, {TEMPER_KARG_BUFFER, {.buf = b}},
                                      {TEMPER_KARG_I64, {.i64 = (int64_t)(bytes / 16)}}};
        struct temper_launch_dims dims = {{(size_t)d->info.compute_units * (d->info.is_gpu ? 16 : 4), 1, 1},
                                          {threads, 1, 1}, 0};
        err = best_time(ws, copy, &dims, 3, args, d->info.is_gpu ? 20 : 6, &copy_ms, msg, sizeof(msg));
        /* One element per thread suits CPUs (PoCL vectorises across work-items); the ceiling is
         * the better of the two, so that no kernel can honestly beat it by much. */
        struct temper_launch_dims one = {{bytes / 16 / threads, 1, 1}, {threads, 1, 1}, 0};
        double one_ms = INFINITY;
        if (!err)
            err = best_time(ws, copy1, &one, 3, args, d->info.is_gpu ? 20 : 6, &one_ms, msg, sizeof(msg));
        copy_ms = fmin(copy_ms, one_ms);
    }
    size_t fma_threads = (size_t)d->info.compute_units * (d->info.is_gpu ? 2048 : 1024);
    int iters = d->info.is_gpu ? 4096 : 1024;
    temper_dev_release(d, a);
    a = NULL;
    worker_doing(ws->shared, WORKER_RUNNING, "measuring FMA throughput");
    if (!err)
        err = temper_dev_alloc(d, fma_threads * 4, &a, msg, sizeof(msg));
    if (!err) {
        struct temper_karg args[3] = {{TEMPER_KARG_BUFFER, {.buf = a}}, {TEMPER_KARG_I32, {.i32 = iters}},
                                      {TEMPER_KARG_F32, {.f32 = 0.999f}}};
        struct temper_launch_dims dims = {{fma_threads / threads, 1, 1}, {threads, 1, 1}, 0};
        err = best_time(ws, fma, &dims, 3, args, d->info.is_gpu ? 10 : 4, &fma_ms, msg, sizeof(msg));
    }
    temper_dev_release(d, a);
    temper_dev_release(d, b);
    if (mod)
        d->ops->module_free(d->ctx, mod);
    temper_buf_free(&log);
    if (err) {
        *fatal = 1;
        return error_reply(msg, err);
    }
    double copy_gbs = 2.0 * (double)bytes / (copy_ms * 1e-3) * 1e-9;
    /* FMAs per thread per iteration: 4 chains of float16 in OpenCL (vectorised by construction,
     * since PoCL cannot vectorise across work-items around a loop), 16 scalar chains in CUDA. */
    double fma_per_iter = cuda ? 16.0 : 64.0;
    double fma_gflops = 2.0 * fma_per_iter * iters * (double)fma_threads / (fma_ms * 1e-3) * 1e-9;
    return json_pack("{s:f, s:f, s:f, s:f}", "copy_gbs", copy_gbs, "fma_gflops", fma_gflops, "copy_ms", copy_ms,
                     "fma_ms", fma_ms);
}

static json_t *devices_job(void)
{
    json_t *list = json_array();
    const struct temper_device_ops *const *b = temper_device_backends();
    json_t *missing = json_object();
    for (int i = 0; b[i]; i++) {
        int count = 0;
        char why[1024] = "";
        if (b[i]->count(&count, why, sizeof(why)) || !count) {
            json_object_set_new(missing, b[i]->name, json_string(why[0] ? why : "no devices"));
            continue;
        }
        for (int k = 0; k < count; k++) {
            struct temper_device d;
            char spec[32], msg[1024];
            snprintf(spec, sizeof(spec), "%s:%d", b[i]->name, k);
            if (temper_device_open(spec, &d, msg, sizeof(msg))) {
                json_array_append_new(list, json_pack("{s:s, s:s}", "id", spec, "error", msg));
                continue;
            }
            json_array_append_new(list, device_json(&d.info));
            temper_device_close(&d);
        }
    }
    return json_pack("{s:o, s:o}", "devices", list, "unavailable", missing);
}

json_t *worker_handle(struct worker_state *ws, json_t *req, int *fatal)
{
    const char *op = json_string_value(json_object_get(req, "op"));
    char msg[2048];
    *fatal = 0;
    if (!op)
        return error_reply("request without op", TEMPER_EINVALID);
    if (!strcmp(op, "devices"))
        return devices_job();
    int err = ensure_open(ws, msg, sizeof(msg));
    if (err)
        return error_reply(msg, err);
    json_t *reply;
    if (!strcmp(op, "info"))
        reply = device_json(&ws->dev.info);
    else if (!strcmp(op, "calibrate"))
        reply = calibrate_job(ws, fatal);
    else if (!strcmp(op, "eval"))
        reply = eval_job(ws, req, fatal);
    else
        reply = error_reply("unknown op", TEMPER_EINVALID);
    worker_doing(ws->shared, WORKER_IDLE, "idle");
    return reply;
}
