/* store_bench.c: benches in the store (each with the evaluations it was computed from), and
 * reading stored evaluations back by id, one or a run's, with their row ids: what `temper
 * bench`, `compare` and reports read. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_impl.h"
#include "temper/error.h"

/* Binds text, or NULL for a missing value. */
static void bind_text_or_null(sqlite3_stmt *st, int at, const char *text)
{
    if (text)
        sqlite3_bind_text(st, at, text, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, at);
}

/* Links a bench to one evaluation named in it; 0, or a SQLite failure, or TEMPER_EINVALID for
 * an id that is no evaluation (msg says which). */
static int link_evaluation(struct temper_store *s, sqlite3_stmt *st, int64_t bench_id, json_t *eval,
                           const char *task, char *msg, size_t msg_size)
{
    json_t *sid = json_object_get(eval, "store_id");
    if (!json_is_integer(sid))
        return 0; /* not stored (a file that could not be read): nothing to link */
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, bench_id);
    sqlite3_bind_int64(st, 2, json_integer_value(sid));
    sqlite3_bind_text(st, 3, task, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 4, json_integer_value(sid));
    if (sqlite3_step(st) != SQLITE_DONE)
        return -1;
    if (sqlite3_changes(s->db) != 1)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s: storing the bench: evaluation %lld (task %s) is not in the store",
                           s->path, (long long)json_integer_value(sid), task);
    return 0;
}

static int locked_bench_put(struct temper_store *s, json_t *bench, int64_t *id, char *msg, size_t msg_size)
{
    static const char what[] = "storing the bench";
    char when[32];
    store_now_text(when, sizeof(when));
    int err = store_write_begin(s, what, msg, msg_size);
    if (err)
        return err;
    json_t *copy = json_deep_copy(bench);
    json_object_del(copy, "id"); /* the row's id is the bench's: added when it is read */
    char *text = json_dumps(copy, JSON_COMPACT);
    char *source = json_dumps(json_object_get(bench, "source") ?: json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(copy);
    json_t *devices = json_object_get(bench, "devices");
    char device[1024] = "";
    size_t i, used = 0;
    json_t *d;
    json_array_foreach(devices, i, d) {
        used += (size_t)snprintf(device + used, used < sizeof(device) ? sizeof(device) - used : 0, "%s%s",
                                 i ? "," : "", json_string_value(d) ?: "");
        if (used >= sizeof(device))
            break;
    }
    sqlite3_stmt *st = NULL;
    int ok = text && source &&
             sqlite3_prepare_v2(s->db, "INSERT INTO benches(source, level, device, bench, created_at) VALUES(?,?,?,?,?)",
                                -1, &st, NULL) == SQLITE_OK;
    if (ok) {
        sqlite3_bind_text(st, 1, source, -1, SQLITE_TRANSIENT);
        bind_text_or_null(st, 2, json_string_value(json_object_get(bench, "level")));
        bind_text_or_null(st, 3, device[0] ? device : NULL);
        sqlite3_bind_text(st, 4, text, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 5, when, -1, SQLITE_TRANSIENT);
        ok = sqlite3_step(st) == SQLITE_DONE;
    }
    sqlite3_finalize(st);
    st = NULL;
    free(text);
    free(source);
    int64_t row = sqlite3_last_insert_rowid(s->db);
    if (ok)
        ok = sqlite3_prepare_v2(s->db,
                                "INSERT OR IGNORE INTO bench_evaluations(bench_id, evaluation_id, task) "
                                "SELECT ?, ?, ? FROM evaluations WHERE id = ?",
                                -1, &st, NULL) == SQLITE_OK;
    json_t *t;
    int linked = 0;
    json_array_foreach(json_object_get(bench, "tasks"), i, t) {
        const char *task = json_string_value(json_object_get(t, "task")) ?: "";
        size_t j;
        json_t *e;
        json_array_foreach(json_object_get(t, "evaluations"), j, e) {
            if (ok && !linked)
                linked = link_evaluation(s, st, row, e, task, msg, msg_size);
        }
    }
    sqlite3_finalize(st);
    if (linked == TEMPER_EINVALID) { /* an id that is no evaluation: not a SQLite error */
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return linked;
    }
    if (!ok || linked)
        return store_write_abort(s, what, msg, msg_size);
    if ((err = store_write_commit(s, what, msg, msg_size)))
        return err;
    json_object_set_new(bench, "id", json_integer(row));
    if (id)
        *id = row;
    return 0;
}

/* Runs a prepared query whose first column is a JSON object and second a row id: each object
 * gets the id under key. *out is the array (caller decrefs); a row that is not JSON fails. */
static int json_rows_with_id(struct temper_store *s, sqlite3_stmt *st, const char *key, const char *what,
                             json_t **out, char *msg, size_t msg_size)
{
    json_t *rows = json_array();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(st, 0);
        json_t *v = text ? json_loads(text, 0, NULL) : NULL;
        if (!json_is_object(v)) {
            json_decref(v);
            json_decref(rows);
            long long row = sqlite3_column_int64(st, 1);
            sqlite3_finalize(st);
            return temper_fail(msg, msg_size, TEMPER_ESTORE, "%s: %s: the stored JSON of row %lld is not an object",
                               s->path, what, row);
        }
        json_object_set_new(v, key, json_integer(sqlite3_column_int64(st, 1)));
        json_array_append_new(rows, v);
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

static int locked_bench_get(struct temper_store *s, int64_t id, json_t **bench, char *msg, size_t msg_size)
{
    static const char what[] = "reading the bench";
    sqlite3_stmt *st;
    *bench = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT bench, id FROM benches WHERE id = ?", -1, &st, NULL) != SQLITE_OK)
        return store_fail(s, msg, msg_size, what);
    sqlite3_bind_int64(st, 1, id);
    json_t *rows = NULL;
    int err = json_rows_with_id(s, st, "id", what, &rows, msg, msg_size);
    if (err)
        return err;
    if (!json_array_size(rows)) {
        json_decref(rows);
        return temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "no bench %lld in the store %s", (long long)id, s->path);
    }
    *bench = json_incref(json_array_get(rows, 0));
    json_decref(rows);
    return 0;
}

static int locked_evaluation(struct temper_store *s, int64_t id, json_t **result, char **source, char *msg,
                             size_t msg_size)
{
    static const char what[] = "reading the evaluation";
    sqlite3_stmt *st;
    *result = NULL;
    if (source)
        *source = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT e.result, e.id, c.source FROM evaluations e LEFT JOIN candidates c "
                           "ON c.hash = e.candidate WHERE e.id = ?",
                           -1, &st, NULL) != SQLITE_OK)
        return store_fail(s, msg, msg_size, what);
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(st, 0);
        const char *src = (const char *)sqlite3_column_text(st, 2);
        json_t *r = text ? json_loads(text, 0, NULL) : NULL;
        char *copy = src && source ? strdup(src) : NULL;
        sqlite3_finalize(st);
        if (!json_is_object(r) || (src && source && !copy)) {
            json_decref(r);
            free(copy);
            return temper_fail(msg, msg_size, TEMPER_ESTORE, "%s: %s: evaluation %lld's stored result is not JSON",
                               s->path, what, (long long)id);
        }
        json_object_set_new(r, "store_id", json_integer(id));
        *result = r;
        if (source)
            *source = copy;
        return 0;
    }
    int err = rc == SQLITE_DONE ? temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "no evaluation %lld in the store %s",
                                              (long long)id, s->path) :
                                  store_fail(s, msg, msg_size, what);
    sqlite3_finalize(st);
    return err;
}

static int locked_run_evaluations(struct temper_store *s, int64_t run_id, json_t **results, char *msg,
                                  size_t msg_size)
{
    static const char what[] = "reading the run's evaluations";
    sqlite3_stmt *st;
    *results = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM runs WHERE id = ?", -1, &st, NULL) != SQLITE_OK)
        return store_fail(s, msg, msg_size, what);
    sqlite3_bind_int64(st, 1, run_id);
    int rc = sqlite3_step(st);
    int exists = rc == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW)
        return store_fail(s, msg, msg_size, what);
    if (!exists)
        return temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "no run %lld in the store %s", (long long)run_id, s->path);
    if (sqlite3_prepare_v2(s->db, "SELECT result, id FROM evaluations WHERE run_id = ? ORDER BY id", -1, &st, NULL) !=
        SQLITE_OK)
        return store_fail(s, msg, msg_size, what);
    sqlite3_bind_int64(st, 1, run_id);
    return json_rows_with_id(s, st, "store_id", what, results, msg, msg_size);
}

static int locked_bench_find(struct temper_store *s, json_t *bench, int64_t *id, char *msg, size_t msg_size)
{
    static const char what[] = "looking for the same bench";
    *id = 0;
    /* The stored text is the compact dump without "id" (locked_bench_put), the same for the same
     * bench built the same way. */
    json_t *copy = json_deep_copy(bench);
    json_object_del(copy, "id");
    char *text = json_dumps(copy, JSON_COMPACT);
    char *source = json_dumps(json_object_get(bench, "source") ?: json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(copy);
    sqlite3_stmt *st = NULL;
    int err = 0;
    if (!text || !source)
        err = temper_fail(msg, msg_size, TEMPER_ENOMEM, "%s: %s: out of memory", s->path, what);
    else if (sqlite3_prepare_v2(s->db, "SELECT id FROM benches WHERE source = ? AND bench = ? ORDER BY id DESC LIMIT 1",
                                -1, &st, NULL) != SQLITE_OK)
        err = store_fail(s, msg, msg_size, what);
    if (!err) {
        sqlite3_bind_text(st, 1, source, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, text, -1, SQLITE_TRANSIENT);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
            *id = sqlite3_column_int64(st, 0);
        else if (rc != SQLITE_DONE)
            err = store_fail(s, msg, msg_size, what);
    }
    sqlite3_finalize(st);
    free(text);
    free(source);
    return err;
}

int temper_store_bench_find(struct temper_store *s, json_t *bench, int64_t *id, char *msg, size_t msg_size)
{
    pthread_mutex_lock(&s->lock);
    int out = locked_bench_find(s, bench, id, msg, msg_size);
    pthread_mutex_unlock(&s->lock);
    return out;
}

int temper_store_bench_put(struct temper_store *s, json_t *bench, int64_t *id, char *msg, size_t msg_size)
{
    pthread_mutex_lock(&s->lock);
    int out = locked_bench_put(s, bench, id, msg, msg_size);
    pthread_mutex_unlock(&s->lock);
    return out;
}

int temper_store_bench_get(struct temper_store *s, int64_t id, json_t **bench, char *msg, size_t msg_size)
{
    pthread_mutex_lock(&s->lock);
    int out = locked_bench_get(s, id, bench, msg, msg_size);
    pthread_mutex_unlock(&s->lock);
    return out;
}

int temper_store_evaluation(struct temper_store *s, int64_t id, json_t **result, char **source, char *msg,
                            size_t msg_size)
{
    pthread_mutex_lock(&s->lock);
    int out = locked_evaluation(s, id, result, source, msg, msg_size);
    pthread_mutex_unlock(&s->lock);
    return out;
}

int temper_store_run_evaluations(struct temper_store *s, int64_t run_id, json_t **results, char *msg,
                                 size_t msg_size)
{
    pthread_mutex_lock(&s->lock);
    int out = locked_run_evaluations(s, run_id, results, msg, msg_size);
    pthread_mutex_unlock(&s->lock);
    return out;
}
