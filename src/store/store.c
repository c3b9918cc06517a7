/* store.c: the SQLite store. One file in WAL mode so readers never block the writer; every write
 * is one transaction, so an interrupted run loses nothing already recorded. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "temper/store.h"
#include "temper/util.h"

/* An open store. */
struct temper_store {
    sqlite3 *db; /* the connection */
};

static const char schema[] =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=NORMAL;"
    "PRAGMA busy_timeout=10000;"
    "CREATE TABLE IF NOT EXISTS devices ("
    "  key TEXT PRIMARY KEY,"          /* backend|name|driver */
    "  backend TEXT NOT NULL, name TEXT NOT NULL, info TEXT NOT NULL,"
    "  copy_gbs REAL, fma_gflops REAL, ceilings TEXT, calibrated_at TEXT);"
    "CREATE TABLE IF NOT EXISTS candidates ("
    "  hash TEXT PRIMARY KEY, task TEXT NOT NULL, path TEXT, source TEXT NOT NULL,"
    "  parent TEXT, operator TEXT, created_at TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS evaluations ("
    "  id INTEGER PRIMARY KEY, candidate TEXT NOT NULL REFERENCES candidates(hash),"
    "  task TEXT NOT NULL, device TEXT, knobs TEXT, options TEXT, verdict TEXT NOT NULL, message TEXT,"
    "  median_ms REAL, speedup REAL, roofline_share REAL, checks TEXT, timings TEXT,"
    "  seed INTEGER, secret_seed INTEGER, result TEXT NOT NULL, created_at TEXT NOT NULL, run_id INTEGER);"
    "CREATE INDEX IF NOT EXISTS evaluations_task ON evaluations(task, device, verdict);"
    "CREATE INDEX IF NOT EXISTS evaluations_candidate ON evaluations(candidate, device, options);"
    "CREATE TABLE IF NOT EXISTS runs ("
    "  id INTEGER PRIMARY KEY, kind TEXT NOT NULL, candidate TEXT NOT NULL, device TEXT NOT NULL,"
    "  settings TEXT NOT NULL, summary TEXT, started_at TEXT NOT NULL, finished_at TEXT);";

int temper_store_open(const char *path, struct temper_store **out, char *msg, size_t msg_size)
{
    char def[4200], home_buf[4096];
    if (!path) {
        const char *home = temper_home_dir(home_buf, sizeof(home_buf));
        if (temper_mkdirs(home))
            return temper_fail(msg, msg_size, TEMPER_ESTORE, "cannot create %s", home);
        snprintf(def, sizeof(def), "%s/temper.db", home);
        path = def;
    }
    struct temper_store *s = calloc(1, sizeof(*s));
    if (!s)
        return TEMPER_ENOMEM;
    if (sqlite3_open(path, &s->db) != SQLITE_OK) {
        int err = temper_fail(msg, msg_size, TEMPER_ESTORE, "%s: %s", path, sqlite3_errmsg(s->db));
        sqlite3_close(s->db);
        free(s);
        return err;
    }
    char *e = NULL;
    /* Stores made before evaluations had a run: add the column (an error means it is there). */
    sqlite3_exec(s->db, "ALTER TABLE evaluations ADD COLUMN run_id INTEGER", NULL, NULL, NULL);
    if (sqlite3_exec(s->db, schema, NULL, NULL, &e) != SQLITE_OK) {
        int err = temper_fail(msg, msg_size, TEMPER_ESTORE, "%s: %s", path, e ? e : "schema failed");
        sqlite3_free(e);
        sqlite3_close(s->db);
        free(s);
        return err;
    }
    *out = s;
    return 0;
}

void temper_store_close(struct temper_store *s)
{
    if (!s)
        return;
    sqlite3_close(s->db);
    free(s);
}

static void device_key(json_t *info, char *out, size_t size)
{
    const char *id = json_string_value(json_object_get(info, "id"));
    char backend[16] = "";
    if (id)
        snprintf(backend, sizeof(backend), "%.*s", (int)strcspn(id, ":"), id);
    snprintf(out, size, "%s|%s|%s", backend, json_string_value(json_object_get(info, "name")) ?: "",
             json_string_value(json_object_get(info, "driver")) ?: "");
}

static void now_text(char *out, size_t size)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

json_t *temper_store_calibration(struct temper_store *s, json_t *info)
{
    char key[1024];
    device_key(info, key, sizeof(key));
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT ceilings FROM devices WHERE key = ? AND ceilings IS NOT NULL", -1, &st,
                           NULL) != SQLITE_OK)
        return NULL;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
    json_t *r = NULL;
    if (sqlite3_step(st) == SQLITE_ROW)
        r = json_loads((const char *)sqlite3_column_text(st, 0), 0, NULL);
    sqlite3_finalize(st);
    return r;
}

int temper_store_put_calibration(struct temper_store *s, json_t *info, json_t *ceilings, char *msg, size_t msg_size)
{
    char key[1024], when[32];
    device_key(info, key, sizeof(key));
    now_text(when, sizeof(when));
    char *info_text = json_dumps(info, JSON_COMPACT), *ceil_text = json_dumps(ceilings, JSON_COMPACT);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(s->db,
                                "INSERT INTO devices(key, backend, name, info, copy_gbs, fma_gflops, ceilings, "
                                "calibrated_at) VALUES(?,?,?,?,?,?,?,?) ON CONFLICT(key) DO UPDATE SET "
                                "info=excluded.info, copy_gbs=excluded.copy_gbs, fma_gflops=excluded.fma_gflops, "
                                "ceilings=excluded.ceilings, calibrated_at=excluded.calibrated_at",
                                -1, &st, NULL);
    if (rc == SQLITE_OK) {
        char backend[16];
        snprintf(backend, sizeof(backend), "%.*s", (int)strcspn(key, "|"), key);
        sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, backend, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, json_string_value(json_object_get(info, "name")) ?: "", -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, info_text, -1, SQLITE_TRANSIENT);
        sqlite3_bind_double(st, 5, json_number_value(json_object_get(ceilings, "copy_gbs")));
        sqlite3_bind_double(st, 6, json_number_value(json_object_get(ceilings, "fma_gflops")));
        sqlite3_bind_text(st, 7, ceil_text, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 8, when, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
        sqlite3_finalize(st);
    }
    free(info_text);
    free(ceil_text);
    if (rc != SQLITE_OK)
        return temper_fail(msg, msg_size, TEMPER_ESTORE, "storing the calibration: %s", sqlite3_errmsg(s->db));
    return 0;
}

int temper_store_record(struct temper_store *s, json_t *r, const char *source, int64_t *id, char *msg,
                        size_t msg_size)
{
    return temper_store_record_run(s, r, source, 0, id, msg, msg_size);
}

int temper_store_record_run(struct temper_store *s, json_t *r, const char *source, int64_t run_id, int64_t *id,
                            char *msg, size_t msg_size)
{
    char when[32];
    now_text(when, sizeof(when));
    const char *hash = json_string_value(json_object_get(r, "source_hash"));
    const char *task = json_string_value(json_object_get(r, "task"));
    if (!hash || !task || !source)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "a result needs source_hash, task and source");
    if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return temper_fail(msg, msg_size, TEMPER_ESTORE, "store busy: %s", sqlite3_errmsg(s->db));
    sqlite3_stmt *st = NULL;
    int ok = sqlite3_prepare_v2(s->db,
                                "INSERT OR IGNORE INTO candidates(hash, task, path, source, created_at) "
                                "VALUES(?,?,?,?,?)",
                                -1, &st, NULL) == SQLITE_OK;
    if (ok) {
        sqlite3_bind_text(st, 1, hash, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, task, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, json_string_value(json_object_get(r, "candidate")), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, source, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 5, when, -1, SQLITE_TRANSIENT);
        ok = sqlite3_step(st) == SQLITE_DONE;
    }
    sqlite3_finalize(st);
    json_t *empty_obj = json_object(), *empty_arr = json_array();
    char *knobs = json_dumps(json_object_get(r, "knobs") ?: empty_obj, JSON_COMPACT);
    char *checks = json_dumps(json_object_get(r, "checks") ?: empty_arr, JSON_COMPACT);
    char *timings = json_dumps(json_object_get(r, "timings") ?: empty_arr, JSON_COMPACT);
    json_decref(empty_obj);
    json_decref(empty_arr);
    char *all = json_dumps(r, JSON_COMPACT);
    if (ok)
        ok = sqlite3_prepare_v2(s->db,
                                "INSERT INTO evaluations(candidate, task, device, knobs, options, verdict, message, "
                                "median_ms, speedup, roofline_share, checks, timings, seed, secret_seed, result, "
                                "created_at, run_id) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                                -1, &st, NULL) == SQLITE_OK;
    if (ok) {
        json_t *t0 = json_array_get(json_object_get(r, "timings"), 0);
        sqlite3_bind_text(st, 1, hash, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, task, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, json_string_value(json_object_get(r, "device")), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, knobs, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 5, json_string_value(json_object_get(r, "options")), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 6, json_string_value(json_object_get(r, "verdict")), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 7, json_string_value(json_object_get(r, "message")), -1, SQLITE_TRANSIENT);
        if (t0) {
            sqlite3_bind_double(st, 8, json_number_value(json_object_get(t0, "median_ms")));
            sqlite3_bind_double(st, 9, json_number_value(json_object_get(t0, "speedup")));
            if (json_object_get(t0, "roofline_share"))
                sqlite3_bind_double(st, 10, json_number_value(json_object_get(t0, "roofline_share")));
        }
        sqlite3_bind_text(st, 11, checks, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 12, timings, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 13, json_integer_value(json_object_get(r, "seed")));
        sqlite3_bind_int64(st, 14, json_integer_value(json_object_get(r, "secret_seed")));
        sqlite3_bind_text(st, 15, all, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 16, when, -1, SQLITE_TRANSIENT);
        if (run_id)
            sqlite3_bind_int64(st, 17, run_id);
        ok = sqlite3_step(st) == SQLITE_DONE;
        sqlite3_finalize(st);
    }
    free(knobs);
    free(checks);
    free(timings);
    free(all);
    if (!ok) {
        int err = temper_fail(msg, msg_size, TEMPER_ESTORE, "recording the evaluation: %s", sqlite3_errmsg(s->db));
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return err;
    }
    if (id)
        *id = sqlite3_last_insert_rowid(s->db);
    if (sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        int err = temper_fail(msg, msg_size, TEMPER_ESTORE, "commit: %s", sqlite3_errmsg(s->db));
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return err;
    }
    return 0;
}

int64_t temper_store_count(struct temper_store *s, const char *verdict)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           verdict ? "SELECT count(*) FROM evaluations WHERE verdict = ?" :
                                     "SELECT count(*) FROM evaluations",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    if (verdict)
        sqlite3_bind_text(st, 1, verdict, -1, SQLITE_TRANSIENT);
    int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return n;
}

/* Runs a query returning one text column per row; returns the rows' JSON values in an array. */
static json_t *json_rows(struct temper_store *s, sqlite3_stmt *st)
{
    json_t *rows = json_array();
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(st, 0);
        json_t *v = text ? json_loads(text, 0, NULL) : NULL;
        if (v)
            json_array_append_new(rows, v);
    }
    (void)s;
    sqlite3_finalize(st);
    return rows;
}

json_t *temper_store_lookup(struct temper_store *s, const char *source_hash, const char *device, const char *options)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT result FROM evaluations WHERE candidate = ? AND device = ? AND options = ? "
                           "AND (verdict != 'correct' OR median_ms > 0) ORDER BY id DESC LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return NULL;
    sqlite3_bind_text(st, 1, source_hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, device, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, options, -1, SQLITE_TRANSIENT);
    json_t *rows = json_rows(s, st);
    json_t *r = json_array_get(rows, 0);
    json_incref(r);
    json_decref(rows);
    return r;
}

json_t *temper_store_best(struct temper_store *s, const char *task, const char *device, char **source)
{
    sqlite3_stmt *st;
    *source = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT e.result, c.source FROM evaluations e JOIN candidates c ON c.hash = e.candidate "
                           "WHERE e.task = ? AND (? IS NULL OR e.device = ?) AND e.verdict = 'correct' "
                           "AND e.median_ms > 0 ORDER BY e.median_ms ASC LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return NULL;
    sqlite3_bind_text(st, 1, task, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, device, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, device, -1, SQLITE_TRANSIENT);
    json_t *r = NULL;
    if (sqlite3_step(st) == SQLITE_ROW) {
        r = json_loads((const char *)sqlite3_column_text(st, 0), 0, NULL);
        const char *src = (const char *)sqlite3_column_text(st, 1);
        *source = src ? strdup(src) : NULL;
    }
    sqlite3_finalize(st);
    return r;
}

int temper_store_run_begin(struct temper_store *s, json_t *settings, int64_t *run_id, char *msg, size_t msg_size)
{
    char when[32];
    now_text(when, sizeof(when));
    char *text = json_dumps(settings, JSON_COMPACT | JSON_SORT_KEYS);
    sqlite3_stmt *st;
    int ok = sqlite3_prepare_v2(s->db,
                                "INSERT INTO runs(kind, candidate, device, settings, started_at) VALUES(?,?,?,?,?)",
                                -1, &st, NULL) == SQLITE_OK;
    if (ok) {
        sqlite3_bind_text(st, 1, json_string_value(json_object_get(settings, "kind")) ?: "tune", -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, json_string_value(json_object_get(settings, "source_hash")) ?: "", -1,
                          SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, json_string_value(json_object_get(settings, "device")) ?: "", -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, text, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 5, when, -1, SQLITE_TRANSIENT);
        ok = sqlite3_step(st) == SQLITE_DONE;
        sqlite3_finalize(st);
    }
    free(text);
    if (!ok)
        return temper_fail(msg, msg_size, TEMPER_ESTORE, "recording the run: %s", sqlite3_errmsg(s->db));
    *run_id = sqlite3_last_insert_rowid(s->db);
    return 0;
}

int64_t temper_store_run_unfinished(struct temper_store *s, const char *source_hash, const char *device,
                                    json_t **settings)
{
    sqlite3_stmt *st;
    *settings = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT id, settings FROM runs WHERE candidate = ? AND device = ? AND finished_at IS NULL "
                           "ORDER BY id DESC LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, source_hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, device, -1, SQLITE_TRANSIENT);
    int64_t id = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        id = sqlite3_column_int64(st, 0);
        *settings = json_loads((const char *)sqlite3_column_text(st, 1), 0, NULL);
    }
    sqlite3_finalize(st);
    return id;
}

json_t *temper_store_run_results(struct temper_store *s, int64_t run_id)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT result FROM evaluations WHERE run_id = ? ORDER BY id", -1, &st, NULL) !=
        SQLITE_OK)
        return json_array();
    sqlite3_bind_int64(st, 1, run_id);
    return json_rows(s, st);
}

int temper_store_run_finish(struct temper_store *s, int64_t run_id, json_t *summary, char *msg, size_t msg_size)
{
    char when[32];
    now_text(when, sizeof(when));
    char *text = json_dumps(summary, JSON_COMPACT);
    sqlite3_stmt *st;
    int ok = sqlite3_prepare_v2(s->db, "UPDATE runs SET summary = ?, finished_at = ? WHERE id = ?", -1, &st, NULL) ==
             SQLITE_OK;
    if (ok) {
        sqlite3_bind_text(st, 1, text, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, when, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 3, run_id);
        ok = sqlite3_step(st) == SQLITE_DONE;
        sqlite3_finalize(st);
    }
    free(text);
    if (!ok)
        return temper_fail(msg, msg_size, TEMPER_ESTORE, "finishing the run: %s", sqlite3_errmsg(s->db));
    return 0;
}

json_t *temper_store_results(struct temper_store *s, const char *source_hash, const char *device, char **source)
{
    sqlite3_stmt *st;
    *source = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT source FROM candidates WHERE hash = ?", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, source_hash, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            *source = strdup((const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
    if (sqlite3_prepare_v2(s->db, "SELECT result FROM evaluations WHERE candidate = ? AND device = ? ORDER BY id", -1,
                           &st, NULL) != SQLITE_OK)
        return json_array();
    sqlite3_bind_text(st, 1, source_hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, device, -1, SQLITE_TRANSIENT);
    return json_rows(s, st);
}
