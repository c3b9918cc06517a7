/* pipeline_impl.h: what the files of the worker's pipeline share, in layers that call only
 * downwards: pipeline.c (requests and replies) over pipeline_timing.c (bench shapes) over
 * pipeline_floor.c (the roofline and impossible times) and pipeline_baseline.c (the task's
 * baseline and expert checked against its reference) over pipeline_verify.c (check shapes and
 * comparisons) over pipeline_fresh.c (timed launches' inputs) over pipeline_arena.c (buffers,
 * launches, integrity checks) over pipeline_build.c (builds), with devcheck.c (device-side checks)
 * between the arena and the builds. The structs they work on are in worker_impl.h. */
#ifndef TEMPER_PIPELINE_IMPL_H
#define TEMPER_PIPELINE_IMPL_H

#include "temper/result.h"
#include "eval/worker_impl.h"

/* Timings of the pipeline's stages, in milliseconds. */
struct phases {
    double build_ms;     /* building candidate and baseline */
    double inputs_ms;    /* drawing inputs, allocating and uploading them (once per task state) */
    double reference_ms; /* running the C reference and the baseline for expected outputs */
    double device_ms;    /* device runs, reads and integrity checks */
    double compare_ms;   /* comparisons */
    double timing_ms;    /* the timing protocol */
};

/* Values for the optional members of the result's records (result.h), which the worker fills and
 * the generated writers write. */
static inline struct temper_opt_f64 opt_real(double v)
{
    struct temper_opt_f64 o = {1, v};
    return o;
}
static inline struct temper_opt_i64 opt_int(int64_t v)
{
    struct temper_opt_i64 o = {1, v};
    return o;
}
static inline struct temper_opt_bool opt_bool(int v)
{
    struct temper_opt_bool o = {1, v != 0};
    return o;
}

/* What one comparison of outputs found (compare_with_reference, compare_with_expected,
 * compare_sets), for a check or bench check record to keep (COMPARED_INTO). */
struct compared {
    int recorded;            /* it ran to its end: the errors and counts below are set */
    double max_abs_err;      /* largest absolute error over the outputs */
    double max_rel_err;      /* largest relative error */
    int64_t mismatches;      /* elements outside the tolerance */
    int64_t nonfinite;       /* of those, NaN or inf where the answer is finite */
    int64_t elements;        /* elements compared */
    int mismatched;          /* an element was outside the tolerance: the first one is described below */
    const char *output;      /* its output's name (the task's) */
    int64_t index;           /* its flat index */
    char position[128];      /* its position, as [i][j] */
    double got, expected;    /* what the kernel wrote there, and what it should have */
    char got_text[32];       /* got as text (NaN and infinities too) */
};

/* The counts of c into a check or bench check record rec (both name them alike). */
#define COMPARED_COUNTS(rec, c)                                                                               \
    ((rec)->max_abs_err = opt_real((c)->max_abs_err), (rec)->max_rel_err = opt_real((c)->max_rel_err),      \
     (rec)->mismatches = opt_int((c)->mismatches), (rec)->nonfinite = opt_int((c)->nonfinite),              \
     (rec)->elements = opt_int((c)->elements))
/* What comparison c found, into a check or bench check record rec: its counts and whether it passed,
 * once it ran to its end, and its first mismatch (replacing any recorded before), if it had one. */
#define COMPARED_INTO(rec, c)                                                                                 \
    do {                                                                                                      \
        if ((c)->recorded) {                                                                                  \
            COMPARED_COUNTS(rec, c);                                                                          \
            (rec)->passed = opt_bool(!(c)->mismatched);                                                       \
        }                                                                                                     \
        if ((c)->mismatched)                                                                                  \
            compared_mismatch(&(rec)->first_mismatch, c);                                                     \
    } while (0)

/* ---- pipeline_build.c ---- */

/* Parses and builds a candidate with the given knob values (an object, or NULL for defaults), in
 * language lang ("cuda", "opencl" or "triton"; NULL: from path's extension). A Triton candidate is
 * not built here but loaded from the build cache, where the calling program stored what a compile
 * process built (built_by: its compiler, "triton 3.6.0"). A build failure gives verdict
 * compile_error (or invalid for a launch naming no kernel). The plan is the caller's to free with
 * plan_free, whether or not this fails. */
int plan_build(struct worker_state *ws, const char *path, const char *lang, const char *source, json_t *knobs,
               const char *extra_flags, const char *built_by, struct temper_buf *log, struct plan *p,
               struct failure *f);

/* ---- pipeline_arena.c ---- */

/* Allocates a guarded slot of bytes in the arena (its guard zones filled with the slot's canary). */
int arena_slot_alloc(struct worker_state *ws, struct arena *a, size_t bytes, struct slot *s, char *msg, size_t n);
/* Checks that a buffer that must not change still has its checksum (host: its contents when they
 * were written, to name the first changed element; may be NULL). */
int arena_check_unchanged(struct worker_state *ws, struct arena *a, struct slot *s, const void *host,
                          const struct temper_task_arg *arg, const char *what, struct failure *f);
/* Frees what a plan holds (its module, scratch buffers and parsed candidate) and zeroes it. */
void plan_free(struct worker_state *ws, struct plan *p);
/* Allocates every buffer of a shape, uploads fresh inputs drawn from the seeds and records their
 * checksums. Caller frees with arena_free. */
struct arena *arena_new(struct worker_state *ws, const struct temper_task *t, const struct temper_shape *shape,
                        int nvariants, int nsets, const uint64_t *seeds, uint64_t secret, struct failure *f);
void arena_free(struct worker_state *ws, struct arena *a);
/* The C reference's outputs of n elements (a->want) lie in pages of their own, readable only
 * while temper's own code reads them (want_open(a, 1) ... want_open(a, 0)) and unreadable
 * otherwise: a candidate's kernel, which runs in this process on an in-process device, faults on
 * them instead of copying the answer. want_alloc gives writable pages (NULL when out of memory). */
double *want_alloc(int64_t n);
void want_free(double *want, int64_t n);
void want_open(struct arena *a, int readable);
/* Poisons the outputs of one set and every scratch buffer of the plan. */
int poison_outputs(struct worker_state *ws, struct arena *a, struct plan *p, int set, int which, char *msg, size_t n);
/* Poisons every scratch buffer of the plan. */
int poison_scratch(struct worker_state *ws, struct plan *p, int which, char *msg, size_t n);
/* A plan's launches resolved at one shape: the launch group to run and each line's geometry and
 * arguments (tensor maps in tmaps, which args point into). */
struct plan_launches {
    int first, end;                                    /* the launch lines to run, [first, end) */
    struct temper_launch_dims dims[TEMPER_MAX_LAUNCHES]; /* each line's geometry */
    int nargs[TEMPER_MAX_LAUNCHES];                    /* each line's argument count */
    struct temper_karg args[TEMPER_MAX_LAUNCHES][TEMPER_MAX_LAUNCH_ARGS]; /* its arguments */
    struct temper_tensormap tmaps[TEMPER_MAX_LAUNCHES][TEMPER_MAX_LAUNCH_ARGS]; /* its tensor maps */
};
/* Resolves the plan's launches at the arena's shape (the launch group, every expression, every
 * argument) without queueing anything, so that a timed run queues only launches; nothing for an
 * expert. */
int plan_prepare(struct worker_state *ws, struct plan *p, struct arena *a, int variant, int set,
                 struct plan_launches *pl, struct failure *f);
/* Queues what plan_prepare resolved: every launch line in order, or the expert's vendor routine. */
int plan_submit(struct worker_state *ws, struct plan *p, struct arena *a, int variant, int set,
                const struct plan_launches *pl, struct failure *f);
/* plan_prepare then plan_submit. */
int plan_launch(struct worker_state *ws, struct plan *p, struct arena *a, int variant, int set, struct failure *f);
/* One untimed run: poison, launch, wait, and the scratch buffers' guard zones checked. */
int plan_run(struct worker_state *ws, struct plan *p, struct arena *a, int variant, int set, int which,
             struct failure *f);
/* Reads every output of a set into malloc'ed host arrays (caller frees with free_outputs). */
int read_outputs(struct worker_state *ws, struct arena *a, int set, void **host, struct failure *f);
void free_outputs(void **host, int n);
/* Checks the guard zones of every scratch buffer of a plan. */
int check_scratch(struct worker_state *ws, struct arena *a, struct plan *p, struct failure *f);
/* After runs: guards of every buffer used intact, inputs and expected outputs unchanged (variant:
 * one input set, FRESH_SET included, or -1 for all). */
int check_memory(struct worker_state *ws, struct arena *a, int variant, int set, struct failure *f);
/* Makes the task state belong to this task and these seeds, dropping what belonged to others. */
int task_state_prepare(struct worker_state *ws, const char *task_dir, uint64_t seed, uint64_t secret, char *msg,
                    size_t n);
/* Drops an arena a kernel may have corrupted, so the next evaluation builds it afresh. */
void task_state_drop(struct worker_state *ws, struct arena **slot);

/* ---- pipeline_fresh.c ---- */

/* Draws new contents for every input of FRESH_SET on the device (allocating its buffers the first
 * time), from seed and each input's distribution at the arena's shape, and records their
 * checksums. */
int arena_fresh_inputs(struct worker_state *ws, struct arena *a, uint64_t seed, struct failure *f);
/* Whether FRESH_SET's inputs still hold what arena_fresh_inputs drew (a kernel that changed its
 * inputs could steer the answer it is compared with): drawn again and compared on a GPU, compared
 * with the host's copy on a CPU device. */
int check_fresh_inputs(struct worker_state *ws, struct arena *a, struct failure *f);

/* ---- pipeline_verify.c ---- */

/* The arena of a check shape and seed (0 public, 1 secret) with the C reference's outputs: made on
 * first use (inputs drawn, the reference run, whose crash or hang is the task's error), then kept
 * for the task state. NULL, with f saying why, on a failure. */
struct arena *check_arena(struct worker_state *ws, int shape_index, int seed_index, struct phases *ph,
                          struct failure *f);
/* Compares every output (host arrays, as read_outputs gives them) with the C reference's outputs
 * in the arena, recording the errors in check; a mismatch fails f (incorrect) naming where. */
int compare_with_reference(struct arena *a, void **got, const char *where, struct compared *check, struct failure *f);

/* Compares the outputs of one set with the baseline's expected outputs for a variant, recording
 * the errors in check; a mismatch fails f with a message that names where. */
int compare_with_expected(struct worker_state *ws, struct arena *a, int set, int variant, const char *where,
                          struct compared *check, struct failure *f);
/* Compares the outputs of one set with those of another (answer, made by the trusted routine
 * named by who, such as "the baseline on this device"), as compare_with_expected does. */
int compare_sets(struct worker_state *ws, struct arena *a, int set, int answer, const char *who, const char *where,
                 struct compared *check, struct failure *f);
/* Sets *first to the first mismatch c found (a new record, or the one there refilled); left NULL
 * when out of memory. */
void compared_mismatch(struct temper_result_mismatch **first, const struct compared *c);
/* The names of the two seeds of a check ("public", "secret"), as results give them. */
extern const char *const check_seed_names[2];
/* Writes the C reference's outputs in a check arena (shape_text, seed 0 or 1) at *at of fd and
 * appends where to checks, for the truth frame (worker_impl.h); 0, or -1 when a write failed. On
 * a device whose kernels run in this process, a check then also hands over the candidate's
 * outputs of its first run. */
int truth_add(json_t *checks, struct arena *a, const char *shape_text, int seed_index, int fd, off_t *at);
/* The correctness protocol at one check shape and seed, recorded in check (zeroed by the caller);
 * on a device whose kernels run in this process, *outputs_at says where the candidate's outputs
 * were handed over (hand_over_outputs; not a field of the result: the calling program reads and
 * removes it). */
int check_shape(struct worker_state *ws, struct plan *p, int shape_index, int seed_index,
                struct temper_result_check *check, json_t **outputs_at, struct phases *ph, struct failure *f);

/* ---- pipeline_baseline.c ---- */

/* Makes f (a failure of the task's baseline, which does what says: "failed", "is wrong") the
 * task's error, naming the task and the baseline's file; returns -1. */
int baseline_fault(struct worker_state *ws, const char *what, struct failure *f);
/* One untimed run of the task's baseline (plan_run, then check_memory of the set), the worker's
 * page saying WORKER_BASELINE meanwhile; a failure is the task's error (baseline_fault), naming
 * where. */
int baseline_run(struct worker_state *ws, struct arena *a, int variant, int set, int which, const char *where,
                 struct failure *f);
/* Checks the baseline against the C reference at every check shape, once per task state; a wrong
 * output or a failed run is the task's error. Call before the baseline is used at a bench shape. */
int baseline_verify(struct worker_state *ws, struct phases *ph, struct failure *f);
/* Checks the expert against the C reference at every check shape where it runs, once per task state:
 * -1 with f (incorrect, the mismatch named) when it is wrong somewhere, so that it is left out of
 * timing; -1 with f->task_error for the reference's own fault. */
int expert_verify(struct worker_state *ws, struct plan *expert, struct phases *ph, struct failure *f);

/* ---- pipeline_floor.c ---- */

/* Places a timing on the device's roofline (the measured ceilings calib) and holds its samples
 * (sorted ascending, n of them; median med, the baseline's median bmed) against the floor at the
 * measured peak: sets roofline_floor_ms, roofline_share, baseline_roofline_share, bound,
 * compute_ceiling, impossible, impossible_floor_ms, samples_under_floor and ceilings in tm, and
 * fails f (incorrect) naming where when a time is impossible. Without ceilings, sets nothing. */
int floor_judge(const struct worker_state *ws, const struct temper_task *t, json_t *calib, int64_t flops,
                int64_t bytes, const double *samples, int n, double med, double bmed, const char *where,
                struct temper_result_timing *tm, struct failure *f);

/* ---- pipeline_timing.c ---- */

/* One bench shape: checks against the baseline, recorded in check, and, if timing, the timing
 * protocol, recorded in tm, which *timed then says (both zeroed by the caller, who frees them). */
int bench_shape(struct worker_state *ws, struct plan *cand, struct plan *expert, int b, int timing, double budget_s,
                json_t *calib, struct temper_result_bench_check *check, struct temper_result_timing *tm, int *timed,
                struct phases *ph, struct failure *f);

#endif
