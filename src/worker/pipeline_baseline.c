/* pipeline_baseline.c: trust in the task's own kernels. At the bench shapes every candidate is
 * judged against the baseline's output (and the expert is timed beside it), so before either is
 * used there it is checked against the C reference at every check shape of the task, once per
 * task state (the task and seeds: its content and the device do not change within one). A
 * baseline that is wrong there, fails, crashes or hangs is the task's error, never a verdict of
 * the candidate in flight: the job ends with an error naming the task, the baseline file and what
 * it did. While the baseline runs, the worker's page says so (WORKER_BASELINE), so that the parent
 * makes a crash or a hung launch there the task's error too (worker.c). An expert (a vendor
 * routine) that is wrong is only left out of timing, as one that fails at the bench shape is. */
#include <stdio.h>
#include <string.h>

#include "pipeline_impl.h"

/* The check arenas the baseline and the expert are checked in: those of the secret seed, which
 * the candidate's own checks make at every check shape (the public seed's are skipped on a CPU
 * device past 65,536), so that no reference runs again. */
#define VERIFY_SEED 1

int baseline_fault(struct worker_state *ws, const char *what, struct failure *f)
{
    struct task_state *s = &ws->s;
    char inner[sizeof(f->message)];
    snprintf(inner, sizeof(inner), "%s", f->message);
    f->task_error = 1;
    return fail_with(f, TEMPER_VERDICT_INVALID,
                     TEMPER_TASK_ERROR_PREFIX "the baseline %s of task %s %s, so no candidate can be judged against "
                     "it: %s",
                     s->base.cand.path, s->task.name, what, inner);
}

int baseline_run(struct worker_state *ws, struct arena *a, int variant, int set, int which, const char *where,
                 struct failure *f)
{
    struct task_state *s = &ws->s;
    char doing[sizeof(ws->shared->doing)];
    snprintf(doing, sizeof(doing), "%s", ws->shared ? ws->shared->doing : "");
    worker_doing(ws->shared, WORKER_BASELINE, "running the baseline %s of task %s at %s", s->base.cand.path,
                 s->task.name, where);
    int rc = plan_run(ws, &s->base, a, variant, set, which, f);
    if (!rc)
        rc = check_memory(ws, a, variant, set, f);
    worker_doing(ws->shared, WORKER_RUNNING, "%s", doing);
    return rc ? baseline_fault(ws, "failed", f) : 0;
}

/* Runs p (the baseline, or the expert when expert is set) on the arena of check shape i and
 * compares its outputs with the C reference's. Returns 0 when they match; -1 with f saying why:
 * a wrong output (verdict incorrect, the mismatch named), or a failure to run (any other). */
static int run_against_reference(struct worker_state *ws, struct plan *expert, int i, struct phases *ph,
                                 struct failure *f)
{
    struct task_state *s = &ws->s;
    struct arena *a = check_arena(ws, i, VERIFY_SEED, ph, f);
    if (!a)
        return -1;
    char where[512];
    snprintf(where, sizeof(where), "shape %s, secret seed", a->shape_text);
    double t0 = temper_now_s();
    int rc = expert ? plan_run(ws, expert, a, 0, OUT_CAND, 0, f) : baseline_run(ws, a, 0, OUT_CAND, 0, where, f);
    if (!rc && expert)
        rc = check_memory(ws, a, 0, OUT_CAND, f);
    if (rc) {
        /* Whatever failed may have left the arena changed: the candidates' next checks make it anew. */
        task_state_drop(ws, &s->check[i][VERIFY_SEED]);
        return -1;
    }
    void *got[TEMPER_MAX_ARGS] = {0};
    rc = read_outputs(ws, a, OUT_CAND, got, f);
    double t1 = temper_now_s();
    ph->device_ms += (t1 - t0) * 1e3;
    if (!rc) {
        struct compared scratch;
        memset(&scratch, 0, sizeof(scratch));
        rc = compare_with_reference(a, got, where, &scratch, f);
    }
    free_outputs(got, s->task.nargs);
    ph->compare_ms += (temper_now_s() - t1) * 1e3;
    return rc;
}

int baseline_verify(struct worker_state *ws, struct phases *ph, struct failure *f)
{
    struct task_state *s = &ws->s;
    for (int i = 0; !s->base_verified && i < s->task.ncheck; i++) {
        if (run_against_reference(ws, NULL, i, ph, f))
            /* A run that failed is the task's error already (baseline_run); a wrong output is too. */
            return f->task_error ? -1 : f->verdict == TEMPER_VERDICT_INCORRECT ? baseline_fault(ws, "is wrong", f) : -1;
    }
    s->base_verified = 1;
    return 0;
}

int expert_verify(struct worker_state *ws, struct plan *expert, struct phases *ph, struct failure *f)
{
    struct task_state *s = &ws->s;
    for (int i = 0; !s->expert_verified && i < s->task.ncheck; i++) {
        struct failure ef = {TEMPER_VERDICT_CORRECT, "", 0};
        if (!run_against_reference(ws, expert, i, ph, &ef))
            continue;
        if (ef.task_error) { /* the reference's own fault: the task's error, whoever asked */
            *f = ef;
            return -1;
        }
        /* A routine that cannot run at a shape (cuBLASLt has no algorithm for some) says nothing of
         * its answers; a wrong answer leaves it out. */
        if (ef.verdict == TEMPER_VERDICT_INCORRECT) {
            s->expert_verified = -1;
            snprintf(s->expert_fault, sizeof(s->expert_fault), "the expert %s disagrees with the C reference: %.900s",
                     expert->expert, ef.message);
        }
    }
    if (!s->expert_verified)
        s->expert_verified = 1;
    if (s->expert_verified < 0)
        return fail_with(f, TEMPER_VERDICT_INCORRECT, "%s", s->expert_fault);
    return 0;
}
