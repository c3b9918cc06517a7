/* pipeline.c: the worker side of an evaluation: builds (through the build cache), the
 * correctness protocol and the timing protocol of DESIGN.md. Runs only inside the worker
 * process; the parent sees JSON results. Inputs, reference outputs and the baseline's outputs
 * are kept between evaluations of the same task and seeds (struct session), so a stream of
 * candidates pays for them once. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker_impl.h"

#define COMPILE_LOG_MAX (64u << 10)
#define EXTRA_RERUNS 8     /* more runs for a kernel seen to be nondeterministic */
#define MIN_SAMPLES 10     /* timed samples at least */
#define MAX_SAMPLES 2000   /* timed samples at most */
#define BASE_MIN 3         /* baseline samples a worker takes per bench arena at least */
#define TARGET_SPREAD 0.01 /* stop timing once the relative IQR is below this */
#define FIRST_LAUNCH_GRACE_S 30.0 /* extra time for a plan's first launch on OpenCL */

int fail_with(struct failure *f, enum temper_verdict v, const char *fmt, ...)
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

json_t *worker_error_reply(const char *msg, int code)
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

/* Builds source with options through the build cache; *code (if code is not NULL) gets the
 * hash of the binary's code (temper_code_hash), 0 where the backend gives no binary. */
int worker_build_module(struct worker_state *ws, const char *source, size_t len, const char *options,
                        struct temper_buf *log, struct temper_dmodule **mod, int *cache_hit, uint64_t *code, char *msg,
                        size_t n)
{
    struct temper_device *d = &ws->dev;
    uint64_t key = temper_build_key(source, len, options, d->info.compiler_version,
                                    d->info.arch[0] ? d->info.arch : d->info.name);
    void *bin = NULL;
    size_t size = 0;
    *cache_hit = 0;
    if (code)
        *code = 0;
    if (!temper_build_cache_get(key, &bin, &size)) {
        int err = d->ops->load(d->ctx, bin, size, mod, msg, n);
        if (!err && code)
            *code = temper_code_hash(bin, size);
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
        if (!err && code)
            *code = temper_code_hash(bin, size);
        free(bin);
        return err;
    }
    err = d->ops->build(d->ctx, source, options, log, mod, msg, n);
    if (err)
        return err;
    if (d->ops->binary && !d->ops->binary(d->ctx, *mod, &bin, &size)) {
        temper_build_cache_put(key, bin, size);
        if (code)
            *code = temper_code_hash(bin, size);
        free(bin);
    }
    return 0;
}

static void slot_free(struct worker_state *ws, struct slot *s);

static void plan_free(struct worker_state *ws, struct plan *p)
{
    for (int i = 0; i < TEMPER_MAX_SCRATCH; i++)
        slot_free(ws, &p->scratch[i]);
    if (p->mod)
        ws->dev.ops->module_free(ws->dev.ctx, p->mod);
    temper_candidate_free(&p->cand);
    memset(p, 0, sizeof(*p));
}

/* Compilers name the file they compiled: PoCL a temporary (".../tempfile_ab12.cl"), NVRTC
 * "candidate.cu". The log should name the candidate, so people find the line. */
static void log_name_candidate(struct temper_buf *log, const char *path)
{
    if (!log || !log->data)
        return;
    struct temper_buf out;
    temper_buf_init(&out, log->max_bytes + 4096);
    for (const char *p = log->data; *p;) {
        const char *hit = strstr(p, "tempfile_");
        if (!hit)
            hit = strstr(p, "candidate.cu");
        if (!hit) {
            temper_buf_append(&out, p, strlen(p));
            break;
        }
        const char *start = hit;
        while (start > p && start[-1] != ' ' && start[-1] != '\n' && start[-1] != '"')
            start--;
        const char *end = strstr(hit, ".cl");
        const char *end_cu = strstr(hit, ".cu");
        end = end && (!end_cu || end < end_cu) ? end : end_cu;
        if (!end || memchr(hit, '\n', (size_t)(end - hit))) {
            temper_buf_append(&out, p, (size_t)(hit - p) + 1);
            p = hit + 1;
            continue;
        }
        temper_buf_append(&out, p, (size_t)(start - p));
        temper_buf_append(&out, path, strlen(path));
        p = end + 3;
    }
    if (out.data) {
        temper_buf_free(log);
        *log = out;
    }
}

/* Parses and builds a candidate with the given knob values (an object, or NULL for defaults).
 * A build failure gives verdict compile_error (or invalid for a launch naming no kernel). */
static int plan_build(struct worker_state *ws, const char *path, const char *source, json_t *knobs,
                      const char *extra_flags, struct temper_buf *log, struct plan *p, struct failure *f)
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
    p->knob_len = strlen(p->options);
    if (extra_flags && *extra_flags) {
        size_t used = strlen(p->options);
        snprintf(p->options + used, sizeof(p->options) - used, "%s%s", used ? " " : "", extra_flags);
    }
    worker_doing(ws->shared, WORKER_BUILDING, "building %s", path);
    err = worker_build_module(ws, p->cand.source, p->cand.source_len, p->options, log, &p->mod, &p->cache_hit,
                              &p->code, msg, sizeof(msg));
    if (err) {
        log_name_candidate(log, path);
        return fail_with(f, TEMPER_VERDICT_COMPILE_ERROR, "%s: %s", path, msg);
    }
    for (int i = 0; i < p->cand.nlaunches; i++) {
        err = ws->dev.ops->kernel(ws->dev.ctx, p->mod, p->cand.launches[i].kernel, &p->kernels[i], msg, sizeof(msg));
        if (err)
            return fail_with(f, TEMPER_VERDICT_INVALID, "%s:%d: launch: %s", path, p->cand.launches[i].line, msg);
    }
    return 0;
}

/* ---- buffers ---- */

/* The bytes of count elements of elem bytes each; -1 if the product does not fit a size (or count
 * is negative). */
static int elems_bytes(int64_t count, size_t elem, size_t *bytes)
{
    return count < 0 || (uint64_t)count > SIZE_MAX || __builtin_mul_overflow((size_t)count, elem, bytes) ? -1 : 0;
}

/* The bytes of a guarded buffer of bytes of data: guard, the data rounded up to whole guards, guard;
 * -1 where that does not fit a size. */
static int slot_whole_bytes(size_t guard, size_t bytes, size_t *whole)
{
    size_t data;
    if (__builtin_add_overflow(bytes, guard - 1, &data))
        return -1;
    data = data / guard * guard;
    return __builtin_add_overflow(data, 2 * guard, whole) ? -1 : 0;
}

/* Adds one buffer's bytes to a running total; -1 on overflow. */
static int total_add(size_t *total, size_t bytes)
{
    return __builtin_add_overflow(*total, bytes, total) ? -1 : 0;
}

/* Each buffer's guard byte differs from every other buffer's, so a kernel that copies one
 * buffer's guard into another's is still seen, and all lie in 0x30..0x4f, whose floats are
 * finite and normal at every width, so arithmetic on them always changes the bytes. */
static int slot_alloc(struct worker_state *ws, struct arena *a, size_t bytes, struct slot *s, char *msg, size_t n)
{
    size_t whole;
    if (slot_whole_bytes(a->guard, bytes, &whole))
        return temper_fail(msg, n, TEMPER_ERANGE, "a buffer of %zu bytes with its guard zones overflows a size",
                           bytes);
    s->bytes = bytes;
    s->canary = (unsigned char)(0x30 + (a->canary + 7 * a->nslots++) % 32);
    size_t data = whole - 2 * a->guard;
    int err = temper_dev_alloc(&ws->dev, whole, &s->whole, msg, n);
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
    if (!a)
        return;
    for (int i = 0; i < TEMPER_MAX_ARGS; i++) {
        for (int v = 0; v < MAX_VARIANTS; v++) {
            slot_free(ws, &a->in[v][i]);
            free(a->host_in[v][i]);
        }
        for (int o = 0; o < OUT_SETS; o++)
            slot_free(ws, &a->out[o][i]);
        free(a->want[i]);
    }
    json_decref(a->expert_check);
    free(a);
}

/* Allocates every buffer of a shape, uploads fresh inputs drawn from the seeds and records their
 * checksums. Caller frees with arena_free. */
static struct arena *arena_new(struct worker_state *ws, const struct temper_task *t, const struct temper_shape *shape,
                               int nvariants, int nsets, const uint64_t *seeds, uint64_t secret, struct failure *f)
{
    char msg[1024];
    struct arena *a = calloc(1, sizeof(*a));
    if (!a) {
        fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "out of host memory");
        return NULL;
    }
    a->task = t;
    a->shape = *shape;
    a->nvariants = nvariants;
    a->nsets = nsets;
    a->canary = (unsigned char)(secret >> 8);
    a->key = secret * 0x9e3779b97f4a7c15ull + 1;
    a->guard = 4096;
    while (a->guard % (ws->dev.info.base_align_bytes ? ws->dev.info.base_align_bytes : 1))
        a->guard += 4096;
    temper_shape_format(shape, a->shape_text, sizeof(a->shape_text));
    for (int i = 0; i < t->nargs; i++) {
        const struct temper_task_arg *arg = &t->args[i];
        if (arg->role == TEMPER_ROLE_SCALAR) {
            temper_shape_eval(shape, arg->name, &a->scalars[i], msg, sizeof(msg));
            continue;
        }
        if (temper_task_arg_elems(t, i, shape, &a->elems[i], msg, sizeof(msg))) {
            fail_with(f, TEMPER_VERDICT_INVALID, "task %s at %s: %s", t->name, a->shape_text, msg);
            arena_free(ws, a);
            return NULL;
        }
        /* Task sizes are checked like a candidate's: each buffer, its guarded size and the total
         * of all copies fit a size_t, or the shape is invalid here (a device too small for them
         * gets its allocation's error). */
        size_t bytes, whole, copies = (size_t)(arg->role == TEMPER_ROLE_OUTPUT ? nsets : nvariants), all;
        if (elems_bytes(a->elems[i], temper_dtype_size(arg->dtype), &bytes) ||
            slot_whole_bytes(a->guard, bytes, &whole) || __builtin_mul_overflow(whole, copies, &all) ||
            total_add(&a->total_bytes, all)) {
            char dims[256] = "";
            for (int d = 0; d < arg->ndim; d++) {
                size_t used = strlen(dims);
                snprintf(dims + used, sizeof(dims) - used, "%s%s", d ? "*" : "", arg->shape[d]);
            }
            fail_with(f, TEMPER_VERDICT_INVALID,
                      "task %s at %s: argument %s: size %s = %lld elements of %zu bytes (%zu copies with guard "
                      "zones) overflows a 64-bit size",
                      t->name, a->shape_text, arg->name, dims, (long long)a->elems[i], temper_dtype_size(arg->dtype),
                      copies);
            arena_free(ws, a);
            return NULL;
        }
        int err = 0;
        if (arg->role == TEMPER_ROLE_OUTPUT) {
            for (int o = 0; o < nsets && !err; o++)
                err = slot_alloc(ws, a, bytes, &a->out[o][i], msg, sizeof(msg));
        } else {
            for (int v = 0; v < nvariants && !err; v++) {
                struct slot *s = &a->in[v][i];
                a->host_in[v][i] = malloc(bytes ? bytes : 1);
                if (!a->host_in[v][i]) {
                    snprintf(msg, sizeof(msg), "out of host memory");
                    err = TEMPER_ENOMEM;
                    break;
                }
                temper_task_fill_input_at(t, i, shape, seeds[v], a->host_in[v][i], a->elems[i]);
                err = slot_alloc(ws, a, bytes, s, msg, sizeof(msg));
                if (!err && bytes)
                    err = temper_dev_write(&ws->dev, s->view, 0, a->host_in[v][i], bytes, msg, sizeof(msg));
                if (!err)
                    err = devcheck_sum(ws, s->view, bytes, a->key, &s->sum, msg, sizeof(msg));
            }
        }
        if (err) {
            fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "cannot set up %s at %s: %s", arg->name, a->shape_text, msg);
            arena_free(ws, a);
            return NULL;
        }
    }
    return a;
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
        size_t bytes = p->scratch[s].bytes / ps * ps;
        int err = bytes ? temper_dev_fill(&ws->dev, p->scratch[s].view, 0, bytes, pat, ps, msg, n) : 0;
        if (err)
            return err;
    }
    return 0;
}

/* Sizes the plan's scratch buffers for the arena's shape, each with guard zones like the task's
 * buffers. Every size is checked: count times element size, each guarded buffer, and the total of
 * the scratch buffers, which must fit the device's memory; a size past any of these is the
 * candidate's error (invalid), named with its expression and value. */
static int plan_scratch(struct worker_state *ws, struct plan *p, struct arena *a, struct failure *f)
{
    char msg[1024];
    size_t total = 0;
    for (int s = 0; s < p->cand.nscratch; s++) {
        const struct temper_scratch *sc = &p->cand.scratch[s];
        int64_t count;
        size_t es = temper_dtype_size(sc->dtype), bytes, whole;
        if (temper_launch_eval(&a->shape, &p->knobs, sc->count, &count, msg, sizeof(msg)))
            return fail_with(f, TEMPER_VERDICT_INVALID, "%s:%d: scratch %s: %s", p->cand.path, sc->line, sc->name, msg);
        if (count < 0)
            return fail_with(f, TEMPER_VERDICT_INVALID, "%s:%d: scratch %s: size %s = %lld at %s is negative",
                             p->cand.path, sc->line, sc->name, sc->count, (long long)count, a->shape_text);
        if (elems_bytes(count, es, &bytes) || slot_whole_bytes(a->guard, bytes, &whole))
            return fail_with(f, TEMPER_VERDICT_INVALID,
                             "%s:%d: scratch %s: size %s = %lld elements of %zu bytes at %s overflows a 64-bit size",
                             p->cand.path, sc->line, sc->name, sc->count, (long long)count, es, a->shape_text);
        if (total_add(&total, whole) || total > ws->dev.info.global_mem_bytes)
            return fail_with(f, TEMPER_VERDICT_INVALID,
                             "%s:%d: scratch %s: size %s = %lld elements of %zu bytes at %s brings the scratch "
                             "buffers to more than the device's %llu bytes of memory",
                             p->cand.path, sc->line, sc->name, sc->count, (long long)count, es, a->shape_text,
                             (unsigned long long)ws->dev.info.global_mem_bytes);
        if (p->scratch[s].whole && p->scratch[s].bytes == bytes)
            continue;
        slot_free(ws, &p->scratch[s]);
        if (slot_alloc(ws, a, bytes, &p->scratch[s], msg, sizeof(msg)))
            return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "%s:%d: scratch %s of %zu bytes: %s", p->cand.path,
                             sc->line, sc->name, bytes, msg);
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
        if (g < 0 || b < 1 || g > (1ll << 31) || b > 4096)
            return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR,
                             "%s:%d: launch %s at %s: grid %lld x block %lld in dimension %d is out of range",
                             p->cand.path, l->line, l->kernel, a->shape_text, (long long)g, (long long)b, d);
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
                args[i].v.buf = p->scratch[s].view;
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
                             "an integer param",
                             p->cand.path, l->line, name, t->name);
    }
    *nargs = n;
    return 0;
}

/* Queues the plan: every launch line in order, or the expert's vendor routine. */
static int plan_launch(struct worker_state *ws, struct plan *p, struct arena *a, int variant, int set,
                       struct failure *f)
{
    char msg[1024];
    if (p->expert) {
        struct temper_dbuf *bufs[TEMPER_MAX_ARGS];
        int64_t scalars[TEMPER_MAX_ARGS];
        int nbufs = 0, nscalars = 0;
        for (int i = 0; i < a->task->nargs; i++) {
            enum temper_arg_role role = a->task->args[i].role;
            if (role == TEMPER_ROLE_SCALAR)
                scalars[nscalars++] = a->scalars[i];
            else
                bufs[nbufs++] = role == TEMPER_ROLE_OUTPUT ? a->out[set][i].view : a->in[variant][i].view;
        }
        if (temper_dev_expert(&ws->dev, p->expert, nbufs, bufs, nscalars, scalars, msg, sizeof(msg)))
            return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "expert %s failed: %s", p->expert, msg);
        return 0;
    }
    for (int li = 0; li < p->cand.nlaunches; li++) {
        struct temper_launch_dims dims;
        struct temper_karg args[TEMPER_MAX_LAUNCH_ARGS];
        int nargs = 0;
        if (plan_launch_args(ws, p, li, a, variant, set, &dims, args, &nargs, f))
            return -1;
        /* A grid of no blocks launches nothing, in CUDA and OpenCL alike: the outputs stay
         * poisoned and the comparison says so. */
        if (!dims.grid[0] || !dims.grid[1] || !dims.grid[2])
            continue;
        /* OpenCL runtimes on CPUs (PoCL) compile a kernel again for each work-group size at its
         * first launch, which on a loaded machine can outlast the launch limit: such a launch
         * gets grace until the next wait ends, so a slow compiler is not taken for a hang. */
        if (!strcmp(ws->dev.info.language, "opencl")) {
            int seen = 0;
            for (int k = 0; k < p->nseen && !seen; k++)
                seen = !memcmp(p->seen[k], dims.block, sizeof(dims.block));
            if (!seen) {
                ws->shared->busy_grace_s = FIRST_LAUNCH_GRACE_S;
                if (p->nseen < 16)
                    memcpy(p->seen[p->nseen++], dims.block, sizeof(dims.block));
            }
        }
        if (temper_dev_launch(&ws->dev, p->kernels[li], &dims, nargs, args, msg, sizeof(msg)))
            return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "launch of %s at shape %s failed: %s",
                             p->cand.launches[li].kernel, a->shape_text, msg);
    }
    return 0;
}

static int check_scratch(struct worker_state *ws, struct arena *a, struct plan *p, struct failure *f);

/* One untimed run: poison, launch, wait, and the scratch buffers' guard zones checked. */
static int plan_run(struct worker_state *ws, struct plan *p, struct arena *a, int variant, int set, int which,
                    struct failure *f)
{
    char msg[1024];
    if (plan_scratch(ws, p, a, f))
        return -1;
    if (poison_outputs(ws, a, p, set, which, msg, sizeof(msg)))
        return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "cannot poison the outputs: %s", msg);
    int rc = plan_launch(ws, p, a, variant, set, f);
    if (!rc && temper_dev_sync(&ws->dev, msg, sizeof(msg)))
        rc = fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "the kernel failed at shape %s: %s", a->shape_text, msg);
    ws->shared->busy_grace_s = 0;
    if (!rc)
        rc = check_scratch(ws, a, p, f);
    return rc;
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
static int check_guards(struct worker_state *ws, struct arena *a, struct slot *s, const char *name, struct failure *f)
{
    char msg[1024];
    size_t data = (s->bytes + a->guard - 1) / a->guard * a->guard;
    size_t after = a->guard + (data - s->bytes);
    unsigned char *g = malloc(after > a->guard ? after : a->guard);
    if (!g)
        return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "out of host memory");
    int err = temper_dev_read(&ws->dev, s->whole, 0, g, a->guard, msg, sizeof(msg)), rc = 0;
    for (size_t i = 0; !err && !rc && i < a->guard; i++)
        if (g[i] != s->canary)
            rc = fail_with(f, TEMPER_VERDICT_INCORRECT,
                           "out-of-bounds write at shape %s: the guard zone before %s was overwritten %zu bytes before "
                           "its start",
                           a->shape_text, name, a->guard - i);
    if (!err && !rc)
        err = temper_dev_read(&ws->dev, s->whole, a->guard + s->bytes, g, after, msg, sizeof(msg));
    for (size_t i = 0; !err && !rc && i < after; i++)
        if (g[i] != s->canary)
            rc = fail_with(f, TEMPER_VERDICT_INCORRECT,
                           "out-of-bounds write at shape %s: the guard zone after %s was overwritten, starting %zu bytes "
                           "past its end",
                           a->shape_text, name, i);
    free(g);
    if (err)
        return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "reading guard zones failed: %s", msg);
    return rc;
}

/* Checks the guard zones of every scratch buffer of a plan. */
static int check_scratch(struct worker_state *ws, struct arena *a, struct plan *p, struct failure *f)
{
    for (int s = 0; s < p->cand.nscratch; s++) {
        char name[128];
        snprintf(name, sizeof(name), "scratch %s", p->cand.scratch[s].name);
        if (p->scratch[s].whole && check_guards(ws, a, &p->scratch[s], name, f))
            return -1;
    }
    return 0;
}

/* Checks that a buffer that must not change still has its checksum. */
static int check_unchanged(struct worker_state *ws, struct arena *a, struct slot *s, const void *host,
                           const struct temper_task_arg *arg, const char *what, struct failure *f)
{
    char msg[1024];
    uint64_t sum;
    if (devcheck_sum(ws, s->view, s->bytes, a->key, &sum, msg, sizeof(msg)))
        return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "checksumming %s failed: %s", arg->name, msg);
    if (sum == s->sum)
        return 0;
    if (!host)
        return fail_with(f, TEMPER_VERDICT_INCORRECT,
                         "the kernel wrote outside its outputs at shape %s: %s of %s changed during its runs",
                         a->shape_text, what, arg->name);
    unsigned char *now = malloc(s->bytes ? s->bytes : 1);
    if (!now || temper_dev_read(&ws->dev, s->view, 0, now, s->bytes, msg, sizeof(msg))) {
        free(now);
        return fail_with(f, TEMPER_VERDICT_INCORRECT, "the kernel changed its input %s at shape %s", arg->name,
                         a->shape_text);
    }
    size_t first = 0, es = temper_dtype_size(arg->dtype);
    const unsigned char *was = host;
    while (first < s->bytes && now[first] == was[first])
        first++;
    double before = temper_dtype_load(arg->dtype, was, first / es);
    double after = temper_dtype_load(arg->dtype, now, first / es);
    free(now);
    return fail_with(f, TEMPER_VERDICT_INCORRECT,
                     "the kernel changed its input %s at shape %s (first changed element %zu: was %.9g, now %.9g)", arg->name,
                     a->shape_text, first / es, before, after);
}

/* After runs: guards of every buffer used intact, inputs and expected outputs unchanged. */
static int check_memory(struct worker_state *ws, struct arena *a, int variant, int set, struct failure *f)
{
    for (int i = 0; i < a->task->nargs; i++) {
        const struct temper_task_arg *arg = &a->task->args[i];
        if (arg->role == TEMPER_ROLE_SCALAR)
            continue;
        if (arg->role == TEMPER_ROLE_INPUT) {
            for (int v = 0; v < a->nvariants; v++)
                if ((v == variant || variant < 0) &&
                    (check_guards(ws, a, &a->in[v][i], arg->name, f) ||
                     check_unchanged(ws, a, &a->in[v][i], a->host_in[v][i], arg, "input", f)))
                    return -1;
            continue;
        }
        if (check_guards(ws, a, &a->out[set][i], arg->name, f))
            return -1;
        for (int v = 0; a->expected_ready && v < a->nvariants; v++)
            if (check_unchanged(ws, a, &a->out[OUT_EXPECT + v][i], NULL, arg, "the baseline's expected output", f))
                return -1;
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

/* Describes a failed comparison: the message names the shape, output, position, values, the
 * tolerance and how many elements are wrong. */
static int mismatch_failure(struct arena *a, int arg, const struct temper_compare *r, double atol, double rtol,
                            const char *where, const char *against, json_t *check, struct failure *f)
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
    json_object_set_new(check, "first_mismatch",
                        json_pack("{s:s, s:I, s:s, s:f, s:f}", "output", name, "index", (json_int_t)r->first_bad,
                                  "position", idx, "got", r->first_got, "expected", r->first_want));
    return fail_with(f, TEMPER_VERDICT_INCORRECT,
                     "wrong output at %s: %s%s = %.9g, expected %.9g (%s; atol %g, rtol %g); %lld of %lld elements "
                     "wrong%s",
                     where, name, idx, r->first_got, r->first_want, against, atol, rtol, (long long)r->mismatches,
                     (long long)r->count, why);
}

static void record_errors(json_t *check, double max_abs, double max_rel, int64_t mismatches, int passed)
{
    json_object_set_new(check, "max_abs_err", json_real(max_abs));
    json_object_set_new(check, "max_rel_err", json_real(max_rel));
    json_object_set_new(check, "mismatches", json_integer(mismatches));
    json_object_set_new(check, "passed", json_boolean(passed));
}

/* What the comparisons of one check add up: the largest errors, the mismatches, and the first
 * failure (reported once). */
struct tally {
    double max_abs; /* largest absolute error over the outputs */
    double max_rel; /* largest relative error */
    int64_t mismatches; /* elements outside the tolerance */
    int rc;         /* -1 once a mismatch was reported */
};

static void tally_add(struct tally *t, struct arena *a, int arg, const struct temper_compare *r, double atol,
                      double rtol, const char *where, const char *against, json_t *check, struct failure *f)
{
    t->max_abs = fmax(t->max_abs, r->max_abs_err);
    t->max_rel = fmax(t->max_rel, r->max_rel_err);
    t->mismatches += r->mismatches;
    if (r->mismatches && !t->rc)
        t->rc = mismatch_failure(a, arg, r, atol, rtol, where, against, check, f);
}

static int tally_done(struct tally *t, json_t *check)
{
    record_errors(check, t->max_abs, t->max_rel, t->mismatches, !t->rc);
    return t->rc;
}

/* Compares every output (host arrays) with the C reference's outputs in the arena. */
static int compare_with_reference(struct arena *a, void **got, const char *where, json_t *check, struct failure *f)
{
    struct tally t = {0, 0, 0, 0};
    for (int i = 0; i < a->task->nargs; i++) {
        const struct temper_task_arg *arg = &a->task->args[i];
        if (arg->role != TEMPER_ROLE_OUTPUT)
            continue;
        struct temper_compare r;
        temper_compare_values(arg->dtype, got[i], a->want[i], a->elems[i], a->task->atol, a->task->rtol, &r);
        tally_add(&t, a, i, &r, a->task->atol, a->task->rtol, where, "the C reference", check, f);
    }
    return tally_done(&t, check);
}

/* Compares two device arrays of n elements on the host: for types the device comparison does
 * not handle. */
static int compare_on_host(struct worker_state *ws, enum temper_dtype t, struct slot *got, struct slot *want,
                           int64_t n, double atol, double rtol, struct temper_compare *r, char *msg, size_t msg_size)
{
    void *g = malloc(got->bytes + 1), *w = malloc(want->bytes + 1);
    double *wd = malloc((size_t)n * sizeof(double) + 1);
    int err = !g || !w || !wd ? TEMPER_ENOMEM : 0;
    if (!err)
        err = temper_dev_read(&ws->dev, got->view, 0, g, got->bytes, msg, msg_size);
    if (!err)
        err = temper_dev_read(&ws->dev, want->view, 0, w, want->bytes, msg, msg_size);
    for (int64_t e = 0; !err && e < n; e++)
        wd[e] = temper_dtype_load(t, w, (size_t)e);
    if (!err)
        temper_compare_values(t, g, wd, n, atol, rtol, r);
    free(g);
    free(w);
    free(wd);
    return err;
}

/* Compares the outputs of one set with the baseline's expected outputs for a variant, on the
 * device for floating-point types and on the host for integers. The baseline's output is itself
 * rounded to the output type, so two correct kernels may land one rounding step apart: for 16-bit
 * floats the comparison allows that step on top of the task's tolerance (bf16 2^-8, f16 2^-11
 * relative); an f32 tolerance covers it already. */
static int compare_with_expected(struct worker_state *ws, struct arena *a, int set, int variant, const char *where,
                                 json_t *check, struct failure *f)
{
    struct tally t = {0, 0, 0, 0};
    char msg[1024];
    for (int i = 0; i < a->task->nargs; i++) {
        const struct temper_task_arg *arg = &a->task->args[i];
        if (arg->role != TEMPER_ROLE_OUTPUT)
            continue;
        double atol = a->task->atol;
        double rtol = a->task->rtol + (arg->dtype == TEMPER_DTYPE_BF16 ? 0x1p-8 :
                                       arg->dtype == TEMPER_DTYPE_F16  ? 0x1p-11 : 0);
        struct temper_compare r;
        struct slot *got = &a->out[set][i], *want = &a->out[OUT_EXPECT + variant][i];
        int err = devcheck_compares(arg->dtype, a->elems[i]) ?
                      devcheck_compare(ws, arg->dtype, got->view, want->view, a->elems[i], atol, rtol, &r, msg,
                                       sizeof(msg)) :
                      compare_on_host(ws, arg->dtype, got, want, a->elems[i], atol, rtol, &r, msg, sizeof(msg));
        if (err)
            return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "comparing %s with the baseline's failed: %s", arg->name,
                             msg);
        tally_add(&t, a, i, &r, atol, rtol, where, "the baseline on this device", check, f);
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

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Whether the baseline is timed in this round: its first BASE_MIN samples in the worker always,
 * then while one more sample (predicted by the last) keeps this evaluation's baseline time within
 * allow_ms. */
static int base_due(const struct arena *a, double spent_ms, double allow_ms)
{
    return a->base_n < BASE_MIN || spent_ms + a->base_ms[(a->base_n - 1) % BASE_POOL] <= allow_ms;
}

/* Median and relative interquartile range of samples (sorted in place). */
static void summarize(double *s, int n, double *median, double *spread, double *min)
{
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    *median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    *spread = *median > 0 ? (s[(3 * n) / 4] - s[n / 4]) / *median : 0;
    *min = s[0];
}

/* Timings of the pipeline's stages, in milliseconds. */
struct phases {
    double build_ms;     /* building candidate and baseline */
    double inputs_ms;    /* drawing inputs, allocating and uploading them (once per session) */
    double reference_ms; /* running the C reference and the baseline for expected outputs */
    double device_ms;    /* device runs, reads and integrity checks */
    double compare_ms;   /* comparisons */
    double timing_ms;    /* the timing protocol */
};

/* Runs the C reference on the arena's variant-0 inputs into a->want. */
static int run_reference(struct arena *a, temper_reference_fn ref, struct failure *f)
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
            a->want[i] = d;
        }
    }
    if (!rc)
        ref(out_d, (const double **)in_d, scalars);
    for (int i = 0; i < nin; i++)
        free(in_d[i]);
    return rc;
}

/* ---- the session: what is kept between evaluations ---- */

static void session_clear(struct worker_state *ws)
{
    struct session *s = &ws->s;
    for (int i = 0; i < TEMPER_MAX_SHAPES; i++) {
        arena_free(ws, s->check[i][0]);
        arena_free(ws, s->check[i][1]);
        arena_free(ws, s->bench[i]);
        s->check[i][0] = s->check[i][1] = s->bench[i] = NULL;
    }
    if (s->base_built)
        plan_free(ws, &s->base);
    for (int i = 0; s->same && i < SAME_CODE_MAX && i < s->nsame; i++)
        json_decref(s->same[i].result);
    free(s->same);
    memset(s, 0, sizeof(*s));
}

/* Makes the session belong to this task and these seeds, dropping what belonged to others. */
static int session_prepare(struct worker_state *ws, const char *task_dir, uint64_t seed, uint64_t secret, char *msg,
                           size_t n)
{
    struct session *s = &ws->s;
    if (s->ref && !strcmp(s->task_dir, task_dir) && s->seed == seed && s->secret == secret)
        return 0;
    session_clear(ws);
    int err = temper_task_load(task_dir, &s->task, msg, n);
    if (!err)
        err = temper_task_reference(&s->task, &s->ref, msg, n);
    if (err) {
        session_clear(ws);
        return err;
    }
    snprintf(s->task_dir, sizeof(s->task_dir), "%s", task_dir);
    s->seed = seed;
    s->secret = secret;
    return 0;
}

/* Drops an arena a kernel may have corrupted, so the next evaluation builds it afresh. */
static void session_drop(struct worker_state *ws, struct arena **slot)
{
    arena_free(ws, *slot);
    *slot = NULL;
}

/* The correctness protocol at one check shape and seed. */
static int check_shape(struct worker_state *ws, struct plan *p, int shape_index, int seed_index, json_t *checks,
                       struct phases *ph, struct failure *f)
{
    static const char *const seed_names[2] = {"public", "secret"};
    struct session *s = &ws->s;
    const struct temper_task *t = &s->task;
    char where[512], shape_text[256];
    temper_shape_format(&t->check[shape_index], shape_text, sizeof(shape_text));
    snprintf(where, sizeof(where), "shape %s, %s seed", shape_text, seed_names[seed_index]);
    json_t *check = json_pack("{s:s, s:s}", "shape", shape_text, "seed", seed_names[seed_index]);
    json_array_append_new(checks, check);
    worker_doing(ws->shared, WORKER_RUNNING, "checking %s at %s", p->cand.path, where);
    struct arena **slot = &s->check[shape_index][seed_index];
    double t0 = temper_now_s();
    if (!*slot) {
        uint64_t seed = seed_index ? s->secret : s->seed;
        *slot = arena_new(ws, t, &t->check[shape_index], 1, 1, &seed, s->secret, f);
        double t1 = temper_now_s();
        ph->inputs_ms += (t1 - t0) * 1e3;
        if (!*slot || run_reference(*slot, s->ref, f)) {
            session_drop(ws, slot);
            return -1;
        }
        t0 = temper_now_s();
        ph->reference_ms += (t0 - t1) * 1e3;
    }
    struct arena *a = *slot;
    void *got[TEMPER_MAX_ARGS] = {0}, *again[TEMPER_MAX_ARGS] = {0};
    int rc = plan_run(ws, p, a, 0, OUT_CAND, 0, f);
    if (!rc && (rc = check_memory(ws, a, 0, OUT_CAND, f)))
        session_drop(ws, slot);
    if (!rc)
        rc = read_outputs(ws, a, OUT_CAND, got, f);
    double t1 = temper_now_s();
    ph->device_ms += (t1 - t0) * 1e3;
    if (!rc)
        rc = compare_with_reference(a, got, where, check, f);
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
    json_object_set_new(check, "deterministic", json_boolean(diff < 0));
    if (!rc && diff >= 0) {
        /* Differing runs may be legitimate (atomics) or a race that passed by luck: every further
         * run must also pass. */
        char rerun_where[600];
        char idx[128];
        format_index(a, diff_arg, diff, idx, sizeof(idx));
        json_object_set_new(check, "nondeterministic_at",
                            json_pack("{s:s, s:s}", "output", t->args[diff_arg].name, "position", idx));
        rc = compare_with_reference(a, again, where, check, f);
        for (int r = 0; r < EXTRA_RERUNS && !rc; r++) {
            snprintf(rerun_where, sizeof(rerun_where), "%s, rerun %d of a kernel whose runs differ", where, r + 3);
            free_outputs(again, t->nargs);
            rc = plan_run(ws, p, a, 0, OUT_CAND, r & 1, f);
            if (!rc)
                rc = read_outputs(ws, a, OUT_CAND, again, f);
            if (!rc)
                rc = compare_with_reference(a, again, rerun_where, check, f);
        }
        ph->compare_ms += (temper_now_s() - t3) * 1e3;
    }
    free_outputs(got, t->nargs);
    free_outputs(again, t->nargs);
    return rc;
}

/* Times one plan run: poison the outputs, evict the cache (both untimed), then events around the
 * launches. */
static int timed_run(struct worker_state *ws, struct plan *p, struct arena *a, int variant, int set, double *ms,
                     struct failure *f)
{
    char msg[1024];
    if (poison_outputs(ws, a, p, set, variant & 1, msg, sizeof(msg)) ||
        devcheck_flush(ws, msg, sizeof(msg)))
        return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "preparing a timed run failed: %s", msg);
    if (temper_dev_timer_start(&ws->dev, msg, sizeof(msg)))
        return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "%s", msg);
    if (plan_launch(ws, p, a, variant, set, f))
        return -1;
    int err = temper_dev_timer_stop(&ws->dev, ms, msg, sizeof(msg));
    ws->shared->busy_grace_s = 0;
    if (err)
        return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "the kernel failed during timing at shape %s: %s",
                         a->shape_text, msg);
    return 0;
}

/* The bench arena of a shape: inputs for both variants and the baseline's outputs for each,
 * made once per session. The expert's correctness is checked here too, once. */
static struct arena *bench_arena(struct worker_state *ws, int b, const struct temper_shape *shape, struct plan *expert,
                                 struct phases *ph, struct failure *f)
{
    struct session *s = &ws->s;
    if (s->bench[b])
        return s->bench[b];
    uint64_t seeds[MAX_VARIANTS] = {s->secret ^ 0xbe9c4a11ull ^ (uint64_t)b, s->secret ^ 0x5eed2222ull ^ (uint64_t)b};
    double t0 = temper_now_s();
    worker_doing(ws->shared, WORKER_RUNNING, "drawing inputs for the bench shape of %s", s->task.name);
    struct arena *a = arena_new(ws, &s->task, shape, MAX_VARIANTS, OUT_SETS, seeds, s->secret, f);
    double t1 = temper_now_s();
    ph->inputs_ms += (t1 - t0) * 1e3;
    if (!a)
        return NULL;
    char msg[1024];
    for (int v = 0; v < MAX_VARIANTS; v++) {
        if (plan_run(ws, &s->base, a, v, OUT_EXPECT + v, v, f) || check_memory(ws, a, v, OUT_EXPECT + v, f)) {
            char inner[2048];
            snprintf(inner, sizeof(inner), "%s", f->message);
            fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "the task's baseline failed at bench shape %s: %s",
                      a->shape_text, inner);
            arena_free(ws, a);
            return NULL;
        }
        for (int i = 0; i < s->task.nargs; i++)
            if (s->task.args[i].role == TEMPER_ROLE_OUTPUT &&
                devcheck_sum(ws, a->out[OUT_EXPECT + v][i].view, a->out[OUT_EXPECT + v][i].bytes, a->key,
                             &a->out[OUT_EXPECT + v][i].sum, msg, sizeof(msg))) {
                fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "checksumming the baseline's output failed: %s", msg);
                arena_free(ws, a);
                return NULL;
            }
    }
    a->expected_ready = 1;
    if (expert) {
        struct failure ef;
        json_t *check = json_pack("{s:s, s:s}", "shape", a->shape_text, "routine", expert->expert);
        char where[300];
        snprintf(where, sizeof(where), "bench shape %s", a->shape_text);
        int rc = plan_run(ws, expert, a, 0, OUT_EXPERT, 0, &ef);
        if (!rc)
            rc = compare_with_expected(ws, a, OUT_EXPERT, 0, where, check, &ef);
        if (rc)
            json_object_set_new(check, "message", json_string(ef.message));
        a->expert_check = check;
    }
    ph->reference_ms += (temper_now_s() - t1) * 1e3;
    s->bench[b] = a;
    return a;
}

/* The arithmetic ceiling of a task on this device: FP32 FMA throughput, or the tensor cores'
 * bf16 rate for tasks that may use them (int8 at twice that: Hopper's int8 rate, not measured).
 * Where the device has no tensor-core measurement (OpenCL), the FMA rate bounds the work. */
static double compute_ceiling(const struct temper_task *t, json_t *calib)
{
    double fma = json_number_value(json_object_get(calib, "fma_gflops"));
    double bf16 = json_number_value(json_object_get(calib, "tensor_bf16_gflops"));
    if (bf16 <= 0 || !strcmp(t->compute_ceiling, "fma_gflops"))
        return fma;
    return !strcmp(t->compute_ceiling, "tensor_int8") ? 2 * bf16 : bf16;
}

/* Keyed checksums of every output of a set, computed on the device (one read of each output), into
 * hash[TEMPER_MAX_ARGS]; 0 for arguments that are not outputs. */
static int hash_outputs(struct worker_state *ws, struct arena *a, int set, uint64_t *hash, struct failure *f)
{
    char msg[1024];
    memset(hash, 0, TEMPER_MAX_ARGS * sizeof(*hash));
    for (int i = 0; i < a->task->nargs; i++) {
        if (a->task->args[i].role == TEMPER_ROLE_OUTPUT &&
            devcheck_sum(ws, a->out[set][i].view, a->out[set][i].bytes, a->key, &hash[i], msg, sizeof(msg)))
            return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "checksumming output %s failed: %s",
                             a->task->args[i].name, msg);
    }
    return 0;
}

/* What the verification of the candidate's timed outputs at one bench shape has seen. */
struct timed_check {
    uint64_t verified[MAX_VARIANTS][TEMPER_MAX_ARGS]; /* checksums of its verified outputs, per input set */
    int launches;                                     /* timed launches verified so far, warm-ups included */
    int by_tolerance; /* of them, verified within the tolerance because its outputs differ bit for bit */
};

/* Verifies the output of the candidate's latest timed launch, outside the timed region: bit for
 * bit against its verified output for the same input set, through a keyed checksum computed on
 * the device; where they differ (a kernel whose runs differ, such as one with atomics), within the
 * task's tolerance of the baseline's output, compared on the device, and so for every later launch.
 * A launch that skipped its work leaves the poison, and one that served another input set's result
 * is wrong for these inputs: the first such launch makes the verdict incorrect, naming it. */
static int verify_timed(struct worker_state *ws, struct arena *a, int variant, const char *where,
                        struct timed_check *tc, struct failure *f)
{
    int k = ++tc->launches;
    if (!tc->by_tolerance) {
        uint64_t hash[TEMPER_MAX_ARGS];
        if (hash_outputs(ws, a, OUT_CAND, hash, f))
            return -1;
        if (!memcmp(hash, tc->verified[variant], sizeof(hash)))
            return 0;
    }
    char launch_where[700];
    snprintf(launch_where, sizeof(launch_where), "%s, timed launch %d (input set %d)", where, k, variant + 1);
    json_t *scratch = json_object();
    int rc = compare_with_expected(ws, a, OUT_CAND, variant, launch_where, scratch, f);
    json_decref(scratch);
    if (!rc)
        tc->by_tolerance++;
    return rc;
}

/* A cluster of timed samples far faster than the median means launches that did less work than
 * the rest (a result kept from an earlier launch with the same inputs, which output verification
 * cannot see). Noise never makes a launch do less work: contention, preemption and clock changes
 * only stretch launches, so a fast cluster from noise needs the median itself stretched by the
 * whole ratio while some launches were not stretched at all. On a GPU, timing is exclusive and
 * clocks move by well under 2x, so a tenth of the median is far outside noise. On a CPU the
 * kernel shares its cores with every other process: on the 2-core test machine, with 16 build
 * jobs beside it, a launch is stretched up to about 9x, which would come near a tenth; a fiftieth
 * needs the median stretched 50-fold while some launches ran alone, which no load we see does.
 * A compute-bound kernel that copies a kept result instead of computing it saves far more than
 * that (a GEMM's output is a few per cent of its arithmetic time), so the rule still catches it.
 * One or two fast samples could be a timer's glitch: a cluster is at least 2 samples and at
 * least one in 50. */
#define FAST_RATIO_GPU 0.1
#define FAST_RATIO_CPU 0.02
#define FAST_MIN_FRACTION 50

/* Bench shapes: the candidate checked against the trusted baseline on the device on both input
 * sets, then (unless check-only) timed interleaved with the baseline (and the expert, where there
 * is one), with inputs alternating between timed launches and every timed output verified. Every
 * sample is held against the roofline floor, and a cluster of samples far faster than the median
 * fails the verdict. */
static int bench_shape(struct worker_state *ws, struct plan *cand, struct plan *expert, int b, int timing,
                       double budget_s, json_t *calib, json_t *bench_checks, json_t **timing_out, struct phases *ph,
                       struct failure *f)
{
    struct session *s = &ws->s;
    const struct temper_task *t = &s->task;
    const struct temper_shape *shape = ws->dev.info.is_gpu ? &t->bench_gpu[b] : &t->bench_cpu[b];
    char where[512], shape_text[256];
    temper_shape_format(shape, shape_text, sizeof(shape_text));
    snprintf(where, sizeof(where), "bench shape %s", shape_text);
    json_t *check = json_pack("{s:s, s:s}", "shape", shape_text, "against", "baseline");
    json_array_append_new(bench_checks, check);
    struct arena *a = bench_arena(ws, b, shape, expert, ph, f);
    if (!a)
        return -1;
    /* The expert was checked once, when the arena was made; it is timed only if it passed. */
    if (a->expert_check)
        json_object_set(check, "expert", a->expert_check);
    int expert_ok = expert && json_is_true(json_object_get(a->expert_check, "passed"));
    struct timed_check tc;
    memset(&tc, 0, sizeof(tc));
    /* Untimed runs on each input set the timing uses (the first only when not timing), each
     * compared with the baseline's output within the tolerance; their outputs' checksums are what
     * every timed output must match. */
    for (int v = 0; v < (timing ? MAX_VARIANTS : 1); v++) {
        double t0 = temper_now_s();
        char set_where[600];
        snprintf(set_where, sizeof(set_where), "%s%s", where, v ? ", input set 2" : "");
        worker_doing(ws->shared, WORKER_RUNNING, "checking %s at %s against the baseline", cand->cand.path,
                     set_where);
        int rc = plan_run(ws, cand, a, v, OUT_CAND, v, f);
        if (!rc && (rc = check_memory(ws, a, v, OUT_CAND, f)))
            session_drop(ws, &s->bench[b]);
        double t1 = temper_now_s();
        ph->device_ms += (t1 - t0) * 1e3;
        if (!rc && v == 0)
            rc = compare_with_expected(ws, a, OUT_CAND, v, set_where, check, f);
        if (!rc && v > 0) {
            json_t *other = json_object();
            rc = compare_with_expected(ws, a, OUT_CAND, v, set_where, other, f);
            json_object_set(check, "first_mismatch", json_object_get(other, "first_mismatch"));
            json_decref(other);
            json_object_set_new(check, "passed", json_boolean(!rc));
        }
        if (!rc && timing)
            rc = hash_outputs(ws, a, OUT_CAND, tc.verified[v], f);
        ph->compare_ms += (temper_now_s() - t1) * 1e3;
        if (rc)
            return rc;
    }
    if (!timing)
        return 0;

    double t3 = temper_now_s();
    worker_doing(ws->shared, WORKER_RUNNING, "timing %s at %s", cand->cand.path, where);
    double *samples = malloc(2 * MAX_SAMPLES * sizeof(double));
    if (!samples)
        return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "out of host memory");
    double *expert_samples = samples + MAX_SAMPLES, ms;
    /* The baseline is timed interleaved with the candidate while its time in this evaluation stays
     * within a tenth of the budget or twice the candidate's (always its first BASE_MIN samples in
     * this worker); its samples join the arena's pool, whose median is reported. A baseline about
     * as fast as the candidate is so timed in every round; one a hundred times slower, a few times
     * per worker. */
    double base_allow_ms = 0.1 * budget_s * 1e3, base_spent_ms = 0, cand_spent_ms = 0;
    int base_now = 0, rc = 0;
    double warm_until = temper_now_s() + fmin(0.2, budget_s * 0.1);
    for (int w = 0; !rc && (w < 2 || temper_now_s() < warm_until) && w < 50; w++) {
        rc = timed_run(ws, cand, a, w & 1, OUT_CAND, &ms, f);
        if (!rc)
            rc = verify_timed(ws, a, w & 1, where, &tc, f);
        if (!rc && (a->base_n ? base_due(a, base_spent_ms, base_allow_ms) : w == 0))
            rc = timed_run(ws, &s->base, a, w & 1, OUT_BASE, &ms, f);
        if (!rc && expert_ok)
            rc = timed_run(ws, expert, a, w & 1, OUT_EXPERT, &ms, f);
    }
    int n = 0;
    double end = temper_now_s() + budget_s;
    while (!rc && n < MAX_SAMPLES) {
        int variant = n % MAX_VARIANTS;
        rc = timed_run(ws, cand, a, variant, OUT_CAND, &samples[n], f);
        if (!rc)
            rc = verify_timed(ws, a, variant, where, &tc, f);
        if (!rc)
            base_allow_ms = fmax(base_allow_ms, 2 * (cand_spent_ms += samples[n]));
        if (!rc && base_due(a, base_spent_ms, base_allow_ms) &&
            !(rc = timed_run(ws, &s->base, a, variant, OUT_BASE, &ms, f))) {
            a->base_ms[a->base_n++ % BASE_POOL] = ms;
            base_spent_ms += ms;
            base_now++;
        }
        if (!rc && expert_ok)
            rc = timed_run(ws, expert, a, variant, OUT_EXPERT, &expert_samples[n], f);
        if (rc)
            break;
        n++;
        if (n < MIN_SAMPLES)
            continue;
        if (temper_now_s() > end)
            break;
        if (n % 5 == 0 && n >= 2 * MIN_SAMPLES) {
            double tmp[MAX_SAMPLES], med, spread, mn;
            memcpy(tmp, samples, (size_t)n * sizeof(double));
            summarize(tmp, n, &med, &spread, &mn);
            if (spread < TARGET_SPREAD)
                break;
        }
    }
    /* Nothing that must not change may have changed during timing. */
    if (!rc && (rc = check_memory(ws, a, -1, OUT_CAND, f)))
        session_drop(ws, &s->bench[b]);
    if (!rc)
        rc = check_scratch(ws, a, cand, f);
    json_object_set_new(check, "timed_output_verified", json_boolean(!rc));
    json_object_set_new(check, "timed_launches_verified", json_integer(tc.launches));
    json_object_set_new(check, "timed_launches_by_tolerance", json_integer(tc.by_tolerance));
    if (!rc) {
        double med, spread, mn, bmed, bspread, bmn, pool[BASE_POOL];
        int pooled = a->base_n < BASE_POOL ? a->base_n : BASE_POOL;
        memcpy(pool, a->base_ms, (size_t)pooled * sizeof(double));
        summarize(samples, n, &med, &spread, &mn);
        summarize(pool, pooled, &bmed, &bspread, &bmn);
        int64_t flops = 0, bytes = 0;
        char msg[256];
        temper_shape_eval(shape, t->flops, &flops, msg, sizeof(msg));
        temper_shape_eval(shape, t->bytes, &bytes, msg, sizeof(msg));
        json_t *tm = json_pack("{s:s, s:f, s:f, s:f, s:i, s:f, s:f, s:f, s:I, s:I, s:f, s:f}", "shape", shape_text,
                               "median_ms", med, "min_ms", mn, "spread", spread, "samples", n, "baseline_median_ms",
                               bmed, "baseline_spread", bspread, "speedup", bmed / med, "flops", (json_int_t)flops,
                               "bytes", (json_int_t)bytes, "gbps", (double)bytes / (med * 1e-3) * 1e-9, "tflops",
                               (double)flops / (med * 1e-3) * 1e-12);
        json_object_set_new(tm, "baseline_samples", json_integer(pooled));
        json_object_set_new(tm, "baseline_samples_now", json_integer(base_now));
        if (expert_ok) {
            double emed, espread, emn;
            summarize(expert_samples, n, &emed, &espread, &emn);
            json_object_set_new(tm, "expert", json_string(expert->expert));
            json_object_set_new(tm, "expert_median_ms", json_real(emed));
            json_object_set_new(tm, "expert_spread", json_real(espread));
            json_object_set_new(tm, "speedup_vs_expert", json_real(emed / med));
        }
        /* samples is sorted now: the fast cluster is its head. */
        double fast_ratio = ws->dev.info.is_gpu ? FAST_RATIO_GPU : FAST_RATIO_CPU;
        int fast = 0;
        while (fast < n && samples[fast] < fast_ratio * med)
            fast++;
        json_object_set_new(tm, "fast_samples", json_integer(fast));
        double copy_gbs = json_number_value(json_object_get(calib, "copy_gbs"));
        double fma_gflops = compute_ceiling(t, calib);
        if (copy_gbs > 0 && fma_gflops > 0) {
            double mem_ms = (double)bytes / (copy_gbs * 1e9) * 1e3, math_ms = (double)flops / (fma_gflops * 1e9) * 1e3;
            double floor_ms = fmax(mem_ms, math_ms);
            json_object_set_new(tm, "roofline_floor_ms", json_real(floor_ms));
            json_object_set_new(tm, "roofline_share", json_real(floor_ms / med));
            json_object_set_new(tm, "baseline_roofline_share", json_real(floor_ms / bmed));
            json_object_set_new(tm, "bound", json_string(mem_ms >= math_ms ? "memory" : "compute"));
            json_object_set_new(tm, "compute_ceiling", json_string(t->compute_ceiling));
            /* Faster than the measured ceilings allow by a clear margin: not a win, a sign that
             * the work was not done. The test uses the faster of copy and read-only bandwidth
             * and half the floor, so that no honest kernel is ever called impossible. On a GPU
             * every sample is held against it, not only the median: a launch that skipped its
             * work does not hide behind the others. A CPU device shares its cores and memory with
             * every other process, so its ceilings, measured once, may be low by the load of that
             * moment, and one launch that ran alone can then beat half of them honestly (seen on
             * the 2-core test machine: a plain vector_add at 0.45 of a floor calibrated under
             * load); there the median, which the same load slows, is held against it. */
            double read_gbs = fmax(copy_gbs, json_number_value(json_object_get(calib, "read_gbs")));
            double hard_floor_ms = fmax((double)bytes / (read_gbs * 1e9) * 1e3, math_ms);
            int under = 0;
            while (under < n && samples[under] < 0.5 * hard_floor_ms)
                under++;
            if (!ws->dev.info.is_gpu && med >= 0.5 * hard_floor_ms)
                under = 0;
            json_object_set_new(tm, "impossible", json_boolean(under > 0));
            json_object_set_new(tm, "samples_under_floor", json_integer(under));
            json_object_set(tm, "ceilings", calib);
            if (under)
                rc = fail_with(f, TEMPER_VERDICT_INCORRECT,
                               "%d of %d timed launches at %s ran under half the roofline floor of %.4g ms for this "
                               "device's measured ceilings (fastest %.4g ms, median %.4g ms): impossible, so the work "
                               "cannot all have been done",
                               under, n, where, floor_ms, mn, med);
        }
        if (!rc && fast >= 2 && fast >= (n + FAST_MIN_FRACTION - 1) / FAST_MIN_FRACTION)
            rc = fail_with(f, TEMPER_VERDICT_INCORRECT,
                           "%d of %d timed launches at %s took under %g of the median %.4g ms (fastest %.4g ms): "
                           "launches that did less work than the rest, such as ones that served a result kept from "
                           "an earlier launch",
                           fast, n, where, fast_ratio, med, mn);
        *timing_out = tm;
    }
    free(samples);
    ph->timing_ms += (temper_now_s() - t3) * 1e3;
    return rc;
}

/* The evaluation this session made of the same code, asked the same way, or NULL. */
static const struct same_code *same_code_find(const struct session *s, const struct plan *p, int timing,
                                              int checks_only, double budget)
{
    if (!p->code || !s->same)
        return NULL;
    for (int i = 0; i < SAME_CODE_MAX && i < s->nsame; i++) {
        const struct same_code *e = &s->same[i];
        if (e->code == p->code && e->source == p->cand.source_hash && e->timing == timing &&
            e->checks_only == checks_only && e->budget == budget && strlen(e->knobs) == p->knob_len &&
            !strncmp(e->knobs, p->options, p->knob_len))
            return e;
    }
    return NULL;
}

/* Keeps a finished evaluation for later configurations with the same code. Only verdicts that
 * the code decides (correct, incorrect) are kept: a crash or a hang may not repeat. */
static void same_code_add(struct session *s, const char *path, const struct plan *p, int timing, int checks_only,
                          double budget, json_t *result)
{
    const char *v = json_string_value(json_object_get(result, "verdict"));
    if (!p->code || p->knob_len >= sizeof(s->same[0].knobs) || !v || (strcmp(v, "correct") && strcmp(v, "incorrect")))
        return;
    if (!s->same && !(s->same = calloc(SAME_CODE_MAX, sizeof(*s->same))))
        return;
    struct same_code *e = &s->same[s->nsame++ % SAME_CODE_MAX];
    json_decref(e->result);
    e->source = p->cand.source_hash;
    e->code = p->code;
    memcpy(e->knobs, p->options, p->knob_len);
    e->knobs[p->knob_len] = 0;
    e->timing = timing;
    e->checks_only = checks_only;
    e->budget = budget;
    snprintf(e->path, sizeof(e->path), "%s", path ? path : "");
    snprintf(e->options, sizeof(e->options), "%s", p->options);
    e->result = json_deep_copy(result);
}

/* Records a failed check: its message on the check's object (the last of list), and the first
 * failure as the evaluation's. Returns whether checking stops: always, unless keep_going and the
 * failure is a wrong answer or a plan invalid at that shape, which say nothing about the device (a
 * crash or a fault may have left it unusable). */
static int note_failure(json_t *list, const struct failure *fk, int keep_going, int *failed, struct failure *first)
{
    json_t *check = json_array_get(list, json_array_size(list) - 1);
    if (check)
        json_object_set_new(check, "message", json_string(fk->message));
    if (!(*failed)++)
        *first = *fk;
    return !keep_going || (fk->verdict != TEMPER_VERDICT_INCORRECT && fk->verdict != TEMPER_VERDICT_INVALID);
}

static json_t *eval_job(struct worker_state *ws, json_t *req, int *fatal)
{
    double start = temper_now_s();
    char msg[8192];
    const char *task_dir = json_string_value(json_object_get(req, "task_dir"));
    const char *path = json_string_value(json_object_get(req, "path"));
    const char *source = json_string_value(json_object_get(req, "source"));
    uint64_t seed = (uint64_t)json_integer_value(json_object_get(req, "seed"));
    uint64_t secret = (uint64_t)json_integer_value(json_object_get(req, "secret_seed"));
    int timing = !json_is_true(json_object_get(req, "no_timing"));
    double budget = json_number_value(json_object_get(req, "time_budget_s"));
    json_t *calib = json_object_get(req, "calibration");
    struct phases ph = {0};
    double t0 = temper_now_s();
    if (session_prepare(ws, task_dir ? task_dir : "", seed, secret, msg, sizeof(msg)))
        return worker_error_reply(msg, TEMPER_EPARSE);
    struct session *s = &ws->s;
    struct temper_task *task = &s->task;
    int cuda = !strcmp(ws->dev.info.language, "cuda");
    const char *base_path = cuda ? task->baseline_cuda : task->baseline_opencl;
    struct failure f = {TEMPER_VERDICT_CORRECT, ""};
    if (!base_path[0])
        return worker_error_reply("the task has no baseline for this device's language", TEMPER_ENOTFOUND);
    if (!s->base_built) {
        struct temper_buf base_log;
        temper_buf_init(&base_log, COMPILE_LOG_MAX);
        if (plan_build(ws, base_path, NULL, NULL, NULL, &base_log, &s->base, &f)) {
            snprintf(msg, sizeof(msg), "the task's baseline %s does not build: %s\n%s", base_path, f.message,
                     base_log.data ? base_log.data : "");
            temper_buf_free(&base_log);
            plan_free(ws, &s->base);
            return worker_error_reply(msg, TEMPER_ECOMPILE);
        }
        temper_buf_free(&base_log);
        s->base_built = 1;
    }
    struct plan expert_plan;
    memset(&expert_plan, 0, sizeof(expert_plan));
    expert_plan.expert = cuda && task->expert_cuda[0] && ws->dev.ops->expert ? task->expert_cuda : NULL;

    json_t *result = json_object();
    json_t *checks = json_array(), *bench_checks = json_array(), *timings = json_array();
    struct plan cand;
    struct temper_buf log;
    temper_buf_init(&log, COMPILE_LOG_MAX);
    temper_buf_append(&log, "", 0);
    double t1 = temper_now_s();
    ph.reference_ms += (t1 - t0) * 1e3;
    int rc = plan_build(ws, path, source, json_object_get(req, "knobs"),
                        json_string_value(json_object_get(req, "extra_flags")), &log, &cand, &f);
    ph.build_ms = (temper_now_s() - t1) * 1e3;
    json_object_set_new(result, "compile_log", json_string(log.data));
    json_object_set_new(result, "options", json_string(cand.options));
    json_object_set_new(result, "cache_hit", json_boolean(cand.cache_hit));

    int checks_only = json_is_true(json_object_get(req, "checks_only"));
    int profile_run = json_is_true(json_object_get(req, "profile_run"));
    const struct same_code *same = !rc && !profile_run && json_is_true(json_object_get(req, "reuse_same_code")) ?
                                       same_code_find(s, &cand, timing, checks_only, budget) :
                                       NULL;
    if (same) {
        /* The same code was evaluated in this session, asked the same way: it gets that result. */
        json_t *copy = json_deep_copy(same->result);
        json_object_update(copy, result);
        json_decref(result);
        json_object_set_new(copy, "same_code_as", json_string(same->options));
        json_object_set_new(copy, "same_code_path", json_string(same->path));
        char said[sizeof(f.message) + sizeof(same->path) + sizeof(same->options) + 64];
        snprintf(said, sizeof(said), "%s (not run again: the code is that of %s with options '%s')",
                 json_string_value(json_object_get(copy, "message")), same->path, same->options);
        json_object_set_new(copy, "message", json_string(said));
        json_object_set_new(copy, "phases_ms", json_pack("{s:f, s:f}", "build", ph.build_ms, "worker",
                                                         (temper_now_s() - start) * 1e3));
        json_decref(checks);
        json_decref(bench_checks);
        json_decref(timings);
        temper_buf_free(&log);
        plan_free(ws, &cand);
        return copy;
    }
    int nbench = ws->dev.info.is_gpu ? task->nbench_gpu : task->nbench_cpu;
    if (!rc && profile_run) {
        /* For a profiler watching this process: the candidate's launches at the first bench
         * shape come first, with nothing checked. */
        struct arena *a = arena_new(ws, task, ws->dev.info.is_gpu ? &task->bench_gpu[0] : &task->bench_cpu[0], 1, 1,
                                    &secret, secret, &f);
        rc = a ? plan_run(ws, &cand, a, 0, OUT_CAND, 0, &f) : -1;
        arena_free(ws, a);
        if (!rc)
            fail_with(&f, TEMPER_VERDICT_CORRECT, "profile run only: ran once at the first bench shape, unchecked");
        nbench = 0;
    }
    /* Checks stop at the first failure, unless the request says keep_going: then every shape is
     * checked after a wrong answer (each failed check says why) and nothing is timed. */
    int keep_going = json_is_true(json_object_get(req, "keep_going"));
    int failed = 0, nchecks = 0, stop = rc;
    for (int i = 0; i < task->ncheck && !stop && !profile_run; i++)
        for (int k = 0; k < 2 && !stop; k++) {
            struct failure fk = {TEMPER_VERDICT_CORRECT, ""};
            nchecks++;
            if (check_shape(ws, &cand, i, k, checks, &ph, &fk))
                stop = note_failure(checks, &fk, keep_going, &failed, &f);
        }
    if (checks_only)
        nbench = 0;
    for (int b = 0; b < nbench && !stop; b++) {
        json_t *tm = NULL;
        struct failure fk = {TEMPER_VERDICT_CORRECT, ""};
        nchecks++;
        if (bench_shape(ws, &cand, expert_plan.expert ? &expert_plan : NULL, b, timing && !failed,
                        budget > 0 ? budget : 2.0, calib, bench_checks, &tm, &ph, &fk))
            stop = note_failure(bench_checks, &fk, keep_going, &failed, &f);
        if (tm)
            json_array_append_new(timings, tm);
    }
    rc = rc || failed;
    if (keep_going) {
        json_object_set_new(result, "failed_checks", json_integer(failed));
        if (failed > 1) {
            size_t used = strlen(f.message);
            snprintf(f.message + used, sizeof(f.message) - used, " (the first of %d failed checks of %d)", failed,
                     nchecks);
        }
    }
    if (f.verdict == TEMPER_VERDICT_CORRECT && !profile_run)
        snprintf(f.message, sizeof(f.message), "passed %d check shapes x 2 seeds and %d bench shape%s%s",
                 task->ncheck, nbench, nbench == 1 ? "" : "s",
                 !nbench ? "" : timing ? ", timed" : " (compared with the baseline, not timed)");
    /* After a device fault the context may be unusable (CUDA errors are sticky). Where kernels run
     * in this process (PoCL on a CPU), a candidate that failed in any way may also have written
     * anywhere in it, past every guard zone: the worker is replaced before the next candidate, so
     * that the next, innocent one is not judged by a corrupted process. */
    if (f.verdict == TEMPER_VERDICT_RUNTIME_ERROR ||
        (f.verdict != TEMPER_VERDICT_CORRECT && (ws->dev.info.caps & TEMPER_DEVICE_CAP_IN_PROCESS)))
        *fatal = 1;
    json_object_set_new(result, "verdict", json_string(temper_verdict_name(f.verdict)));
    json_object_set_new(result, "message", json_string(f.message));
    json_object_set_new(result, "task", json_string(task->name));
    json_object_set_new(result, "baseline", json_string(base_path));
    if (expert_plan.expert)
        json_object_set_new(result, "expert", json_string(expert_plan.expert));
    json_object_set_new(result, "device_class", json_string(ws->dev.info.is_gpu ? "gpu" : "cpu"));
    json_object_set_new(result, "checks", checks);
    json_object_set_new(result, "bench_checks", bench_checks);
    json_object_set_new(result, "timings", timings);
    json_object_set_new(result, "phases_ms",
                        json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "build", ph.build_ms, "inputs",
                                  ph.inputs_ms, "reference", ph.reference_ms, "device", ph.device_ms, "compare",
                                  ph.compare_ms, "timing", ph.timing_ms, "worker", (temper_now_s() - start) * 1e3));
    if (!profile_run)
        same_code_add(s, path, &cand, timing, checks_only, budget, result);
    temper_buf_free(&log);
    plan_free(ws, &cand);
    return result;
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
        return worker_error_reply("request without op", TEMPER_EINVALID);
    if (!strcmp(op, "devices"))
        return devices_job();
    int err = ensure_open(ws, msg, sizeof(msg));
    if (err)
        return worker_error_reply(msg, err);
    json_t *reply;
    if (!strcmp(op, "info"))
        reply = device_json(&ws->dev.info);
    else if (!strcmp(op, "calibrate"))
        reply = worker_calibrate(ws, fatal);
    else if (!strcmp(op, "eval"))
        reply = eval_job(ws, req, fatal);
    else
        reply = worker_error_reply("unknown op", TEMPER_EINVALID);
    worker_doing(ws->shared, WORKER_IDLE, "idle");
    return reply;
}
