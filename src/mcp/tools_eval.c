/* tools_eval.c: the tools of `temper mcp` that run kernels, each through the server's one
 * session: evaluate (the result record, and for a kernel that is not correct the evidence the
 * model needs to correct it), profile (CUDA: Nsight Compute's metrics; OpenCL: the roofline
 * only, said plainly) and tune (progress per evaluation, stopped by a cancel). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp.h"
#include "temper/error.h"
#include "temper/kernel.h"
#include "search/tune.h"
#include "util/util.h"

/* A growable text for messages to the model. */
struct text {
    char *s;    /* the text, NUL-terminated; NULL when out of memory */
    size_t len; /* its length */
    size_t cap; /* bytes allocated */
};

static void add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || (!t->s && t->cap))
        return;
    if (t->len + (size_t)n + 1 > t->cap) {
        size_t cap = (t->len + (size_t)n + 1) * 2;
        char *s = realloc(t->s, cap);
        if (!s) {
            free(t->s);
            t->s = NULL;
            t->cap = 1;
            return;
        }
        t->s = s;
        t->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* One failed check (or bench check: no seed, nothing on determinism), as a line the model can act
 * on; the fields are the records' of result.h. */
struct failed_check {
    const char *shape, *seed, *message;                   /* where it failed, and why */
    const struct temper_result_mismatch *first_mismatch; /* the first element outside the tolerance */
    struct temper_opt_i64 mismatches, nonfinite, elements; /* how many were wrong, of how many */
    struct temper_opt_f64 max_abs_err, max_rel_err;       /* by how much */
    const struct temper_result_difference *nondeterministic_at; /* where two runs differed */
};

static void add_check(struct text *t, const char *what, const struct failed_check *c, const char *said)
{
    add(t, "%s at shape %s", what, c->shape);
    if (c->seed)
        add(t, " (seed %s)", c->seed);
    if (c->message && (!said || strcmp(c->message, said))) /* not again when the result's message says it */
        add(t, ": %s", c->message);
    const struct temper_result_mismatch *m = c->first_mismatch;
    if (m)
        add(t, "; first wrong element: %s%s (flat index %lld): got %s, expected %.9g", m->output, m->position,
            (long long)m->index.v, m->got_text ? m->got_text : "?", m->expected.v);
    if (c->mismatches.set && c->mismatches.v)
        add(t, "; %lld elements outside the tolerance (max abs err %.3g, max rel err %.3g)",
            (long long)c->mismatches.v, c->max_abs_err.v, c->max_rel_err.v);
    if (c->nonfinite.set && c->nonfinite.v)
        add(t, "; %lld of %lld outputs NaN or inf (the errors are over the finite ones)", (long long)c->nonfinite.v,
            (long long)c->elements.v);
    if (c->nondeterministic_at)
        add(t, "; two runs on the same input differed at %s%s", c->nondeterministic_at->output,
            c->nondeterministic_at->position);
    add(t, "\n");
}

/* The failed checks, then the failed bench checks, three at most. */
static void add_failed_checks(struct text *t, const struct temper_result *r)
{
    size_t shown = 0;
    for (size_t i = 0; i < r->checks.n; i++) {
        const struct temper_result_check *c = &r->checks.v[i];
        struct failed_check f = {c->shape,     c->seed,      c->message,   c->first_mismatch, c->mismatches,
                                 c->nonfinite, c->elements,  c->max_abs_err, c->max_rel_err, c->nondeterministic_at};
        if (c->passed.set && !c->passed.v && shown++ < 3)
            add_check(t, "failed check", &f, r->message);
    }
    for (size_t i = 0; i < r->bench_checks.n; i++) {
        const struct temper_result_bench_check *c = &r->bench_checks.v[i];
        struct failed_check f = {c->shape,     NULL,        c->message,     c->first_mismatch, c->mismatches,
                                 c->nonfinite, c->elements, c->max_abs_err, c->max_rel_err,    NULL};
        if (c->passed.set && !c->passed.v && shown++ < 3)
            add_check(t, "failed against the baseline", &f, r->message);
    }
}

char *mcp_result_text(const struct temper_result *r)
{
    struct text t = {0};
    const char *verdict = r->verdict;
    add(&t, "verdict: %s\n%s\n", verdict ? verdict : "none", r->message ? r->message : "");
    add_failed_checks(&t, r);
    const struct temper_result_timing *timing = temper_result_first_timing(r);
    if (timing)
        add(&t, "time: %.4g ms at %s, %.3gx the baseline\n", timing->median_ms.v, timing->shape, timing->speedup.v);
    const char *log = r->compile_log;
    if (log && *log && strcmp(verdict ? verdict : "", "correct")) {
        size_t len = strlen(log), quote = len;
        if (len > MCP_LOG_QUOTE) { /* cut at a line's end, so no line is quoted in part */
            quote = MCP_LOG_QUOTE;
            while (quote > MCP_LOG_QUOTE / 2 && log[quote - 1] != '\n')
                quote--;
        }
        add(&t, "compile log%s:\n%.*s%s", quote < len ? " (first part)" : "", (int)quote, log,
            quote && log[quote - 1] == '\n' ? "" : "\n");
        if (quote < len)
            add(&t, "[... %zu more bytes of the compile log in structuredContent.compile_log]\n", len - quote);
    }
    return t.s;
}

/* Typed knob values from the knobs object (strings borrowed from it): text, an integer, or any
 * other value as the number JSON reads it as; *n of them. */
static int knob_values(json_t *knobs, struct temper_knob_value *values, int max, int *n, char *msg, size_t msg_size)
{
    const char *k;
    json_t *v;
    *n = 0;
    json_object_foreach(knobs, k, v) {
        if (*n == max)
            return temper_fail(msg, msg_size, TEMPER_EINVALID, "more than %d knobs", max);
        struct temper_knob_value *kv = &values[(*n)++];
        kv->name = k;
        if (json_is_string(v)) {
            kv->kind = TEMPER_KNOB_TEXT;
            kv->text = json_string_value(v);
        } else if (json_is_integer(v)) {
            kv->kind = TEMPER_KNOB_INT;
            kv->i = json_integer_value(v);
        } else {
            kv->kind = TEMPER_KNOB_REAL;
            kv->r = json_number_value(v);
        }
    }
    return 0;
}

/* Runs one evaluation for a call and waits for it; NULL if the call was cancelled. */
static json_t *run_eval(struct mcp_call *call, struct temper_session *s, struct temper_session_request *req,
                        char *msg, size_t msg_size, int *err)
{
    int64_t id = 0;
    req->made_by = "mcp";
    *err = temper_session_submit(s, req, &id, msg, msg_size);
    if (*err)
        return NULL;
    if (mcp_call_watch_eval(call, s, id))
        temper_session_cancel(s, id);
    json_t *result = NULL;
    *err = temper_session_wait(s, id, &result, msg, msg_size);
    mcp_call_watch_eval(call, s, 0);
    if (!*err && (temper_session_result_cancelled(result) || mcp_call_cancelled(call))) {
        json_decref(result);
        return NULL;
    }
    return result;
}

/* Reads a result the session returned (in the one form, result.h) once; on failure, which would be a
 * bug of the session's, msg says why and result is the tool's structured content. */
static int read_result(json_t *result, struct temper_result *r, char *msg, size_t msg_size)
{
    return temper_result_from_json(result, r, msg, msg_size);
}

/* An error result for a session that could not be opened or a request that could not be made. */
static json_t *session_error(int err, const char *msg)
{
    char text[4200];
    snprintf(text, sizeof(text), "%s%s", err == TEMPER_ENODEVICE && !strstr(msg, "no usable device") ?
             "no usable device: " : "", msg);
    return mcp_tool_result(NULL, text, 1);
}

json_t *mcp_tool_evaluate(struct mcp_call *call, json_t *args)
{
    char msg[4096];
    struct temper_knob_value knobs[64] = {{0}};
    int nknobs = 0;
    if (knob_values(json_object_get(args, "knobs"), knobs, 64, &nknobs, msg, sizeof(msg)))
        return mcp_tool_result(NULL, msg, 1);
    struct temper_session *s = NULL;
    int err = mcp_session(call, json_string_value(json_object_get(args, "device")), &s, msg, sizeof(msg));
    if (err)
        return session_error(err, msg);
    struct temper_session_request req = {0};
    req.source = json_string_value(json_object_get(args, "source"));
    req.lang = json_string_value(json_object_get(args, "lang"));
    req.knobs = knobs;
    req.nknobs = nknobs;
    req.no_timing = json_is_false(json_object_get(args, "timing"));
    req.seed = 1;
    json_t *result = run_eval(call, s, &req, msg, sizeof(msg), &err);
    if (err)
        return session_error(err, msg);
    if (!result)
        return NULL;
    struct temper_result r;
    if (read_result(result, &r, msg, sizeof(msg)))
        return mcp_tool_result(result, msg, 1);
    if (r.error_code.v || !r.verdict || strcmp(r.verdict, "correct")) {
        char *text = mcp_result_text(&r);
        temper_result_free(&r);
        json_t *out = mcp_tool_result(result, text ? text : "out of memory", 1);
        free(text);
        return out;
    }
    struct text t = {0};
    add(&t, "verdict: correct\n%s\n", r.message);
    const struct temper_result_timing *timing = temper_result_first_timing(&r);
    if (timing) {
        add(&t, "time: %.4g ms at %s, %.3gx the baseline", timing->median_ms.v, timing->shape, timing->speedup.v);
        if (timing->roofline_share.set)
            add(&t, ", %.1f%% of the %s roofline", 100 * timing->roofline_share.v, timing->bound);
        if (timing->warning)
            add(&t, " (timing warning: %s)", timing->warning);
        add(&t, "\n");
    }
    temper_result_free(&r);
    json_t *out = mcp_tool_result(result, t.s ? t.s : "verdict: correct", 0);
    free(t.s);
    return out;
}

/* Where the time goes, in one sentence, from the timing and (CUDA) the profiler's metrics. */
static void bottleneck(const struct temper_result_timing *timing, json_t *kernel, char *out, size_t size)
{
    size_t n = 0;
    out[0] = 0;
    if (!timing) {
        snprintf(out, size, "unknown: the kernel was not timed");
        return;
    }
    const char *bound = timing->bound;
    if (!timing->roofline_share.set) {
        n = (size_t)snprintf(out, size, "unknown from the timing: the device has no measured ceilings (run "
                                        "`temper calibrate`)");
    } else {
        double pct = 100 * timing->roofline_share.v;
        n = (size_t)snprintf(out, size, "%s-bound by the task's models, at %.1f%% of the %s roofline%s",
                             bound ? bound : "?", pct, bound ? bound : "?",
                             pct >= 70 ? ": near the floor, little is left to gain without less work"
                             : bound && !strcmp(bound, "memory")
                                 ? ": the access pattern (coalescing, vector width, reuse) is what to improve"
                                 : ": the arithmetic's issue rate (ILP, vector units, occupancy) is what to improve");
    }
    if (json_is_object(kernel) && n < size) {
        double dram = json_number_value(json_object_get(kernel, "dram_throughput_pct"));
        double occ = json_number_value(json_object_get(kernel, "achieved_occupancy_pct"));
        double spills = json_number_value(json_object_get(kernel, "local_loads")) +
                        json_number_value(json_object_get(kernel, "local_stores"));
        snprintf(out + n, size - n, "; profiler: DRAM throughput %.0f%% of peak, occupancy %.0f%%%s%s", dram, occ,
                 dram >= 60 ? " (DRAM bandwidth is the limit)" : occ < 25 ? " (low occupancy: latency is exposed)" : "",
                 spills > 0 ? ", local memory traffic (register spills)" : "");
    }
}

json_t *mcp_tool_profile(struct mcp_call *call, json_t *args)
{
    char msg[4096];
    struct temper_session *s = NULL;
    int err = mcp_session(call, NULL, &s, msg, sizeof(msg));
    if (err)
        return session_error(err, msg);
    const char *lang = json_string_value(json_object_get(args, "lang"));
    int cuda = !strcmp(lang, "cuda");
    struct temper_session_request req = {0};
    req.source = json_string_value(json_object_get(args, "source"));
    req.lang = lang;
    req.seed = 1;
    req.profile = cuda;
    json_t *result = run_eval(call, s, &req, msg, sizeof(msg), &err);
    if (err)
        return session_error(err, msg);
    if (!result)
        return NULL;
    struct temper_result r;
    if (read_result(result, &r, msg, sizeof(msg)))
        return mcp_tool_result(result, msg, 1); /* takes result */
    json_t *info = temper_session_device_info(s); /* the session's device description, not a result */
    const char *verdict = r.verdict;
    const struct temper_result_timing *timing = temper_result_first_timing(&r);
    json_t *prof = r.profile; /* Nsight Compute's metrics: JSON inside the result */
    json_t *kernels = json_object_get(prof, "kernels");
    char neck[600], note[600];
    int correct = verdict && !strcmp(verdict, "correct");
    bottleneck(correct ? timing : NULL, json_array_get(kernels, 0), neck, sizeof(neck));
    if (!cuda)
        snprintf(note, sizeof(note),
                 "OpenCL gives temper no hardware performance counters on %s (%s): there are no profiler metrics; "
                 "the bottleneck is read from the timing against the device's measured ceilings (the roofline).",
                 json_string_value(json_object_get(info, "name")), json_string_value(json_object_get(info, "id")));
    else if (json_is_string(json_object_get(prof, "error")))
        snprintf(note, sizeof(note), "Nsight Compute did not profile it: %s",
                 json_string_value(json_object_get(prof, "error")));
    else if (!correct)
        snprintf(note, sizeof(note), "only a correct kernel is profiled");
    else
        snprintf(note, sizeof(note), "Nsight Compute's metrics at the first bench shape, per kernel launched");
    json_t *out = json_pack("{s:s, s:s, s:s, s:O, s:s, s:o, s:o, s:o, s:s, s:O}", "verdict", verdict ? verdict : "none",
                            "backend", cuda ? "cuda" : "opencl", "counters", kernels ? "nsight_compute" : "none",
                            "metrics", kernels ? kernels : json_null(), "bottleneck", neck, "median_ms",
                            timing ? json_real(timing->median_ms.v) : json_null(), "roofline_share",
                            timing && timing->roofline_share.set ? json_real(timing->roofline_share.v) : json_null(),
                            "bound", timing && timing->bound ? json_string(timing->bound) : json_null(), "note", note,
                            "result", result);
    struct text t = {0};
    if (!correct) {
        char *failed = mcp_result_text(&r);
        add(&t, "not profiled: the kernel is not correct\n%s", failed ? failed : "");
        free(failed);
    } else {
        add(&t, "bottleneck: %s\n%s\n", neck, note);
    }
    temper_result_free(&r);
    json_decref(result);
    json_t *reply = mcp_tool_result(out, t.s ? t.s : "out of memory", !correct);
    free(t.s);
    return reply;
}

/* ---- tune ---- */

static void tune_event(void *user, const struct temper_session_event *ev)
{
    struct mcp_call *call = user;
    if (ev->kind != TEMPER_SESSION_TUNE) {
        fprintf(stderr, "temper mcp: %s%s\n", ev->kind == TEMPER_SESSION_WARNING ? "warning: " : "", ev->message);
        return;
    }
    const struct temper_tune_event *t = ev->tune;
    char line[1024], time_text[32] = "", best[32] = "none yet";
    if (!isnan(t->time_ms))
        snprintf(time_text, sizeof(time_text), " %.4g ms", t->time_ms);
    if (!isinf(t->best_ms))
        snprintf(best, sizeof(best), "%.4g ms", t->best_ms);
    char why[300] = "";
    if (t->why[0]) /* a failed configuration: why, as the CLI's progress line says it */
        snprintf(why, sizeof(why), " (%s)", t->why);
    snprintf(line, sizeof(line), "evaluation %d%s %s: %s%s%s%s; best %s", t->index, t->retime ? " (re-time)" : "",
             t->config[0] ? t->config : "(defaults)", t->verdict, why, time_text,
             t->from_store ? " (from the store)" : t->same_code ? " (an earlier one's code)" : "", best);
    fprintf(stderr, "temper mcp: tune %s\n", line);
    mcp_call_progress(call, t->index, -1, line);
}

/* The candidate with the best point's knobs fixed (caller frees), or NULL. */
static char *fixed_source(const char *path, const char *source, json_t *best)
{
    char tmp[4096], msg[1024];
    const char *dir = getenv("TMPDIR");
    const char *ext = strrchr(path, '.');
    snprintf(tmp, sizeof(tmp), "%s/temper-mcp-XXXXXX%s", dir && *dir ? dir : "/tmp", ext);
    int fd = mkstemps(tmp, (int)strlen(ext));
    if (fd < 0)
        return NULL;
    close(fd);
    struct temper_candidate cand;
    char *text = NULL;
    int err = temper_candidate_parse(path, source, strlen(source), &cand, msg, sizeof(msg));
    if (!err) {
        err = temper_tune_write_fixed(&cand, json_object_get(best, "knobs"),
                                      json_string_value(json_object_get(best, "flags")), tmp, msg, sizeof(msg));
        temper_candidate_free(&cand);
    }
    if (!err)
        err = temper_read_file(tmp, TEMPER_SOURCE_MAX * 2, &text, NULL, msg, sizeof(msg));
    if (err)
        fprintf(stderr, "temper mcp: the best kernel's source could not be written: %s\n", msg);
    unlink(tmp);
    return err ? NULL : text;
}

/* The tune's best point as a line: its configuration and its result's first timing (the point's
 * "timing" is a copy of it). Its result may come from the store, so it is read as stored. */
static void add_best(struct text *t, json_t *best)
{
    static const struct temper_result_timing untimed;
    struct temper_result r;
    int err = temper_result_from_stored(json_object_get(best, "result"), &r);
    const struct temper_result_timing *tm = err ? NULL : temper_result_first_timing(&r);
    if (!tm)
        tm = &untimed;
    add(t, "best %s: %.4g ms, %.3gx the baseline", json_string_value(json_object_get(best, "config")),
        tm->median_ms.v, tm->speedup.v);
    if (tm->roofline_share.set)
        add(t, ", %.1f%% of the roofline", 100 * tm->roofline_share.v);
    add(t, "\n");
    temper_result_free(&r);
}

json_t *mcp_tool_tune(struct mcp_call *call, json_t *args)
{
    char msg[4096];
    struct temper_session *s = NULL;
    int err = mcp_session(call, NULL, &s, msg, sizeof(msg));
    if (err)
        return session_error(err, msg);
    const char *lang = json_string_value(json_object_get(args, "lang"));
    const char *path = !strcmp(lang, "cuda") ? "<mcp>.cu" : "<mcp>.cl";
    struct temper_tune_request req = {0};
    req.path = path;
    req.source = json_string_value(json_object_get(args, "source"));
    req.tasks_dir = mcp_call_config(call)->tasks_dir;
    req.strategy = json_string_value(json_object_get(args, "strategy"));
    json_t *v;
    req.budget = (v = json_object_get(args, "budget")) ? (int)json_number_value(v) : 20;
    req.time_s = (v = json_object_get(args, "time_s")) ? json_number_value(v) : 240;
    req.seed = 1;
    req.compiler_knobs = !json_is_false(json_object_get(args, "compiler_knobs"));
    req.retime = (v = json_object_get(args, "retime")) ? (int)json_number_value(v) : 0;
    req.screen_budget_s = (v = json_object_get(args, "screen_budget_s")) ? json_number_value(v) : 0;
    req.full_budget_s = (v = json_object_get(args, "full_budget_s")) ? json_number_value(v) : 0;
    struct temper_session_tune *tune = NULL;
    err = temper_session_tune_begin(s, &req, tune_event, call, &tune, msg, sizeof(msg));
    if (err)
        return session_error(err, msg);
    if (mcp_call_watch_tune(call, tune))
        temper_session_tune_stop(tune);
    int more;
    char step_msg[4096] = "";
    while ((more = temper_session_tune_step(tune, step_msg, sizeof(step_msg))) > 0)
        ;
    mcp_call_watch_tune(call, NULL);
    json_t *summary = NULL;
    err = temper_session_tune_finish(tune, &summary, msg, sizeof(msg));
    if (mcp_call_cancelled(call)) {
        json_decref(summary);
        return NULL;
    }
    if (err || more < 0) {
        json_decref(summary);
        return session_error(err ? err : more, err ? msg : step_msg);
    }
    json_t *best = json_object_get(summary, "best");
    char *fixed = best ? fixed_source(path, req.source, best) : NULL;
    json_object_set_new(summary, "best_source", fixed ? json_string(fixed) : json_null());
    free(fixed);
    struct text t = {0};
    long long evaluations = (long long)json_integer_value(json_object_get(summary, "evaluations"));
    int interrupted = json_is_true(json_object_get(summary, "interrupted"));
    if (best) {
        add_best(&t, best);
    } else {
        add(&t, "no configuration passed every check\n");
        /* each distinct failure, most frequent first (structuredContent's failures has them all) */
        struct temper_buf b;
        temper_buf_init(&b, 1 << 20);
        if (!temper_tune_failures_text(json_object_get(summary, "failures"), 5, "failed: ", "", "failures", &b) &&
            b.data)
            add(&t, "%s", b.data);
        temper_buf_free(&b);
    }
    add(&t, "%lld evaluations (%lld from the store)%s; best_source is the kernel with the best knobs fixed\n",
        evaluations, (long long)json_integer_value(json_object_get(summary, "from_store")),
        interrupted ? "; interrupted: the best so far, not re-timed (what it evaluated stays in the store)" : "");
    json_t *r = mcp_tool_result(summary, t.s ? t.s : "out of memory", !best);
    free(t.s);
    return r;
}
