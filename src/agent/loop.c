/* loop.c: the agent's loop (docs/agent.md). It evaluates the starting kernel, then, until a stop
 * (the budget, a plateau, the target roofline share, a token or cost limit, Ctrl-C through
 * loop_interrupted), draws a parent
 * from an island of the population, asks the planner for a strategy and the coder for kernels,
 * lets the debugger repair a failing one from the harness's feedback, tunes a correct one's
 * knobs and asks the judge for the bottleneck and a reflection. Every evaluation goes through the
 * session API; every prompt, model call and candidate is recorded in the store with its lineage.
 * The model is a backend: a live endpoint, or the recorded replies of an earlier session. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_impl.h"
#include "loop_impl.h"
#include "temper/error.h"
#include "temper/kernel.h"
#include "temper/session.h"
#include "util/util.h"

void loop_line(struct loop *L, const char *fmt, ...)
{
    if (!L->cfg.on_line)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    L->cfg.on_line(L->cfg.line_user, line);
}

int loop_interrupted(struct loop *L)
{
    if (L->interrupted)
        return 1;
    if (!L->cfg.interrupted || !L->cfg.interrupted(L->cfg.interrupt_user))
        return 0;
    L->stop = L->interrupted = 1;
    if (L->iteration)
        snprintf(L->stop_reason, sizeof(L->stop_reason),
                 "interrupted (Ctrl-C) in iteration %d, after %d kernel%s and %d model call%s", L->iteration, L->made,
                 L->made == 1 ? "" : "s", L->calls, L->calls == 1 ? "" : "s");
    else
        snprintf(L->stop_reason, sizeof(L->stop_reason), "interrupted (Ctrl-C) after the starting kernel's evaluation");
    loop_line(L, "stopping: %s", L->stop_reason);
    return 1;
}

/* ---- the model's backends ---- */

int loop_live_complete(void *ctx, const struct temper_chat_message *m, int n, temper_chat_exchange_cb cb,
                         void *user, struct temper_chat_reply *reply, char *msg, size_t msg_size)
{
    return temper_chat_complete(ctx, m, n, cb, user, reply, msg, msg_size);
}

int loop_replay_complete(void *ctx, const struct temper_chat_message *m, int n, temper_chat_exchange_cb cb,
                           void *user, struct temper_chat_reply *reply, char *msg, size_t msg_size)
{
    struct loop_replay *r = ctx;
    if (r->next >= json_array_size(r->replies))
        return temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "the recorded session has no more replies");
    json_t *e = json_array_get(r->replies, r->next++);
    const char *body = json_string_value(json_object_get(e, "reply"));
    int api = temper_chat_api_parse(json_string_value(json_object_get(e, "api")));
    double t0 = temper_now_s();
    int err = temper_chat_parse(api < 0 ? TEMPER_CHAT_OPENAI : (enum temper_chat_api)api, body, reply, msg, msg_size);
    json_t *req = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(req, json_pack("{s:s, s:s}", "role", m[i].role, "content", m[i].content));
    char *req_text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    if (!err) {
        reply->attempts = 1;
        reply->latency_ms = (temper_now_s() - t0) * 1e3;
    }
    struct temper_chat_exchange ex = {1, "replay", req_text ? req_text : "[]", err ? 0 : 200, body,
                                      (temper_now_s() - t0) * 1e3, err ? msg : NULL, err ? NULL : reply};
    if (cb)
        cb(user, &ex);
    free(req_text);
    return err;
}

/* ---- asking a role ---- */

/* Records each exchange of a call; the last call's row id is kept for the candidate's lineage. */
struct call_record {
    struct loop *L;   /* the loop */
    int64_t prompt_id; /* the prompt it answers */
    int64_t call_id;  /* the last exchange's row */
    int failed;       /* 1: recording failed (the loop stops with a store error) */
    char msg[512];    /* why */
};

static void on_exchange(void *user, const struct temper_chat_exchange *ex)
{
    struct call_record *c = user;
    if (ex->error)
        loop_line(c->L, "  model call attempt %d: %s", ex->attempt, ex->error);
    if (!c->failed && agent_store_call(c->L->store, c->L->session_id, c->prompt_id, ex, &c->call_id, c->msg,
                                       sizeof(c->msg)))
        c->failed = 1;
}

/* The constraints section: the person's constraints, one per line. Caller frees. */
static char *constraints_text(struct loop *L)
{
    struct temper_buf b;
    temper_buf_init(&b, 1u << 16);
    for (size_t i = 0; i < json_array_size(L->constraints); i++)
        temper_buf_printf(&b, "- %s\n", json_string_value(json_array_get(L->constraints, i)));
    char *out = strdup(b.data ? b.data : "");
    temper_buf_free(&b);
    return out;
}

int loop_ask(struct loop *L, enum agent_role role, struct agent_sections *sec, struct temper_chat_reply *reply,
             int64_t *prompt_id, int64_t *call_id)
{
    memset(reply, 0, sizeof(*reply));
    char *cons = constraints_text(L);
    sec->text[AGENT_SEC_CONSTRAINTS] = cons;
    sec->text[AGENT_SEC_EXAMPLES] = L->examples;
    char *user = agent_user_prompt(role, sec);
    sec->text[AGENT_SEC_CONSTRAINTS] = NULL;
    free(cons);
    if (!user)
        return temper_fail(L->msg, sizeof(L->msg), TEMPER_ENOMEM, "out of memory");
    struct temper_chat_message m[2] = {{"system", agent_system_prompt(role)}, {"user", user}};
    json_t *messages = json_pack("[{s:s, s:s}, {s:s, s:s}]", "role", "system", "content", m[0].content, "role", "user",
                                 "content", user);
    int err = agent_store_prompt(L->store, L->session_id, agent_role_name(role), messages, prompt_id, L->msg,
                                 sizeof(L->msg));
    json_decref(messages);
    if (err) {
        free(user);
        return err;
    }
    struct call_record rec = {L, *prompt_id, 0, 0, ""};
    loop_line(L, "  asking the %s", agent_role_name(role));
    err = L->complete(L->model, m, 2, on_exchange, &rec, reply, L->msg, sizeof(L->msg));
    free(user);
    *call_id = rec.call_id;
    if (rec.failed) {
        temper_chat_reply_free(reply);
        snprintf(L->msg, sizeof(L->msg), "%s", rec.msg);
        return TEMPER_ESTORE;
    }
    if (err)
        return err;
    if (reply->prompt_tokens > 0)
        L->tokens_in += reply->prompt_tokens;
    if (reply->completion_tokens > 0)
        L->tokens_out += reply->completion_tokens;
    L->calls++;
    return 0;
}

/* ---- evaluating ---- */

int loop_evaluate(struct loop *L, const char *source, const char *role, int64_t parent_eval, int64_t prompt_id,
                  json_t **result)
{
    char path[256], batch[96];
    snprintf(path, sizeof(path), "agent-%lld-%d.%s", (long long)L->session_id, ++L->evaluated,
             strcmp(L->lang, "cuda") ? "cl" : "cu");
    snprintf(batch, sizeof(batch), "agent-%lld-prompt-%lld", (long long)L->session_id, (long long)prompt_id);
    struct temper_session_request req;
    memset(&req, 0, sizeof(req));
    req.path = path;
    req.source = source;
    req.lang = L->lang;
    req.no_timing = L->cfg.no_timing;
    req.profile = L->cfg.profile && !L->cfg.no_timing;
    req.time_budget_s = L->cfg.time_budget_s;
    req.parent_id = parent_eval;
    req.made_by = role;
    req.batch_id = prompt_id ? batch : NULL;
    int64_t id;
    int err = temper_session_submit(L->session, &req, &id, L->msg, sizeof(L->msg));
    if (!err)
        err = temper_session_wait(L->session, id, result, L->msg, sizeof(L->msg));
    if (!err && temper_session_result_store_error(*result)) {
        snprintf(L->msg, sizeof(L->msg), "%s", temper_session_result_store_error(*result));
        json_decref(*result);
        *result = NULL;
        err = TEMPER_ESTORE;
    }
    return err;
}

/* Tunes a correct kernel's knobs; *tuned gets the best point's result (NULL when the tune found
 * nothing better to say), *eval_id its row. */
int loop_tune(struct loop *L, const char *source, json_t **tuned)
{
    *tuned = NULL;
    struct temper_tune_request req;
    memset(&req, 0, sizeof(req));
    char path[256];
    snprintf(path, sizeof(path), "agent-%lld-%d-tune.%s", (long long)L->session_id, L->evaluated,
             strcmp(L->lang, "cuda") ? "cl" : "cu");
    req.path = path;
    req.source = source;
    req.tasks_dir = L->cfg.tasks_dir;
    req.budget = L->cfg.tune_budget;
    req.seed = L->cfg.seed;
    req.retime = 1;
    req.screen_budget_s = L->cfg.time_budget_s > 0 ? L->cfg.time_budget_s / 4 : 0;
    req.full_budget_s = L->cfg.time_budget_s;
    struct temper_session_tune *t;
    int err = temper_session_tune_begin(L->session, &req, NULL, NULL, &t, L->msg, sizeof(L->msg));
    if (err)
        return err;
    int more = 0;
    while (!loop_interrupted(L) && (more = temper_session_tune_step(t, L->msg, sizeof(L->msg))) > 0)
        ;
    json_t *summary = NULL;
    err = temper_session_tune_finish(t, &summary, L->msg, sizeof(L->msg));
    if (!err && more < 0)
        err = more;
    if (!err) {
        json_t *r = json_object_get(json_object_get(summary, "best"), "result");
        const char *v = temper_session_result_verdict(r);
        if (v && !strcmp(v, "correct"))
            *tuned = json_incref(r);
    }
    json_decref(summary);
    return err;
}
