/* store.c: the store's records and queries. One file in WAL mode so readers never block the
 * writer; every write is one transaction, so an interrupted run loses nothing already recorded,
 * and every failed write is an error naming the file (schema.c opens and migrates it). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_impl.h"
#include "temper/result.h"
#include "util/util.h"

/* The key of a device from the parts of its description (NULL where absent): the backend, else
 * the id's prefix ("cuda" of "cuda:0"); the name and driver; and the UUID, else the PCI bus id,
 * where known. */
static void device_key_of(const char *id, const char *backend, const char *name, const char *driver,
                          const char *uuid, const char *pci_bus_id, char *out, size_t size)
{
    int backend_len = backend ? (int)strlen(backend) : id ? (int)strcspn(id, ":") : 0;
    const char *unique = uuid && *uuid ? uuid : pci_bus_id;
    snprintf(out, size, "%.*s|%s|%s%s%s", backend_len, backend ? backend : id ? id : "", name ? name : "",
             driver ? driver : "", unique && *unique ? "|" : "", unique && *unique ? unique : "");
}

void temper_store_device_key(json_t *info, char *out, size_t size)
{
    device_key_of(json_string_value(json_object_get(info, "id")), json_string_value(json_object_get(info, "backend")),
                  json_string_value(json_object_get(info, "name")), json_string_value(json_object_get(info, "driver")),
                  json_string_value(json_object_get(info, "uuid")),
                  json_string_value(json_object_get(info, "pci_bus_id")), out, size);
}

static json_t *locked_calibration(struct temper_store *s, json_t *info)
{
    char key[1024];
    temper_store_device_key(info, key, sizeof(key));
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

static int locked_put_calibration(struct temper_store *s, json_t *info, json_t *ceilings, char *msg, size_t msg_size)
{
    static const char what[] = "storing the calibration";
    char key[1024], when[32];
    temper_store_device_key(info, key, sizeof(key));
    store_now_text(when, sizeof(when));
    int err = store_write_begin(s, what, msg, msg_size);
    if (err)
        return err;
    char *info_text = json_dumps(info, JSON_COMPACT), *ceil_text = json_dumps(ceilings, JSON_COMPACT);
    sqlite3_stmt *st;
    int ok = sqlite3_prepare_v2(s->db,
                                "INSERT INTO devices(key, backend, name, info, copy_gbs, fma_gflops, ceilings, "
                                "calibrated_at) VALUES(?,?,?,?,?,?,?,?) ON CONFLICT(key) DO UPDATE SET "
                                "info=excluded.info, copy_gbs=excluded.copy_gbs, fma_gflops=excluded.fma_gflops, "
                                "ceilings=excluded.ceilings, calibrated_at=excluded.calibrated_at",
                                -1, &st, NULL) == SQLITE_OK;
    if (ok) {
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
        ok = sqlite3_step(st) == SQLITE_DONE;
    }
    sqlite3_finalize(st);
    free(info_text);
    free(ceil_text);
    return ok ? store_write_commit(s, what, msg, msg_size) : store_write_abort(s, what, msg, msg_size);
}

int temper_store_record(struct temper_store *s, json_t *r, const char *source, int64_t *id, char *msg,
                        size_t msg_size)
{
    return temper_store_record_lineage(s, r, source, 0, NULL, id, msg, msg_size);
}

int temper_store_record_run(struct temper_store *s, json_t *r, const char *source, int64_t run_id, int64_t *id,
                            char *msg, size_t msg_size)
{
    return temper_store_record_lineage(s, r, source, run_id, NULL, id, msg, msg_size);
}

/* Binds text, or NULL for a missing value. */
static void bind_text(sqlite3_stmt *st, int at, const char *text)
{
    if (text)
        sqlite3_bind_text(st, at, text, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, at);
}

/* The JSON text of the array `key` of the result as given, or of empty where it is missing or not
 * an array. The checks and timings columns keep those arrays byte for byte as the result held them
 * (history reads the first timing's spread there with json_extract): they are copies of the
 * result's JSON, not values the store reads, so they come from the JSON as given rather than from
 * the typed record, whose writer would add every field to every entry. Caller frees. */
static char *array_text(json_t *given, const char *key, json_t *empty)
{
    json_t *part = json_object_get(given, key);
    return json_dumps(json_is_array(part) ? part : empty, JSON_COMPACT);
}

/* Records the candidate's source under its hash, once (the same bytes evaluated again find it
 * there). Returns 1 when done, 0 on a SQLite failure. */
static int insert_candidate(struct temper_store *s, const struct temper_result *rec, const char *source,
                            size_t source_len, const struct temper_lineage *ln, const char *when)
{
    sqlite3_stmt *st = NULL;
    int ok = sqlite3_prepare_v2(s->db,
                                "INSERT OR IGNORE INTO candidates(hash, task, path, source, parent, operator, "
                                "created_at) VALUES(?,?,?,?,(SELECT candidate FROM evaluations WHERE id = ?),?,?)",
                                -1, &st, NULL) == SQLITE_OK;
    if (ok) {
        sqlite3_bind_text(st, 1, rec->source_hash, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, rec->task, -1, SQLITE_TRANSIENT);
        bind_text(st, 3, rec->candidate);
        /* Every byte, as the hash covers them (an invalid candidate may hold a NUL). */
        sqlite3_bind_text64(st, 4, source, source_len, SQLITE_TRANSIENT, SQLITE_UTF8);
        sqlite3_bind_int64(st, 5, ln->parent_id);
        bind_text(st, 6, ln->op);
        sqlite3_bind_text(st, 7, when, -1, SQLITE_TRANSIENT);
        ok = sqlite3_step(st) == SQLITE_DONE;
    }
    sqlite3_finalize(st);
    return ok;
}

/* Records the evaluation's row: its columns read from rec, the result itself (and its checks and
 * timings) as given. Returns 1 when done, 0 on a SQLite failure. */
static int insert_evaluation(struct temper_store *s, const struct temper_result *rec, json_t *given,
                             int64_t run_id, const struct temper_lineage *ln, const char *device_key,
                             const char *when)
{
    /* A result in the one form has every key, null where it does not apply. */
    json_t *empty_obj = json_object(), *empty_arr = json_array();
    char *knobs = json_dumps(json_is_object(rec->knobs) ? rec->knobs : empty_obj, JSON_COMPACT);
    char *checks = array_text(given, "checks", empty_arr), *timings = array_text(given, "timings", empty_arr);
    json_decref(empty_obj);
    json_decref(empty_arr);
    char *all = json_dumps(given, JSON_COMPACT);
    sqlite3_stmt *st = NULL;
    int ok = sqlite3_prepare_v2(s->db,
                                "INSERT INTO evaluations(candidate, task, device, knobs, options, verdict, message, "
                                "median_ms, speedup, roofline_share, checks, timings, seed, secret_seed, result, "
                                "created_at, run_id, task_hash, device_key, parent_id, operator, client, batch_id, "
                                "path) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                                -1, &st, NULL) == SQLITE_OK;
    if (ok) {
        const struct temper_result_timing *t0 = temper_result_first_timing(rec);
        sqlite3_bind_text(st, 1, rec->source_hash, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, rec->task, -1, SQLITE_TRANSIENT);
        bind_text(st, 3, rec->device);
        sqlite3_bind_text(st, 4, knobs, -1, SQLITE_TRANSIENT);
        bind_text(st, 5, rec->options);
        bind_text(st, 6, rec->verdict);
        bind_text(st, 7, rec->message);
        /* A first timing without a number stores 0 (the queries' "not timed"); no timing, NULL. */
        if (t0) {
            sqlite3_bind_double(st, 8, t0->median_ms.set ? t0->median_ms.v : 0);
            sqlite3_bind_double(st, 9, t0->speedup.set ? t0->speedup.v : 0);
            if (t0->roofline_share.set)
                sqlite3_bind_double(st, 10, t0->roofline_share.v);
        }
        sqlite3_bind_text(st, 11, checks, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 12, timings, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 13, rec->seed.set ? rec->seed.v : 0);
        sqlite3_bind_int64(st, 14, rec->secret_seed.set ? rec->secret_seed.v : 0);
        sqlite3_bind_text(st, 15, all, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 16, when, -1, SQLITE_TRANSIENT);
        if (run_id)
            sqlite3_bind_int64(st, 17, run_id);
        bind_text(st, 18, rec->task_hash);
        bind_text(st, 19, device_key[0] ? device_key : NULL);
        if (ln->parent_id)
            sqlite3_bind_int64(st, 20, ln->parent_id);
        bind_text(st, 21, ln->op);
        bind_text(st, 22, ln->client);
        bind_text(st, 23, ln->batch_id);
        bind_text(st, 24, rec->candidate); /* its own file */
        ok = sqlite3_step(st) == SQLITE_DONE;
    }
    sqlite3_finalize(st);
    free(knobs);
    free(checks);
    free(timings);
    free(all);
    return ok;
}

static int locked_record_lineage(struct temper_store *s, json_t *r, const char *source, size_t source_len,
                                 int64_t run_id, const struct temper_lineage *lineage, int64_t *id, char *msg,
                                 size_t msg_size)
{
    static const char what[] = "recording the evaluation";
    static const struct temper_lineage none = {0, NULL, NULL, NULL};
    const struct temper_lineage *ln = lineage ? lineage : &none;
    char when[32], device_key[1024];
    store_now_text(when, sizeof(when));
    /* Read leniently: the store takes whatever JSON it always took, and keeps it as given. */
    struct temper_result rec;
    if (temper_result_from_stored(r, &rec))
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "%s: %s: out of memory", s->path, what);
    if (!rec.source_hash || !rec.task || !source) {
        temper_result_free(&rec);
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "a result needs source_hash, task and source");
    }
    const struct temper_result_device *d = rec.device_info;
    if (d) /* a result's device record names no backend: the id's prefix is it */
        device_key_of(d->id, NULL, d->name, d->driver, d->uuid, d->pci_bus_id, device_key, sizeof(device_key));
    else
        snprintf(device_key, sizeof(device_key), "%s", rec.device ? rec.device : "");
    int err = store_write_begin(s, what, msg, msg_size);
    if (err) {
        temper_result_free(&rec);
        return err;
    }
    int ok = insert_candidate(s, &rec, source, source_len, ln, when) &&
             insert_evaluation(s, &rec, r, run_id, ln, device_key, when);
    temper_result_free(&rec);
    if (!ok)
        return store_write_abort(s, what, msg, msg_size);
    int64_t row = sqlite3_last_insert_rowid(s->db);
    if ((err = store_write_commit(s, what, msg, msg_size)))
        return err;
    if (id)
        *id = row;
    return 0;
}

static int64_t locked_count(struct temper_store *s, const char *verdict)
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
static json_t *json_rows(sqlite3_stmt *st)
{
    json_t *rows = json_array();
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(st, 0);
        json_t *v = text ? json_loads(text, 0, NULL) : NULL;
        if (v)
            json_array_append_new(rows, v);
    }
    sqlite3_finalize(st);
    return rows;
}

static json_t *locked_lookup(struct temper_store *s, const char *source_hash, const char *task_hash,
                            const char *device_key, const char *options)
{
    sqlite3_stmt *st;
    if (!task_hash || !device_key)
        return NULL;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT result FROM evaluations WHERE candidate = ? AND task_hash = ? AND device_key = ? "
                           "AND options = ? AND (verdict != 'correct' OR median_ms > 0) ORDER BY id DESC LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return NULL;
    sqlite3_bind_text(st, 1, source_hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, task_hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, device_key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, options, -1, SQLITE_TRANSIENT);
    json_t *rows = json_rows(st);
    json_t *r = json_array_get(rows, 0);
    json_incref(r);
    json_decref(rows);
    return r;
}

/* Correct, timed results of a task on a device (NULL: any) judged against another content than
 * task_hash (or an unknown one); -1 on failure. */
static int64_t count_other_contents(struct temper_store *s, const char *task, const char *task_hash,
                                    const char *device_key)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT count(*) FROM evaluations WHERE task = ? AND (? IS NULL OR device_key = ?) "
                           "AND verdict = 'correct' AND median_ms > 0 AND (task_hash IS NULL OR task_hash != ?)",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, task, -1, SQLITE_TRANSIENT);
    bind_text(st, 2, device_key);
    bind_text(st, 3, device_key);
    sqlite3_bind_text(st, 4, task_hash, -1, SQLITE_TRANSIENT);
    int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return n;
}

/* Configurations (source, options, device) of a task judged against task_hash, on a device (NULL:
 * any), that were once correct and timed but whose latest evaluation is not correct: what best
 * leaves out for that; -1 on failure. */
static int64_t count_failed_latest(struct temper_store *s, const char *task, const char *task_hash,
                                   const char *device_key)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT count(*) FROM (SELECT max(id) AS id, max(verdict = 'correct' AND median_ms > 0) "
                           "AS once FROM evaluations WHERE task = ?1 AND task_hash = ?2 AND (?3 IS NULL OR "
                           "device_key = ?3) AND (verdict != 'correct' OR median_ms > 0) GROUP BY candidate, "
                           "coalesce(options, ''), device_key) l JOIN evaluations e ON e.id = l.id "
                           "WHERE l.once AND e.verdict != 'correct'",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, task, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, task_hash, -1, SQLITE_TRANSIENT);
    bind_text(st, 3, device_key);
    int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return n;
}

static int locked_best(struct temper_store *s, const char *task, const char *task_hash, const char *device_key,
                      json_t **result, char **source, char *msg, size_t msg_size)
{
    static const char what[] = "reading the best kernel";
    sqlite3_stmt *st;
    *result = NULL;
    *source = NULL;
    if (!task || !task_hash)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "the best kernel needs a task and its content hash");
    /* Each configuration (source, options, device) counts with its latest timed evaluation, of any
     * verdict, as tune's reuse takes it (locked_lookup): a tune re-times its best in full after
     * screening them, and the re-timing, not a noisy screening sample of the same code, is what
     * the configuration takes; a configuration whose latest evaluation is not correct (wrong on
     * that run's inputs, a timeout) drops out. A correct run without a time (--no-timing) says
     * nothing new of its time, so it neither counts nor hides the timing before it. */
    if (sqlite3_prepare_v2(s->db,
                           "WITH latest AS (SELECT max(id) AS id FROM evaluations WHERE task = ?1 AND task_hash = ?2 "
                           "AND (?3 IS NULL OR device_key = ?3) AND (verdict != 'correct' OR median_ms > 0) "
                           "GROUP BY candidate, coalesce(options, ''), device_key) "
                           "SELECT e.result, c.source, e.id FROM latest l JOIN evaluations e ON e.id = l.id "
                           "JOIN candidates c ON c.hash = e.candidate WHERE e.verdict = 'correct' AND e.median_ms > 0 "
                           "ORDER BY e.median_ms ASC, e.id ASC LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return store_fail(s, msg, msg_size, what);
    sqlite3_bind_text(st, 1, task, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, task_hash, -1, SQLITE_TRANSIENT);
    bind_text(st, 3, device_key);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(st, 0);
        const char *src = (const char *)sqlite3_column_text(st, 1);
        *result = text ? json_loads(text, 0, NULL) : NULL;
        *source = src ? strdup(src) : NULL;
        /* The result was stored before its row had an id: it gets it here. */
        if (*result)
            json_object_set_new(*result, "store_id", json_integer(sqlite3_column_int64(st, 2)));
        if (!*result || (src && !*source)) {
            sqlite3_finalize(st);
            json_decref(*result);
            free(*source);
            *result = NULL;
            *source = NULL;
            return temper_fail(msg, msg_size, TEMPER_ESTORE, "%s: %s: a stored result is not JSON", s->path, what);
        }
        sqlite3_finalize(st);
        return 0;
    }
    if (rc != SQLITE_DONE) {
        int err = store_fail(s, msg, msg_size, what);
        sqlite3_finalize(st);
        return err;
    }
    sqlite3_finalize(st);
    int64_t others = count_other_contents(s, task, task_hash, device_key);
    int64_t failed = count_failed_latest(s, task, task_hash, device_key);
    if (others < 0 || failed < 0)
        return store_fail(s, msg, msg_size, what);
    char more[200] = "", fails[200] = "";
    if (others)
        snprintf(more, sizeof(more), " (%lld correct result%s judged against another version of the task %s left out)",
                 (long long)others, others == 1 ? "" : "s", others == 1 ? "is" : "are");
    if (failed)
        snprintf(fails, sizeof(fails), " (%lld configuration%s once correct %s left out: %s latest evaluation is not "
                 "correct)", (long long)failed, failed == 1 ? "" : "s", failed == 1 ? "is" : "are",
                 failed == 1 ? "its" : "their");
    return temper_fail(msg, msg_size, TEMPER_ENOTFOUND,
                       "no correct, timed kernel for task '%s'%s%s in the store, judged against the task's current "
                       "content (%s)%s%s",
                       task, device_key ? " on " : "", device_key ? device_key : "", task_hash, fails, more);
}

static int locked_run_begin(struct temper_store *s, json_t *settings, int64_t *run_id, char *msg, size_t msg_size)
{
    static const char what[] = "recording the run";
    char when[32];
    store_now_text(when, sizeof(when));
    int err = store_write_begin(s, what, msg, msg_size);
    if (err)
        return err;
    char *text = json_dumps(settings, JSON_COMPACT | JSON_SORT_KEYS);
    sqlite3_stmt *st;
    int ok = sqlite3_prepare_v2(s->db,
                                "INSERT INTO runs(kind, candidate, device, settings, started_at, task_hash, device_key) "
                                "VALUES(?,?,?,?,?,?,?)",
                                -1, &st, NULL) == SQLITE_OK;
    if (ok) {
        sqlite3_bind_text(st, 1, json_string_value(json_object_get(settings, "kind")) ?: "tune", -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, json_string_value(json_object_get(settings, "source_hash")) ?: "", -1,
                          SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, json_string_value(json_object_get(settings, "device")) ?: "", -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, text, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 5, when, -1, SQLITE_TRANSIENT);
        bind_text(st, 6, json_string_value(json_object_get(settings, "task_hash")));
        bind_text(st, 7, json_string_value(json_object_get(settings, "device_key")));
        ok = sqlite3_step(st) == SQLITE_DONE;
    }
    sqlite3_finalize(st);
    free(text);
    if (!ok)
        return store_write_abort(s, what, msg, msg_size);
    int64_t row = sqlite3_last_insert_rowid(s->db);
    if ((err = store_write_commit(s, what, msg, msg_size)))
        return err;
    *run_id = row;
    return 0;
}

static int64_t locked_run_unfinished(struct temper_store *s, const char *source_hash, const char *task_hash,
                                    const char *device_key, json_t **settings)
{
    sqlite3_stmt *st;
    *settings = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT id, settings FROM runs WHERE candidate = ? AND task_hash = ? AND device_key = ? "
                           "AND finished_at IS NULL ORDER BY id DESC LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, source_hash, -1, SQLITE_TRANSIENT);
    bind_text(st, 2, task_hash);
    bind_text(st, 3, device_key);
    int64_t id = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        id = sqlite3_column_int64(st, 0);
        *settings = json_loads((const char *)sqlite3_column_text(st, 1), 0, NULL);
    }
    sqlite3_finalize(st);
    return id;
}

static json_t *locked_run_results(struct temper_store *s, int64_t run_id)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT result FROM evaluations WHERE run_id = ? ORDER BY id", -1, &st, NULL) !=
        SQLITE_OK)
        return json_array();
    sqlite3_bind_int64(st, 1, run_id);
    return json_rows(st);
}

static int locked_run_finish(struct temper_store *s, int64_t run_id, json_t *summary, char *msg, size_t msg_size)
{
    static const char what[] = "finishing the run";
    char when[32];
    store_now_text(when, sizeof(when));
    int err = store_write_begin(s, what, msg, msg_size);
    if (err)
        return err;
    char *text = json_dumps(summary, JSON_COMPACT);
    sqlite3_stmt *st;
    int ok = sqlite3_prepare_v2(s->db, "UPDATE runs SET summary = ?, finished_at = ? WHERE id = ?", -1, &st, NULL) ==
             SQLITE_OK;
    if (ok) {
        sqlite3_bind_text(st, 1, text, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, when, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 3, run_id);
        ok = sqlite3_step(st) == SQLITE_DONE;
    }
    sqlite3_finalize(st);
    free(text);
    return ok ? store_write_commit(s, what, msg, msg_size) : store_write_abort(s, what, msg, msg_size);
}

static json_t *locked_results(struct temper_store *s, const char *source_hash, const char *device, char **source)
{
    sqlite3_stmt *st;
    *source = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT source FROM candidates WHERE hash = ?", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, source_hash, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            *source = strdup((const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
    if (sqlite3_prepare_v2(s->db,
                           "SELECT result FROM evaluations WHERE candidate = ? AND (device_key = ? OR device = ?) "
                           "ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK)
        return json_array();
    sqlite3_bind_text(st, 1, source_hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, device, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, device, -1, SQLITE_TRANSIENT);
    return json_rows(st);
}

/* ---- the public functions: each holds the store's lock, so that threads sharing a store never
 * interleave inside one transaction ---- */

json_t *temper_store_calibration(struct temper_store *s, json_t *info)
{
    pthread_mutex_lock(&s->lock);
    json_t *out = locked_calibration(s, info);
    pthread_mutex_unlock(&s->lock);
    return out;
}

int temper_store_put_calibration(struct temper_store *s, json_t *info, json_t *ceilings, char *msg, size_t msg_size)
{
    pthread_mutex_lock(&s->lock);
    int out = locked_put_calibration(s, info, ceilings, msg, msg_size);
    pthread_mutex_unlock(&s->lock);
    return out;
}

int temper_store_record_source(struct temper_store *s, json_t *r, const char *source, size_t source_len,
                               int64_t run_id, const struct temper_lineage *lineage, int64_t *id, char *msg,
                               size_t msg_size)
{
    pthread_mutex_lock(&s->lock);
    int out = locked_record_lineage(s, r, source, source_len, run_id, lineage, id, msg, msg_size);
    pthread_mutex_unlock(&s->lock);
    return out;
}

int temper_store_record_lineage(struct temper_store *s, json_t *r, const char *source, int64_t run_id, const struct temper_lineage *lineage, int64_t *id, char *msg, size_t msg_size)
{
    return temper_store_record_source(s, r, source, source ? strlen(source) : 0, run_id, lineage, id, msg, msg_size);
}

int64_t temper_store_count(struct temper_store *s, const char *verdict)
{
    pthread_mutex_lock(&s->lock);
    int64_t out = locked_count(s, verdict);
    pthread_mutex_unlock(&s->lock);
    return out;
}

json_t *temper_store_lookup(struct temper_store *s, const char *source_hash, const char *task_hash, const char *device_key, const char *options)
{
    pthread_mutex_lock(&s->lock);
    json_t *out = locked_lookup(s, source_hash, task_hash, device_key, options);
    pthread_mutex_unlock(&s->lock);
    return out;
}

int temper_store_best(struct temper_store *s, const char *task, const char *task_hash, const char *device_key, json_t **result, char **source, char *msg, size_t msg_size)
{
    pthread_mutex_lock(&s->lock);
    int out = locked_best(s, task, task_hash, device_key, result, source, msg, msg_size);
    pthread_mutex_unlock(&s->lock);
    return out;
}

int temper_store_run_begin(struct temper_store *s, json_t *settings, int64_t *run_id, char *msg, size_t msg_size)
{
    pthread_mutex_lock(&s->lock);
    int out = locked_run_begin(s, settings, run_id, msg, msg_size);
    pthread_mutex_unlock(&s->lock);
    return out;
}

int64_t temper_store_run_unfinished(struct temper_store *s, const char *source_hash, const char *task_hash, const char *device_key, json_t **settings)
{
    pthread_mutex_lock(&s->lock);
    int64_t out = locked_run_unfinished(s, source_hash, task_hash, device_key, settings);
    pthread_mutex_unlock(&s->lock);
    return out;
}

json_t *temper_store_run_results(struct temper_store *s, int64_t run_id)
{
    pthread_mutex_lock(&s->lock);
    json_t *out = locked_run_results(s, run_id);
    pthread_mutex_unlock(&s->lock);
    return out;
}

int temper_store_run_finish(struct temper_store *s, int64_t run_id, json_t *summary, char *msg, size_t msg_size)
{
    pthread_mutex_lock(&s->lock);
    int out = locked_run_finish(s, run_id, summary, msg, msg_size);
    pthread_mutex_unlock(&s->lock);
    return out;
}

json_t *temper_store_results(struct temper_store *s, const char *source_hash, const char *device, char **source)
{
    pthread_mutex_lock(&s->lock);
    json_t *out = locked_results(s, source_hash, device, source);
    pthread_mutex_unlock(&s->lock);
    return out;
}
