/* pipeline_fresh.c: the inputs of timed launches, new before every one (docs/timing.md): drawn on a
 * GPU by the device's fill kernel (devcheck.c), mixed from the two checked input sets on the host
 * for a CPU device; and the check that a launch left them as they were: on a GPU the fill drawn
 * again and compared on the device (one read of each input, and no checksum of what was drawn),
 * on a CPU device the host's copy compared byte for byte. */
#include <stdlib.h>
#include <string.h>

#include "pipeline_impl.h"

/* A CPU device's fresh inputs, made on the host: each element taken from one of the two checked
 * input sets by a bit of a counter-based hash of seed and its index. The two sets hold independent
 * draws from the input's distribution, so every element of the mix is such a draw too, independent
 * of the others: the same distribution as a new draw, at the cost of a copy, where drawing (a
 * logarithm and a cosine per normal element) would take many times a memory-bound kernel's launch
 * on a CPU. Any two seeds give different contents (2^n masks for n elements). */
static void mix_sets(const void *x0, const void *x1, void *out, int64_t n, size_t es, uint64_t seed)
{
    for (int64_t base = 0; base < n; base += 64) {
        uint64_t bits = temper_mix64(seed ^ temper_mix64((uint64_t)base));
        int64_t end = base + 64 < n ? base + 64 : n;
        for (int64_t e = base; e < end; e++, bits >>= 1) {
            const void *from = bits & 1 ? x1 : x0;
            switch (es) {
            case 1:
                ((uint8_t *)out)[e] = ((const uint8_t *)from)[e];
                break;
            case 2:
                ((uint16_t *)out)[e] = ((const uint16_t *)from)[e];
                break;
            case 4:
                ((uint32_t *)out)[e] = ((const uint32_t *)from)[e];
                break;
            default:
                ((uint64_t *)out)[e] = ((const uint64_t *)from)[e];
                break;
            }
        }
    }
}

/* The seed of input i's draw in the fill keyed by seed. */
static uint64_t input_seed(const struct temper_task_arg *drawn, uint64_t seed)
{
    return seed ^ temper_hash64(drawn->name, strlen(drawn->name), 0xf8e5);
}

int arena_fresh_inputs(struct worker_state *ws, struct arena *a, uint64_t seed, struct failure *f)
{
    char msg[1024];
    const struct temper_task *t = a->task;
    int on_host = !ws->dev.info.is_gpu && a->nvariants >= 2;
    for (int i = 0; i < t->nargs; i++) {
        if (t->args[i].role != TEMPER_ROLE_INPUT)
            continue;
        struct slot *s = &a->in[FRESH_SET][i];
        size_t bytes = a->in[0][i].bytes;
        int err = 0;
        if (!a->fresh_ready) {
            err = arena_slot_alloc(ws, a, bytes, s, msg, sizeof(msg));
            if (!err)
                a->total_bytes += bytes + 2 * a->guard;
            if (!err && on_host && (!(a->host_fresh[i] = malloc(bytes + 1)) || !(a->host_back[i] = malloc(bytes + 1))))
                err = temper_fail(msg, sizeof(msg), TEMPER_ENOMEM, "out of host memory");
        }
        struct temper_task_arg drawn = temper_task_input_at(t, i, &a->shape);
        uint64_t arg_seed = input_seed(&drawn, seed);
        if (!err && on_host) {
            mix_sets(a->host_in[0][i], a->host_in[1][i], a->host_fresh[i], a->elems[i], temper_dtype_size(drawn.dtype),
                     arg_seed);
            if (bytes)
                err = temper_dev_write(&ws->dev, s->view, 0, a->host_fresh[i], bytes, msg, sizeof(msg));
        } else if (!err) {
            err = devcheck_fill(ws, s->view, drawn.dtype, a->elems[i], drawn.init, drawn.init_a, drawn.init_b, arg_seed,
                                msg, sizeof(msg));
        }
        if (err) {
            /* Half-made fresh buffers are freed with the arena, which the caller drops. */
            return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "drawing fresh inputs %s at %s failed: %s",
                             t->args[i].name, a->shape_text, msg);
        }
    }
    a->fresh_ready = 1;
    a->fresh_seed = seed;
    return 0;
}

int check_fresh_inputs(struct worker_state *ws, struct arena *a, struct failure *f)
{
    char msg[1024];
    for (int i = 0; i < a->task->nargs; i++) {
        const struct temper_task_arg *arg = &a->task->args[i];
        struct slot *s = &a->in[FRESH_SET][i];
        if (arg->role != TEMPER_ROLE_INPUT)
            continue;
        if (!a->host_fresh[i]) {
            struct temper_task_arg drawn = temper_task_input_at(a->task, i, &a->shape);
            int64_t changed, first;
            if (devcheck_fill_check(ws, s->view, drawn.dtype, a->elems[i], drawn.init, drawn.init_a, drawn.init_b,
                                    input_seed(&drawn, a->fresh_seed), &changed, &first, msg, sizeof(msg)))
                return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "checking the timed input %s failed: %s", arg->name,
                                 msg);
            if (changed)
                return fail_with(f, TEMPER_VERDICT_INCORRECT,
                                 "the kernel wrote outside its outputs at shape %s: the timed input %s changed during "
                                 "its runs (%lld elements, the first at index %lld)",
                                 a->shape_text, arg->name, (long long)changed, (long long)first);
            continue;
        }
        /* Made on the host: compared with the host's copy, byte for byte. */
        if (s->bytes && temper_dev_read(&ws->dev, s->view, 0, a->host_back[i], s->bytes, msg, sizeof(msg)))
            return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "reading %s back failed: %s", arg->name, msg);
        if (memcmp(a->host_back[i], a->host_fresh[i], s->bytes))
            return fail_with(f, TEMPER_VERDICT_INCORRECT,
                             "the kernel wrote outside its outputs at shape %s: the timed input %s changed during "
                             "its runs", a->shape_text, arg->name);
    }
    return 0;
}
