/* run.c: temper_agent_run, the driver of the agent's loop: its settings and their defaults, the
 * starting kernel, the iterations (a parent drawn from an island, the planner, the coder's
 * samples, the debugger's repairs, the tune and the judge), the stops, the replay of a recorded
 * session, the dry run that only prints the prompts, and the summary. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_impl.h"
#include "loop_impl.h"
#include "temper/error.h"
#include "temper/kernel.h"
#include "temper/search.h"
#include "temper/session.h"
#include "util/util.h"

/* The settings a replay takes from the recorded session: every one that changes what the loop
 * asks or how it judges. */
json_t *agent_run_settings(const struct loop *L, const char *start_source)
{
    const struct temper_agent_config *c = &L->cfg;
    json_t *s = json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:b, s:f, s:f, s:i, s:I, s:f, s:i, s:i, s:I, s:s}",
                          "task", L->task.name, "lang", L->lang, "budget", c->budget, "samples", c->samples, "islands",
                          c->islands, "island_size", c->island_size, "debug_rounds", c->debug_rounds, "tune_budget",
                          c->tune_budget, "no_timing", c->no_timing, "time_budget_s", c->time_budget_s, "target_share",
                          c->target_share, "plateau", c->plateau, "max_tokens_total", (json_int_t)c->max_tokens_total,
                          "max_cost", c->max_cost, "history", c->history, "error_chars", c->error_chars, "seed",
                          (json_int_t)c->seed, "start_source", start_source);
    json_object_set(s, "constraints", L->constraints);
    json_object_set_new(s, "from", c->from ? json_string(c->from) : json_null());
    json_object_set_new(s, "profile", json_boolean(c->profile));
    json_object_set_new(s, "temperature", json_real(c->chat.temperature));
    json_object_set_new(s, "max_tokens", json_integer(c->chat.max_tokens));
    return s;
}

/* Takes a recorded session's settings for a replay. */
void agent_run_take_settings(struct temper_agent_config *c, json_t *s)
{
#define INT_OF(name) c->name = (int)json_integer_value(json_object_get(s, #name))
    INT_OF(budget);
    INT_OF(samples);
    INT_OF(islands);
    INT_OF(island_size);
    INT_OF(debug_rounds);
    INT_OF(tune_budget);
    INT_OF(plateau);
    INT_OF(history);
    INT_OF(error_chars);
#undef INT_OF
    c->no_timing = json_is_true(json_object_get(s, "no_timing"));
    c->profile = json_is_true(json_object_get(s, "profile"));
    c->time_budget_s = json_number_value(json_object_get(s, "time_budget_s"));
    c->target_share = json_number_value(json_object_get(s, "target_share"));
    c->max_tokens_total = json_integer_value(json_object_get(s, "max_tokens_total"));
    c->max_cost = json_number_value(json_object_get(s, "max_cost"));
    c->seed = (uint64_t)json_integer_value(json_object_get(s, "seed"));
}

void agent_run_defaults(struct temper_agent_config *c)
{
    if (c->budget <= 0)
        c->budget = 12;
    if (c->samples <= 0)
        c->samples = 1;
    if (c->islands <= 0)
        c->islands = 2;
    if (c->island_size <= 0)
        c->island_size = 4;
    if (c->debug_rounds < 0)
        c->debug_rounds = 1;
    if (c->tune_budget == 0)
        c->tune_budget = 8;
    if (c->target_share <= 0)
        c->target_share = 0.8;
    if (c->plateau <= 0)
        c->plateau = 6;
    if (c->history <= 0)
        c->history = 6;
    if (c->error_chars <= 0)
        c->error_chars = 1500;
    if (!c->seed)
        c->seed = 1;
}

void agent_run_session_event(void *user, const struct temper_session_event *ev)
{
    struct loop *L = user;
    if (ev->message)
        loop_line(L, "%s: %s", ev->kind == TEMPER_SESSION_WARNING ? "warning" : "note", ev->message);
}

static double result_ms(json_t *r, int no_timing)
{
    double ms, share, speedup;
    const char *bound;
    agent_result_numbers(r, &ms, &share, &speedup, &bound);
    return no_timing || isnan(ms) ? INFINITY : ms;
}

static int is_correct(json_t *r)
{
    const char *v = temper_session_result_verdict(r);
    return v && !strcmp(v, "correct");
}

static void count_outcome(struct loop *L, const char *outcome)
{
    json_object_set_new(L->outcomes, outcome, json_integer(json_integer_value(json_object_get(L->outcomes, outcome)) + 1));
}

/* Adds a line to the bounded list of recent attempts. */
static void add_attempt(struct loop *L, const char *role, int64_t eval_id, const char *source, const char *outcome,
                        double ms, const char *why)
{
    char feat[128] = "", line[768];
    if (source) {
        struct temper_kernel_features f;
        temper_kernel_features_detect(source, &f);
        temper_kernel_features_format(&f, feat, sizeof(feat));
    }
    char shown[400];
    temper_show_bytes(why ? why : "", why ? strlen(why) : 0, 300, shown, sizeof(shown));
    snprintf(line, sizeof(line), "#%d %s%s%lld: %s%s%s%s%s%s", L->made, role, eval_id ? " eval " : "",
             (long long)eval_id, outcome, isfinite(ms) ? "" : "", feat[0] ? "; " : "", feat, shown[0] ? "; " : "", shown);
    if (isfinite(ms)) {
        size_t n = strlen(line);
        snprintf(line + n, sizeof(line) - n, "; %.4g ms", ms);
    }
    json_array_append_new(L->attempts, json_string(line));
    while ((int)json_array_size(L->attempts) > L->cfg.history)
        json_array_remove(L->attempts, 0);
}

static char *attempts_text(struct loop *L)
{
    struct temper_buf b;
    temper_buf_init(&b, 1u << 16);
    for (size_t i = 0; i < json_array_size(L->attempts); i++)
        temper_buf_printf(&b, "%s\n", json_string_value(json_array_get(L->attempts, i)));
    char *out = strdup(b.data ? b.data : "");
    temper_buf_free(&b);
    return out;
}

static void check_stops(struct loop *L)
{
    if (L->stop || loop_interrupted(L))
        return;
    double ms, share, speedup;
    const char *bound;
    agent_result_numbers(L->best, &ms, &share, &speedup, &bound);
    double cost = (double)L->tokens_in * L->cfg.price_in / 1e6 + (double)L->tokens_out * L->cfg.price_out / 1e6;
    /* The target is met by a kernel the model made (the start may meet it already, or be faster
     * than a kernel that meets it: which is faster is the timing's to say, the target is not). */
    if (!L->cfg.no_timing && L->made_share >= L->cfg.target_share)
        snprintf(L->stop_reason, sizeof(L->stop_reason), "a kernel reached %.1f%% of the roofline (target %.1f%%)",
                 L->made_share * 100, L->cfg.target_share * 100);
    else if (L->made >= L->cfg.budget)
        snprintf(L->stop_reason, sizeof(L->stop_reason), "the budget of %d kernels was spent", L->cfg.budget);
    else if (L->since_better >= L->cfg.plateau)
        snprintf(L->stop_reason, sizeof(L->stop_reason), "a plateau: %d kernels without a better one", L->since_better);
    else if (L->cfg.max_tokens_total > 0 && L->tokens_in + L->tokens_out >= L->cfg.max_tokens_total)
        snprintf(L->stop_reason, sizeof(L->stop_reason), "the token limit (%lld) was reached",
                 (long long)L->cfg.max_tokens_total);
    else if (L->cfg.max_cost > 0 && cost >= L->cfg.max_cost)
        snprintf(L->stop_reason, sizeof(L->stop_reason), "the cost limit (%g) was reached", L->cfg.max_cost);
    else
        return;
    L->stop = 1;
}

/* A model call failed: the loop stops there, keeping what it found. Returns the error to pass up
 * (a store error, or the endpoint's when no call ever succeeded), else 0. */
static int model_failed(struct loop *L, int err)
{
    if (err == TEMPER_ESTORE || (L->calls == 0 && !L->cfg.replay_of))
        return err;
    L->stop = 1;
    snprintf(L->stop_reason, sizeof(L->stop_reason), "%s: %.200s",
             L->cfg.replay_of ? "the replay ended" : "the model's endpoint failed", L->msg);
    return 0;
}

static int record(struct loop *L, int64_t prompt_id, int64_t call_id, const char *role, int64_t parent,
                  int64_t eval_id, int island, const char *source, const char *outcome, double ms, const char *note)
{
    char feat[128] = "";
    if (source) {
        struct temper_kernel_features f;
        temper_kernel_features_detect(source, &f);
        temper_kernel_features_format(&f, feat, sizeof(feat));
    }
    struct agent_candidate_row row = {L->session_id, prompt_id, call_id, role,    parent,
                                      eval_id,       island,    source ? feat : NULL, source, outcome,
                                      isfinite(ms) ? ms : NAN, note};
    count_outcome(L, outcome);
    return agent_store_candidate(L->store, &row, L->msg, sizeof(L->msg));
}

/* What one reply of the coder or the debugger leads to: evaluation, review, tune, judge, repair. */
static int handle_reply(struct loop *L, const struct temper_chat_reply *reply, const char *role, int64_t parent_eval,
                        int64_t prompt_id, int64_t call_id, int island, int depth);

static int repair(struct loop *L, const char *source, json_t *result, int64_t failed_eval, int island, int depth)
{
    if (depth >= L->cfg.debug_rounds || L->stop)
        return 0;
    char *fb = agent_result_feedback(result, L->cfg.error_chars);
    char *kernel = agent_section_source("The kernel that failed:", source, L->lang);
    struct temper_buf b;
    temper_buf_init(&b, 1u << 20);
    temper_buf_printf(&b, "%s\nWhat temper said:\n%s", kernel ? kernel : "", fb ? fb : "");
    free(fb);
    free(kernel);
    struct agent_sections sec = {{0}};
    char *task = agent_section_task(&L->task, L->lang);
    char *dev = agent_section_device(temper_session_device_info(L->session), NULL);
    char *contract = agent_section_contract(&L->task, L->lang);
    sec.text[AGENT_SEC_TASK] = task;
    sec.text[AGENT_SEC_DEVICE] = dev;
    sec.text[AGENT_SEC_FEEDBACK] = b.data;
    sec.text[AGENT_SEC_CONTRACT] = contract;
    struct temper_chat_reply reply;
    int64_t pid = 0, cid = 0;
    int err = loop_ask(L, AGENT_DEBUGGER, &sec, &reply, &pid, &cid);
    free(task);
    free(dev);
    free(contract);
    temper_buf_free(&b);
    if (err)
        return model_failed(L, err);
    L->made++;
    err = handle_reply(L, &reply, "debugger", failed_eval, pid, cid, island, depth + 1);
    temper_chat_reply_free(&reply);
    return err;
}

static int judge(struct loop *L, const char *source, json_t *result)
{
    struct agent_sections sec = {{0}};
    char *task = agent_section_task(&L->task, L->lang);
    json_t *ceilings = temper_store_calibration(L->store, temper_session_device_info(L->session));
    char *dev = agent_section_device(temper_session_device_info(L->session), ceilings);
    json_decref(ceilings);
    char *best = agent_section_best(L->best, "The best so far");
    char *kernel = agent_section_source("The kernel judged:", source, L->lang);
    char *res = agent_section_result(result, L->cfg.error_chars);
    char *att = attempts_text(L);
    sec.text[AGENT_SEC_TASK] = task;
    sec.text[AGENT_SEC_DEVICE] = dev;
    sec.text[AGENT_SEC_BEST] = best;
    sec.text[AGENT_SEC_PARENT] = kernel;
    sec.text[AGENT_SEC_RESULT] = res;
    sec.text[AGENT_SEC_ATTEMPTS] = att;
    struct temper_chat_reply reply;
    int64_t pid = 0, cid = 0;
    int err = loop_ask(L, AGENT_JUDGE, &sec, &reply, &pid, &cid);
    free(task);
    free(dev);
    free(best);
    free(kernel);
    free(res);
    free(att);
    if (err)
        return model_failed(L, err);
    free(L->reflection);
    L->reflection = strdup(reply.content ? reply.content : "");
    temper_chat_reply_free(&reply);
    return 0;
}

/* A person reviews a proposal; returns the decision, replacing *source and *result when they
 * edited it (the edit is evaluated as the person's candidate). */
static int review(struct loop *L, char **source, json_t **result, int64_t *eval_id, int64_t prompt_id,
                  int64_t call_id, const char *role, int64_t parent_eval, enum temper_agent_decision *decision)
{
    struct temper_agent_review rv = {TEMPER_AGENT_ACCEPT, NULL, NULL};
    L->cfg.review(L->cfg.review_user, *source, *result, &rv);
    *decision = rv.decision;
    if (rv.constraint && *rv.constraint) {
        json_array_append_new(L->constraints, json_string(rv.constraint));
        loop_line(L, "  constraint added: %s", rv.constraint);
    }
    free(rv.constraint);
    int err = 0;
    if (rv.decision == TEMPER_AGENT_EDIT && rv.edited) {
        /* the proposal as it came, then the person's edit of it */
        const char *v = temper_session_result_verdict(*result);
        err = record(L, prompt_id, call_id, role, parent_eval, *eval_id, -1, *source, v ? v : "?", NAN,
                     "edited by the person");
        json_t *r2 = NULL;
        if (!err)
            err = loop_evaluate(L, rv.edited, "person", *eval_id, prompt_id, &r2);
        if (!err) {
            free(*source);
            *source = rv.edited;
            rv.edited = NULL;
            json_decref(*result);
            *result = r2;
            *eval_id = temper_session_result_store_id(r2);
            loop_line(L, "  the person's edit: %s", temper_session_result_verdict(r2) ?: "?");
        }
    } else if (rv.decision == TEMPER_AGENT_EDIT) {
        *decision = TEMPER_AGENT_ACCEPT;
    }
    free(rv.edited);
    return err;
}

/* The task a kernel names (`@temper task`) into out; 0 when it does not parse (the session then
 * says why). */
static int kernel_task(const char *source, const char *lang, char out[TEMPER_NAME_MAX])
{
    struct temper_candidate cand;
    char msg[256];
    if (temper_candidate_parse_lang("agent-kernel", lang, source, strlen(source), &cand, msg, sizeof(msg)))
        return 0;
    snprintf(out, TEMPER_NAME_MAX, "%s", cand.task);
    temper_candidate_free(&cand);
    return 1;
}

/* 1 if the kernel has a knob with more than one value: something for a tune to choose. */
static int has_choices(const char *source, const char *lang)
{
    struct temper_candidate cand;
    char msg[256];
    if (temper_candidate_parse_lang("agent-kernel", lang, source, strlen(source), &cand, msg, sizeof(msg)))
        return 0;
    int choices = 0;
    for (int i = 0; i < cand.nparams; i++)
        choices |= cand.params[i].nvalues > 1;
    temper_candidate_free(&cand);
    return choices;
}

/* A reply without a whole code block: recorded as cut off or without code. */
static int reply_without_code(struct loop *L, const struct temper_chat_reply *reply, enum temper_agent_code code,
                              const char *role, int64_t parent_eval, int64_t prompt_id, int64_t call_id)
{
    const char *outcome = code == TEMPER_AGENT_CODE_CUTOFF || reply->truncated ? "cut_off" : "no_code";
    const char *why = !strcmp(outcome, "cut_off")
                          ? "the reply was cut off at the token limit before its code block closed: write less"
                          : "the reply held no fenced code block";
    loop_line(L, "  %s: %s", role, why);
    add_attempt(L, role, 0, NULL, outcome, INFINITY, why);
    L->since_better++;
    int err = record(L, prompt_id, call_id, role, parent_eval, 0, -1, NULL, outcome, NAN, why);
    check_stops(L);
    return err;
}

/* A kernel that names another task (named): refused before it is evaluated, and sent to repair. */
static int reply_wrong_task(struct loop *L, const char *source, const char *named, const char *role,
                            int64_t parent_eval, int64_t prompt_id, int64_t call_id, int island, int depth)
{
    char why[400];
    snprintf(why, sizeof(why), "the kernel says '@temper task %s', but the task is %s: it would be judged "
             "against the wrong task", named, L->task.name);
    loop_line(L, "  %s: %s", role, why);
    add_attempt(L, role, 0, source, "wrong_task", INFINITY, why);
    L->since_better++;
    int err = record(L, prompt_id, call_id, role, parent_eval, 0, -1, source, "wrong_task", NAN, why);
    check_stops(L);
    json_t *feedback = json_pack("{s:s, s:s}", "verdict", "invalid", "message", why);
    if (!err)
        err = repair(L, source, feedback, parent_eval, island, depth);
    json_decref(feedback);
    return err;
}

/* A correct kernel's knobs tuned, where it has choices and timing is on: the tuned result
 * replaces *result (and *eval_id, *ms) where it is faster. Only a store's failure is returned. */
static int tune_correct(struct loop *L, const char *source, json_t **result, int64_t *eval_id, double *ms)
{
    json_t *tuned = NULL;
    if (L->cfg.no_timing || L->cfg.tune_budget <= 0 || !has_choices(source, L->lang))
        return 0;
    loop_line(L, "  tuning its knobs (%d evaluations at most)", L->cfg.tune_budget);
    int err = loop_tune(L, source, &tuned);
    if (err == TEMPER_ESTORE)
        return err;
    if (err)
        loop_line(L, "  the tune failed: %s", L->msg);
    if (tuned && result_ms(tuned, 0) < *ms) {
        json_decref(*result);
        *result = tuned;
        *eval_id = temper_session_result_store_id(*result);
        *ms = result_ms(*result, 0);
    } else {
        json_decref(tuned);
    }
    return 0;
}

/* A correct kernel (tuned): offered to its island, recorded, kept as the best where it is
 * faster, and judged. */
static int keep_correct(struct loop *L, const char *source, json_t *result, int64_t eval_id, double ms,
                        const char *role, int64_t parent_eval, int64_t prompt_id, int64_t call_id, int island)
{
    int taken = agent_pop_offer(&L->pop, island, eval_id, source, result, ms, role);
    int err = record(L, prompt_id, call_id, role, parent_eval, eval_id, taken ? island : -1, source, "correct", ms,
                     NULL);
    add_attempt(L, role, eval_id, source, "correct", ms, NULL);
    double r_ms, r_share, r_speedup;
    const char *r_bound;
    agent_result_numbers(result, &r_ms, &r_share, &r_speedup, &r_bound);
    if (!isnan(r_share) && r_share > L->made_share)
        L->made_share = r_share;
    int better = L->cfg.no_timing ? !strcmp(L->best_by, "start") : ms < L->best_ms;
    if (better) {
        json_decref(L->best);
        L->best = json_incref(result);
        free(L->best_source);
        L->best_source = strdup(source);
        L->best_eval_id = eval_id;
        L->best_ms = ms;
        snprintf(L->best_by, sizeof(L->best_by), "%s", role);
        L->since_better = 0;
        loop_line(L, "  a new best (eval %lld)", (long long)eval_id);
    } else {
        L->since_better++;
    }
    if (!err && !L->cfg.no_timing && !L->stop && !loop_interrupted(L))
        err = judge(L, source, result);
    return err;
}

/* What the person says of a kernel (--review): their edit, when they make one, becomes the
 * kernel (*source, *result and *eval_id; then *role is the person's and *parent_eval the
 * proposal), and a stop ends the run. */
static int take_review(struct loop *L, char **source, json_t **result, int64_t *eval_id, int64_t prompt_id,
                       int64_t call_id, const char **role, int64_t *parent_eval, enum temper_agent_decision *decision)
{
    int64_t proposal = *eval_id;
    int err = review(L, source, result, eval_id, prompt_id, call_id, *role, *parent_eval, decision);
    if (!err && *eval_id != proposal) {
        *role = "person";
        *parent_eval = proposal;
    }
    if (err)
        return err;
    if (*decision == TEMPER_AGENT_STOP) {
        L->stop = 1;
        snprintf(L->stop_reason, sizeof(L->stop_reason), "the person stopped the run");
    }
    return 0;
}

static int handle_reply(struct loop *L, const struct temper_chat_reply *reply, const char *role, int64_t parent_eval,
                        int64_t prompt_id, int64_t call_id, int island, int depth)
{
    char *source = NULL;
    enum temper_agent_code code = temper_agent_extract_code(reply->content ? reply->content : "", &source);
    if (code != TEMPER_AGENT_CODE_FOUND)
        return reply_without_code(L, reply, code, role, parent_eval, prompt_id, call_id);
    /* a kernel for another task would be judged against that task: it is refused before */
    char named[TEMPER_NAME_MAX];
    if (kernel_task(source, L->lang, named) && strcmp(named, L->task.name)) {
        int err = reply_wrong_task(L, source, named, role, parent_eval, prompt_id, call_id, island, depth);
        free(source);
        return err;
    }
    json_t *result = NULL;
    int err = loop_evaluate(L, source, role, parent_eval, prompt_id, &result);
    if (err) {
        free(source);
        return err;
    }
    int64_t eval_id = temper_session_result_store_id(result);
    const char *task_error = temper_session_result_task_error(result);
    if (task_error) {
        snprintf(L->msg, sizeof(L->msg), "%s", task_error);
        free(source);
        json_decref(result);
        return TEMPER_EINVALID;
    }
    enum temper_agent_decision decision = TEMPER_AGENT_ACCEPT;
    if (L->cfg.review &&
        (err = take_review(L, &source, &result, &eval_id, prompt_id, call_id, &role, &parent_eval, &decision))) {
        free(source);
        json_decref(result);
        return err;
    }
    const char *verdict = temper_session_result_verdict(result);
    loop_line(L, "  %s's kernel (eval %lld): %s", role, (long long)eval_id, verdict ? verdict : "?");
    if (decision == TEMPER_AGENT_REJECT) {
        add_attempt(L, role, eval_id, source, "rejected by the person", INFINITY, NULL);
        L->since_better++;
        err = record(L, prompt_id, call_id, role, parent_eval, eval_id, -1, source, "rejected", NAN, NULL);
    } else if (is_correct(result)) {
        double ms = result_ms(result, L->cfg.no_timing);
        if (tune_correct(L, source, &result, &eval_id, &ms) == TEMPER_ESTORE) {
            free(source);
            json_decref(result);
            return TEMPER_ESTORE;
        }
        err = keep_correct(L, source, result, eval_id, ms, role, parent_eval, prompt_id, call_id, island);
    } else {
        char *fb = agent_result_feedback(result, L->cfg.error_chars);
        add_attempt(L, role, eval_id, source, verdict ? verdict : "?", INFINITY, fb);
        L->since_better++;
        err = record(L, prompt_id, call_id, role, parent_eval, eval_id, -1, source, verdict ? verdict : "?", NAN, fb);
        free(fb);
        check_stops(L);
        if (!err)
            err = repair(L, source, result, eval_id, island, depth);
    }
    check_stops(L);
    free(source);
    json_decref(result);
    return err;
}

/* One iteration: a parent from an island, a plan, the coder's samples. */
int agent_run_iterate(struct loop *L, int iteration)
{
    L->iteration = iteration + 1;
    int island = iteration % L->pop.nislands;
    const struct agent_member *parent = agent_pop_parent(&L->pop, island, &L->rng);
    if (!parent) {
        island = 0;
        parent = agent_pop_parent(&L->pop, 0, &L->rng);
    }
    int64_t parent_eval = parent->eval_id;
    char *parent_source = strdup(parent->source);
    char label[64];
    snprintf(label, sizeof(label), "The kernel to start from (eval %lld, by %s):", (long long)parent_eval,
             parent->made_by);
    struct agent_sections sec = {{0}};
    json_t *ceilings = temper_store_calibration(L->store, temper_session_device_info(L->session));
    char *task = agent_section_task(&L->task, L->lang);
    char *dev = agent_section_device(temper_session_device_info(L->session), ceilings);
    json_decref(ceilings);
    char *best = agent_section_best(L->best, !strcmp(L->best_by, "start") ? "The starting kernel" : "The best kernel");
    char *par = agent_section_source(label, parent_source, L->lang);
    char *att = attempts_text(L);
    char *target = agent_section_target(L->best, "the starting kernel", L->cfg.no_timing);
    char *contract = agent_section_contract(&L->task, L->lang);
    sec.text[AGENT_SEC_TASK] = task;
    sec.text[AGENT_SEC_DEVICE] = dev;
    sec.text[AGENT_SEC_BEST] = best;
    sec.text[AGENT_SEC_PARENT] = par;
    sec.text[AGENT_SEC_ATTEMPTS] = att;
    sec.text[AGENT_SEC_REFLECTION] = L->reflection;
    sec.text[AGENT_SEC_TARGET] = target;
    loop_line(L, "iteration %d: island %d, parent eval %lld", iteration + 1, island, (long long)parent_eval);
    struct temper_chat_reply plan;
    int64_t pid = 0, cid = 0;
    int err = loop_ask(L, AGENT_PLANNER, &sec, &plan, &pid, &cid);
    if (err) {
        err = model_failed(L, err);
    } else {
        sec.text[AGENT_SEC_PLAN] = plan.content;
        sec.text[AGENT_SEC_CONTRACT] = contract;
        for (int k = 0; k < L->cfg.samples && !L->stop && !loop_interrupted(L) && !err; k++) {
            struct temper_chat_reply code;
            err = loop_ask(L, AGENT_CODER, &sec, &code, &pid, &cid);
            if (err) {
                err = model_failed(L, err);
                break;
            }
            L->made++;
            err = handle_reply(L, &code, "coder", parent_eval, pid, cid, island, 0);
            temper_chat_reply_free(&code);
        }
        temper_chat_reply_free(&plan);
    }
    free(task);
    free(dev);
    free(best);
    free(par);
    free(att);
    free(target);
    free(contract);
    free(parent_source);
    return err;
}
