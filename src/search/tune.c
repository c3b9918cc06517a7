/* tune.c: the driver behind `temper tune`: proposes batches from a strategy, evaluates them
 * through the verdict pipeline (compiling the next ones while the device runs the current
 * ones), records every result in the store as it comes, takes configurations evaluated before
 * from the store instead of running them again, re-times the best few in full, and reports how
 * the search converged. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "temper/search.h"

#define MAX_BATCH 32

/* Everything a tune run keeps. */
struct tune {
    const struct temper_tune_request *req; /* what was asked */
    struct temper_space space;             /* the space */
    const struct temper_strategy_ops *ops; /* the strategy */
    void *strategy;                        /* its state */
    struct temper_store *store;            /* where results go */
    int64_t run_id;                        /* this run's row */
    const char *device;                    /* "cuda:0" */
    char hash[17];                         /* the candidate's source hash */
    char task_hash[17];                    /* its task's content hash: results judged against
                                            * another content are never reused */
    char device_key[1024];                 /* the device's stable identity, for the store */
    int store_err;                         /* the first failed store write, 0 if none */
    char store_msg[1024];                  /* its message */
    int evaluations;                       /* points scored, new and reused */
    int reused;                            /* of which taken from the store */
    int same_code;                         /* of which had the code of an earlier one: not run, and not
                                            * counted against the budget */
    json_t *by_verdict;                    /* counts */
    json_t *history;                       /* best score after each evaluation */
    json_t *points;                        /* every scored point: {config, score, result} */
    double best;                           /* best screening score so far */
    double best_share;                     /* its share of the roofline, 0 if unknown */
    int best_at;                           /* evaluation that found it */
    double start_s;                        /* when the run began */
    char last_line[200];                   /* the progress line */
};

double temper_result_score(json_t *result)
{
    const char *v = json_string_value(json_object_get(result, "verdict"));
    json_t *t = json_array_get(json_object_get(result, "timings"), 0);
    if (!v || strcmp(v, "correct") || !t)
        return INFINITY;
    double ms = json_number_value(json_object_get(t, "median_ms"));
    return ms > 0 ? ms : INFINITY;
}

static void progress(struct tune *t, const char *task)
{
    if (t->req->quiet)
        return;
    char failures[120] = "";
    const char *v;
    json_t *n;
    size_t used = 0;
    json_object_foreach(t->by_verdict, v, n) if (strcmp(v, "correct")) used +=
        (size_t)snprintf(failures + used, used < sizeof(failures) ? sizeof(failures) - used : 0, " %lld %s",
                         (long long)json_integer_value(n), v);
    char same[64] = "";
    if (t->same_code)
        snprintf(same, sizeof(same), ", %d with an earlier one's code", t->same_code);
    temper_progress("tune %s: %d evaluation%s (%d from the store%s), best %.4g ms (%.0f%% of the roofline);%s", task,
                    t->evaluations, t->evaluations == 1 ? "" : "s", t->reused, same, isinf(t->best) ? 0.0 : t->best,
                    100 * t->best_share,
                    failures[0] ? failures : " no failures");
}

/* Takes one scored point into the run's accounting and the strategy. */
static void take(struct tune *t, const struct temper_config *c, json_t *result, int reused)
{
    double score = temper_result_score(result);
    t->ops->observe(t->strategy, c, score);
    t->evaluations++;
    t->reused += reused;
    t->same_code += !reused && json_object_get(result, "same_code_as"); /* disjoint from the store's */
    const char *v = json_string_value(json_object_get(result, "verdict"));
    json_object_set_new(t->by_verdict, v ? v : "?",
                        json_integer(json_integer_value(json_object_get(t->by_verdict, v ? v : "?")) + 1));
    if (score < t->best) {
        t->best = score;
        t->best_at = t->evaluations;
        t->best_share = json_number_value(
            json_object_get(json_array_get(json_object_get(result, "timings"), 0), "roofline_share"));
    }
    json_array_append_new(t->history, isinf(t->best) ? json_null() : json_real(t->best));
    char text[512];
    temper_space_format(&t->space, c, text, sizeof(text));
    json_t *p = json_pack("{s:s, s:O, s:b}", "config", text, "result", result, "reused", reused);
    json_object_set_new(p, "score_ms", isinf(score) ? json_null() : json_real(score));
    json_object_set_new(p, "index", json_integer(t->evaluations));
    /* the point itself, to rebuild it for re-timing */
    json_t *v_idx = json_array();
    for (int d = 0; d < t->space.ndims; d++)
        json_array_append_new(v_idx, json_integer(c->v[d]));
    json_object_set_new(p, "v", v_idx);
    json_array_append_new(t->points, p);
}

/* Where the batch's results go. */
struct batch_ctx {
    struct tune *t;                        /* the run */
    const struct temper_config *configs;   /* the points, by request index */
    const char *const *sources;            /* their source (the same for all) */
    const char *task;                      /* for progress */
    int retiming;                          /* 1: full timings of the best, not new points */
    json_t *retimed;                       /* where re-timing results go */
};

static void on_batch_result(void *user, int index, json_t *result, int err, const char *error)
{
    struct batch_ctx *b = user;
    struct tune *t = b->t;
    char msg[1024];
    if (!result) {
        /* a candidate that cannot be evaluated at all: a usage error, counted as a failure */
        result = json_pack("{s:s, s:s}", "verdict", "invalid", "message", error ? error : "");
        (void)err;
    } else {
        json_object_set_new(result, "tune_phase", json_string(b->retiming ? "retime" : "screen"));
        int stored = temper_store_record_run(t->store, result, b->sources[0], t->run_id, NULL, msg, sizeof(msg));
        /* The batch in flight finishes, each of its results tried; the run stops after it. */
        if (stored && !t->store_err) {
            t->store_err = stored;
            snprintf(t->store_msg, sizeof(t->store_msg), "%s", msg);
        }
    }
    if (b->retiming)
        json_array_append(b->retimed, result);
    else
        take(t, &b->configs[index], result, 0);
    json_decref(result);
    progress(t, b->task);
}

/* Evaluates points through the pipeline: requests share the source and differ in knobs and flags. */
static int evaluate(struct tune *t, struct temper_worker *w, const struct temper_config *configs, int n,
                    const char *source, json_t *calib, double budget_s, uint64_t secret, int retiming,
                    json_t *retimed, const char *task, char *msg, size_t msg_size)
{
    struct temper_eval_request reqs[MAX_BATCH];
    static char storage[MAX_BATCH][TEMPER_MAX_DIMS_SPACE][128];
    const char *sets[MAX_BATCH][TEMPER_MAX_DIMS_SPACE + 1];
    char flags[MAX_BATCH][512];
    for (int i = 0; i < n; i++) {
        temper_space_render(&t->space, &configs[i], storage[i], sets[i], flags[i], sizeof(flags[i]));
        memset(&reqs[i], 0, sizeof(reqs[i]));
        reqs[i].path = t->req->path;
        reqs[i].source = source;
        reqs[i].tasks_dir = t->req->tasks_dir;
        reqs[i].sets = sets[i];
        reqs[i].extra_flags = flags[i];
        reqs[i].seed = 1;
        reqs[i].secret_seed = secret;
        reqs[i].time_budget_s = budget_s;
        reqs[i].reuse_same_code = 1;
    }
    struct batch_ctx b = {t, configs, &source, task, retiming, retimed};
    int err = temper_eval_batch(w, reqs, n, calib, 0, on_batch_result, &b, msg, msg_size);
    if (!err && t->store_err) /* a result that could not be stored ends the run: nothing lost in silence */
        err = temper_fail(msg, msg_size, t->store_err, "%s", t->store_msg);
    return err;
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

int temper_tune(struct temper_worker *w, struct temper_store *store, const struct temper_tune_request *req,
                json_t *calib, json_t **summary, char *msg, size_t msg_size)
{
    *summary = NULL;
    struct temper_candidate cand;
    int err = temper_candidate_load(req->path, &cand, msg, msg_size);
    if (err)
        return err;
    json_t *info = NULL;
    if ((err = temper_worker_device_info(w, &info, msg, msg_size))) {
        temper_candidate_free(&cand);
        return err;
    }
    struct tune *t = calloc(1, sizeof(*t));
    if (!t) {
        json_decref(info);
        temper_candidate_free(&cand);
        return TEMPER_ENOMEM;
    }
    t->req = req;
    t->store = store;
    t->device = json_string_value(json_object_get(info, "id"));
    t->best = INFINITY;
    t->start_s = temper_now_s();
    t->by_verdict = json_object();
    t->history = json_array();
    t->points = json_array();
    temper_hash_hex(cand.source_hash, t->hash);
    temper_store_device_key(info, t->device_key, sizeof(t->device_key));
    {
        char dir[TEMPER_PATH_MAX];
        struct temper_task task;
        if ((err = temper_task_find(temper_tasks_root(req->tasks_dir), cand.task, dir, sizeof(dir), msg, msg_size)) ||
            (err = temper_task_load(dir, &task, msg, msg_size)) ||
            (err = temper_task_content_hash(&task, t->task_hash, msg, msg_size))) {
            json_decref(t->by_verdict);
            json_decref(t->history);
            json_decref(t->points);
            json_decref(info);
            free(t);
            temper_candidate_free(&cand);
            return err;
        }
    }
    struct temper_tune_request eff = *req;
    json_t *settings = NULL;
    int64_t resumed = 0;
    if (req->resume && (resumed = temper_store_run_unfinished(store, t->hash, t->task_hash, t->device_key, &settings))) {
        /* Continue as that run was set up. */
        eff.strategy = json_string_value(json_object_get(settings, "strategy"));
        eff.budget = (int)json_integer_value(json_object_get(settings, "budget"));
        eff.time_s = json_number_value(json_object_get(settings, "time_s"));
        eff.seed = (uint64_t)json_integer_value(json_object_get(settings, "seed"));
        eff.compiler_knobs = json_is_true(json_object_get(settings, "compiler_knobs"));
        t->run_id = resumed;
    } else if (req->resume && !req->quiet) {
        fprintf(stderr, "temper: no unfinished tune of %s on %s to resume: starting a new one\n", req->path, t->device);
    }
    t->req = &eff;
    t->ops = temper_strategy(eff.strategy ? eff.strategy : temper_strategies()[0]->name);
    if (!t->ops) {
        err = temper_fail(msg, msg_size, TEMPER_EINVALID, "unknown strategy '%s'", eff.strategy);
        goto out;
    }
    if ((err = temper_space_init(&t->space, &cand, eff.compiler_knobs, msg, msg_size)))
        goto out;
    int64_t valid = temper_space_count(&t->space, 0);
    int budget = eff.budget > 0 ? eff.budget : (int)(valid > 0 && valid < 100000 ? valid : 100000);
    t->strategy = t->ops->init(&t->space, eff.seed, budget);
    if (!t->strategy) {
        err = TEMPER_ENOMEM;
        goto out;
    }
    if (!t->run_id) {
        json_t *s = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:f, s:I, s:b, s:s, s:s}", "kind", "tune",
                              "source_hash", t->hash, "path", req->path, "device", t->device, "strategy",
                              t->ops->name, "budget", budget, "time_s", eff.time_s, "seed", (json_int_t)eff.seed,
                              "compiler_knobs", eff.compiler_knobs, "task_hash", t->task_hash, "device_key",
                              t->device_key);
        err = temper_store_run_begin(store, s, &t->run_id, msg, msg_size);
        json_decref(s);
        if (err)
            goto out;
    }
    uint64_t secret = temper_secret_seed() & 0x7fffffffffffffffull;
    secret = secret ? secret : 1;
    int batch = eff.batch > 0 ? eff.batch : (int)sysconf(_SC_NPROCESSORS_ONLN);
    batch = batch < 2 ? 2 : batch > MAX_BATCH ? MAX_BATCH : batch;
    double screen = eff.screen_budget_s > 0 ? eff.screen_budget_s : 0.3;
    double full = eff.full_budget_s > 0 ? eff.full_budget_s : 2.0;
    temper_progress_start();
    /* The author's defaults (every knob's first value, no compiler controls) come first: the
     * search starts from the configuration the candidate was written for. */
    struct temper_config start;
    memset(&start, 0, sizeof(start));
    int first_batch = temper_space_valid(&t->space, &start) && t->evaluations < budget;
    /* Points whose code matched an earlier one's do not count against the budget; at most as many
     * of them as the budget are taken, so a space of controls that change nothing still ends. */
    while ((!eff.budget || (t->evaluations - t->same_code < budget && t->same_code < budget)) &&
           (eff.time_s <= 0 || temper_now_s() - t->start_s < eff.time_s)) {
        struct temper_config proposed[MAX_BATCH], fresh[MAX_BATCH];
        int left = budget - (t->evaluations - t->same_code);
        int want = left < batch ? left : batch;
        int n = 0;
        if (first_batch) {
            proposed[n++] = start;
            first_batch = 0;
        }
        int from_strategy = t->ops->propose(t->strategy, proposed + n, want - n);
        for (int i = n; i < n + from_strategy; i++)
            if (n == 1 && temper_config_equal(&t->space, &proposed[i], &start))
                proposed[i--] = proposed[n + --from_strategy]; /* the strategy's copy of the start */
        n += from_strategy;
        if (n == 0)
            break;
        int nfresh = 0;
        for (int i = 0; i < n; i++) {
            char options[4096];
            json_t *old = temper_space_options(&t->space, &proposed[i], options, sizeof(options)) ? NULL :
                          temper_store_lookup(store, t->hash, t->task_hash, t->device_key, options);
            if (old) {
                take(t, &proposed[i], old, 1);
                json_decref(old);
            } else {
                fresh[nfresh++] = proposed[i];
            }
        }
        progress(t, cand.task);
        if (nfresh && (err = evaluate(t, w, fresh, nfresh, cand.source, calib, screen, secret, 0, NULL, cand.task, msg,
                                      msg_size))) {
            temper_progress_done();
            goto out;
        }
    }
    /* Re-time the best few in full before one is declared best. */
    size_t np = json_array_size(t->points);
    json_t **sorted = malloc((np ? np : 1) * sizeof(json_t *));
    for (size_t i = 0; sorted && i < np; i++)
        sorted[i] = json_array_get(t->points, i);
    if (sorted)
        qsort(sorted, np, sizeof(json_t *), cmp_points);
    int retime = eff.retime > 0 ? eff.retime : 3;
    struct temper_config top[MAX_BATCH];
    int ntop = 0;
    /* Distinct kernels: a point whose code was an earlier one's is that kernel again. */
    const char *top_code[MAX_BATCH];
    for (size_t i = 0; sorted && i < np && ntop < retime && ntop < MAX_BATCH; i++) {
        if (!json_is_number(json_object_get(sorted[i], "score_ms")))
            break;
        json_t *r = json_object_get(sorted[i], "result");
        const char *code = json_string_value(json_object_get(r, "same_code_as"));
        code = code ? code : json_string_value(json_object_get(r, "options"));
        json_t *v = json_object_get(sorted[i], "v");
        struct temper_config c;
        memset(&c, 0, sizeof(c));
        for (int d = 0; d < t->space.ndims; d++)
            c.v[d] = (int)json_integer_value(json_array_get(v, (size_t)d));
        int dup = 0;
        for (int k = 0; k < ntop; k++)
            dup |= temper_config_equal(&t->space, &top[k], &c) || (code && top_code[k] && !strcmp(code, top_code[k]));
        if (!dup) {
            top_code[ntop] = code;
            top[ntop++] = c;
        }
    }
    free(sorted);
    json_t *retimed = json_array();
    if (ntop)
        err = evaluate(t, w, top, ntop, cand.source, calib, full, secret, 1, retimed, cand.task, msg, msg_size);
    temper_progress_done();
    if (err) {
        json_decref(retimed);
        goto out;
    }
    int best_i = -1;
    double best_full = INFINITY;
    for (size_t i = 0; i < json_array_size(retimed); i++) {
        double sc = temper_result_score(json_array_get(retimed, i));
        if (sc < best_full) {
            best_full = sc;
            best_i = (int)i;
        }
    }
    /* Convergence: when the best point was first seen, and when the search came within 5 % of
     * the final screening best. */
    int within5 = 0;
    for (size_t i = 0; i < json_array_size(t->history); i++) {
        json_t *h = json_array_get(t->history, i);
        if (json_is_number(h) && json_number_value(h) <= 1.05 * t->best) {
            within5 = (int)i + 1;
            break;
        }
    }
    *summary = json_pack("{s:s, s:s, s:s, s:s, s:I, s:i, s:f, s:I, s:i, s:i, s:O, s:O, s:i, s:i, s:f}", "candidate",
                         req->path, "task", cand.task, "device", t->device, "strategy", t->ops->name, "run_id",
                         (json_int_t)t->run_id, "dimensions", t->space.ndims, "space_size", t->space.size,
                         "valid_configurations", (json_int_t)valid, "evaluations", t->evaluations,
                         "from_store", t->reused, "by_verdict", t->by_verdict, "history", t->history, "best_found_at",
                         t->best_at, "within_5pct_at", within5, "seconds", temper_now_s() - t->start_s);
    json_object_set_new(*summary, "same_code", json_integer(t->same_code));
    if (resumed)
        json_object_set_new(*summary, "resumed_run", json_integer(resumed));
    if (best_i >= 0) {
        json_t *r = json_array_get(retimed, (size_t)best_i);
        json_t *tm = json_array_get(json_object_get(r, "timings"), 0);
        char text[512];
        temper_space_format(&t->space, &top[best_i], text, sizeof(text));
        char storage[TEMPER_MAX_DIMS_SPACE][128], flags[512];
        const char *sets[TEMPER_MAX_DIMS_SPACE + 1];
        temper_space_render(&t->space, &top[best_i], storage, sets, flags, sizeof(flags));
        json_object_set_new(*summary, "best",
                            json_pack("{s:s, s:O, s:s, s:O, s:O}", "config", text, "knobs",
                                      json_object_get(r, "knobs") ?: json_null(), "flags", flags, "timing",
                                      tm ?: json_null(), "result", r));
    }
    json_object_set_new(*summary, "retimed", retimed);
    if ((err = temper_store_run_finish(store, t->run_id, *summary, msg, msg_size))) {
        json_decref(*summary);
        *summary = NULL;
    }
out:
    if (t->strategy)
        t->ops->free(t->strategy);
    json_decref(t->by_verdict);
    json_decref(t->history);
    json_decref(t->points);
    json_decref(settings);
    json_decref(info);
    free(t);
    temper_candidate_free(&cand);
    return err;
}

int temper_tune_write_fixed(const struct temper_candidate *cand, json_t *knobs, const char *extra_flags,
                            const char *path, char *msg, size_t msg_size)
{
    struct temper_buf out;
    temper_buf_init(&out, TEMPER_SOURCE_MAX * 2);
    int err = temper_buf_printf(&out, "// Tuned by temper from %s: knobs fixed to the best configuration found.\n",
                                cand->path);
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
