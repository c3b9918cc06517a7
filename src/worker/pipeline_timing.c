/* pipeline_timing.c: the bench shapes of the worker's pipeline: the candidate checked against the
 * baseline on both input sets, then timed interleaved with the baseline (and the expert), every
 * timed output verified, and the samples held against the roofline floor and the median. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_impl.h"

#define MIN_SAMPLES 10     /* timed samples at least */
#define MAX_SAMPLES 2000   /* timed samples at most */
#define BASE_MIN 3         /* baseline samples a worker takes per bench arena at least */
#define TARGET_SPREAD 0.01 /* stop timing once the relative IQR is below this */

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

/* Times one plan run: evict the cache (untimed), then events around the launches. The outputs are
 * not poisoned first, as they are before every check run: every timed output of the candidate is
 * verified against the verified output of its input set, and the input sets alternate, so a launch
 * that skips any part of its work leaves the other set's output there and fails that check just as
 * poison would. Not writing the outputs again saves a write of every output per timed launch,
 * which pays for the verification's read (measured on an H200, bench/RESULTS.md); the flush after
 * it leaves the cache in the same state either way. */
static int timed_run(struct worker_state *ws, struct plan *p, struct arena *a, int variant, int set, double *ms,
                     struct failure *f)
{
    char msg[1024];
    /* The launches are resolved before the timer starts, so the host's work (expressions, tensor
     * maps) is not timed where it outlasts the cache flush ahead of it on the device. */
    struct plan_launches *pl = malloc(sizeof(*pl));
    if (!pl)
        return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "out of host memory");
    int rc = plan_prepare(ws, p, a, variant, set, pl, f);
    if (!rc && devcheck_flush(ws, msg, sizeof(msg)))
        rc = fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "preparing a timed run failed: %s", msg);
    if (!rc && temper_dev_timer_start(&ws->dev, msg, sizeof(msg)))
        rc = fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "%s", msg);
    if (!rc)
        rc = plan_submit(ws, p, a, variant, set, pl, f);
    free(pl);
    if (rc)
        return -1;
    int err = temper_dev_timer_stop(&ws->dev, ms, msg, sizeof(msg));
    worker_grace(0);
    if (err)
        return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "the kernel failed during timing at shape %s: %s",
                         a->shape_text, msg);
    return 0;
}

/* A timed run of the baseline, with the worker's page saying so: a crash or a hang there is the
 * task's error (worker.c), and so is any other failure (baseline_fault), never the candidate's. */
static int timed_baseline(struct worker_state *ws, struct arena *a, int variant, int set, double *ms, struct failure *f)
{
    struct task_state *s = &ws->s;
    char doing[sizeof(ws->shared->doing)];
    snprintf(doing, sizeof(doing), "%s", ws->shared->doing);
    worker_doing(ws->shared, WORKER_BASELINE, "timing the baseline %s of task %s at %s", s->base.cand.path,
                 s->task.name, a->shape_text);
    int rc = timed_run(ws, &s->base, a, variant, set, ms, f);
    worker_doing(ws->shared, WORKER_RUNNING, "%s", doing);
    return rc ? baseline_fault(ws, "failed during timing", f) : 0;
}

/* The bench arena of a shape: inputs for both variants and the baseline's outputs for each,
 * made once per task state. The expert's correctness is checked here too, once. */
static struct arena *bench_arena(struct worker_state *ws, int b, const struct temper_shape *shape, struct plan *expert,
                                 struct phases *ph, struct failure *f)
{
    struct task_state *s = &ws->s;
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
    char msg[1024], where[300];
    snprintf(where, sizeof(where), "bench shape %s", a->shape_text);
    for (int v = 0; v < MAX_VARIANTS; v++) {
        if (baseline_run(ws, a, v, OUT_EXPECT + v, v, where, f)) { /* the task's error */
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
        struct failure ef = {TEMPER_VERDICT_CORRECT, "", 0};
        struct phases eph = {0}; /* counted in ph's reference time below */
        int rc = expert_verify(ws, expert, &eph, &ef); /* at the check shapes first, once */
        if (ef.task_error) {
            *f = ef;
            arena_free(ws, a);
            return NULL;
        }
        struct compared c;
        memset(&c, 0, sizeof(c));
        if (!rc)
            rc = plan_run(ws, expert, a, 0, OUT_EXPERT, 0, &ef);
        if (!rc)
            rc = compare_with_expected(ws, a, OUT_EXPERT, 0, where, &c, &ef);
        struct temper_result_bench_check *check = calloc(1, sizeof(*check));
        if (check) {
            check->shape = strdup(a->shape_text);
            check->routine = strdup(expert->expert);
            COMPARED_INTO(check, &c);
            if (rc) {
                check->passed = opt_bool(0);
                check->message = strdup(ef.message);
            }
        }
        a->expert_check = check;
    }
    ph->reference_ms += (temper_now_s() - t1) * 1e3;
    s->bench[b] = a;
    return a;
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
    struct compared scratch;
    memset(&scratch, 0, sizeof(scratch));
    int rc = compare_with_expected(ws, a, OUT_CAND, variant, launch_where, &scratch, f);
    if (!rc)
        tc->by_tolerance++;
    return rc;
}

/* Timed input sets drawn by this worker so far, counted from a random start (a worker replaced
 * after each candidate, or after a crash, must not draw what an earlier one drew): each draw's
 * seed is new. */
static uint64_t fresh_draws;

/* Adds the wall time since at to steps[k]; returns now. */
static double step_end(double *steps, int k, double at)
{
    double now = temper_now_s();
    steps[k] += (now - at) * 1e3;
    return now;
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

/* Untimed runs of the candidate on each input set the timing uses (the first only when not
 * timing), each compared with the baseline's output within the tolerance, on check; their outputs'
 * checksums (in tc) are what every timed output must match. */
static int check_sets(struct worker_state *ws, struct plan *cand, struct arena *a, int b, int timing, const char *where,
                      struct temper_result_bench_check *check, struct timed_check *tc, struct phases *ph,
                      struct failure *f)
{
    struct task_state *s = &ws->s;
    for (int v = 0; v < (timing ? MAX_VARIANTS : 1); v++) {
        double t0 = temper_now_s();
        char set_where[600];
        snprintf(set_where, sizeof(set_where), "%s%s", where, v ? ", input set 2" : "");
        worker_doing(ws->shared, WORKER_RUNNING, "checking %s at %s against the baseline", cand->cand.path,
                     set_where);
        int rc = plan_run(ws, cand, a, v, OUT_CAND, v, f);
        if (!rc && (rc = check_memory(ws, a, v, OUT_CAND, f)))
            task_state_drop(ws, &s->bench[b]);
        double t1 = temper_now_s();
        ph->device_ms += (t1 - t0) * 1e3;
        struct compared c;
        memset(&c, 0, sizeof(c));
        int compared = !rc;
        if (compared)
            rc = compare_with_expected(ws, a, OUT_CAND, v, set_where, &c, f);
        if (v == 0) {
            COMPARED_INTO(check, &c);
        } else if (compared) {
            /* The second set's mismatch, and its counts if it failed; else the first set's stand. */
            if (c.mismatched)
                compared_mismatch(&check->first_mismatch, &c);
            if (rc && c.recorded)
                COMPARED_COUNTS(check, &c);
            check->passed = opt_bool(!rc);
        }
        if (!rc && timing)
            rc = hash_outputs(ws, a, OUT_CAND, tc->verified[v], f);
        ph->compare_ms += (temper_now_s() - t1) * 1e3;
        if (rc)
            return rc;
    }
    return 0;
}

/* The steps of one timed sample, whose wall times are summed. */
enum { STEP_DRAW, STEP_CANDIDATE, STEP_ANSWER, STEP_INPUTS, STEP_COMPARE, STEPS };

/* The timing of one bench shape, as it goes: the samples and what each part of it cost. */
struct shape_timing {
    double *samples;        /* the candidate's timed samples (MAX_SAMPLES) */
    double *expert_samples; /* the expert's, one per candidate sample (MAX_SAMPLES) */
    int n;                  /* samples taken */
    int fresh;              /* of them, on freshly drawn inputs */
    int base_now;           /* baseline samples taken at this shape in this evaluation */
    int expert_ok;          /* the expert passed its check and is timed */
    double base_allow_ms;   /* baseline time this evaluation may spend (base_due) */
    double base_spent_ms;   /* baseline time spent so far */
    double cand_spent_ms;   /* the candidate's timed time so far */
    double start_s;         /* when timing began (the warm-up's start) */
    double loop_start_s;    /* when the samples began */
    double steps[STEPS];    /* wall time of each step of the samples, summed (ms) */
};

/* The warm-up: at least 2 rounds and up to 0.2 s (a tenth of the budget at most) of the
 * candidate, each output verified, beside the baseline and the expert. */
static int warm_up(struct worker_state *ws, struct plan *cand, struct plan *expert, struct arena *a, double budget_s,
                   const char *where, struct timed_check *tc, struct shape_timing *st, struct failure *f)
{
    double ms;
    int rc = 0;
    double warm_until = temper_now_s() + fmin(0.2, budget_s * 0.1);
    for (int w = 0; !rc && (w < 2 || temper_now_s() < warm_until) && w < 50; w++) {
        rc = timed_run(ws, cand, a, w & 1, OUT_CAND, &ms, f);
        if (!rc)
            rc = verify_timed(ws, a, w & 1, where, tc, f);
        if (!rc && (a->base_n ? base_due(a, st->base_spent_ms, st->base_allow_ms) : w == 0))
            rc = timed_baseline(ws, a, w & 1, OUT_BASE, &ms, f);
        if (!rc && st->expert_ok)
            rc = timed_run(ws, expert, a, w & 1, OUT_EXPERT, &ms, f);
    }
    return rc;
}

/* The samples: before each, the timed input set gets contents no launch has seen, drawn on the
 * device from a seed no other launch of this worker used, and the candidate's scratch buffers
 * are poisoned again (both outside the timed region). So neither an input's address nor a hash
 * of its contents names an earlier launch, and a result kept from one (in a scratch buffer, a
 * __device__ array, anywhere) is never the answer. Each launch's output is then compared,
 * outside the timed region, with the answer of a trusted routine timed on the same inputs
 * right after it: the expert where there is one (as fast as the candidate, so every round),
 * else the baseline. The inputs are checked after both, so a kernel that changed its inputs to
 * steer the answer is caught. Each step's wall time is summed (steps): the draw is queued, not
 * waited for, so its device time shows in the candidate's step, which waits for it. Sampling
 * stops at MAX_SAMPLES, past the budget, or once the spread is below TARGET_SPREAD. */
static int take_samples(struct worker_state *ws, struct plan *cand, struct plan *expert, struct arena *a,
                        double budget_s, const char *where, struct timed_check *tc, struct shape_timing *st,
                        struct failure *f)
{
    struct task_state *s = &ws->s;
    double *samples = st->samples, *steps = st->steps, ms, at;
    double end = st->loop_start_s + budget_s;
    int answer = st->expert_ok ? OUT_EXPERT : OUT_BASE;
    const char *who = st->expert_ok ? "the expert on this device" : "the baseline on this device";
    int rc = 0, n = 0;
    while (!rc && n < MAX_SAMPLES) {
        char msg[1024];
        at = temper_now_s();
        rc = arena_fresh_inputs(ws, a, s->secret ^ (++fresh_draws * 0x9e3779b97f4a7c15ull), f);
        if (!rc && poison_scratch(ws, cand, n & 1, msg, sizeof(msg)))
            rc = fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "cannot poison the scratch buffers: %s", msg);
        at = step_end(steps, STEP_DRAW, at);
        if (!rc)
            rc = timed_run(ws, cand, a, FRESH_SET, OUT_CAND, &samples[n], f);
        at = step_end(steps, STEP_CANDIDATE, at);
        if (!rc)
            st->base_allow_ms = fmax(st->base_allow_ms, 2 * (st->cand_spent_ms += samples[n]));
        if (!rc && (!st->expert_ok || base_due(a, st->base_spent_ms, st->base_allow_ms)) &&
            !(rc = timed_baseline(ws, a, FRESH_SET, OUT_BASE, &ms, f))) {
            a->base_ms[a->base_n++ % BASE_POOL] = ms;
            st->base_spent_ms += ms;
            st->base_now++;
        }
        if (!rc && st->expert_ok)
            rc = timed_run(ws, expert, a, FRESH_SET, OUT_EXPERT, &st->expert_samples[n], f);
        at = step_end(steps, STEP_ANSWER, at);
        if (!rc)
            rc = check_fresh_inputs(ws, a, f);
        at = step_end(steps, STEP_INPUTS, at);
        if (!rc) {
            char launch_where[700];
            snprintf(launch_where, sizeof(launch_where), "%s, timed launch %d (fresh inputs)", where, ++tc->launches);
            struct compared scratch;
            memset(&scratch, 0, sizeof(scratch));
            rc = compare_sets(ws, a, OUT_CAND, answer, who, launch_where, &scratch, f);
        }
        at = step_end(steps, STEP_COMPARE, at);
        if (rc)
            break;
        st->fresh++;
        st->n = ++n;
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
    return rc;
}

/* The timing record of a shape whose samples all passed, filled into tm (zeroed by the caller), and
 * the verdict on them: held against the roofline floor, and a cluster of samples far faster than
 * the median fails. */
static int judge_timing(struct worker_state *ws, const struct temper_shape *shape, const char *shape_text,
                        const char *where, json_t *calib, struct plan *expert, struct arena *a,
                        struct shape_timing *st, struct temper_result_timing *tm, struct failure *f)
{
    const struct temper_task *t = &ws->s.task;
    double *samples = st->samples, *steps = st->steps;
    int n = st->n, rc;
    double med, spread, mn, bmed, bspread, bmn, pool[BASE_POOL];
    int pooled = a->base_n < BASE_POOL ? a->base_n : BASE_POOL;
    memcpy(pool, a->base_ms, (size_t)pooled * sizeof(double));
    summarize(samples, n, &med, &spread, &mn);
    summarize(pool, pooled, &bmed, &bspread, &bmn);
    int64_t flops = 0, bytes = 0;
    char msg[256];
    temper_shape_eval(shape, t->flops, &flops, msg, sizeof(msg));
    temper_shape_eval(shape, t->bytes, &bytes, msg, sizeof(msg));
    tm->shape = strdup(shape_text);
    tm->median_ms = opt_real(med);
    tm->min_ms = opt_real(mn);
    tm->spread = opt_real(spread);
    tm->samples = opt_int(n);
    tm->baseline_median_ms = opt_real(bmed);
    tm->baseline_spread = opt_real(bspread);
    tm->speedup = opt_real(bmed / med);
    tm->flops = opt_int(flops);
    tm->bytes = opt_int(bytes);
    tm->gbps = opt_real((double)bytes / (med * 1e-3) * 1e-9);
    tm->tflops = opt_real((double)flops / (med * 1e-3) * 1e-12);
    /* Wall time of the warm-up and of the samples: what the samples cost besides the kernel's
     * own time (fresh inputs, the answer, the checks) is loop_ms / samples - median_ms. */
    tm->warmup_ms = opt_real((st->loop_start_s - st->start_s) * 1e3);
    tm->loop_ms = opt_real((temper_now_s() - st->loop_start_s) * 1e3);
    double timed = 0;
    for (int i = 0; i < n; i++)
        timed += samples[i];
    tm->loop_steps_ms = json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}", "draw", steps[STEP_DRAW], "candidate",
                                  steps[STEP_CANDIDATE], "candidate_timed", timed, "answer", steps[STEP_ANSWER],
                                  "inputs_check", steps[STEP_INPUTS], "compare", steps[STEP_COMPARE]);
    tm->baseline_samples = opt_int(pooled);
    tm->baseline_samples_now = opt_int(st->base_now);
    if (st->expert_ok) {
        double emed, espread, emn;
        summarize(st->expert_samples, n, &emed, &espread, &emn);
        tm->expert = strdup(expert->expert);
        tm->expert_median_ms = opt_real(emed);
        tm->expert_spread = opt_real(espread);
        tm->speedup_vs_expert = opt_real(emed / med);
    }
    /* samples is sorted now: the fast cluster is its head. */
    double fast_ratio = ws->dev.info.is_gpu ? FAST_RATIO_GPU : FAST_RATIO_CPU;
    int fast = 0;
    while (fast < n && samples[fast] < fast_ratio * med)
        fast++;
    tm->fast_samples = opt_int(fast);
    /* The roofline, and times faster than the device's peak allows (pipeline_floor.c). */
    rc = floor_judge(ws, t, calib, flops, bytes, samples, n, med, bmed, where, tm, f);
    if (!rc && fast >= 2 && fast >= (n + FAST_MIN_FRACTION - 1) / FAST_MIN_FRACTION)
        rc = fail_with(f, TEMPER_VERDICT_INCORRECT,
                       "%d of %d timed launches at %s took under %g of the median %.4g ms (fastest %.4g ms): "
                       "launches that did less work than the rest, such as ones that served a result kept from "
                       "an earlier launch",
                       fast, n, where, fast_ratio, med, mn);
    return rc;
}

/* Bench shapes: the candidate checked against the trusted baseline on the device on both input
 * sets, then (unless check-only) timed interleaved with the baseline (and the expert, where there
 * is one), with inputs alternating between timed launches and every timed output verified. Every
 * sample is held against the roofline floor, and a cluster of samples far faster than the median
 * fails the verdict. */
int bench_shape(struct worker_state *ws, struct plan *cand, struct plan *expert, int b, int timing, double budget_s,
                json_t *calib, struct temper_result_bench_check *check, struct temper_result_timing *tm, int *timed,
                struct phases *ph, struct failure *f)
{
    struct task_state *s = &ws->s;
    const struct temper_task *t = &s->task;
    const struct temper_shape *shape = ws->dev.info.is_gpu ? &t->bench_gpu[b] : &t->bench_cpu[b];
    char where[512], shape_text[256];
    temper_shape_format(shape, shape_text, sizeof(shape_text));
    snprintf(where, sizeof(where), "bench shape %s", shape_text);
    check->shape = strdup(shape_text);
    check->against = strdup("baseline");
    struct arena *a = bench_arena(ws, b, shape, expert, ph, f);
    if (!a)
        return -1;
    /* The expert was checked once, when the arena was made; it is timed only if it passed. */
    if (a->expert_check && (check->expert = calloc(1, sizeof(*check->expert))) &&
        temper_result_bench_check_copy(check->expert, a->expert_check)) {
        free(check->expert);
        check->expert = NULL;
    }
    struct shape_timing st;
    memset(&st, 0, sizeof(st));
    st.expert_ok = expert && a->expert_check && a->expert_check->passed.set && a->expert_check->passed.v;
    struct timed_check tc;
    memset(&tc, 0, sizeof(tc));
    int rc = check_sets(ws, cand, a, b, timing, where, check, &tc, ph, f);
    if (rc)
        return rc;
    if (!timing)
        return 0;

    st.start_s = temper_now_s();
    worker_doing(ws->shared, WORKER_RUNNING, "timing %s at %s", cand->cand.path, where);
    st.samples = malloc(2 * MAX_SAMPLES * sizeof(double));
    if (!st.samples)
        return fail_with(f, TEMPER_VERDICT_RUNTIME_ERROR, "out of host memory");
    st.expert_samples = st.samples + MAX_SAMPLES;
    /* The baseline is timed interleaved with the candidate while its time in this evaluation stays
     * within a tenth of the budget or twice the candidate's (always its first BASE_MIN samples in
     * this worker); its samples join the arena's pool, whose median is reported. A baseline about
     * as fast as the candidate is so timed in every round; one a hundred times slower, a few times
     * per worker. */
    st.base_allow_ms = 0.1 * budget_s * 1e3;
    rc = warm_up(ws, cand, expert, a, budget_s, where, &tc, &st, f);
    st.loop_start_s = temper_now_s();
    if (!fresh_draws)
        fresh_draws = temper_secret_seed() | 1;
    if (!rc)
        rc = take_samples(ws, cand, expert, a, budget_s, where, &tc, &st, f);
    /* Nothing that must not change may have changed during timing. A failure during timing skips
     * that check, so the arena is dropped then too: a kernel that also wrote into its inputs must
     * not leave them changed for the next candidate. */
    if (!rc)
        rc = check_memory(ws, a, -1, OUT_CAND, f);
    if (!rc)
        rc = check_scratch(ws, a, cand, f);
    if (rc)
        task_state_drop(ws, &s->bench[b]);
    check->timed_output_verified = opt_bool(!rc);
    check->timed_launches_verified = opt_int(tc.launches);
    check->timed_launches_by_tolerance = opt_int(tc.by_tolerance);
    check->timed_inputs_fresh = opt_int(st.fresh);
    check->timed_answer = strdup(st.expert_ok ? "expert" : "baseline");
    if (!rc) {
        rc = judge_timing(ws, shape, shape_text, where, calib, expert, a, &st, tm, f);
        *timed = 1; /* the record stands, whatever the verdict on it */
    }
    free(st.samples);
    ph->timing_ms += (temper_now_s() - st.start_s) * 1e3;
    return rc;
}
