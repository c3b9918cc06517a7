/* tune.c: the tuning driver as a state machine: proposes batches of points from a strategy
 * (the author's defaults first), scores each point from its result, re-times the best few in
 * full, and reports how the search converged. It touches neither a device nor the store: the
 * session looks points up in the store, evaluates the rest through the verdict pipeline
 * (compiling the next ones while the device runs the current ones) and records every result. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "temper/result.h"
#include "search/tune.h"
#include "util/util.h"

/* Where a tune stands. */
enum tune_phase {
    TUNE_SCREENING, /* proposing new points */
    TUNE_RETIMING,  /* the best few were proposed for a full re-timing */
    TUNE_DONE,      /* nothing more to propose */
};

/* Everything a tune run keeps. */
struct temper_tune {
    struct temper_tune_request req;        /* what was asked, with a resumed run's settings */
    char strategy_name[64];                /* req.strategy's storage */
    char path[TEMPER_PATH_MAX];            /* req.path's storage */
    char tasks_dir[TEMPER_PATH_MAX];       /* req.tasks_dir's storage, "" for the default */
    char device[64];                       /* "cuda:0" */
    struct temper_candidate cand;          /* the candidate */
    struct temper_space space;             /* the space */
    const struct temper_strategy_ops *ops; /* the strategy */
    void *strategy;                        /* its state */
    int64_t run_id;                        /* this run's row */
    int64_t resumed;                       /* the run continued, 0 if new */
    char hash[17];                         /* the candidate's source hash */
    int64_t valid;                         /* valid points in the space (-1: too many to count) */
    int budget;                            /* evaluations the strategy was told it gets */
    uint64_t secret;                       /* the run's secret seed */
    int batch;                             /* points per proposal */
    double screen_s;                       /* timing budget of a screening evaluation */
    double full_s;                         /* timing budget of a re-timing */
    enum tune_phase phase;                 /* where the run stands */
    int first_batch;                       /* 1 until the author's defaults were proposed */
    int evaluations;                       /* points scored, new and reused */
    int reused;                            /* of which taken from the store */
    int same_code;                         /* of which had the code of an earlier one: not run, and not
                                            * counted against the budget */
    int retimings;                         /* re-timing results taken */
    json_t *by_verdict;                    /* counts */
    json_t *history;                       /* best score after each evaluation */
    json_t *points;                        /* every scored point: {config, score, result} */
    json_t *retimed;                       /* re-timing results, in the order of top */
    struct temper_config top[TEMPER_TUNE_MAX_BATCH]; /* the points re-timed */
    int retimed_at[TEMPER_TUNE_MAX_BATCH]; /* the event index of each one's re-timing, 0 until it came */
    int ntop;                              /* how many */
    double best;                           /* best screening score so far */
    double best_ms;                        /* its measured median */
    double retime_best;                    /* best re-timed score so far (INFINITY before one) */
    double retime_best_ms;                 /* its measured median */
    double expert_ref;                     /* the first expert time of the run (0 before one) */
    int expert_scored;                     /* results scored against their expert */
    double best_share;                     /* its share of the roofline, 0 if unknown */
    int best_at;                           /* screening evaluation that found it */
    double start_s;                        /* when the run began */
};

/* A tune's results are the ones the session just produced and the ones the store held (from_store),
 * side by side in its points and its best: each is read as the store's are, through the generated
 * reader (on a result in the one form it reads what the strict reader reads). Out of memory a
 * result reads as empty: a failure without a verdict. Caller frees r with temper_result_free. */
static void tune_read(json_t *result, struct temper_result *r)
{
    temper_result_from_stored(result, r);
}

static double result_score(const struct temper_result *r)
{
    const struct temper_result_timing *t = temper_result_first_timing(r);
    if (!r->verdict || strcmp(r->verdict, "correct") || !t)
        return INFINITY;
    double ms = t->median_ms.set ? t->median_ms.v : 0;
    return ms > 0 ? ms : INFINITY;
}

double temper_result_score(json_t *result)
{
    struct temper_result r;
    tune_read(result, &r);
    double score = result_score(&r);
    temper_result_free(&r);
    return score;
}

/* A result's score, the lower the better: its median time (*ms), or where the task's vendor-library
 * expert was timed beside it (interleaved, in the same worker), that time over the expert's, in
 * units of the run's first expert time. A compute-bound kernel's median moves by 10-15 % with the
 * GPU's clock and power state (a rested H200 runs a bf16 GEMM 15 % faster for its first 30-60 ms,
 * bench/RESULTS.md), enough to misorder configurations a few per cent apart; the expert meets the
 * same state, so the ratio does not move with it. */
static double tune_score(struct temper_tune *t, const struct temper_result *r, double *ms)
{
    *ms = result_score(r);
    const struct temper_result_timing *tm = temper_result_first_timing(r);
    double e = tm && tm->expert_median_ms.set ? tm->expert_median_ms.v : 0;
    if (isinf(*ms) || !(e > 0))
        return *ms;
    if (!(t->expert_ref > 0))
        t->expert_ref = e;
    t->expert_scored++;
    return *ms * t->expert_ref / e;
}

int temper_tune_init(const struct temper_tune_request *req, const char *device_id, json_t *resumed_settings,
                     int64_t resumed_run, struct temper_tune **out, char *msg, size_t msg_size)
{
    *out = NULL;
    struct temper_tune *t = calloc(1, sizeof(*t));
    if (!t)
        return TEMPER_ENOMEM;
    t->req = *req;
    snprintf(t->path, sizeof(t->path), "%s", req->path ? req->path : "");
    snprintf(t->tasks_dir, sizeof(t->tasks_dir), "%s", req->tasks_dir ? req->tasks_dir : "");
    snprintf(t->device, sizeof(t->device), "%s", device_id ? device_id : "");
    t->req.path = t->path;
    t->req.tasks_dir = req->tasks_dir ? t->tasks_dir : NULL;
    t->req.source = NULL;
    t->best = t->best_ms = INFINITY;
    t->retime_best = t->retime_best_ms = INFINITY;
    t->start_s = temper_now_s();
    t->by_verdict = json_object();
    t->history = json_array();
    t->points = json_array();
    t->retimed = json_array();
    int err = req->source ? temper_candidate_parse(t->path, req->source, strlen(req->source), &t->cand, msg, msg_size)
                          : temper_candidate_load(t->path, &t->cand, msg, msg_size);
    if (err) {
        memset(&t->cand, 0, sizeof(t->cand));
        temper_tune_free(t);
        return err;
    }
    temper_hash_hex(t->cand.source_hash, t->hash);
    const char *strategy = req->strategy;
    if (resumed_settings && resumed_run) {
        /* Continue as that run was set up. */
        strategy = json_string_value(json_object_get(resumed_settings, "strategy"));
        t->req.budget = (int)json_integer_value(json_object_get(resumed_settings, "budget"));
        t->req.time_s = json_number_value(json_object_get(resumed_settings, "time_s"));
        t->req.seed = (uint64_t)json_integer_value(json_object_get(resumed_settings, "seed"));
        t->req.compiler_knobs = json_is_true(json_object_get(resumed_settings, "compiler_knobs"));
        t->run_id = t->resumed = resumed_run;
    }
    snprintf(t->strategy_name, sizeof(t->strategy_name), "%s", strategy ? strategy : temper_strategies()[0]->name);
    t->req.strategy = t->strategy_name;
    t->ops = temper_strategy(t->strategy_name);
    if (!t->ops) {
        err = temper_fail(msg, msg_size, TEMPER_EINVALID, "unknown strategy '%s'", t->strategy_name);
        temper_tune_free(t);
        return err;
    }
    if ((err = temper_space_init(&t->space, &t->cand, t->req.compiler_knobs, msg, msg_size))) {
        temper_tune_free(t);
        return err;
    }
    t->valid = temper_space_count(&t->space, 0);
    t->budget = t->req.budget > 0 ? t->req.budget : (int)(t->valid > 0 && t->valid < 100000 ? t->valid : 100000);
    t->strategy = t->ops->init(&t->space, t->req.seed, t->budget);
    if (!t->strategy) {
        temper_tune_free(t);
        return TEMPER_ENOMEM;
    }
    uint64_t secret = temper_secret_seed() & 0x7fffffffffffffffull;
    t->secret = secret ? secret : 1;
    int batch = t->req.batch > 0 ? t->req.batch : (int)sysconf(_SC_NPROCESSORS_ONLN);
    t->batch = batch < 2 ? 2 : batch > TEMPER_TUNE_MAX_BATCH ? TEMPER_TUNE_MAX_BATCH : batch;
    t->screen_s = t->req.screen_budget_s > 0 ? t->req.screen_budget_s : 0.3;
    t->full_s = t->req.full_budget_s > 0 ? t->req.full_budget_s : 2.0;
    /* The author's defaults (every knob's first value, no compiler controls) come first: the
     * search starts from the configuration the candidate was written for. */
    struct temper_config start;
    memset(&start, 0, sizeof(start));
    t->first_batch = temper_space_valid(&t->space, &start);
    *out = t;
    return 0;
}

void temper_tune_free(struct temper_tune *t)
{
    if (!t)
        return;
    if (t->strategy)
        t->ops->free(t->strategy);
    json_decref(t->by_verdict);
    json_decref(t->history);
    json_decref(t->points);
    json_decref(t->retimed);
    temper_candidate_free(&t->cand);
    free(t);
}

const char *temper_tune_source_hash(const struct temper_tune *t)
{
    return t->hash;
}

const char *temper_tune_source(const struct temper_tune *t)
{
    return t->cand.source;
}

const char *temper_tune_task(const struct temper_tune *t)
{
    return t->cand.task;
}

json_t *temper_tune_settings(const struct temper_tune *t)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:f, s:I, s:b}", "kind", "tune", "source_hash", t->hash, "path",
                     t->path, "device", t->device, "strategy", t->ops->name, "budget", t->budget, "time_s",
                     t->req.time_s, "seed", (json_int_t)t->req.seed, "compiler_knobs", t->req.compiler_knobs);
}

void temper_tune_set_run(struct temper_tune *t, int64_t run_id)
{
    t->run_id = run_id;
}

/* Fills a point's request: the candidate's source with the point's knobs and flags. */
static void point_init(struct temper_tune *t, struct temper_tune_point *p, const struct temper_config *c, int retime)
{
    memset(&p->req, 0, sizeof(p->req));
    p->c = *c;
    p->retime = retime;
    p->req.nknobs = temper_space_render(&t->space, c, p->knobs, p->flags, sizeof(p->flags));
    p->options_known = !temper_space_options(&t->space, c, p->options, sizeof(p->options));
    if (!p->options_known)
        p->options[0] = 0;
    temper_space_format(&t->space, c, p->config, sizeof(p->config));
    p->req.path = t->req.path;
    p->req.source = t->cand.source;
    p->req.tasks_dir = t->req.tasks_dir;
    p->req.knobs = p->knobs;
    p->req.extra_flags = p->flags;
    p->req.seed = 1;
    p->req.secret_seed = t->secret;
    p->req.time_budget_s = retime ? t->full_s : t->screen_s;
    p->req.reuse_same_code = 1;
}

static int cmp_points(const void *a, const void *b)
{
    double x = json_number_value(json_object_get(*(json_t *const *)a, "score_ms"));
    double y = json_number_value(json_object_get(*(json_t *const *)b, "score_ms"));
    if (!json_is_number(json_object_get(*(json_t *const *)a, "score_ms")))
        x = INFINITY;
    if (!json_is_number(json_object_get(*(json_t *const *)b, "score_ms")))
        y = INFINITY;
    return x < y ? -1 : x > y;
}

/* Chooses the distinct best points for a full re-timing: a point whose code was an earlier one's
 * is that kernel again. */
static void choose_top(struct temper_tune *t)
{
    size_t np = json_array_size(t->points);
    json_t **sorted = malloc((np ? np : 1) * sizeof(json_t *));
    t->ntop = 0;
    if (!sorted)
        return;
    for (size_t i = 0; i < np; i++)
        sorted[i] = json_array_get(t->points, i);
    qsort(sorted, np, sizeof(json_t *), cmp_points);
    int retime = t->req.retime > 0 ? t->req.retime : 3;
    char *top_code[TEMPER_TUNE_MAX_BATCH]; /* owned */
    for (size_t i = 0; i < np && t->ntop < retime && t->ntop < TEMPER_TUNE_MAX_BATCH; i++) {
        if (!json_is_number(json_object_get(sorted[i], "score_ms")))
            break;
        struct temper_result r;
        tune_read(json_object_get(sorted[i], "result"), &r);
        const char *code = r.same_code_as ? r.same_code_as : r.options;
        json_t *v = json_object_get(sorted[i], "v");
        struct temper_config c;
        memset(&c, 0, sizeof(c));
        for (int d = 0; d < t->space.ndims; d++)
            c.v[d] = (int)json_integer_value(json_array_get(v, (size_t)d));
        int dup = 0;
        for (int k = 0; k < t->ntop; k++)
            dup |= temper_config_equal(&t->space, &t->top[k], &c) ||
                   (code && top_code[k] && !strcmp(code, top_code[k]));
        if (!dup) {
            top_code[t->ntop] = code ? strdup(code) : NULL;
            t->top[t->ntop++] = c;
        }
        temper_result_free(&r);
    }
    for (int k = 0; k < t->ntop; k++)
        free(top_code[k]);
    free(sorted);
}

int temper_tune_propose(struct temper_tune *t, struct temper_tune_point *points, int max)
{
    max = max > TEMPER_TUNE_MAX_BATCH ? TEMPER_TUNE_MAX_BATCH : max;
    if (max < 1 || t->phase == TUNE_DONE)
        return 0;
    if (t->phase == TUNE_RETIMING) {
        t->phase = TUNE_DONE;
        return 0;
    }
    /* Points whose code matched an earlier one's do not count against the budget; at most as many
     * of them as the budget are taken, so a space of controls that change nothing still ends. */
    int budget = t->budget;
    if ((!t->req.budget || (t->evaluations - t->same_code < budget && t->same_code < budget)) &&
        (t->req.time_s <= 0 || temper_now_s() - t->start_s < t->req.time_s)) {
        struct temper_config proposed[TEMPER_TUNE_MAX_BATCH], start;
        memset(&start, 0, sizeof(start));
        int left = budget - (t->evaluations - t->same_code);
        int want = left < t->batch ? left : t->batch;
        want = want < max ? want : max;
        int n = 0;
        if (t->first_batch && want > 0) {
            proposed[n++] = start;
            t->first_batch = 0;
        }
        int from_strategy = want - n > 0 ? t->ops->propose(t->strategy, proposed + n, want - n) : 0;
        for (int i = n; i < n + from_strategy; i++)
            if (n == 1 && temper_config_equal(&t->space, &proposed[i], &start))
                proposed[i--] = proposed[n + --from_strategy]; /* the strategy's copy of the start */
        n += from_strategy;
        for (int i = 0; i < n; i++)
            point_init(t, &points[i], &proposed[i], 0);
        if (n > 0)
            return n;
    }
    /* Screening is over: re-time the best few in full before one is declared best. */
    choose_top(t);
    t->phase = t->ntop ? TUNE_RETIMING : TUNE_DONE;
    int n = t->ntop < max ? t->ntop : max;
    for (int i = 0; i < n; i++)
        point_init(t, &points[i], &t->top[i], 1);
    return n;
}

/* Whether a result is a failure: a verdict other than correct (a cancelled one has none). */
static int failed(const struct temper_result *r)
{
    return r->verdict && strcmp(r->verdict, "correct");
}

/* The line of text starting at line, without its leading blanks, into out (cut to size). */
static void copy_line(const char *line, char *out, size_t size)
{
    while (*line == ' ' || *line == '\t' || *line == '\n' || *line == '\r')
        line++;
    size_t len = strcspn(line, "\r\n");
    snprintf(out, size, "%.*s", (int)len, line);
}

/* Why a failed result failed, on one line: a compile error's first compiler-log line that says
 * "error" (the message names only the build), else its message's first line. */
static void failure_why(const struct temper_result *r, char *out, size_t size)
{
    const char *v = r->verdict, *message = r->message, *log = r->compile_log;
    out[0] = 0;
    if (v && !strcmp(v, "compile_error") && log)
        for (const char *line = log; *line; line += strcspn(line, "\n"), line += *line == '\n') {
            size_t len = strcspn(line, "\n");
            for (size_t i = 0; i + 5 <= len && !out[0]; i++)
                if (!strncmp(line + i, "error", 5))
                    copy_line(line, out, size);
            if (out[0])
                return;
        }
    copy_line(message ? message : "", out, size);
}

void temper_tune_observe(struct temper_tune *t, const struct temper_tune_point *p, json_t *result, int from_store,
                         struct temper_tune_event *ev)
{
    struct temper_result r;
    tune_read(result, &r);
    double ms;
    double score = tune_score(t, &r, &ms);
    memset(ev, 0, sizeof(*ev));
    ev->config = p->config;
    snprintf(ev->verdict, sizeof(ev->verdict), "%s", r.verdict ? r.verdict : "?");
    if (failed(&r))
        failure_why(&r, ev->why, sizeof(ev->why));
    ev->time_ms = isinf(ms) ? NAN : ms;
    ev->from_store = from_store;
    ev->same_code = !from_store && r.same_code_as;
    ev->retime = p->retime;
    if (p->retime) {
        /* Re-timings go in the order of top, whatever order they come back in. */
        t->retimings++;
        ev->index = t->evaluations + t->retimings;
        for (int k = 0; k < t->ntop; k++)
            if (temper_config_equal(&t->space, &t->top[k], &p->c)) {
                while ((int)json_array_size(t->retimed) <= k)
                    json_array_append_new(t->retimed, json_null());
                json_array_set(t->retimed, (size_t)k, result);
                t->retimed_at[k] = ev->index;
            }
        /* the best is chosen among the re-timings, so once they come it is theirs */
        if (score < t->retime_best) {
            t->retime_best = score;
            t->retime_best_ms = ms;
        }
        ev->best_ms = isinf(t->retime_best) ? t->best_ms : t->retime_best_ms;
        temper_result_free(&r);
        return;
    }
    t->ops->observe(t->strategy, &p->c, score);
    t->evaluations++;
    t->reused += from_store;
    t->same_code += ev->same_code; /* disjoint from the store's */
    json_object_set_new(t->by_verdict, ev->verdict,
                        json_integer(json_integer_value(json_object_get(t->by_verdict, ev->verdict)) + 1));
    if (score < t->best) {
        t->best = score;
        t->best_ms = ms;
        t->best_at = t->evaluations;
        const struct temper_result_timing *tm = temper_result_first_timing(&r);
        t->best_share = tm && tm->roofline_share.set ? tm->roofline_share.v : 0;
    }
    temper_result_free(&r);
    json_array_append_new(t->history, isinf(t->best_ms) ? json_null() : json_real(t->best_ms));
    json_t *pt = json_pack("{s:s, s:O, s:b}", "config", p->config, "result", result, "reused", from_store);
    json_object_set_new(pt, "score_ms", isinf(score) ? json_null() : json_real(score));
    json_object_set_new(pt, "index", json_integer(t->evaluations));
    /* the point itself, to rebuild it for re-timing */
    json_t *v_idx = json_array();
    for (int d = 0; d < t->space.ndims; d++)
        json_array_append_new(v_idx, json_integer(p->c.v[d]));
    json_object_set_new(pt, "v", v_idx);
    json_array_append_new(t->points, pt);
    ev->index = t->evaluations;
    ev->best_ms = t->best_ms;
}

/* The best point's entry in the summary. */
static json_t *best_entry(struct temper_tune *t, const struct temper_config *c, json_t *result)
{
    struct temper_result r;
    tune_read(result, &r);
    const struct temper_result_timing *tm = temper_result_first_timing(&r);
    char text[512];
    temper_space_format(&t->space, c, text, sizeof(text));
    struct temper_knob_value knobs[TEMPER_MAX_DIMS_SPACE];
    char flags[512];
    temper_space_render(&t->space, c, knobs, flags, sizeof(flags));
    json_t *entry = json_pack("{s:s, s:O, s:s, s:o, s:O}", "config", text, "knobs", r.knobs ? r.knobs : json_null(),
                              "flags", flags, "timing", temper_result_timing_to_json(tm), "result", result);
    temper_result_free(&r);
    return entry;
}

#define TUNE_LOG_LINES 8 /* compiler-log lines a failure entry keeps */

/* The first TUNE_LOG_LINES lines of a compiler log (caller decrefs), null when it is empty. */
static json_t *log_head(const char *log)
{
    while (log && (*log == '\n' || *log == '\r'))
        log++;
    if (!log || !*log)
        return json_null();
    const char *end = log;
    for (int n = 0; *end && n < TUNE_LOG_LINES; n++)
        end += strcspn(end, "\n"), end += *end == '\n';
    size_t len = (size_t)(end - log);
    while (len && (log[len - 1] == '\n' || log[len - 1] == '\r'))
        len--;
    return json_stringn(log, len);
}

/* Counts a failed result into failures, an entry per distinct verdict, message and (for a
 * compile error) compiler-log head; config and index name the evaluation. */
static void count_failure(json_t *failures, json_t *result, const char *config, int index)
{
    struct temper_result r;
    tune_read(result, &r);
    if (!failed(&r)) {
        temper_result_free(&r);
        return;
    }
    const char *v = r.verdict;
    const char *message = r.message ? r.message : "";
    json_t *log = strcmp(v, "compile_error") ? json_null() : log_head(r.compile_log);
    size_t i;
    json_t *f;
    json_array_foreach(failures, i, f)
    {
        if (!strcmp(json_string_value(json_object_get(f, "verdict")), v) &&
            !strcmp(json_string_value(json_object_get(f, "message")), message) &&
            json_equal(json_object_get(f, "compile_log"), log)) {
            json_object_set_new(f, "count", json_integer(json_integer_value(json_object_get(f, "count")) + 1));
            json_decref(log);
            temper_result_free(&r);
            return;
        }
    }
    json_array_append_new(failures, json_pack("{s:s, s:s, s:i, s:s, s:i, s:o}", "verdict", v, "message", message,
                                              "count", 1, "config", config, "first_at", index, "compile_log", log));
    temper_result_free(&r);
}

static int cmp_failures(const void *a, const void *b)
{
    json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "count"));
    json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "count"));
    json_int_t i = json_integer_value(json_object_get(*(json_t *const *)a, "first_at"));
    json_int_t j = json_integer_value(json_object_get(*(json_t *const *)b, "first_at"));
    return x != y ? (x < y) - (x > y) : (i > j) - (i < j);
}

/* Why configurations failed (caller decrefs): an entry per distinct verdict and message (see
 * count_failure), the most frequent first, ties in the order they first came. */
static json_t *tune_failures(struct temper_tune *t)
{
    json_t *failures = json_array();
    size_t i;
    json_t *p;
    json_array_foreach(t->points, i, p)
        count_failure(failures, json_object_get(p, "result"), json_string_value(json_object_get(p, "config")),
                      (int)json_integer_value(json_object_get(p, "index")));
    for (int k = 0; k < t->ntop && k < (int)json_array_size(t->retimed); k++) {
        char config[512];
        temper_space_format(&t->space, &t->top[k], config, sizeof(config));
        count_failure(failures, json_array_get(t->retimed, (size_t)k), config, t->retimed_at[k]);
    }
    size_t n = json_array_size(failures);
    json_t **sorted = malloc((n ? n : 1) * sizeof(json_t *));
    if (!sorted)
        return failures; /* unsorted, but whole */
    for (i = 0; i < n; i++)
        sorted[i] = json_incref(json_array_get(failures, i));
    qsort(sorted, n, sizeof(json_t *), cmp_failures);
    json_array_clear(failures);
    for (i = 0; i < n; i++)
        json_array_append_new(failures, sorted[i]);
    free(sorted);
    return failures;
}

int temper_tune_failures_text(json_t *failures, int shown, const char *prefix, const char *log_indent,
                              const char *all_in, struct temper_buf *out)
{
    size_t i, n = json_array_size(failures);
    json_t *f;
    int err = 0;
    json_array_foreach(failures, i, f)
    {
        if ((int)i == shown) {
            err = temper_buf_printf(out, "%s... and %zu more distinct failure%s (%s lists them all)\n", prefix, n - i,
                                    n - i == 1 ? "" : "s", all_in);
            break;
        }
        long long count = (long long)json_integer_value(json_object_get(f, "count"));
        const char *message = json_string_value(json_object_get(f, "message"));
        const char *config = json_string_value(json_object_get(f, "config"));
        message = message ? message : "";
        err = temper_buf_printf(out, "%s%s (%lld configuration%s, first %s): %.*s\n", prefix,
                                json_string_value(json_object_get(f, "verdict")), count, count == 1 ? "" : "s",
                                config && config[0] ? config : "(defaults)", (int)strcspn(message, "\n"), message);
        const char *log = json_string_value(json_object_get(f, "compile_log"));
        if (!err && log) {
            err = temper_buf_printf(out, "%scompiler log (first lines):\n", log_indent);
            for (const char *line = log; !err && *line; line += strcspn(line, "\n"), line += *line == '\n')
                err = temper_buf_printf(out, "%s  %.*s\n", log_indent, (int)strcspn(line, "\n"), line);
        }
        if (err)
            break;
    }
    return err;
}

json_t *temper_tune_summary(struct temper_tune *t, int interrupted)
{
    /* Convergence: the evaluation that made the best best (its screening point here; the
     * re-timing that won, below, once there is one), and when the search came within 5 % of the
     * final screening best. */
    int within5 = 0;
    for (size_t i = 0; i < json_array_size(t->history); i++) {
        json_t *h = json_array_get(t->history, i);
        if (json_is_number(h) && json_number_value(h) <= 1.05 * t->best_ms) {
            within5 = (int)i + 1;
            break;
        }
    }
    json_t *s = json_pack("{s:s, s:s, s:s, s:s, s:I, s:i, s:f, s:I, s:i, s:i, s:O, s:O, s:i, s:i, s:f}", "candidate",
                          t->path, "task", t->cand.task, "device", t->device, "strategy", t->ops->name, "run_id",
                          (json_int_t)t->run_id, "dimensions", t->space.ndims, "space_size", t->space.size,
                          "valid_configurations", (json_int_t)t->valid, "evaluations", t->evaluations, "from_store",
                          t->reused, "by_verdict", t->by_verdict, "history", t->history, "best_found_at", t->best_at,
                          "within_5pct_at", within5, "seconds", temper_now_s() - t->start_s);
    json_object_set_new(s, "same_code", json_integer(t->same_code));
    json_object_set_new(s, "failures", tune_failures(t));
    json_object_set_new(s, "ranked_by", json_string(t->expert_scored ? "time over the expert's" : "time"));
    if (t->resumed)
        json_object_set_new(s, "resumed_run", json_integer(t->resumed));
    if (interrupted) {
        /* What it has: the best screening point, not re-timed. */
        json_object_set_new(s, "interrupted", json_true());
        json_t *best = NULL;
        size_t i;
        json_t *p;
        json_array_foreach(t->points, i, p)
        {
            json_t *sc = json_object_get(p, "score_ms");
            if (json_is_number(sc) && json_number_value(sc) <= t->best)
                best = p;
        }
        if (best) {
            struct temper_config c;
            memset(&c, 0, sizeof(c));
            for (int d = 0; d < t->space.ndims; d++)
                c.v[d] = (int)json_integer_value(json_array_get(json_object_get(best, "v"), (size_t)d));
            json_object_set_new(s, "best", best_entry(t, &c, json_object_get(best, "result")));
            json_object_set(s, "best_found_at", json_object_get(best, "index")); /* the point it names */
        }
        return s;
    }
    int best_i = -1;
    double best_full = INFINITY;
    for (size_t i = 0; i < json_array_size(t->retimed); i++) {
        double ms;
        struct temper_result r;
        tune_read(json_array_get(t->retimed, i), &r);
        double sc = tune_score(t, &r, &ms);
        temper_result_free(&r);
        if (sc < best_full) {
            best_full = sc;
            best_i = (int)i;
        }
    }
    if (best_i >= 0 && best_i < t->ntop) {
        json_object_set_new(s, "best", best_entry(t, &t->top[best_i], json_array_get(t->retimed, (size_t)best_i)));
        /* The best is its re-timing: the evaluation that counts for it (temper_store_best's, too). */
        json_object_set_new(s, "best_found_at", json_integer(t->retimed_at[best_i]));
    }
    json_object_set(s, "retimed", t->retimed);
    return s;
}

int temper_tune_write_fixed(const struct temper_candidate *cand, json_t *knobs, const char *extra_flags,
                            const char *path, char *msg, size_t msg_size)
{
    struct temper_buf out;
    temper_buf_init(&out, TEMPER_SOURCE_MAX * 2);
    int err = temper_buf_printf(&out, "%s Tuned by temper from %s: knobs fixed to the best configuration found.\n",
                                cand->lang == TEMPER_LANG_TRITON ? "#" : "//", cand->path); /* Python's comment */
    for (const char *p = cand->source; *p && !err;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *at = NULL;
        for (const char *q = p; q + 13 <= p + len; q++)
            if (!strncmp(q, "@temper param", 13) && (q[13] == ' ' || q[13] == '\t')) {
                at = q;
                break;
            }
        const char *tsk = NULL;
        for (const char *q = p; q + 12 <= p + len && !tsk; q++)
            if (!strncmp(q, "@temper task", 12))
                tsk = q;
        if (at) {
            char name[TEMPER_NAME_MAX] = "";
            sscanf(at + 13, " %63[A-Za-z0-9_]", name);
            json_t *v = json_object_get(knobs, name);
            err = temper_buf_printf(&out, "%.*s@temper param %s %s\n", (int)(at - p), p, name,
                                    v ? json_string_value(v) : "");
        } else {
            err = temper_buf_append(&out, p, len + (end != NULL));
        }
        if (!err && tsk && extra_flags && *extra_flags)
            err = temper_buf_printf(&out, "%.*s@temper flags %s\n", (int)(tsk - p), p, extra_flags);
        p += len + (end != NULL);
    }
    if (!err)
        err = temper_write_file_atomic(path, out.data, out.len, msg, msg_size);
    else
        err = temper_fail(msg, msg_size, err, "%s: the tuned source is too large", path);
    temper_buf_free(&out);
    return err;
}
