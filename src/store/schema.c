/* schema.c: opening the store: the numbered schema steps of every owner on PRAGMA user_version
 * (store_module.h's registry; each step run once, in its own transaction, in version order; an
 * error stops the open), the refusal of a store newer than this code, and the errors that name a
 * damaged file with SQLite's integrity check. The store's own steps (its evaluations, runs,
 * devices and benches) are here; the gym's and the agent's are in their modules. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store_impl.h"
#include "util/util.h"

/* How long a store waits for another process's lock, in milliseconds. */
#define STORE_BUSY_MS 10000

/* Version 1: the schema as it was before versions were kept (stores made then read 0). The
 * oldest of those lack evaluations.run_id, added by add_run_id. */
static const char schema_v1[] =
    "CREATE TABLE IF NOT EXISTS devices ("
    "  key TEXT PRIMARY KEY,"
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

/* Whether table evaluations has the named column: *have 1 or 0; an SQLite status. */
static int evaluations_column(sqlite3 *db, const char *column, int *have)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, "SELECT count(*) FROM pragma_table_info('evaluations') WHERE name = ?", -1, &st,
                                NULL);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_bind_text(st, 1, column, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    *have = rc == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? SQLITE_OK : rc;
}

static int add_run_id(sqlite3 *db)
{
    int have, rc = evaluations_column(db, "run_id", &have);
    if (rc != SQLITE_OK)
        return rc;
    return have ? SQLITE_OK : sqlite3_exec(db, "ALTER TABLE evaluations ADD COLUMN run_id INTEGER", NULL, NULL, NULL);
}

/* Version 2: results keyed on the task's content and the device's identity, and their lineage.
 * Results stored before have no task_hash: they stay, but are never reused or served as best,
 * since what they were judged against is unknown. Their device_key is rebuilt from the device
 * description each result carries. */
static const char schema_v2[] =
    "ALTER TABLE evaluations ADD COLUMN task_hash TEXT;"
    "ALTER TABLE evaluations ADD COLUMN device_key TEXT;"
    "ALTER TABLE evaluations ADD COLUMN parent_id INTEGER;"
    "ALTER TABLE evaluations ADD COLUMN operator TEXT;"
    "ALTER TABLE evaluations ADD COLUMN client TEXT;"
    "ALTER TABLE evaluations ADD COLUMN batch_id TEXT;"
    "ALTER TABLE runs ADD COLUMN task_hash TEXT;"
    "ALTER TABLE runs ADD COLUMN device_key TEXT;"
    "UPDATE evaluations SET device_key ="
    "  substr(device, 1, instr(device, ':') - 1) || '|' ||"
    "  coalesce(json_extract(result, '$.device_info.name'), '') || '|' ||"
    "  coalesce(json_extract(result, '$.device_info.driver'), '')"
    "  WHERE device IS NOT NULL AND instr(device, ':') > 0 AND json_valid(result);"
    "UPDATE runs SET device_key = (SELECT e.device_key FROM evaluations e WHERE e.run_id = runs.id LIMIT 1);"
    "CREATE INDEX evaluations_reuse ON evaluations(candidate, task_hash, device_key, options);"
    "CREATE INDEX evaluations_best ON evaluations(task, task_hash, device_key, verdict, median_ms);"
    "CREATE INDEX evaluations_run ON evaluations(run_id);"
    "CREATE INDEX evaluations_parent ON evaluations(parent_id);";

/* From version 3 on, a step only creates tables and indexes, IF NOT EXISTS, or adds a column
 * where it is missing (version 6): development builds numbered their steps otherwise, so a store
 * may already have a step's tables (or lack those of a step its version counts as done). Such
 * tables are kept when their columns are the ones the step makes (checked against a fresh schema,
 * see migrate), and made when missing. */

/* Version 3: benches (`temper bench`), each with the evaluations it was computed from. */
static const char schema_v3[] =
    "CREATE TABLE IF NOT EXISTS benches ("
    "  id INTEGER PRIMARY KEY, source TEXT NOT NULL, level TEXT, device TEXT, bench TEXT NOT NULL,"
    "  created_at TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS bench_evaluations ("
    "  bench_id INTEGER NOT NULL REFERENCES benches(id), evaluation_id INTEGER NOT NULL REFERENCES evaluations(id),"
    "  task TEXT NOT NULL, PRIMARY KEY (bench_id, evaluation_id));"
    "CREATE INDEX IF NOT EXISTS bench_evaluations_evaluation ON bench_evaluations(evaluation_id);";

/* Version 6: each evaluation's own candidate path (evaluations.path). candidates.path is the file
 * a source was first seen as; the same bytes evaluated from another file keep that first one, so
 * history named the wrong file. The column is added where it is missing (a development build may
 * have added it), and rows without a path take the one their result names, else the
 * candidate's. */
static int add_evaluation_path(sqlite3 *db)
{
    int have, rc = evaluations_column(db, "path", &have);
    if (rc != SQLITE_OK)
        return rc;
    if (!have && (rc = sqlite3_exec(db, "ALTER TABLE evaluations ADD COLUMN path TEXT", NULL, NULL, NULL)) != SQLITE_OK)
        return rc;
    return sqlite3_exec(db,
                        "UPDATE evaluations SET path = coalesce(CASE WHEN json_valid(result) THEN "
                        "json_extract(result, '$.candidate') END, (SELECT c.path FROM candidates c WHERE "
                        "c.hash = evaluations.candidate)) WHERE path IS NULL",
                        NULL, NULL, NULL);
}

static const struct store_step store_steps[] = {
    {1, "the first schema", schema_v1, add_run_id, 1},
    {2, "task content and device identity keys, lineage", schema_v2, NULL, 0},
    {3, "benches", schema_v3, NULL, 1},
    {6, "each evaluation's own candidate path", "", add_evaluation_path, 0},
};

static const struct store_owner store_owner = {"store", store_steps, sizeof(store_steps) / sizeof(store_steps[0])};

/* The registry: every owner of tables in the store. */
static const struct store_owner *const owners[] = {&store_owner, &serve_store_owner, &agent_store_owner};

/* Fills steps[v - 1] with the step of version v for v = 1 .. TEMPER_STORE_SCHEMA_VERSION, from
 * every owner; 0, or TEMPER_ESTORE naming the step out of place (a mistake in this temper's
 * registry, not in the store). */
static int steps_in_order(const struct store_step *steps[TEMPER_STORE_SCHEMA_VERSION], char *msg, size_t msg_size)
{
    for (int v = 0; v < TEMPER_STORE_SCHEMA_VERSION; v++)
        steps[v] = NULL;
    for (size_t o = 0; o < sizeof(owners) / sizeof(owners[0]); o++)
        for (size_t i = 0; i < owners[o]->n_steps; i++) {
            const struct store_step *m = &owners[o]->steps[i];
            if (m->version < 1 || m->version > TEMPER_STORE_SCHEMA_VERSION || steps[m->version - 1])
                return temper_fail(msg, msg_size, TEMPER_ESTORE,
                                   "this temper's schema steps are wrong: the %s's step %d (%s) is outside 1 to %d or "
                                   "has the version of another step",
                                   owners[o]->name, m->version, m->what, TEMPER_STORE_SCHEMA_VERSION);
            steps[m->version - 1] = m;
        }
    for (int v = 0; v < TEMPER_STORE_SCHEMA_VERSION; v++)
        if (!steps[v])
            return temper_fail(msg, msg_size, TEMPER_ESTORE,
                               "this temper's schema steps are wrong: no owner gives step %d", v + 1);
    return 0;
}

void store_now_text(char *out, size_t size)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Appends text to out (used bytes so far, size in all, always NUL-terminated), after "; " when
 * out is not empty, with each newline written as "; " so that the words fit on one line. */
static void append_words(char *out, size_t size, size_t *used, const char *text)
{
    const char *sep = *used ? "; " : "";
    for (int pass = 0; pass < 2; pass++)
        for (const char *p = pass ? text : sep; *p && *used + 1 < size; p++) {
            if (*p == '\n' && *used + 3 < size) {
                out[(*used)++] = ';';
                out[(*used)++] = ' ';
            } else if (*p != '\n') {
                out[(*used)++] = *p;
            }
        }
    out[*used] = 0;
}

/* The integrity check's findings (at most 10), joined by "; ", or why it could not run. */
static void integrity_words(sqlite3 *db, char *out, size_t size)
{
    sqlite3_stmt *st;
    size_t used = 0;
    out[0] = 0;
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check(10)", -1, &st, NULL) != SQLITE_OK) {
        append_words(out, size, &used, sqlite3_errmsg(db));
        return;
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *row = (const char *)sqlite3_column_text(st, 0);
        append_words(out, size, &used, row ? row : "");
    }
    if (rc != SQLITE_DONE)
        append_words(out, size, &used, sqlite3_errmsg(db));
    sqlite3_finalize(st);
}

int store_fail(struct temper_store *s, char *msg, size_t msg_size, const char *what)
{
    int code = sqlite3_errcode(s->db) & 0xff;
    char why[512];
    int sys = sqlite3_system_errno(s->db); /* "disk I/O error" alone does not say the disk is full */
    char sys_text[128];
    snprintf(why, sizeof(why), "%s%s%s%s", sqlite3_errmsg(s->db), sys ? " (" : "",
             sys ? strerror_r(sys, sys_text, sizeof(sys_text)) : "", sys ? ")" : "");
    if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) {
        char words[1024];
        integrity_words(s->db, words, sizeof(words));
        return temper_fail(msg, msg_size, TEMPER_ESTORE,
                           "the store %s is damaged (%s, while %s); PRAGMA integrity_check says: %s", s->path, why,
                           what, words);
    }
    return temper_fail(msg, msg_size, TEMPER_ESTORE, "%s: %s: %s", s->path, what, why);
}

int temper_store_check(struct temper_store *s, char *msg, size_t msg_size)
{
    char words[1024];
    pthread_mutex_lock(&s->lock);
    integrity_words(s->db, words, sizeof(words));
    pthread_mutex_unlock(&s->lock);
    if (!strcmp(words, "ok"))
        return 0;
    return temper_fail(msg, msg_size, TEMPER_ESTORE, "the store %s is damaged; PRAGMA integrity_check says: %s",
                       s->path, words);
}

sqlite3 *store_lock(struct temper_store *s)
{
    pthread_mutex_lock(&s->lock);
    return s->db;
}

void store_unlock(struct temper_store *s)
{
    pthread_mutex_unlock(&s->lock);
}

int store_write_begin(struct temper_store *s, const char *what, char *msg, size_t msg_size)
{
    s->writes++;
    if (s->fail_after >= 0 && s->writes > s->fail_after)
        return temper_fail(msg, msg_size, TEMPER_ESTORE,
                           "%s: %s: write refused by TEMPER_STORE_FAIL_AFTER=%ld (an injected failure, for tests)",
                           s->path, what, s->fail_after);
    if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return store_fail(s, msg, msg_size, what);
    return 0;
}

int store_write_commit(struct temper_store *s, const char *what, char *msg, size_t msg_size)
{
    if (sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
        return 0;
    return store_write_abort(s, what, msg, msg_size);
}

int store_write_abort(struct temper_store *s, const char *what, char *msg, size_t msg_size)
{
    int err = store_fail(s, msg, msg_size, what); /* before the rollback replaces SQLite's message */
    if (!sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return err;
}

static int user_version(sqlite3 *db, int *version)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *version = sqlite3_column_int(st, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return rc;
}

/* The names of db's tables, in one allocation "\nA\nB\n" (the caller frees it), or NULL with a
 * SQLite code in *rc. */
static char *table_names(sqlite3 *db, int *rc)
{
    sqlite3_stmt *st;
    *rc = sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", -1, &st, NULL);
    if (*rc != SQLITE_OK)
        return NULL;
    size_t used = 1, size = 256;
    char *names = malloc(size);
    if (names)
        strcpy(names, "\n");
    while (names && (*rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        size_t n = strlen(name ? name : "");
        if (used + n + 2 > size) {
            char *grown = realloc(names, size = 2 * size + n);
            if (!grown) {
                free(names);
                names = NULL;
                break;
            }
            names = grown;
        }
        memcpy(names + used, name ? name : "", n);
        used += n;
        names[used++] = '\n';
        names[used] = 0;
    }
    sqlite3_finalize(st);
    if (!names) {
        *rc = SQLITE_NOMEM;
        return NULL;
    }
    if (*rc != SQLITE_DONE) {
        free(names);
        return NULL;
    }
    *rc = SQLITE_OK;
    return names;
}

/* Whether names (from table_names) holds name. */
static int has_name(const char *names, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = strstr(names, name); p; p = strstr(p + 1, name))
        if (p[-1] == '\n' && p[n] == '\n')
            return 1;
    return 0;
}

/* The columns of table in db, as "name TYPE[ NOT NULL][ PRIMARY KEY]" joined by ", " in their
 * order, into out ("" when db has no such table). A SQLite code. */
static int table_columns(sqlite3 *db, const char *table, char *out, size_t size)
{
    sqlite3_stmt *st;
    out[0] = 0;
    int rc = sqlite3_prepare_v2(db, "SELECT name, type, \"notnull\", pk FROM pragma_table_info(?1) ORDER BY cid", -1,
                                &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    size_t used = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0), *type = (const char *)sqlite3_column_text(st, 1);
        int n = snprintf(out + used, size - used, "%s%s %s%s%s", used ? ", " : "", name ? name : "",
                         type ? type : "", sqlite3_column_int(st, 2) ? " NOT NULL" : "",
                         sqlite3_column_int(st, 3) ? " PRIMARY KEY" : "");
        if (n < 0 || (size_t)n >= size - used) {
            rc = SQLITE_TOOBIG;
            break;
        }
        used += (size_t)n;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Writes into out the entries of list (joined by ", ") that other lacks, joined the same way. */
static void entries_lacking(const char *list, const char *other, char *out, size_t size)
{
    size_t used = 0;
    out[0] = 0;
    for (const char *p = list; *p;) {
        const char *end = strstr(p, ", ");
        size_t n = end ? (size_t)(end - p) : strlen(p);
        int found = 0;
        for (const char *q = other; *q && !found;) {
            const char *qend = strstr(q, ", ");
            size_t m = qend ? (size_t)(qend - q) : strlen(q);
            found = m == n && !memcmp(p, q, n);
            q += m + (qend ? 2 : 0);
        }
        if (!found && used + n + 3 < size) {
            used += (size_t)snprintf(out + used, size - used, "%s%.*s", used ? ", " : "", (int)n, p);
        }
        p += n + (end ? 2 : 0);
    }
}

/* What a failed step leaves to say: the store, the versions, and what the user can do. */
#define MIGRATE_WAY_OUT                                                                                               \
    "if a development build of temper made this store, open it with that build; or keep it aside (mv %s %s.old) "    \
    "and let this temper make a new one; or use another store (TEMPER_HOME=DIR)"

/* Completes msg, which store_fail filled (the file, what failed and SQLite's words), for a failed
 * migration: the version the store is at (at, or -1 when unknown), the one this temper needs, and
 * what to do about SQLite's code. Returns err. */
static int migrate_failed(int err, int code, int at, char *msg, size_t msg_size)
{
    const char *advice =
        code == SQLITE_BUSY || code == SQLITE_LOCKED
            ? "another process holds the store's lock (a temper serve, tune or agent on it): run again once it is done"
        : code == SQLITE_FULL ? "free space on its disk and run again"
        : code == SQLITE_IOERR ? "mend the I/O error SQLite names and run again"
        : code == SQLITE_READONLY || code == SQLITE_CANTOPEN || code == SQLITE_PERM
            ? "make the file and its folder writable and run again"
            : "keep a copy of the file, which holds what it held, and use another store (TEMPER_HOME=DIR)";
    size_t used = msg ? strlen(msg) : 0;
    if (msg && used + 1 < msg_size && at >= 0)
        snprintf(msg + used, msg_size - used,
                 "; the store is at schema version %d, this temper needs %d; nothing of the step stayed. What you can "
                 "do: %s",
                 at, TEMPER_STORE_SCHEMA_VERSION, advice);
    else if (msg && used + 1 < msg_size)
        snprintf(msg + used, msg_size - used, "; this temper needs schema version %d. What you can do: %s",
                 TEMPER_STORE_SCHEMA_VERSION, advice);
    return err;
}

/* Runs step m on the store, in a transaction: its statements (when set_version, only if the
 * store's version is still below the step's, then the version is set), then checks that every
 * table the step makes (those in ref_after but not ref_before, the reference's names) has the
 * columns it has in ref, the fresh schema. On failure nothing of the step stays; the message
 * names the store, the version it is at (version) and needs, and a way out. */
static int run_step(struct temper_store *s, sqlite3 *ref, const struct store_step *m, const char *ref_before,
                    const char *ref_after, int set_version, int *version, char *msg, size_t msg_size)
{
    char what[200];
    snprintf(what, sizeof(what), "migrating to schema version %d (%s)", m->version, m->what);
    if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return migrate_failed(store_fail(s, msg, msg_size, what), sqlite3_errcode(s->db) & 0xff, *version, msg,
                              msg_size);
    int now = *version;
    int rc = user_version(s->db, &now);
    if (rc == SQLITE_OK && (!set_version || now < m->version)) {
        rc = sqlite3_exec(s->db, m->sql, NULL, NULL, NULL);
        if (rc == SQLITE_OK && m->fn)
            rc = m->fn(s->db);
        /* The step's tables, each against the fresh schema's. */
        char have[2048], need[2048];
        for (const char *p = ref_after + 1; rc == SQLITE_OK && *p; p = strchr(p, '\n') + 1) {
            char table[128];
            snprintf(table, sizeof(table), "%.*s", (int)(strchr(p, '\n') - p), p);
            if (has_name(ref_before, table))
                continue;
            if ((rc = table_columns(s->db, table, have, sizeof(have))) != SQLITE_OK ||
                (rc = table_columns(ref, table, need, sizeof(need))) != SQLITE_OK || !strcmp(have, need))
                continue;
            char lacks[1024], extra[1024];
            entries_lacking(need, have, lacks, sizeof(lacks));
            entries_lacking(have, need, extra, sizeof(extra));
            sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
            return temper_fail(msg, msg_size, TEMPER_ESTORE,
                               "%s: cannot bring the store from schema version %d to %d: %s: its table %s is not the "
                               "one this temper makes (%s%s%s%s%s%s); nothing of that step stayed: the store is at version %d "
                               "with every row it had. To "
                               "keep that table's rows and go on, rename it aside (sqlite3 %s 'ALTER TABLE %s RENAME "
                               "TO %s_old') and run again; or " MIGRATE_WAY_OUT,
                               s->path, *version, TEMPER_STORE_SCHEMA_VERSION, what, table,
                               *lacks ? "it lacks " : "", lacks, *lacks && *extra ? "; " : "",
                               *extra ? "it has " : "", extra, *extra ? ", which this temper does not make" : "",
                               *version, s->path, table, table, s->path, s->path);
        }
        char set[64];
        snprintf(set, sizeof(set), "PRAGMA user_version = %d", m->version);
        if (rc == SQLITE_OK && set_version)
            rc = sqlite3_exec(s->db, set, NULL, NULL, NULL);
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        int code = sqlite3_errcode(s->db) & 0xff;
        if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB || code == SQLITE_BUSY || code == SQLITE_LOCKED ||
            code == SQLITE_FULL || code == SQLITE_IOERR || code == SQLITE_READONLY)
            return migrate_failed(store_write_abort(s, what, msg, msg_size), code, *version, msg, msg_size);
        char why[512];
        snprintf(why, sizeof(why), "%s", sqlite3_errmsg(s->db)); /* before the rollback replaces it */
        if (!sqlite3_get_autocommit(s->db))
            sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return temper_fail(msg, msg_size, TEMPER_ESTORE,
                           "%s: cannot bring the store from schema version %d to %d: %s: %s; nothing of that step "
                           "stayed, the store is at version %d with every row it had. What you can do: " MIGRATE_WAY_OUT,
                           s->path, *version, TEMPER_STORE_SCHEMA_VERSION, what, why, *version, s->path, s->path);
    }
    if (set_version && now < m->version)
        *version = m->version;
    else if (set_version)
        *version = now;
    return 0;
}

/* The refusal of a store written by a newer temper. */
static int refuse_newer(const struct temper_store *s, int version, char *msg, size_t msg_size)
{
    return temper_fail(msg, msg_size, TEMPER_ESTORE,
                       "%s has schema version %d, newer than this temper knows (%d): it was written by a newer "
                       "temper; use that one, or another store ($TEMPER_HOME)",
                       s->path, version, TEMPER_STORE_SCHEMA_VERSION);
}

/* Runs the migrations the store has not had. Each re-reads the version inside its transaction,
 * so that two processes opening an old store at once migrate it once. The same steps run beside
 * them on a fresh database in memory, the reference that says which tables each step makes and
 * with which columns. A step that may run again (again) also runs on a store whose version counts
 * it as done but which lacks one of its tables. */
static int migrate(struct temper_store *s, char *msg, size_t msg_size)
{
    int version = 0;
    if (user_version(s->db, &version) != SQLITE_OK)
        return migrate_failed(store_fail(s, msg, msg_size, "reading the schema version"), sqlite3_errcode(s->db) & 0xff,
                              -1, msg, msg_size);
    if (version > TEMPER_STORE_SCHEMA_VERSION)
        return refuse_newer(s, version, msg, msg_size);
    if (version == TEMPER_STORE_SCHEMA_VERSION)
        return 0;
    sqlite3 *ref = NULL;
    int rc = sqlite3_open_v2(":memory:", &ref, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    char *before = NULL, *after = NULL;
    const struct store_step *steps[TEMPER_STORE_SCHEMA_VERSION];
    int err = steps_in_order(steps, msg, msg_size);
    for (size_t i = 0; !err && i < TEMPER_STORE_SCHEMA_VERSION; i++) {
        const struct store_step *m = steps[i];
        free(before);
        before = after;
        after = NULL;
        if (rc == SQLITE_OK && !before)
            before = table_names(ref, &rc);
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(ref, m->sql, NULL, NULL, NULL);
        if (rc == SQLITE_OK && m->fn)
            rc = m->fn(ref);
        if (rc == SQLITE_OK)
            after = table_names(ref, &rc);
        if (rc != SQLITE_OK) {
            err = temper_fail(msg, msg_size, TEMPER_ESTORE, "%s: making the fresh schema in memory to migrate against: %s",
                              s->path, ref ? sqlite3_errmsg(ref) : "out of memory");
            break;
        }
        int missing = 0;
        if (version >= m->version && m->again) {
            char cols[2048];
            for (const char *p = after + 1; !missing && *p; p = strchr(p, '\n') + 1) {
                char table[128];
                snprintf(table, sizeof(table), "%.*s", (int)(strchr(p, '\n') - p), p);
                missing = !has_name(before, table) && table_columns(s->db, table, cols, sizeof(cols)) == SQLITE_OK &&
                          !*cols;
            }
        }
        if (version < m->version || missing)
            err = run_step(s, ref, m, before, after, version < m->version, &version, msg, msg_size);
    }
    free(before);
    free(after);
    sqlite3_close(ref);
    return err;
}

int temper_store_open(const char *path, struct temper_store **out, char *msg, size_t msg_size)
{
    char def[4200], home_buf[4096];
    *out = NULL;
    if (!path) {
        const char *home = temper_home_dir(home_buf, sizeof(home_buf));
        if (temper_mkdirs(home))
            return temper_fail(msg, msg_size, TEMPER_ESTORE, "cannot create the folder %s (TEMPER_HOME): %s", home,
                               strerror(errno));
        snprintf(def, sizeof(def), "%s/temper.db", home);
        path = def;
    }
    struct temper_store *s = calloc(1, sizeof(*s));
    if (!s || !(s->path = strdup(path))) {
        free(s);
        return TEMPER_ENOMEM;
    }
    pthread_mutex_init(&s->lock, NULL);
    const char *limit = getenv("TEMPER_STORE_FAIL_AFTER");
    char *end = NULL;
    s->fail_after = limit && *limit ? strtol(limit, &end, 10) : -1;
    if (limit && *limit && (*end || s->fail_after < 0)) {
        temper_store_close(s);
        return temper_fail(msg, msg_size, TEMPER_EINVALID,
                           "TEMPER_STORE_FAIL_AFTER: '%s' is not a count of writes (0 or more)", limit);
    }
    int err = 0;
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        /* SQLite says only "unable to open database file" where the folder is a file: say so. */
        char dir[4200];
        struct stat st;
        temper_dirname(path, dir, sizeof(dir));
        if (!stat(dir, &st) && !S_ISDIR(st.st_mode))
            err = temper_fail(msg, msg_size, TEMPER_ESTORE,
                              "%s: cannot open the store: %s is not a folder (TEMPER_HOME names the folder the "
                              "store is kept in)",
                              path, dir);
        else
            err = temper_fail(msg, msg_size, TEMPER_ESTORE, "%s: cannot open the store: %s", path,
                              s->db ? sqlite3_errmsg(s->db) : "out of memory");
    }
    if (!err) {
        sqlite3_busy_timeout(s->db, STORE_BUSY_MS);
        /* A store of a newer schema is refused before anything changes in it, its journal mode
         * included: reading the version takes a shared lock and writes nothing. (A version that
         * cannot be read here is left to the steps below, which say what is wrong with the file.) */
        int version = 0;
        if (user_version(s->db, &version) == SQLITE_OK && version > TEMPER_STORE_SCHEMA_VERSION)
            err = refuse_newer(s, version, msg, msg_size);
    }
    if (!err) {
        /* Switching a new file to WAL takes a lock that SQLite does not wait for through the busy
         * handler: when another process opens the same new store at that moment, it answers BUSY
         * at once. Waited for here, as long as any other lock. */
        int rc = SQLITE_BUSY;
        for (int waited = 0; rc == SQLITE_BUSY && waited <= STORE_BUSY_MS; waited += 10) {
            rc = sqlite3_exec(s->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
            if (rc == SQLITE_BUSY)
                usleep(10000);
        }
        if (rc != SQLITE_OK || sqlite3_exec(s->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL) != SQLITE_OK)
            err = store_fail(s, msg, msg_size, "opening the store");
    }
    if (!err)
        err = migrate(s, msg, msg_size);
    if (err) {
        temper_store_close(s);
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
    pthread_mutex_destroy(&s->lock);
    free(s->path);
    free(s);
}

const char *temper_store_path(const struct temper_store *s)
{
    return s->path;
}
