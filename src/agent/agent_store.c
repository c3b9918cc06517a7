/* agent_store.c: the agent's rows in its tables of the store (made by agent_schema.c, docs/store.md):
 * its sessions, prompts, model calls and candidates. Each write is one transaction under the
 * store's lock (store_module.h), as every other write of the store is, so that an interrupted
 * agent loses nothing recorded. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../store/store_module.h"
#include "agent_impl.h"
#include "temper/error.h"

/* A value bound to a statement. */
struct value {
    char type;       /* 't' text (NULL: null), 'i' integer, 'I' integer where 0 means null, 'd' real (NAN: null) */
    const char *t;   /* text */
    int64_t i;       /* integer */
    double d;        /* real */
};

#define VT(x) ((struct value){'t', (x), 0, 0})
#define VI(x) ((struct value){'i', NULL, (x), 0})
#define VZ(x) ((struct value){'I', NULL, (x), 0})
#define VD(x) ((struct value){'d', NULL, 0, (x)})

static void bind_all(sqlite3_stmt *st, const struct value *v, int n)
{
    for (int k = 0; k < n; k++) {
        int at = k + 1;
        if (v[k].type == 't' && v[k].t)
            sqlite3_bind_text(st, at, v[k].t, -1, SQLITE_TRANSIENT);
        else if (v[k].type == 'i' || (v[k].type == 'I' && v[k].i))
            sqlite3_bind_int64(st, at, v[k].i);
        else if (v[k].type == 'd' && !isnan(v[k].d))
            sqlite3_bind_double(st, at, v[k].d);
        else
            sqlite3_bind_null(st, at);
    }
}

/* Runs one write statement in its own transaction; *id (optional) gets the new row's id. */
static int write_one(struct temper_store *s, const char *what, const char *sql, const struct value *v, int n,
                     int64_t *id, char *msg, size_t msg_size)
{
    sqlite3 *db = store_lock(s);
    int err = store_write_begin(s, what, msg, msg_size);
    if (!err) {
        sqlite3_stmt *st = NULL;
        int ok = sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK;
        if (ok) {
            bind_all(st, v, n);
            ok = sqlite3_step(st) == SQLITE_DONE;
        }
        sqlite3_finalize(st);
        if (ok && id)
            *id = sqlite3_last_insert_rowid(db);
        err = ok ? store_write_commit(s, what, msg, msg_size) : store_write_abort(s, what, msg, msg_size);
    }
    store_unlock(s);
    return err;
}

int agent_store_session_begin(struct temper_store *s, const char *task, const char *device, const char *api,
                              const char *endpoint, const char *model, json_t *settings, int64_t replay_of,
                              int64_t *id, char *msg, size_t msg_size)
{
    char when[32];
    store_now_text(when, sizeof(when));
    char *text = json_dumps(settings, JSON_COMPACT | JSON_SORT_KEYS);
    struct value v[] = {VT(task), VT(device), VT(api), VT(endpoint), VT(model), VT(text ? text : "{}"), VZ(replay_of),
                        VT(when)};
    int err = write_one(s, "recording the agent session",
                        "INSERT INTO agent_sessions(task, device, api, endpoint, model, settings, replay_of, started_at)"
                        " VALUES(?,?,?,?,?,?,?,?)",
                        v, 8, id, msg, msg_size);
    free(text);
    return err;
}

int agent_store_session_finish(struct temper_store *s, int64_t id, int64_t best_eval_id, json_t *summary, char *msg,
                               size_t msg_size)
{
    char when[32];
    store_now_text(when, sizeof(when));
    char *text = json_dumps(summary, JSON_COMPACT | JSON_SORT_KEYS);
    struct value v[] = {VZ(best_eval_id), VT(text), VT(when), VI(id)};
    int err = write_one(s, "finishing the agent session",
                        "UPDATE agent_sessions SET best_eval_id = ?, summary = ?, finished_at = ? WHERE id = ?", v, 4,
                        NULL, msg, msg_size);
    free(text);
    return err;
}

json_t *agent_store_session_get(struct temper_store *s, int64_t id)
{
    sqlite3 *db = store_lock(s);
    sqlite3_stmt *st;
    json_t *r = NULL;
    if (sqlite3_prepare_v2(db, "SELECT task, device, api, endpoint, model, settings FROM agent_sessions WHERE id = ?",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, id);
        if (sqlite3_step(st) == SQLITE_ROW) {
            r = json_object();
            static const char *const names[] = {"task", "device", "api", "endpoint", "model"};
            for (int k = 0; k < 5; k++) {
                const char *t = (const char *)sqlite3_column_text(st, k);
                json_object_set_new(r, names[k], t ? json_string(t) : json_null());
            }
            json_t *settings = json_loads((const char *)sqlite3_column_text(st, 5), 0, NULL);
            json_object_set_new(r, "settings", settings ? settings : json_object());
        }
        sqlite3_finalize(st);
    }
    store_unlock(s);
    return r;
}

int agent_store_prompt(struct temper_store *s, int64_t session_id, const char *role, json_t *messages, int64_t *id,
                       char *msg, size_t msg_size)
{
    char when[32];
    store_now_text(when, sizeof(when));
    char *text = json_dumps(messages, JSON_COMPACT);
    struct value v[] = {VI(session_id), VT(role), VT(text ? text : "[]"), VT(when)};
    int err = write_one(s, "recording the agent's prompt",
                        "INSERT INTO agent_prompts(session_id, role, messages, created_at) VALUES(?,?,?,?)", v, 4, id,
                        msg, msg_size);
    free(text);
    return err;
}

int agent_store_call(struct temper_store *s, int64_t session_id, int64_t prompt_id,
                     const struct temper_chat_exchange *ex, int64_t *id, char *msg, size_t msg_size)
{
    char when[32];
    store_now_text(when, sizeof(when));
    const struct temper_chat_reply *p = ex->parsed;
    struct value v[] = {VI(session_id),
                        VZ(prompt_id),
                        VI(ex->attempt),
                        VT(ex->url),
                        VT(ex->request),
                        VZ(ex->status),
                        VT(ex->reply),
                        VT(p ? p->content : NULL),
                        VT(p ? p->reasoning : NULL),
                        VT(p ? p->finish_reason : NULL),
                        p && p->prompt_tokens >= 0 ? VI(p->prompt_tokens) : VT(NULL),
                        p && p->completion_tokens >= 0 ? VI(p->completion_tokens) : VT(NULL),
                        VD(ex->latency_ms),
                        VT(ex->error),
                        VT(when)};
    return write_one(s, "recording the agent's model call",
                     "INSERT INTO agent_calls(session_id, prompt_id, attempt, url, request, status, reply, content, "
                     "reasoning, finish_reason, prompt_tokens, completion_tokens, latency_ms, error, created_at) "
                     "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                     v, 15, id, msg, msg_size);
}

int agent_store_candidate(struct temper_store *s, const struct agent_candidate_row *r, char *msg, size_t msg_size)
{
    char when[32];
    store_now_text(when, sizeof(when));
    struct value v[] = {VI(r->session_id), VZ(r->prompt_id),     VZ(r->call_id), VT(r->role),
                        VZ(r->parent_eval_id), VZ(r->eval_id),   r->island >= 0 ? VI(r->island) : VT(NULL),
                        VT(r->features),   VT(r->source),        VT(r->outcome), VD(r->median_ms),
                        VT(r->note),       VT(when)};
    return write_one(s, "recording the agent's candidate",
                     "INSERT INTO agent_candidates(session_id, prompt_id, call_id, role, parent_eval_id, eval_id, "
                     "island, features, source, outcome, median_ms, note, created_at) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)",
                     v, 13, NULL, msg, msg_size);
}

json_t *agent_store_replies(struct temper_store *s, int64_t session_id)
{
    sqlite3 *db = store_lock(s);
    sqlite3_stmt *st;
    json_t *out = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT c.reply, a.api FROM agent_calls c JOIN agent_sessions a ON a.id = c.session_id "
                           "WHERE c.session_id = ? AND c.status = 200 AND c.error IS NULL ORDER BY c.id",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, session_id);
        out = json_array();
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            const char *reply = (const char *)sqlite3_column_text(st, 0);
            const char *api = (const char *)sqlite3_column_text(st, 1);
            json_array_append_new(out, json_pack("{s:s, s:s}", "api", api ? api : "openai", "reply", reply ? reply : ""));
        }
        if (rc != SQLITE_DONE) {
            json_decref(out);
            out = NULL;
        }
        sqlite3_finalize(st);
    }
    store_unlock(s);
    return out;
}
