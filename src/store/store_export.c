/* store_export.c: the store's read-only queries for `temper export` and `temper report`: every
 * evaluation a filter selects, streamed one row at a time (with its source, its result and the
 * base it is compared with), and the rows of a run and of a device. Nothing here writes; the
 * existing records and queries are in store.c. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "store_impl.h"
#include "temper/error.h"
#include "store/store_export.h"

/* Columns holding JSON text, handed on parsed. */
static const char *const json_columns[] = {"result", "knobs", "base_result", "base_knobs", "settings",
                                           "summary", "info",   "ceilings",    NULL};

static int is_json_column(const char *name)
{
    for (int i = 0; json_columns[i]; i++)
        if (!strcmp(name, json_columns[i]))
            return 1;
    return 0;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if none starts there. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    size_t len = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (!len || len > n || !s[0] || (len == 2 && s[0] < 0xc2) || (len == 4 && s[0] > 0xf4))
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if (len == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
        return 0; /* overlong, or a surrogate */
    if (len == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
        return 0;
    return len;
}

/* A JSON string of n bytes of text, each byte that is not part of valid UTF-8 (and each NUL)
 * replaced with U+FFFD, so that any stored text can be written as JSON. New reference. */
static json_t *text_json(const unsigned char *text, size_t n)
{
    json_t *v = json_stringn((const char *)text, n);
    if (v)
        return v;
    char *out = malloc(3 * n + 1);
    if (!out)
        return json_null();
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_seq(text + i, n - i);
        if (len) {
            memcpy(out + o, text + i, len);
            o += len;
            i += len;
        } else {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        }
    }
    v = json_stringn(out, o);
    free(out);
    return v ? v : json_null();
}

/* The current row of st as an object: one key per column, JSON columns parsed (null when the
 * text is not JSON). New reference. */
static json_t *row_object(sqlite3_stmt *st)
{
    json_t *row = json_object();
    for (int i = 0, n = sqlite3_column_count(st); i < n; i++) {
        const char *name = sqlite3_column_name(st, i);
        json_t *v;
        switch (sqlite3_column_type(st, i)) {
        case SQLITE_INTEGER:
            v = json_integer(sqlite3_column_int64(st, i));
            break;
        case SQLITE_FLOAT:
            v = json_real(sqlite3_column_double(st, i));
            break;
        case SQLITE_TEXT: {
            const unsigned char *text = sqlite3_column_text(st, i);
            size_t len = (size_t)sqlite3_column_bytes(st, i);
            if (is_json_column(name)) {
                v = json_loadb((const char *)text, len, JSON_DECODE_ANY, NULL);
                if (!v)
                    v = json_null();
            } else {
                v = text_json(text, len);
            }
            break;
        }
        default:
            v = json_null();
        }
        json_object_set_new(row, name, v ? v : json_null());
    }
    return row;
}

/* Every evaluation with its candidate and its base: the lineage parent, else (a tune's point)
 * the run's fastest correct, timed evaluation recorded before it. */
static const char each_sql[] =
    "SELECT e.id, e.run_id, e.created_at, e.task, e.task_hash, e.device, e.device_key, e.candidate, "
    "coalesce(e.path, c.path) AS path, c.source, c.parent AS candidate_parent, c.operator AS candidate_operator, e.options, e.knobs, "
    "e.verdict, e.message, e.median_ms, e.speedup, e.roofline_share, e.parent_id, e.operator, e.client, "
    "e.batch_id, e.result, b.id AS base_id, "
    "CASE WHEN b.id IS NULL THEN NULL WHEN e.parent_id IS NOT NULL THEN 'parent' ELSE 'run_best' END "
    "AS base_relation, b.candidate AS base_candidate, bc.source AS base_source, b.options AS base_options, "
    "b.knobs AS base_knobs, b.verdict AS base_verdict, b.median_ms AS base_median_ms, b.result AS base_result "
    "FROM evaluations e LEFT JOIN candidates c ON c.hash = e.candidate "
    "LEFT JOIN evaluations b ON b.id = CASE WHEN e.parent_id IS NOT NULL THEN e.parent_id "
    "WHEN e.run_id IS NOT NULL THEN (SELECT x.id FROM evaluations x WHERE x.run_id = e.run_id AND x.id < e.id "
    "AND x.verdict = 'correct' AND x.median_ms > 0 ORDER BY x.median_ms, x.id LIMIT 1) END "
    "LEFT JOIN candidates bc ON bc.hash = b.candidate "
    "WHERE (?1 = 0 OR e.run_id = ?1) AND (?2 IS NULL OR e.task = ?2) ORDER BY e.id";

static int locked_each(struct temper_store *s, const struct temper_store_filter *f, temper_store_row_fn fn,
                       void *user, char *msg, size_t msg_size)
{
    static const char what[] = "reading the evaluations";
    if (sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        return store_fail(s, msg, msg_size, what);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, each_sql, -1, &st, NULL) != SQLITE_OK) {
        int err = store_fail(s, msg, msg_size, what);
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return err;
    }
    sqlite3_bind_int64(st, 1, f ? f->run_id : 0);
    if (f && f->task)
        sqlite3_bind_text(st, 2, f->task, -1, SQLITE_TRANSIENT);
    int rc, out = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *row = row_object(st);
        out = fn(user, row);
        json_decref(row);
        if (out)
            break;
    }
    if (!out && rc != SQLITE_DONE)
        out = store_fail(s, msg, msg_size, what);
    sqlite3_finalize(st);
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return out;
}

/* Runs a query bound to one value (an integer or a text) expected to give at most one row;
 * *row gets it, or NULL. */
static int locked_one(struct temper_store *s, const char *sql, int64_t id, const char *text, json_t **row,
                      const char *what, char *msg, size_t msg_size)
{
    *row = NULL;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return store_fail(s, msg, msg_size, what);
    if (text)
        sqlite3_bind_text(st, 1, text, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *row = row_object(st);
    int err = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : store_fail(s, msg, msg_size, what);
    sqlite3_finalize(st);
    return err;
}

int temper_store_each_evaluation(struct temper_store *s, const struct temper_store_filter *f, temper_store_row_fn fn,
                                 void *user, char *msg, size_t msg_size)
{
    pthread_mutex_lock(&s->lock);
    int out = locked_each(s, f, fn, user, msg, msg_size);
    pthread_mutex_unlock(&s->lock);
    return out;
}

int temper_store_run_get(struct temper_store *s, int64_t run_id, json_t **run, char *msg, size_t msg_size)
{
    pthread_mutex_lock(&s->lock);
    int err = locked_one(s,
                         "SELECT id, kind, candidate, device, task_hash, device_key, settings, summary, started_at, "
                         "finished_at FROM runs WHERE id = ?",
                         run_id, NULL, run, "reading the run", msg, msg_size);
    pthread_mutex_unlock(&s->lock);
    if (!err && !*run)
        return temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "no run %lld in the store %s", (long long)run_id,
                           s->path);
    return err;
}

int temper_store_device_get(struct temper_store *s, const char *device_key, json_t **device, char *msg,
                            size_t msg_size)
{
    pthread_mutex_lock(&s->lock);
    int err = locked_one(s,
                         "SELECT key, backend, name, info, copy_gbs, fma_gflops, ceilings, calibrated_at FROM devices "
                         "WHERE key = ?",
                         0, device_key ? device_key : "", device, "reading the device's calibration", msg, msg_size);
    pthread_mutex_unlock(&s->lock);
    return err;
}
