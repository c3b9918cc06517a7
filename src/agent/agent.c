/* agent.c: temper_agent_run's set-up and ending: the settings (a replay's from the store), the
 * model (an endpoint or the recorded replies), the task and the session, the starting kernel,
 * the dry run that prints the prompts, the summary, and the writing of the best kernel. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_impl.h"
#include "loop_impl.h"
#include "temper/error.h"
#include "temper/kernel.h"
#include "temper/result.h"
#include "agent/knowledge.h"
#include "search/tune.h"
#include "temper/session.h"
#include "util/util.h"

/* The retrieved examples for the task: what `temper knowledge search` gives for its name and
 * language. Caller frees; NULL when nothing is found. */
static char *examples_for(struct loop *L)
{
    json_t *info = temper_session_device_info(L->session);
    char query[256];
    snprintf(query, sizeof(query), "%s %s %s", L->task.name, L->lang,
             json_string_value(json_object_get(info, "class")) ?: "");
    struct temper_knowledge_config kc = {L->cfg.knowledge_dir, temper_store_path(L->store), L->task.name,
                                         json_string_value(json_object_get(info, "id")), L->lang};
    char *text = NULL;
    char msg[512];
    if (temper_knowledge_prompt(&kc, query, 3, 4500, &text, msg, sizeof(msg))) {
        loop_line(L, "note: no examples retrieved: %s", msg);
        return NULL;
    }
    return text;
}

/* The prompts of a dry run: the planner's and the coder's as the first iteration would send
 * them, and the debugger's and the judge's system prompts. Caller frees. */
static char *dry_run(struct loop *L, const char *start_source, const char *start_label)
{
    struct temper_buf b;
    temper_buf_init(&b, 1u << 22);
    json_t *ceilings = temper_store_calibration(L->store, temper_session_device_info(L->session));
    struct agent_sections sec = {{0}};
    char *task = agent_section_task(&L->task, L->lang);
    char *dev = agent_section_device(temper_session_device_info(L->session), ceilings);
    json_decref(ceilings);
    char *best = agent_section_best(NULL, start_label);
    char label[300];
    snprintf(label, sizeof(label), "The kernel to start from (%s):", start_label);
    char *par = agent_section_source(label, start_source, L->lang);
    char *target = agent_section_target(NULL, start_label, L->cfg.no_timing);
    char *contract = agent_section_contract(&L->task, L->lang);
    struct temper_buf cons;
    temper_buf_init(&cons, 1u << 16);
    for (size_t i = 0; i < json_array_size(L->constraints); i++)
        temper_buf_printf(&cons, "- %s\n", json_string_value(json_array_get(L->constraints, i)));
    sec.text[AGENT_SEC_TASK] = task;
    sec.text[AGENT_SEC_DEVICE] = dev;
    sec.text[AGENT_SEC_BEST] = best;
    sec.text[AGENT_SEC_PARENT] = par;
    sec.text[AGENT_SEC_TARGET] = target;
    sec.text[AGENT_SEC_CONSTRAINTS] = cons.data;
    sec.text[AGENT_SEC_EXAMPLES] = L->examples;
    for (int role = AGENT_PLANNER; role <= AGENT_CODER; role++) {
        if (role == AGENT_CODER) {
            sec.text[AGENT_SEC_PLAN] = "(the planner's reply)";
            sec.text[AGENT_SEC_CONTRACT] = contract;
        }
        char *user = agent_user_prompt(role, &sec);
        temper_buf_printf(&b, "==== %s: system ====\n%s\n\n==== %s: user ====\n%s\n", agent_role_name(role),
                          agent_system_prompt(role), agent_role_name(role), user ? user : "");
        free(user);
    }
    for (int role = AGENT_DEBUGGER; role <= AGENT_JUDGE; role++)
        temper_buf_printf(&b, "==== %s: system ====\n%s\n(its user prompt carries %s)\n\n", agent_role_name(role),
                          agent_system_prompt(role),
                          role == AGENT_DEBUGGER ? "the task, the device, the failed kernel with temper's feedback, "
                                                   "the constraints and the output contract"
                                                 : "the task, the device, the best so far, the kernel judged with its "
                                                   "result, and the recent attempts");
    free(task);
    free(dev);
    free(best);
    free(par);
    free(target);
    free(contract);
    temper_buf_free(&cons);
    char *out = strdup(b.data ? b.data : "");
    temper_buf_free(&b);
    return out;
}

static json_t *summary_of(struct loop *L)
{
    double ms, share, speedup;
    const char *bound;
    agent_result_numbers(L->best, &ms, &share, &speedup, &bound);
    /* The best result came from the session or a tune's best, which a store may have held: read as
     * the agent reads every result (prompt.c), leniently; out of memory, it reads as empty. */
    struct temper_result r;
    temper_result_from_stored(L->best, &r);
    int by_model = strcmp(L->best_by, "start") != 0;
    int found = by_model && (L->cfg.no_timing || (isfinite(L->best_ms) && L->best_ms < L->start_ms));
    json_t *best = json_pack("{s:I, s:s, s:s, s:O, s:s}", "eval_id", (json_int_t)L->best_eval_id, "made_by", L->best_by,
                             "source_hash", r.source_hash ?: "", "knobs", r.knobs ?: json_null(), "source",
                             L->best_source);
    temper_result_free(&r);
    json_object_set_new(best, "median_ms", isfinite(L->best_ms) ? json_real(L->best_ms) : json_null());
    json_object_set_new(best, "speedup", isnan(speedup) ? json_null() : json_real(speedup));
    json_object_set_new(best, "roofline_share", isnan(share) ? json_null() : json_real(share));
    json_object_set_new(best, "bound", bound ? json_string(bound) : json_null());
    json_object_set_new(best, "lang", json_string(L->lang));
    struct temper_kernel_features f;
    char feat[128];
    temper_kernel_features_detect(L->best_source, &f);
    temper_kernel_features_format(&f, feat, sizeof(feat));
    json_object_set_new(best, "features", json_string(feat));
    double cost = (double)L->tokens_in * L->cfg.price_in / 1e6 + (double)L->tokens_out * L->cfg.price_out / 1e6;
    json_t *info = temper_session_device_info(L->session);
    json_t *s = json_pack("{s:I, s:s, s:s, s:b, s:s, s:i, s:i, s:O, s:I, s:I, s:f, s:o}", "session_id",
                          (json_int_t)L->session_id, "task", L->task.name, "device",
                          json_string_value(json_object_get(info, "id")) ?: "",
                          "found_better", found, "stop_reason", L->stop_reason, "kernels", L->made, "model_calls",
                          L->calls, "outcomes", L->outcomes, "tokens_in", (json_int_t)L->tokens_in, "tokens_out",
                          (json_int_t)L->tokens_out, "cost", cost, "best", best);
    json_object_set_new(s, "start_ms", isfinite(L->start_ms) ? json_real(L->start_ms) : json_null());
    json_object_set_new(s, "interrupted", json_boolean(L->interrupted));
    if (L->cfg.replay_of)
        json_object_set_new(s, "replay_of", json_integer(L->cfg.replay_of));
    return s;
}

/* Evaluates the starting kernel and seeds the population with it. */
static int start(struct loop *L, const char *source)
{
    json_t *r = NULL;
    loop_line(L, "evaluating the starting kernel");
    int err = loop_evaluate(L, source, "start", 0, 0, &r);
    if (err)
        return err;
    const char *task_error = temper_session_result_task_error(r);
    if (task_error || !temper_session_result_verdict(r) || strcmp(temper_session_result_verdict(r), "correct")) {
        char *fb = agent_result_feedback(r, 600);
        temper_fail(L->msg, sizeof(L->msg), TEMPER_EINVALID, "the starting kernel is not correct, nothing to improve on: %s",
                    task_error ? task_error : fb ? fb : "?");
        free(fb);
        json_decref(r);
        return TEMPER_EINVALID;
    }
    double ms, share, speedup;
    const char *bound;
    agent_result_numbers(r, &ms, &share, &speedup, &bound);
    L->start_ms = L->best_ms = L->cfg.no_timing || isnan(ms) ? INFINITY : ms;
    L->best = r;
    L->best_source = strdup(source);
    L->best_eval_id = temper_session_result_store_id(r);
    snprintf(L->best_by, sizeof(L->best_by), "start");
    for (int i = 0; i < L->pop.nislands; i++)
        agent_pop_offer(&L->pop, i, L->best_eval_id, source, r, L->start_ms, "start");
    struct agent_candidate_row row = {L->session_id, 0,      0,      "start", 0, L->best_eval_id, 0, NULL, source,
                                      "correct",     L->start_ms, NULL};
    if (!isfinite(row.median_ms))
        row.median_ms = NAN;
    return agent_store_candidate(L->store, &row, L->msg, sizeof(L->msg));
}

static void loop_free(struct loop *L)
{
    temper_session_close(L->session);
    temper_store_close(L->store);
    json_decref(L->constraints);
    json_decref(L->attempts);
    json_decref(L->outcomes);
    json_decref(L->best);
    free(L->best_source);
    free(L->examples);
    free(L->reflection);
    agent_pop_free(&L->pop);
    free(L);
}

/* A replay's settings, task, device, constraints and starting kernel (*start_source, caller
 * frees), as recorded, and its recorded replies as the model. */
static int take_replay(struct loop *L, json_t *recorded, const char **task_name, char **start_source,
                       struct loop_replay *replay)
{
    json_t *st = json_object_get(recorded, "settings");
    agent_run_take_settings(&L->cfg, st);
    *task_name = json_string_value(json_object_get(recorded, "task"));
    if (!L->cfg.lang)
        L->cfg.lang = json_string_value(json_object_get(st, "lang"));
    if (!L->cfg.device)
        L->cfg.device = json_string_value(json_object_get(recorded, "device"));
    json_t *cons = json_object_get(st, "constraints");
    if (json_is_array(cons)) {
        json_decref(L->constraints);
        L->constraints = json_deep_copy(cons);
    }
    *start_source = strdup(json_string_value(json_object_get(st, "start_source")) ?: "");
    replay->replies = agent_store_replies(L->store, L->cfg.replay_of);
    int err = 0;
    if (!replay->replies)
        err = temper_fail(L->msg, sizeof(L->msg), TEMPER_ESTORE, "%s: reading agent session %lld's replies failed",
                          temper_store_path(L->store), (long long)L->cfg.replay_of);
    L->complete = loop_replay_complete;
    L->model = replay;
    return err;
}

/* The task, the population, the session on the device, and the kernel language (L->lang), which
 * must be the device's. */
static int open_task(struct loop *L, const char *task_name)
{
    char task_dir[TEMPER_PATH_MAX];
    int err = 0;
    if (!task_name || !*task_name)
        err = temper_fail(L->msg, sizeof(L->msg), TEMPER_EINVALID, "no task named");
    if (!err)
        err = temper_task_find(temper_tasks_root(L->cfg.tasks_dir), task_name, task_dir, sizeof(task_dir), L->msg,
                               sizeof(L->msg));
    if (!err)
        err = temper_task_load(task_dir, &L->task, L->msg, sizeof(L->msg));
    if (!err && agent_pop_init(&L->pop, L->cfg.islands, L->cfg.island_size))
        err = temper_fail(L->msg, sizeof(L->msg), TEMPER_ENOMEM, "out of memory");
    if (!err) {
        struct temper_session_config sc;
        memset(&sc, 0, sizeof(sc));
        sc.device = L->cfg.device;
        sc.store_path = L->cfg.store_path;
        sc.tasks_dir = L->cfg.tasks_dir;
        sc.on_event = agent_run_session_event;
        sc.event_user = L;
        err = temper_session_open(&sc, &L->session, L->msg, sizeof(L->msg));
    }
    if (!err) {
        json_t *info = temper_session_device_info(L->session);
        const char *dev_lang = json_string_value(json_object_get(info, "language"));
        snprintf(L->lang, sizeof(L->lang), "%s", L->cfg.lang ? L->cfg.lang : dev_lang ? dev_lang : "opencl");
        if (strcmp(L->lang, "cuda") && strcmp(L->lang, "opencl"))
            err = temper_fail(L->msg, sizeof(L->msg), TEMPER_EINVALID, "--lang %s: not cuda or opencl", L->lang);
        else if (dev_lang && strcmp(dev_lang, L->lang))
            err = temper_fail(L->msg, sizeof(L->msg), TEMPER_EINVALID, "--lang %s, but the device %s runs %s", L->lang,
                              json_string_value(json_object_get(info, "id")) ?: "?",
                              dev_lang);
    }
    return err;
}

/* The starting kernel, where a replay did not give one: --from's file, else the task's baseline
 * in L->lang (*start_source, caller frees); and how the prompts name it (label). */
static int read_start(struct loop *L, char **start_source, char *label, size_t label_size)
{
    const char *path = L->cfg.from ? L->cfg.from
                                   : !strcmp(L->lang, "cuda") ? L->task.baseline_cuda : L->task.baseline_opencl;
    int err;
    if (!path || !*path)
        err = temper_fail(L->msg, sizeof(L->msg), TEMPER_EINVALID,
                          "task %s has no %s baseline to start from: give one with --from FILE", L->task.name, L->lang);
    else
        err = temper_read_file(path, 1u << 20, start_source, NULL, L->msg, sizeof(L->msg));
    const char *base = path ? strrchr(path, '/') : NULL;
    snprintf(label, label_size, "%s %.200s", L->cfg.from ? "the kernel given," : "the task's baseline",
             base ? base + 1 : path ? path : "");
    return err;
}

/* The run itself: the session recorded in the store, the starting kernel evaluated, the
 * iterations (islands migrating every third), and the summary (*summary, caller frees) written
 * back to the store. */
static int run_session(struct loop *L, const struct temper_agent_config *config, json_t *recorded,
                       const char *start_source, json_t **summary)
{
    json_t *settings = agent_run_settings(L, start_source);
    json_t *info = temper_session_device_info(L->session);
    int err = agent_store_session_begin(L->store, L->task.name, json_string_value(json_object_get(info, "id")),
                                        config->replay_of ? "replay" : temper_chat_api_name(config->chat.api),
                                        config->replay_of ? NULL : config->chat.endpoint,
                                        config->replay_of ? json_string_value(json_object_get(recorded, "model"))
                                                          : config->chat.model,
                                        settings, config->replay_of, &L->session_id, L->msg, sizeof(L->msg));
    json_decref(settings);
    if (!err)
        err = start(L, start_source);
    for (int it = 0; !err && !L->stop && !loop_interrupted(L); it++) {
        err = agent_run_iterate(L, it);
        if (!err && !L->stop && (it + 1) % 3 == 0)
            agent_pop_migrate(&L->pop);
    }
    if (L->session_id && L->best) {
        json_t *s = summary_of(L);
        int ferr = agent_store_session_finish(L->store, L->session_id, L->best_eval_id, s, err ? NULL : L->msg,
                                              err ? 0 : sizeof(L->msg));
        if (!err)
            err = ferr;
        if (!err && summary)
            *summary = s;
        else
            json_decref(s);
    }
    return err;
}

int temper_agent_run(const struct temper_agent_config *config, json_t **summary, char **prompts, char *msg,
                     size_t msg_size)
{
    if (summary)
        *summary = NULL;
    if (prompts)
        *prompts = NULL;
    struct loop *L = calloc(1, sizeof(*L));
    if (!L)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    L->cfg = *config;
    L->constraints = json_array();
    L->attempts = json_array();
    L->outcomes = json_object();
    L->best_ms = L->start_ms = INFINITY;
    for (const char *const *c = config->constraints; c && *c; c++)
        json_array_append_new(L->constraints, json_string(*c));
    struct temper_chat *chat = NULL;
    struct loop_replay replay = {NULL, 0};
    json_t *recorded = NULL;
    char *start_source = NULL;
    const char *task_name = config->task;
    int err = temper_store_open(config->store_path, &L->store, L->msg, sizeof(L->msg));
    if (!err && config->replay_of) {
        recorded = agent_store_session_get(L->store, config->replay_of);
        if (!recorded)
            err = temper_fail(L->msg, sizeof(L->msg), TEMPER_ENOTFOUND, "%s: no agent session %lld",
                              temper_store_path(L->store), (long long)config->replay_of);
        else
            err = take_replay(L, recorded, &task_name, &start_source, &replay);
    } else if (!err && !config->dry_run) {
        err = temper_chat_open(&config->chat, &chat, L->msg, sizeof(L->msg));
        L->complete = loop_live_complete;
        L->model = chat;
    }
    agent_run_defaults(&L->cfg);
    if (!err)
        err = open_task(L, task_name);
    char start_label[300] = "";
    if (!err && !start_source)
        err = read_start(L, &start_source, start_label, sizeof(start_label));
    else if (!err)
        snprintf(start_label, sizeof(start_label), "the starting kernel of agent session %lld",
                 (long long)config->replay_of);
    if (!err) {
        temper_rng_seed(&L->rng, L->cfg.seed);
        L->examples = examples_for(L);
    }
    if (!err && config->dry_run) {
        *prompts = dry_run(L, start_source, start_label);
        if (!*prompts)
            err = temper_fail(L->msg, sizeof(L->msg), TEMPER_ENOMEM, "out of memory");
    } else if (!err) {
        err = run_session(L, config, recorded, start_source, summary);
    }
    if (err)
        temper_fail(msg, msg_size, err, "%s", L->msg[0] ? L->msg : temper_strerror(err));
    free(start_source);
    json_decref(recorded);
    json_decref(replay.replies);
    temper_chat_close(chat);
    loop_free(L);
    return err;
}

int temper_agent_write_best(json_t *summary, const char *path, char *msg, size_t msg_size)
{
    json_t *best = json_object_get(summary, "best");
    const char *source = json_string_value(json_object_get(best, "source"));
    const char *lang = json_string_value(json_object_get(best, "lang"));
    if (!source)
        return temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "the summary holds no best kernel");
    json_t *knobs = json_object_get(best, "knobs");
    if (!json_object_size(knobs))
        return temper_write_file_atomic(path, source, strlen(source), msg, msg_size);
    struct temper_candidate cand;
    int err = temper_candidate_parse_lang(path, lang, source, strlen(source), &cand, msg, msg_size);
    if (err)
        return err;
    err = temper_tune_write_fixed(&cand, knobs, "", path, msg, msg_size);
    temper_candidate_free(&cand);
    return err;
}
