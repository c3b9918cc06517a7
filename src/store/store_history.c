/* store_history.c: what the store holds, newest first: evaluations (verdict, time, spread,
 * speedup, roofline share, parent and origin), tune runs and benches, optionally of one task and
 * device, as one JSON array: `temper history` prints it, an MCP server can hand it on. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_impl.h"
#include "temper/error.h"

/* A column as JSON: integer, real, text or null. */
static json_t *column_json(sqlite3_stmt *st, int i)
{
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER:
        return json_integer(sqlite3_column_int64(st, i));
    case SQLITE_FLOAT:
        return json_real(sqlite3_column_double(st, i));
    case SQLITE_TEXT:
        return json_string((const char *)sqlite3_column_text(st, i));
    default:
        return json_null();
    }
}

/* The filter every query shares: ?1 the task (NULL: any), ?2 the device: its id as named in the
 * run ("opencl:0"), its identity (temper_store_device_key) or a backend ("cuda"); ?3 the limit. */
static const char evaluations_sql[] =
    "SELECT e.id, e.created_at, e.task, coalesce(e.path, c.path), e.candidate, e.knobs, e.device, e.verdict, e.message, "
    "  nullif(e.median_ms, 0), json_extract(e.timings, '$[0].spread'), nullif(e.speedup, 0), e.roofline_share, "
    "  e.parent_id, e.operator, e.client, e.run_id, e.batch_id, json_extract(e.result, '$.tune_phase') "
    "FROM evaluations e LEFT JOIN candidates c ON c.hash = e.candidate "
    "WHERE (?1 IS NULL OR e.task = ?1) AND (?2 IS NULL OR e.device = ?2 OR e.device_key = ?2 "
    "  OR e.device_key LIKE ?2 || '|%') "
    "ORDER BY e.id DESC LIMIT ?3";
static const char *const evaluation_keys[] = {"id", "time", "task", "candidate", "source_hash", "knobs", "device",
                                              "verdict", "message", "median_ms", "spread", "speedup",
                                              "roofline_share", "parent_id", "operator", "client", "run_id",
                                              "batch_id", "tune_phase"};

static const char runs_sql[] =
    "SELECT r.id, r.started_at, c.task, coalesce((SELECT x.path FROM evaluations x WHERE x.run_id = r.id "
    "  ORDER BY x.id LIMIT 1), c.path), r.candidate, r.device, r.kind, r.finished_at, "
    "  (SELECT count(*) FROM evaluations WHERE run_id = r.id), json_extract(r.summary, '$.best.timing.median_ms'), "
    "  json_extract(r.summary, '$.best.timing.speedup'), json_extract(r.summary, '$.best.timing.roofline_share') "
    "FROM runs r LEFT JOIN candidates c ON c.hash = r.candidate "
    "WHERE (?1 IS NULL OR c.task = ?1) AND (?2 IS NULL OR r.device = ?2 OR r.device_key = ?2 "
    "  OR r.device_key LIKE ?2 || '|%') "
    "ORDER BY r.id DESC LIMIT ?3";
static const char *const run_keys[] = {"id", "time", "task", "candidate", "source_hash", "device", "run_kind",
                                       "finished_at", "evaluations", "best_median_ms", "best_speedup",
                                       "best_roofline_share"};

static const char benches_sql[] =
    "SELECT b.id, b.created_at, b.level, b.device, json_extract(b.bench, '$.suite.tasks'), "
    "  json_extract(b.bench, '$.suite.samples'), json_extract(b.bench, '$.suite.correct_samples'), "
    "  json_extract(b.bench, '$.suite.pass_at_k.\"1\"'), json_extract(b.bench, '$.suite.geomean_speedup') "
    "FROM benches b "
    "WHERE (?1 IS NULL OR EXISTS (SELECT 1 FROM bench_evaluations be WHERE be.bench_id = b.id AND be.task = ?1)) "
    "  AND (?2 IS NULL OR b.device = ?2 OR instr(',' || b.device || ',', ',' || ?2 || ',') > 0 "
    "    OR instr(',' || b.device, ',' || ?2 || ':') > 0) "
    "ORDER BY b.id DESC LIMIT ?3";
static const char *const bench_keys[] = {"id", "time", "level", "device", "tasks", "samples", "correct_samples",
                                         "pass_at_1", "geomean_speedup"};

/* Runs one of the queries into an array of objects of kind, newest first. */
static int history_rows(struct temper_store *s, const char *sql, const char *kind, const char *const *keys,
                        int nkeys, const char *task, const char *device, int limit, json_t **out, char *msg,
                        size_t msg_size)
{
    static const char what[] = "reading the history";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return store_fail(s, msg, msg_size, what);
    if (task)
        sqlite3_bind_text(st, 1, task, -1, SQLITE_TRANSIENT);
    if (device)
        sqlite3_bind_text(st, 2, device, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, limit > 0 ? limit : -1);
    json_t *rows = json_array();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *row = json_pack("{s:s}", "kind", kind);
        for (int i = 0; i < nkeys; i++) {
            json_t *v = column_json(st, i);
            if (!strcmp(keys[i], "knobs") && json_is_string(v)) { /* stored as JSON text */
                json_t *parsed = json_loads(json_string_value(v), 0, NULL);
                json_decref(v);
                v = parsed ? parsed : json_null();
            }
            json_object_set_new(row, keys[i], v);
        }
        json_array_append_new(rows, row);
    }
    if (rc != SQLITE_DONE) {
        int err = store_fail(s, msg, msg_size, what);
        sqlite3_finalize(st);
        json_decref(rows);
        return err;
    }
    sqlite3_finalize(st);
    *out = rows;
    return 0;
}

/* Newer first by time (ISO 8601 text sorts as time); at the same second a bench before an
 * evaluation before a run, since a bench is stored after its evaluations and a run before its. */
static int newer(json_t *a, json_t *b)
{
    int c = strcmp(json_string_value(json_object_get(a, "time")) ?: "",
                   json_string_value(json_object_get(b, "time")) ?: "");
    if (c)
        return c > 0;
    static const char order[] = "ber"; /* bench, evaluation, run */
    const char *ka = json_string_value(json_object_get(a, "kind")), *kb = json_string_value(json_object_get(b, "kind"));
    const char *pa = strchr(order, ka ? ka[0] : 'r'), *pb = strchr(order, kb ? kb[0] : 'r');
    if (pa != pb)
        return pa < pb;
    return json_integer_value(json_object_get(a, "id")) > json_integer_value(json_object_get(b, "id"));
}

static int locked_history(struct temper_store *s, const char *task, const char *device, int limit,
                          json_t **history, char *msg, size_t msg_size)
{
    json_t *lists[3] = {NULL, NULL, NULL};
    int err = history_rows(s, evaluations_sql, "evaluation", evaluation_keys,
                           (int)(sizeof(evaluation_keys) / sizeof(*evaluation_keys)), task, device, limit, &lists[0],
                           msg, msg_size);
    if (!err)
        err = history_rows(s, runs_sql, "run", run_keys, (int)(sizeof(run_keys) / sizeof(*run_keys)), task, device,
                           limit, &lists[1], msg, msg_size);
    if (!err)
        err = history_rows(s, benches_sql, "bench", bench_keys, (int)(sizeof(bench_keys) / sizeof(*bench_keys)),
                           task, device, limit, &lists[2], msg, msg_size);
    if (err) {
        for (int i = 0; i < 3; i++)
            json_decref(lists[i]);
        return err;
    }
    /* Merge the three newest-first lists, up to the limit. */
    json_t *out = json_array();
    size_t at[3] = {0, 0, 0};
    while (limit <= 0 || json_array_size(out) < (size_t)limit) {
        int pick = -1;
        for (int i = 0; i < 3; i++) {
            json_t *v = json_array_get(lists[i], at[i]);
            if (v && (pick < 0 || newer(v, json_array_get(lists[pick], at[pick]))))
                pick = i;
        }
        if (pick < 0)
            break;
        json_array_append(out, json_array_get(lists[pick], at[pick]++));
    }
    for (int i = 0; i < 3; i++)
        json_decref(lists[i]);
    *history = out;
    return 0;
}

int temper_store_history(struct temper_store *s, const char *task, const char *device, int limit, json_t **history,
                         char *msg, size_t msg_size)
{
    *history = NULL;
    pthread_mutex_lock(&s->lock);
    int out = locked_history(s, task, device, limit, history, msg, msg_size);
    pthread_mutex_unlock(&s->lock);
    return out;
}
