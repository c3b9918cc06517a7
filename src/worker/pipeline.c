/* pipeline.c: the worker side of an evaluation, top layer: requests in, results out. It opens the
 * device, runs the correctness protocol (pipeline_verify.c) and the timing protocol
 * (pipeline_timing.c) on plans built by pipeline_build.c in arenas of pipeline_arena.c, and writes
 * the reply. Runs only inside the worker process; the parent sees JSON results. Inputs,
 * reference outputs and the baseline's outputs are kept between evaluations of the same task and
 * seeds (struct task_state), so a stream of candidates pays for them once. */
#include <math.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_impl.h"

#define COMPILE_LOG_MAX (64u << 10)

struct worker_state *worker_state_new(const char *device_spec, struct worker_shared *shared)
{
    struct worker_state *ws = calloc(1, sizeof(*ws));
    if (!ws)
        return NULL;
    snprintf(ws->device_spec, sizeof(ws->device_spec), "%s", device_spec ? device_spec : "");
    ws->shared = shared;
    return ws;
}

static json_t *device_json(const struct temper_device_info *i)
{
    char id[48];
    snprintf(id, sizeof(id), "%s:%d", i->backend, i->index);
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:I, s:I, s:I, s:I, s:I}",
                     "id", id, "name", i->name, "vendor", i->vendor, "platform", i->platform, "driver",
                     i->driver_version, "compiler", i->compiler_version, "arch", i->arch, "class",
                     i->is_gpu ? "gpu" : "cpu", "compute_units", i->compute_units, "cc_major", i->cc_major,
                     "cc_minor", i->cc_minor, "clock_mhz", i->clock_mhz, "mem_bus_bits", i->mem_bus_bits,
                     "global_mem_bytes", (json_int_t)i->global_mem_bytes, "local_mem_bytes",
                     (json_int_t)i->local_mem_bytes, "local_mem_optin_bytes", (json_int_t)i->local_mem_optin_bytes,
                     "cache_bytes", (json_int_t)i->cache_bytes, "max_work_group", (json_int_t)i->max_work_group);
    json_t *caps = json_array();
    for (unsigned bit = 1; bit; bit <<= 1)
        if ((i->caps & bit) && temper_device_cap_name(bit))
            json_array_append_new(caps, json_string(temper_device_cap_name(bit)));
    json_object_set_new(o, "caps", caps);
    json_object_set_new(o, "language", json_string(i->language));
    json_object_set_new(o, "uuid", json_string(i->uuid));
    json_object_set_new(o, "pci_bus_id", json_string(i->pci_bus_id));
    struct temper_dev_attrs attrs;
    temper_dev_attrs_fill(i, &attrs);
    json_t *at = json_object();
    for (int k = 0; k < TEMPER_DEV_ATTRS; k++)
        json_object_set_new(at, attrs.names[k], json_integer((json_int_t)attrs.values[k]));
    json_object_set_new(o, "attrs", at);
    return o;
}

static int ensure_open(struct worker_state *ws, char *msg, size_t n)
{
    if (ws->open)
        return 0;
    worker_doing(ws->shared, WORKER_OPENING, "opening device %s", ws->device_spec[0] ? ws->device_spec : "(default)");
    int err = temper_device_open(ws->device_spec, &ws->dev, msg, n);
    if (err)
        return err;
    ws->dev.fault_note = ws->shared->doing;
    ws->dev.fault_note_size = sizeof(ws->shared->doing);
    ws->open = 1;
    /* The worker kept exec for PoCL's linker. A device whose kernels run elsewhere (CUDA) needs
     * no program: the parent built the task references before sending the job (eval.c), so exec
     * is refused from here on. Not under a profiler, whose injected library may start helpers of
     * its own. (Not keyed on sockets: a CUDA worker keeps them for cuInit.) */
    struct temper_sandbox_status *sb = &ws->shared->sandbox;
    if (!(ws->dev.info.caps & TEMPER_DEVICE_CAP_IN_PROCESS) && sb->seccomp && !worker_profiled())
        temper_sandbox_block_exec(sb);
    return 0;
}

/* Whether a check shape takes a size past 65,536 (the task format's rule for grid limits). */
static int shape_past_grid_limit(const struct temper_shape *shape)
{
    for (int i = 0; i < shape->n; i++)
        if (shape->values[i] > 65536)
            return 1;
    return 0;
}

/* The evaluation this task state holds of the same code, asked the same way, or NULL. */
static const struct same_code *same_code_find(const struct task_state *s, const struct plan *p, int timing,
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

/* The earlier evaluation of the same code, asked the same way, among those the request brings
 * ("same_code": what earlier workers of this handle said, each {"key": same_code_key's object,
 * "result"}: a worker that ran a candidate in-process is replaced after it, so the parent keeps
 * them). Fills *out (its result borrowed from the request); 0 if there is none. */
static int same_code_given(json_t *list, const struct plan *p, int timing, int checks_only, double budget,
                           struct same_code *out)
{
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        json_t *key = json_object_get(e, "key");
        const char *code = json_string_value(json_object_get(key, "code"));
        const char *source = json_string_value(json_object_get(key, "source"));
        const char *knobs = json_string_value(json_object_get(key, "knobs"));
        if (!p->code || !code || !source || !knobs || strtoull(code, NULL, 16) != p->code ||
            strtoull(source, NULL, 16) != p->cand.source_hash || strlen(knobs) != p->knob_len ||
            strncmp(knobs, p->options, p->knob_len) || json_is_true(json_object_get(key, "timing")) != timing ||
            json_is_true(json_object_get(key, "checks_only")) != checks_only ||
            json_number_value(json_object_get(key, "budget")) != budget || !json_is_object(json_object_get(e, "result")))
            continue;
        memset(out, 0, sizeof(*out));
        snprintf(out->path, sizeof(out->path), "%s", json_string_value(json_object_get(key, "path")) ?: "");
        snprintf(out->options, sizeof(out->options), "%s", json_string_value(json_object_get(key, "options")) ?: "");
        out->result = json_object_get(e, "result");
        return 1;
    }
    return 0;
}

/* What same_code_given matches a later build against, for the parent to keep with the result. */
static json_t *same_code_key(const char *path, const struct plan *p, int timing, int checks_only, double budget)
{
    char code[24], source[24];
    snprintf(code, sizeof(code), "%016llx", (unsigned long long)p->code);
    snprintf(source, sizeof(source), "%016llx", (unsigned long long)p->cand.source_hash);
    return json_pack("{s:s, s:s, s:s%, s:b, s:b, s:f, s:s, s:s}", "code", code, "source", source, "knobs", p->options,
                     p->knob_len, "timing", timing, "checks_only", checks_only, "budget", budget, "path",
                     path ? path : "", "options", p->options);
}

/* Keeps a finished evaluation (result, whose verdict is v) for later configurations with the same
 * code. Only verdicts that the code decides (correct, incorrect) are kept: a crash or a hang may not
 * repeat. Returns 1 if it was kept. */
static int same_code_add(struct task_state *s, const char *path, const struct plan *p, int timing, int checks_only,
                         double budget, enum temper_verdict v, json_t *result)
{
    if (!p->code || p->knob_len >= sizeof(s->same[0].knobs) ||
        (v != TEMPER_VERDICT_CORRECT && v != TEMPER_VERDICT_INCORRECT))
        return 0;
    if (!s->same && !(s->same = calloc(SAME_CODE_MAX, sizeof(*s->same))))
        return 0;
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
    return 1;
}

/* The records of one evaluation as the worker makes them (result.h), written at its end by the
 * generated writer (records_write). */
struct eval_records {
    struct temper_result r; /* the result: its checks, bench checks and timings grow as they run */
    json_t **outputs_at;    /* per check: where hand_over_outputs put its outputs (pipeline_verify.c), or NULL */
    size_t outputs_cap, checks_cap, bench_cap, timings_cap; /* entries allocated in each array */
};

/* Makes room for entry n (zeroed) in an array of entries of size bytes (*cap of them allocated);
 * 0 when out of memory. Earlier entries may move. */
static int list_grow(void **v, size_t n, size_t *cap, size_t size)
{
    if (n == *cap) {
        size_t want = *cap ? 2 * *cap : 16;
        void *p = realloc(*v, want * size);
        if (!p)
            return 0;
        *v = p;
        *cap = want;
    }
    memset((char *)*v + n * size, 0, size);
    return 1;
}

/* Appends a zeroed entry to a generated list (result.h); the entry, or NULL when out of memory. */
#define LIST_ADD(list, cap)                                                                                   \
    (list_grow((void **)&(list).v, (list).n, &(cap), sizeof(*(list).v)) ? &(list).v[(list).n++] : NULL)
/* The message of a list's last record, NULL when it has none. */
#define LAST_MESSAGE(list) ((list).n ? &(list).v[(list).n - 1].message : NULL)

/* Appends a check, with *outputs_at where its outputs' places go; NULL when out of memory. */
static struct temper_result_check *check_add(struct eval_records *e, json_t ***outputs_at)
{
    if (!list_grow((void **)&e->outputs_at, e->r.checks.n, &e->outputs_cap, sizeof(*e->outputs_at)))
        return NULL;
    *outputs_at = &e->outputs_at[e->r.checks.n];
    return LIST_ADD(e->r.checks, e->checks_cap);
}

static void records_free(struct eval_records *e)
{
    for (size_t i = 0; i < e->r.checks.n; i++)
        json_decref(e->outputs_at[i]);
    free(e->outputs_at);
    temper_result_free(&e->r);
    memset(e, 0, sizeof(*e));
}

/* Writes the result with the generated writer, then adds to its checks where their outputs were
 * handed over: not a field of the result, the calling program reads and removes it
 * (worker_truth.c). */
static json_t *records_write(const struct eval_records *e)
{
    json_t *reply = temper_result_to_json(&e->r);
    json_t *checks = json_object_get(reply, "checks");
    for (size_t i = 0; i < e->r.checks.n; i++)
        if (e->outputs_at[i])
            json_object_set(json_array_get(checks, i), "outputs_at", e->outputs_at[i]);
    return reply;
}

/* Records a failed check: its message on the check's record (the last of its list: message, NULL
 * when there is none), and the first failure as the evaluation's. Returns whether checking stops:
 * always, unless keep_going and the failure is a wrong answer or a plan invalid at that shape, which
 * say nothing about the device (a crash or a fault may have left it unusable). */
static int note_failure(char **message, const struct failure *fk, int keep_going, int *failed, struct failure *first)
{
    if (message) {
        free(*message);
        *message = strdup(fk->message);
    }
    if (!(*failed)++ || fk->task_error)
        *first = *fk;
    return !keep_going || fk->task_error ||
           (fk->verdict != TEMPER_VERDICT_INCORRECT && fk->verdict != TEMPER_VERDICT_INVALID);
}

/* On a device whose kernels run in this process: every check arena made (inputs drawn, the
 * reference run) before the candidate's kernel first runs, and the reference's outputs sent to
 * the calling program, which judges the reply by them (worker_truth.c). An arena that cannot be
 * made fails the evaluation as the check at its shape would (appended to checks, f says why):
 * -1; else 0. */
static int send_truth(struct worker_state *ws, struct phases *ph, struct eval_records *e, struct failure *f)
{
    const struct temper_task *t = &ws->s.task;
    int fd = worker_truth_out(WORKER_TRUTH_FD);
    if (fd < 0)
        return 0;
    json_t *truth = json_array();
    off_t at = 0;
    int wrote = 0;
    for (int i = 0; i < t->ncheck; i++) {
        char shape_text[256];
        temper_shape_format(&t->check[i], shape_text, sizeof(shape_text));
        for (int k = shape_past_grid_limit(&t->check[i]) ? 1 : 0; k < 2; k++) {
            struct arena *a = check_arena(ws, i, k, ph, f);
            if (!a) {
                json_decref(truth);
                json_t **outputs_at;
                struct temper_result_check *check = check_add(e, &outputs_at);
                if (check) {
                    check->shape = strdup(shape_text);
                    check->seed = strdup(check_seed_names[k]);
                }
                return -1;
            }
            wrote |= truth_add(truth, a, shape_text, k, fd, &at);
        }
    }
    /* Sealed, the reference's outputs cannot change, whatever runs in this process later. */
    if (!wrote && !fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)) {
        json_t *msg = json_pack("{s:{s:f, s:f, s:o}}", "truth", "atol", t->atol, "rtol", t->rtol, "checks", truth);
        if (msg)
            worker_tell(msg);
        json_decref(msg);
    } else {
        json_decref(truth);
    }
    return 0;
}

/* Builds the task state's baseline, once: on failure, the task's error in msg and -1. */
static int baseline_build(struct worker_state *ws, const char *base_path, char *msg, size_t msg_size,
                          struct failure *f)
{
    struct task_state *s = &ws->s;
    struct temper_buf base_log;
    temper_buf_init(&base_log, COMPILE_LOG_MAX);
    if (plan_build(ws, base_path, NULL, NULL, NULL, NULL, NULL, &base_log, &s->base, f)) {
        snprintf(msg, msg_size, TEMPER_TASK_ERROR_PREFIX "the baseline %s of task %s does not build: %s\n%s",
                 base_path, s->task.name, f->message, base_log.data ? base_log.data : "");
        temper_buf_free(&base_log);
        plan_free(ws, &s->base);
        return -1;
    }
    temper_buf_free(&base_log);
    s->base_built = 1;
    return 0;
}

/* The reply for code evaluated before in this task state (or given with the request), asked the
 * same way: that result, with this build's compile log, options and cache hit (taken from now). */
static json_t *same_code_reply(const struct same_code *same, struct temper_result *now, double build_ms, double start)
{
    /* Read leniently: it is a reply of an earlier worker, kept as it was sent (by the parent, for
     * one given with the request), not yet in the one form. */
    struct temper_result r;
    if (temper_result_from_stored(same->result, &r))
        return worker_error_reply("out of host memory", TEMPER_ENOMEM);
    free(r.compile_log);
    r.compile_log = now->compile_log;
    now->compile_log = NULL;
    free(r.options);
    r.options = now->options;
    now->options = NULL;
    r.cache_hit = now->cache_hit;
    free(r.same_code_as);
    r.same_code_as = strdup(same->options);
    free(r.same_code_path);
    r.same_code_path = strdup(same->path);
    char said[sizeof(((struct failure *)0)->message) + sizeof(same->path) + sizeof(same->options) + 64];
    snprintf(said, sizeof(said), "%s (not run again: the code is that of %s with options '%s')",
             r.message ? r.message : "", same->path, same->options);
    free(r.message);
    r.message = strdup(said);
    /* Its phases are this reply's: the build, and the worker's time. */
    temper_result_phases_free(r.phases_ms);
    if (r.phases_ms || (r.phases_ms = calloc(1, sizeof(*r.phases_ms)))) {
        r.phases_ms->build = opt_real(build_ms);
        r.phases_ms->worker = opt_real((temper_now_s() - start) * 1e3);
    }
    json_t *reply = temper_result_to_json(&r);
    temper_result_free(&r);
    return reply;
}

/* For a profiler watching this process: the candidate's launches at the first bench shape, with
 * nothing checked. */
static int profile_run_once(struct worker_state *ws, struct plan *cand, uint64_t secret, struct failure *f)
{
    struct temper_task *task = &ws->s.task;
    struct arena *a = arena_new(ws, task, ws->dev.info.is_gpu ? &task->bench_gpu[0] : &task->bench_cpu[0], 1, 1,
                                &secret, secret, f);
    int rc = a ? plan_run(ws, cand, a, 0, OUT_CAND, 0, f) : -1;
    arena_free(ws, a);
    if (!rc)
        fail_with(f, TEMPER_VERDICT_CORRECT, "profile run only: ran once at the first bench shape, unchecked");
    return rc;
}

/* How an evaluation's checks went so far. */
struct tally {
    int keep_going; /* check every shape after a wrong answer (the request's keep_going) */
    int failed;     /* checks failed */
    int nchecks;    /* checks run */
    int stop;       /* no more checks */
    int nsingle;    /* check shapes run with the secret seed only */
};

/* The check shapes, each with both seeds (past 65,536 on a CPU device, the secret one only),
 * after the reference's outputs are sent where kernels run in this process. */
static void check_shapes(struct worker_state *ws, struct plan *cand, int in_process, struct eval_records *e,
                         struct phases *ph, struct tally *n, struct failure *f)
{
    const struct temper_task *task = &ws->s.task;
    if (in_process && !n->stop) {
        struct failure fk = {TEMPER_VERDICT_CORRECT, "", 0};
        if (send_truth(ws, ph, e, &fk)) {
            note_failure(LAST_MESSAGE(e->r.checks), &fk, 0, &n->failed, f);
            n->stop = 1;
        }
    }
    for (int i = 0; i < task->ncheck && !n->stop; i++) {
        /* The shapes past 65,536 (docs/task.md's rule) are there for grid limits and small-shape
         * shortcuts, which do not depend on the values drawn: on a CPU device, where each of their
         * many work-groups costs microseconds, they run with the secret seed only (which no
         * candidate can have seen). */
        int seeds = in_process && shape_past_grid_limit(&task->check[i]) ? 1 : 2;
        n->nsingle += seeds == 1;
        for (int k = 2 - seeds; k < 2 && !n->stop; k++) {
            struct failure fk = {TEMPER_VERDICT_CORRECT, "", 0};
            n->nchecks++;
            json_t **outputs_at = NULL;
            struct temper_result_check *check = check_add(e, &outputs_at);
            int rc = check ? check_shape(ws, cand, i, k, check, outputs_at, ph, &fk)
                           : fail_with(&fk, TEMPER_VERDICT_RUNTIME_ERROR, "out of host memory");
            if (rc)
                n->stop = note_failure(LAST_MESSAGE(e->r.checks), &fk, n->keep_going, &n->failed, f);
        }
    }
}

/* The bench shapes, after the baseline is checked against the reference (once per task state: a
 * wrong or broken one is the task's error); each shape's timing joins the timings. */
static void bench_shapes(struct worker_state *ws, struct plan *cand, struct plan *expert, int nbench, int timing,
                         double budget, json_t *calib, struct eval_records *e, struct phases *ph, struct tally *n,
                         struct failure *f)
{
    if (!f->task_error && nbench && !n->stop) {
        struct failure fk = {TEMPER_VERDICT_CORRECT, "", 0};
        if (baseline_verify(ws, ph, &fk))
            n->stop = note_failure(LAST_MESSAGE(e->r.bench_checks), &fk, n->keep_going, &n->failed, f);
    }
    for (int b = 0; b < nbench && !n->stop && !f->task_error; b++) {
        struct failure fk = {TEMPER_VERDICT_CORRECT, "", 0};
        n->nchecks++;
        struct temper_result_bench_check *check = LIST_ADD(e->r.bench_checks, e->bench_cap);
        struct temper_result_timing *tm = LIST_ADD(e->r.timings, e->timings_cap);
        int timed = 0;
        int rc = check && tm ? bench_shape(ws, cand, expert, b, timing && !n->failed, budget > 0 ? budget : 2.0, calib,
                                           check, tm, &timed, ph, &fk)
                             : fail_with(&fk, TEMPER_VERDICT_RUNTIME_ERROR, "out of host memory");
        if (tm && !timed) { /* not timed: no record */
            temper_result_timing_free(tm);
            e->r.timings.n--;
        }
        if (rc)
            n->stop = note_failure(LAST_MESSAGE(e->r.bench_checks), &fk, n->keep_going, &n->failed, f);
    }
}

/* The evaluation's message: how many checks failed (keep_going), or what passed. */
static void verdict_message(struct temper_result *result, const struct temper_task *task, const struct tally *n, int nbench,
                            int timing, int profile_run, struct failure *f)
{
    if (n->keep_going) {
        result->failed_checks = opt_int(n->failed);
        if (n->failed > 1) {
            size_t used = strlen(f->message);
            snprintf(f->message + used, sizeof(f->message) - used, " (the first of %d failed checks of %d)",
                     n->failed, n->nchecks);
        }
    }
    if (f->verdict == TEMPER_VERDICT_CORRECT && !profile_run) {
        char single[96] = "";
        if (n->nsingle)
            snprintf(single, sizeof(single), " (%d past 65,536 with the secret seed only, on this CPU device)",
                     n->nsingle);
        snprintf(f->message, sizeof(f->message), "passed %d check shapes x 2 seeds%s and %d bench shape%s%s",
                 task->ncheck, single, nbench, nbench == 1 ? "" : "s",
                 !nbench ? "" : timing ? ", timed" : " (compared with the baseline, not timed)");
    }
}

/* The result's verdict, message, task, baseline, expert and device class, and the time of each
 * phase. */
static void result_fill(struct worker_state *ws, struct temper_result *r, const struct failure *f,
                        const char *base_path, const char *expert, const struct phases *ph, double start)
{
    r->verdict = strdup(temper_verdict_name(f->verdict));
    r->message = strdup(f->message);
    r->task = strdup(ws->s.task.name);
    r->baseline = strdup(base_path);
    if (expert)
        r->expert = strdup(expert);
    r->device_class = strdup(ws->dev.info.is_gpu ? "gpu" : "cpu");
    if ((r->phases_ms = calloc(1, sizeof(*r->phases_ms)))) {
        r->phases_ms->build = opt_real(ph->build_ms);
        r->phases_ms->inputs = opt_real(ph->inputs_ms);
        r->phases_ms->reference = opt_real(ph->reference_ms);
        r->phases_ms->device = opt_real(ph->device_ms);
        r->phases_ms->compare = opt_real(ph->compare_ms);
        r->phases_ms->timing = opt_real(ph->timing_ms);
        r->phases_ms->worker = opt_real((temper_now_s() - start) * 1e3);
    }
}

/* Frees what an evaluation made besides its reply. */
static void job_parts_free(struct worker_state *ws, struct eval_records *e, struct temper_buf *log, struct plan *cand)
{
    records_free(e);
    temper_buf_free(log);
    plan_free(ws, cand);
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
    if (task_state_prepare(ws, task_dir ? task_dir : "", seed, secret, msg, sizeof(msg)))
        return worker_error_reply(msg, TEMPER_EPARSE);
    struct task_state *s = &ws->s;
    struct temper_task *task = &s->task;
    int cuda = !strcmp(ws->dev.info.language, "cuda");
    const char *base_path = cuda ? task->baseline_cuda : task->baseline_opencl;
    struct failure f = {TEMPER_VERDICT_CORRECT, "", 0};
    if (!base_path[0])
        return worker_error_reply("the task has no baseline for this device's language", TEMPER_ENOTFOUND);
    if (!s->base_built && baseline_build(ws, base_path, msg, sizeof(msg), &f))
        return worker_error_reply(msg, TEMPER_ECOMPILE);
    struct plan expert_plan;
    memset(&expert_plan, 0, sizeof(expert_plan));
    expert_plan.expert = cuda && task->expert_cuda[0] && ws->dev.ops->expert ? task->expert_cuda : NULL;
    struct eval_records e;
    memset(&e, 0, sizeof(e));
    struct plan cand;
    struct temper_buf log;
    temper_buf_init(&log, COMPILE_LOG_MAX);
    temper_buf_append(&log, "", 0);
    double t1 = temper_now_s();
    ph.reference_ms += (t1 - t0) * 1e3;
    const char *lang = json_string_value(json_object_get(req, "lang")); /* NULL: path's extension */
    int rc = plan_build(ws, path, lang, source, json_object_get(req, "knobs"),
                        json_string_value(json_object_get(req, "extra_flags")),
                        json_string_value(json_object_get(req, "built_by")), &log, &cand, &f);
    cand.candidate = 1;
    ph.build_ms = (temper_now_s() - t1) * 1e3;
    e.r.compile_log = log.data ? strdup(log.data) : NULL;
    e.r.options = strdup(cand.options);
    e.r.cache_hit = opt_bool(cand.cache_hit);

    int checks_only = json_is_true(json_object_get(req, "checks_only"));
    int profile_run = json_is_true(json_object_get(req, "profile_run"));
    int reuse = !rc && !profile_run && json_is_true(json_object_get(req, "reuse_same_code"));
    const struct same_code *same = reuse ? same_code_find(s, &cand, timing, checks_only, budget) : NULL;
    struct same_code given;
    if (reuse && !same &&
        same_code_given(json_object_get(req, "same_code"), &cand, timing, checks_only, budget, &given))
        same = &given;
    if (same) {
        /* The same code was evaluated in this task state, asked the same way: it gets that result. */
        json_t *copy = same_code_reply(same, &e.r, ph.build_ms, start);
        job_parts_free(ws, &e, &log, &cand);
        return copy;
    }
    int nbench = ws->dev.info.is_gpu ? task->nbench_gpu : task->nbench_cpu;
    if (!rc && profile_run) {
        rc = profile_run_once(ws, &cand, secret, &f);
        nbench = 0;
    }
    /* Checks stop at the first failure, unless the request says keep_going: then every shape is
     * checked after a wrong answer (each failed check says why) and nothing is timed. */
    struct tally n = {json_is_true(json_object_get(req, "keep_going")), 0, 0, rc, 0};
    int in_process = (ws->dev.info.caps & TEMPER_DEVICE_CAP_IN_PROCESS) != 0;
    if (!profile_run)
        check_shapes(ws, &cand, in_process, &e, &ph, &n, &f);
    if (checks_only)
        nbench = 0;
    /* The baseline judges every candidate at the bench shapes. */
    bench_shapes(ws, &cand, expert_plan.expert ? &expert_plan : NULL, nbench, timing, budget, calib, &e, &ph, &n,
                 &f);
    if (f.task_error) {
        /* The reference or the baseline failed the task's contract: no candidate can be judged. A
         * baseline that faulted may have left the device's context unusable (CUDA errors are
         * sticky) or, in process, written anywhere: the next job gets a fresh worker. */
        *fatal = 1;
        job_parts_free(ws, &e, &log, &cand);
        return worker_error_reply(f.message, TEMPER_EINVALID);
    }
    verdict_message(&e.r, task, &n, nbench, timing, profile_run, &f);
    /* After a device fault the context may be unusable (CUDA errors are sticky). Where kernels run
     * in this process (PoCL on a CPU), a candidate that failed in any way may also have written
     * anywhere in it, past every guard zone: the worker is replaced before the next candidate, so
     * that the next, innocent one is not judged by a corrupted process. */
    *fatal = f.verdict == TEMPER_VERDICT_RUNTIME_ERROR ||
             (f.verdict != TEMPER_VERDICT_CORRECT && (ws->dev.info.caps & TEMPER_DEVICE_CAP_IN_PROCESS));
    if (*fatal) /* this worker exits after the reply (worker_serve.c): the result says so */
        e.r.worker_restarted = opt_bool(1);
    result_fill(ws, &e.r, &f, base_path, expert_plan.expert, &ph, start);
    json_t *result = records_write(&e);
    /* The key is not a field of the result: the parent takes it off and keeps it (eval.c). */
    if (!profile_run && same_code_add(s, path, &cand, timing, checks_only, budget, f.verdict, result))
        json_object_set_new(result, "same_code_key", same_code_key(path, &cand, timing, checks_only, budget));
    job_parts_free(ws, &e, &log, &cand);
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
