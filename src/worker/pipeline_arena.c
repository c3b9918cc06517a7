/* pipeline_arena.c: device buffers of the worker's pipeline: guarded slots, the arenas of a shape,
 * scratch buffers, poison, launching a plan, the integrity checks after a run (guard zones,
 * checksums), and the task state that keeps arenas between evaluations. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pipeline_impl.h"


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

static void slot_free(struct worker_state *ws, struct slot *s)
{
    temper_dev_release(&ws->dev, s->view);
    temper_dev_release(&ws->dev, s->whole);
    memset(s, 0, sizeof(*s));
}

void plan_free(struct worker_state *ws, struct plan *p)
{
    for (int i = 0; i < TEMPER_MAX_SCRATCH; i++)
        slot_free(ws, &p->scratch[i]);
    if (p->mod)
        temper_dev_module_free(&ws->dev, p->mod);
    temper_candidate_free(&p->cand);
    memset(p, 0, sizeof(*p));
}

/* Each buffer's guard byte differs from every other buffer's, so a kernel that copies one
 * buffer's guard into another's is still seen, and all lie in 0x30..0x4f, whose floats are
 * finite and normal at every width, so arithmetic on them always changes the bytes. */
int arena_slot_alloc(struct worker_state *ws, struct arena *a, size_t bytes, struct slot *s, char *msg, size_t n)
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

/* The bytes of a reference output of n elements: whole pages. */
static size_t want_bytes(int64_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = (size_t)(n > 0 ? n : 1) * sizeof(double);
    return (bytes + page - 1) / page * page;
}

double *want_alloc(int64_t n)
{
    void *p = mmap(NULL, want_bytes(n), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void want_free(double *want, int64_t n)
{
    if (want)
        munmap(want, want_bytes(n));
}

void want_open(struct arena *a, int readable)
{
    for (int i = 0; i < a->task->nargs; i++)
        if (a->want[i])
            mprotect(a->want[i], want_bytes(a->elems[i]), readable ? PROT_READ : PROT_NONE);
}

void arena_free(struct worker_state *ws, struct arena *a)
{
    if (!a)
        return;
    for (int i = 0; i < TEMPER_MAX_ARGS; i++) {
        for (int v = 0; v < MAX_VARIANTS; v++) {
            slot_free(ws, &a->in[v][i]);
            free(a->host_in[v][i]);
        }
        slot_free(ws, &a->in[FRESH_SET][i]);
        free(a->host_fresh[i]);
        free(a->host_back[i]);
        for (int o = 0; o < OUT_SETS; o++)
            slot_free(ws, &a->out[o][i]);
        want_free(a->want[i], a->elems[i]);
    }
    temper_result_bench_check_free(a->expert_check);
    free(a->expert_check);
    free(a);
}

/* Allocates every buffer of a shape, uploads fresh inputs drawn from the seeds and records their
 * checksums. Caller frees with arena_free. */
struct arena *arena_new(struct worker_state *ws, const struct temper_task *t, const struct temper_shape *shape,
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
                err = arena_slot_alloc(ws, a, bytes, &a->out[o][i], msg, sizeof(msg));
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
                err = arena_slot_alloc(ws, a, bytes, s, msg, sizeof(msg));
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
int poison_outputs(struct worker_state *ws, struct arena *a, struct plan *p, int set, int which, char *msg,
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
    return poison_scratch(ws, p, which, msg, n);
}

int poison_scratch(struct worker_state *ws, struct plan *p, int which, char *msg, size_t n)
{
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
    struct temper_dev_attrs attrs;
    temper_dev_attrs_fill(&ws->dev.info, &attrs);
    for (int s = 0; s < p->cand.nscratch; s++) {
        const struct temper_scratch *sc = &p->cand.scratch[s];
        int64_t count;
        size_t es = temper_dtype_size(sc->dtype), bytes, whole;
        if (temper_launch_eval_dev(&a->shape, &p->knobs, &attrs, sc->count, &count, msg, sizeof(msg)))
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
        if (arena_slot_alloc(ws, a, bytes, &p->scratch[s], msg, sizeof(msg)))
            return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "%s:%d: scratch %s of %zu bytes: %s", p->cand.path,
                             sc->line, sc->name, bytes, msg);
    }
    return 0;
}

/* An args(...) entry that is neither a task argument nor a scratch buffer: a knob or an integer
 * expression over sizes, knobs and device attributes, passed as the kernel's parameter at that
 * position is declared (i64 for a 64-bit one, else i32), its range checked. A knob where the
 * parameter's type could not be read goes as i32, as knobs always have; a device attribute or an
 * expression there is refused. */
static int launch_int_arg(struct worker_state *ws, struct plan *p, const struct temper_launch *l, int i,
                          struct arena *a, const struct temper_dev_attrs *attrs, struct temper_karg *arg,
                          struct failure *f)
{
    (void)ws;
    const char *expr = l->args[i];
    int plain = temper_launch_arg_is_name(expr);
    char msg[1024];
    int64_t v;
    int knob = plain && !temper_knobs_int(&p->knobs, expr, strlen(expr), &v);
    if (plain && !knob && temper_launch_eval_dev(NULL, NULL, attrs, expr, &v, msg, sizeof(msg)))
        return fail_with(f, TEMPER_VERDICT_INVALID,
                         "%s:%d: args(...) names '%s', which is not an argument of task %s, a scratch buffer, an "
                         "integer param or a device attribute",
                         p->cand.path, l->line, expr, a->task->name);
    if (!plain && temper_launch_eval_dev(&a->shape, &p->knobs, attrs, expr, &v, msg, sizeof(msg)))
        return fail_with(f, TEMPER_VERDICT_INVALID, "%s:%d: args(...): '%s': %s", p->cand.path, l->line, expr, msg);
    enum temper_param_kind kind = l->arg_kind[i];
    if (kind == TEMPER_PARAM_UNKNOWN && !knob)
        return fail_with(f, TEMPER_VERDICT_INVALID,
                         "%s:%d: args(...): '%s' is an integer expression, but kernel %s's parameter %d could not be "
                         "read from the source to pass it as i32 or i64 (declare it as int, unsigned, long, "
                         "int64_t or size_t)",
                         p->cand.path, l->line, expr, l->kernel, i + 1);
    if (kind == TEMPER_PARAM_OTHER)
        return fail_with(f, TEMPER_VERDICT_INVALID,
                         "%s:%d: args(...): '%s' is an integer, but kernel %s's parameter %d is not an integer "
                         "(a pointer, a float or a narrow type)",
                         p->cand.path, l->line, expr, l->kernel, i + 1);
    int64_t lo = kind == TEMPER_PARAM_U32 || kind == TEMPER_PARAM_U64 ? 0 : kind == TEMPER_PARAM_I64 ? INT64_MIN : INT32_MIN;
    int64_t hi = kind == TEMPER_PARAM_U32 ? (int64_t)UINT32_MAX : kind == TEMPER_PARAM_I64 || kind == TEMPER_PARAM_U64 ? INT64_MAX : INT32_MAX;
    if (v < lo || v > hi)
        return fail_with(f, TEMPER_VERDICT_INVALID,
                         "%s:%d: args(...): '%s' = %lld at %s does not fit kernel %s's %s parameter %d", p->cand.path,
                         l->line, expr, (long long)v, a->shape_text, l->kernel,
                         kind == TEMPER_PARAM_U32 ? "32-bit unsigned" : kind == TEMPER_PARAM_U64 ? "64-bit unsigned" :
                         kind == TEMPER_PARAM_I64 ? "64-bit" : "32-bit",
                         i + 1);
    if (kind == TEMPER_PARAM_I64 || kind == TEMPER_PARAM_U64) {
        arg->kind = TEMPER_KARG_I64;
        arg->v.i64 = v;
    } else {
        arg->kind = TEMPER_KARG_I32;
        arg->v.i32 = (int32_t)(uint32_t)v;
    }
    return 0;
}

/* A tensormap(NAME, SWIZZLE, BOX...) entry at the arena's shape: the map over NAME's buffer, its
 * dimensions (innermost first) from the task's shape, its swizzle and box from the expressions.
 * eval checked NAME and the box's rank when it read the candidate. */
static int launch_tensormap_arg(struct plan *p, const struct temper_launch *l, const struct temper_tensormap_arg *tm,
                                struct arena *a, int variant, int set, const struct temper_dev_attrs *attrs,
                                struct temper_tensormap *map, struct failure *f)
{
    const struct temper_task *t = a->task;
    char msg[1024];
    int j = 0;
    while (j < t->nargs && strcmp(t->args[j].name, tm->name))
        j++;
    if (j == t->nargs || t->args[j].role == TEMPER_ROLE_SCALAR || t->args[j].ndim != tm->rank)
        return fail_with(f, TEMPER_VERDICT_INVALID, "%s:%d: args(...): tensormap(%s, ...) does not match task %s",
                         p->cand.path, l->line, tm->name, t->name);
    const struct temper_task_arg *arg = &t->args[j];
    memset(map, 0, sizeof(*map));
    map->buf = arg->role == TEMPER_ROLE_OUTPUT ? a->out[set][j].view : a->in[variant][j].view;
    map->dtype = arg->dtype;
    map->rank = tm->rank;
    uint64_t stride = temper_dtype_size(arg->dtype);
    for (int d = 0; d < tm->rank; d++) {
        int64_t v = 0;
        if (temper_shape_eval(&a->shape, arg->shape[arg->ndim - 1 - d], &v, msg, sizeof(msg)) || v < 0)
            return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "%s:%d: tensormap(%s, ...) at shape %s: %s",
                             p->cand.path, l->line, tm->name, a->shape_text, v < 0 ? "a negative dimension" : msg);
        map->dims[d] = (uint64_t)v;
        map->strides[d] = d ? stride : 0;
        stride *= (uint64_t)v;
        if (temper_launch_eval_dev(&a->shape, &p->knobs, attrs, tm->box[d], &v, msg, sizeof(msg)))
            return fail_with(f, TEMPER_VERDICT_INVALID, "%s:%d: tensormap(%s, ...): box '%s': %s", p->cand.path,
                             l->line, tm->name, tm->box[d], msg);
        map->box[d] = v < 0 || v > 0xffffffffll ? 0 : (uint32_t)v;
    }
    int64_t sw;
    if (temper_launch_eval_dev(&a->shape, &p->knobs, attrs, tm->swizzle, &sw, msg, sizeof(msg)))
        return fail_with(f, TEMPER_VERDICT_INVALID, "%s:%d: tensormap(%s, ...): swizzle '%s': %s", p->cand.path,
                         l->line, tm->name, tm->swizzle, msg);
    map->swizzle = sw < -1 || sw > 1024 ? -1 : (int)sw;
    if (temper_tensormap_check(map, msg, sizeof(msg)))
        return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR,
                         "%s:%d: launch %s at shape %s: tensormap(%s, ...): %s (a launch group's when(...) can keep "
                         "such shapes off the TMA path)",
                         p->cand.path, l->line, l->kernel, a->shape_text, tm->name, msg);
    return 0;
}

/* Resolves one launch's geometry and arguments at the arena's shape; tensor maps go in tmaps, one
 * slot per argument. */
static int plan_launch_args(struct worker_state *ws, struct plan *p, int li, struct arena *a, int variant, int set,
                            struct temper_launch_dims *dims, struct temper_karg *args,
                            struct temper_tensormap *tmaps, int *nargs, struct failure *f)
{
    const struct temper_launch *l = &p->cand.launches[li];
    const struct temper_task *t = a->task;
    char msg[1024];
    size_t threads = 1;
    struct temper_dev_attrs attrs;
    temper_dev_attrs_fill(&ws->dev.info, &attrs);
    for (int d = 0; d < 3; d++) {
        int64_t g = 1, b = 1;
        if (d < l->grid_n && temper_launch_eval_dev(&a->shape, &p->knobs, &attrs, l->grid[d], &g, msg, sizeof(msg)))
            return fail_with(f, TEMPER_VERDICT_INVALID, "%s:%d: grid: %s", p->cand.path, l->line, msg);
        if (d < l->block_n && temper_launch_eval_dev(&a->shape, &p->knobs, &attrs, l->block[d], &b, msg, sizeof(msg)))
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
    if (l->smem[0] && temper_launch_eval_dev(&a->shape, &p->knobs, &attrs, l->smem, &smem, msg, sizeof(msg)))
        return fail_with(f, TEMPER_VERDICT_INVALID, "%s:%d: smem: %s", p->cand.path, l->line, msg);
    if (smem < 0)
        return fail_with(f, TEMPER_VERDICT_INVALID, "%s:%d: smem is negative", p->cand.path, l->line);
    dims->smem_bytes = (size_t)smem;
    int n = l->nargs < 0 ? t->nargs : l->nargs;
    for (int i = 0; i < n; i++) {
        const char *name = l->nargs < 0 ? t->args[i].name : l->args[i];
        struct temper_tensormap_arg tm;
        if (l->nargs >= 0 && !temper_launch_arg_tensormap(name, &tm, NULL, 0)) {
            if (launch_tensormap_arg(p, l, &tm, a, variant, set, &attrs, &tmaps[i], f))
                return -1;
            args[i].kind = TEMPER_KARG_TENSORMAP;
            args[i].v.tmap = &tmaps[i];
            continue;
        }
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
        if (!found && launch_int_arg(ws, p, l, i, a, &attrs, &args[i], f))
            return -1;
    }
    *nargs = n;
    return 0;
}

/* The launch lines to run at the arena's shape, [*first, *end): all of them without when(...);
 * with it, the first group (a when(...) line and the lines after it up to the next) whose
 * condition is nonzero. No group's condition holding is the candidate's error. */
static int launch_group(struct worker_state *ws, struct plan *p, struct arena *a, int *first, int *end,
                        struct failure *f)
{
    const struct temper_candidate *c = &p->cand;
    if (!c->nlaunches || !c->launches[0].when[0])
        return 0;
    struct temper_dev_attrs attrs;
    temper_dev_attrs_fill(&ws->dev.info, &attrs);
    for (int li = 0; li < c->nlaunches; li++) {
        if (!c->launches[li].when[0])
            continue;
        int64_t v;
        char msg[1024];
        if (temper_launch_eval_dev(&a->shape, &p->knobs, &attrs, c->launches[li].when, &v, msg, sizeof(msg)))
            return fail_with(f, TEMPER_VERDICT_INVALID, "%s:%d: when: %s", c->path, c->launches[li].line, msg);
        if (!v)
            continue;
        *first = li;
        *end = li + 1;
        while (*end < c->nlaunches && !c->launches[*end].when[0])
            (*end)++;
        return 0;
    }
    return fail_with(f, TEMPER_VERDICT_INVALID, "%s: no launch group's when(...) holds at shape %s", c->path,
                     a->shape_text);
}

int plan_prepare(struct worker_state *ws, struct plan *p, struct arena *a, int variant, int set,
                 struct plan_launches *pl, struct failure *f)
{
    pl->first = 0;
    pl->end = 0;
    if (p->expert)
        return 0;
    pl->end = p->cand.nlaunches;
    if (launch_group(ws, p, a, &pl->first, &pl->end, f))
        return -1;
    for (int li = pl->first; li < pl->end; li++)
        if (plan_launch_args(ws, p, li, a, variant, set, &pl->dims[li], pl->args[li], pl->tmaps[li], &pl->nargs[li], f))
            return -1;
    return 0;
}

int plan_submit(struct worker_state *ws, struct plan *p, struct arena *a, int variant, int set,
                const struct plan_launches *pl, struct failure *f)
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
    /* Where kernels run in this process, the parent replaces it after this job: a candidate's
     * kernel may write anywhere in it (worker_page.c). Said before the kernel runs, so that no
     * kernel can keep it from being said. */
    if (p->candidate && (ws->dev.info.caps & TEMPER_DEVICE_CAP_IN_PROCESS))
        worker_candidate_runs();
    for (int li = pl->first; li < pl->end; li++) {
        const struct temper_launch_dims *dims = &pl->dims[li];
        /* A grid of no blocks launches nothing, in CUDA and OpenCL alike: the outputs stay
         * poisoned and the comparison says so. */
        if (!dims->grid[0] || !dims->grid[1] || !dims->grid[2])
            continue;
        /* OpenCL runtimes on CPUs (PoCL) compile a kernel again for each work-group size at its
         * first launch, which on a loaded machine can outlast the launch limit: such a launch
         * gets grace until the next wait ends, so a slow compiler is not taken for a hang. */
        if (!strcmp(ws->dev.info.language, "opencl")) {
            int seen = 0;
            for (int k = 0; k < p->nseen && !seen; k++)
                seen = !memcmp(p->seen[k], dims->block, sizeof(dims->block));
            if (!seen) {
                worker_grace(WORKER_FIRST_LAUNCH_GRACE_S);
                if (p->nseen < 16)
                    memcpy(p->seen[p->nseen++], dims->block, sizeof(dims->block));
            }
        }
        if (temper_dev_launch(&ws->dev, p->kernels[li], dims, pl->nargs[li], pl->args[li], msg, sizeof(msg)))
            return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "launch of %s at shape %s failed: %s",
                             p->cand.launches[li].kernel, a->shape_text, msg);
    }
    return 0;
}

int plan_launch(struct worker_state *ws, struct plan *p, struct arena *a, int variant, int set, struct failure *f)
{
    struct plan_launches *pl = malloc(sizeof(*pl));
    if (!pl)
        return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "out of host memory");
    int rc = plan_prepare(ws, p, a, variant, set, pl, f);
    if (!rc)
        rc = plan_submit(ws, p, a, variant, set, pl, f);
    free(pl);
    return rc;
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
int check_scratch(struct worker_state *ws, struct arena *a, struct plan *p, struct failure *f)
{
    for (int s = 0; s < p->cand.nscratch; s++) {
        char name[128];
        snprintf(name, sizeof(name), "scratch %s", p->cand.scratch[s].name);
        if (p->scratch[s].whole && check_guards(ws, a, &p->scratch[s], name, f))
            return -1;
    }
    return 0;
}

/* One untimed run: poison, launch, wait, and the scratch buffers' guard zones checked. */
int plan_run(struct worker_state *ws, struct plan *p, struct arena *a, int variant, int set, int which,
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
    worker_grace(0);
    if (!rc)
        rc = check_scratch(ws, a, p, f);
    return rc;
}

/* Reads every output of a set into malloc'ed host arrays (caller frees each). */
int read_outputs(struct worker_state *ws, struct arena *a, int set, void **host, struct failure *f)
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

void free_outputs(void **host, int n)
{
    for (int i = 0; i < n; i++) {
        free(host[i]);
        host[i] = NULL;
    }
}

/* Checks that a buffer that must not change still has its checksum. */
int arena_check_unchanged(struct worker_state *ws, struct arena *a, struct slot *s, const void *host,
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
int check_memory(struct worker_state *ws, struct arena *a, int variant, int set, struct failure *f)
{
    for (int i = 0; i < a->task->nargs; i++) {
        const struct temper_task_arg *arg = &a->task->args[i];
        if (arg->role == TEMPER_ROLE_SCALAR)
            continue;
        if (arg->role == TEMPER_ROLE_INPUT) {
            for (int v = 0; v < a->nvariants; v++)
                if ((v == variant || variant < 0) &&
                    (check_guards(ws, a, &a->in[v][i], arg->name, f) ||
                     arena_check_unchanged(ws, a, &a->in[v][i], a->host_in[v][i], arg, "input", f)))
                    return -1;
            if (a->fresh_ready && (variant == FRESH_SET || variant < 0) &&
                check_guards(ws, a, &a->in[FRESH_SET][i], arg->name, f))
                return -1;
            continue;
        }
        if (check_guards(ws, a, &a->out[set][i], arg->name, f))
            return -1;
        for (int v = 0; a->expected_ready && v < a->nvariants; v++)
            if (arena_check_unchanged(ws, a, &a->out[OUT_EXPECT + v][i], NULL, arg, "the baseline's expected output", f))
                return -1;
    }
    return 0;
}

static void task_state_clear(struct worker_state *ws)
{
    struct task_state *s = &ws->s;
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

/* Makes the task state belong to this task and these seeds, dropping what belonged to others. */
int task_state_prepare(struct worker_state *ws, const char *task_dir, uint64_t seed, uint64_t secret, char *msg,
                           size_t n)
{
    struct task_state *s = &ws->s;
    if (s->ref && !strcmp(s->task_dir, task_dir) && s->seed == seed && s->secret == secret)
        return 0;
    task_state_clear(ws);
    int err = temper_task_load(task_dir, &s->task, msg, n);
    if (!err)
        err = temper_task_reference(&s->task, &s->ref, msg, n);
    if (err) {
        task_state_clear(ws);
        return err;
    }
    snprintf(s->task_dir, sizeof(s->task_dir), "%s", task_dir);
    s->seed = seed;
    s->secret = secret;
    return 0;
}

/* Drops an arena a kernel may have corrupted, so the next evaluation builds it afresh. */
void task_state_drop(struct worker_state *ws, struct arena **slot)
{
    arena_free(ws, *slot);
    *slot = NULL;
}
