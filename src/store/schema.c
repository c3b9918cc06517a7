/* schema.c: opening the store: its numbered migrations on PRAGMA user_version (each run once,
 * in its own transaction, in order; an error stops the open), the refusal of a store newer
 * than this code, and the errors that name a damaged file with SQLite's integrity check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store_impl.h"
#include "temper/util.h"

/* One step of the schema. Invariant: versions run 1, 2, ... TEMPER_STORE_SCHEMA_VERSION. */
/* How long a store waits for another process's lock, in milliseconds. */
#define STORE_BUSY_MS 10000

struct migration {
    int version;                    /* PRAGMA user_version once it has run */
    const char *what;               /* for messages */
    const char *sql;                /* statements, run in the step's transaction */
    int (*fn)(sqlite3 *db);         /* then this, in the same transaction (NULL: none); a SQLite code */
};

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

static int add_run_id(sqlite3 *db)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, "SELECT count(*) FROM pragma_table_info('evaluations') WHERE name = 'run_id'", -1,
                                &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    rc = sqlite3_step(st);
    int have = rc == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW)
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

/* Version 3: benches (`temper bench`), each with the evaluations it was computed from. */
static const char schema_v3[] =
    "CREATE TABLE benches ("
    "  id INTEGER PRIMARY KEY, source TEXT NOT NULL, level TEXT, device TEXT, bench TEXT NOT NULL,"
    "  created_at TEXT NOT NULL);"
    "CREATE TABLE bench_evaluations ("
    "  bench_id INTEGER NOT NULL REFERENCES benches(id), evaluation_id INTEGER NOT NULL REFERENCES evaluations(id),"
    "  task TEXT NOT NULL, PRIMARY KEY (bench_id, evaluation_id));"
    "CREATE INDEX bench_evaluations_evaluation ON bench_evaluations(evaluation_id);";

/* Version 4: the gym's job queue on one machine (src/serve/queue_local.c): jobs with their state
 * and outcome, the content cache of results by device, consumers' reports, counters and the dead
 * letters. */
static const char schema_v4[] =
    "CREATE TABLE serve_jobs ("
    "  id TEXT PRIMARY KEY, batch TEXT NOT NULL, cache_key TEXT NOT NULL, item TEXT NOT NULL,"
    "  state TEXT NOT NULL, consumer TEXT, taken_us INTEGER, deliveries INTEGER NOT NULL,"
    "  outcome TEXT, submitted_us INTEGER NOT NULL, finished_us INTEGER);"
    "CREATE INDEX serve_jobs_state ON serve_jobs(state);"
    "CREATE INDEX serve_jobs_batch ON serve_jobs(batch);"
    "CREATE TABLE serve_cache (key TEXT PRIMARY KEY, result TEXT NOT NULL, created_us INTEGER NOT NULL);"
    "CREATE TABLE serve_workers (consumer TEXT PRIMARY KEY, device TEXT NOT NULL, device_key TEXT NOT NULL,"
    "  busy INTEGER NOT NULL, jobs_done INTEGER NOT NULL, seen_us INTEGER NOT NULL);"
    "CREATE TABLE serve_counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);"
    "CREATE TABLE serve_dead_letters (id TEXT PRIMARY KEY, deliveries INTEGER NOT NULL, result TEXT NOT NULL,"
    "  created_us INTEGER NOT NULL);";

/* Version 5: the agent's sessions, prompts, model calls (every HTTP exchange, with its tokens and
 * latency) and candidates with their lineage (docs/agent.md, docs/store.md). */
static const char schema_v5[] =
    "CREATE TABLE agent_sessions ("
    "  id INTEGER PRIMARY KEY, task TEXT NOT NULL, device TEXT, api TEXT, endpoint TEXT, model TEXT,"
    "  settings TEXT NOT NULL, replay_of INTEGER, best_eval_id INTEGER, summary TEXT,"
    "  started_at TEXT NOT NULL, finished_at TEXT);"
    "CREATE TABLE agent_prompts ("
    "  id INTEGER PRIMARY KEY, session_id INTEGER NOT NULL, role TEXT NOT NULL, messages TEXT NOT NULL,"
    "  created_at TEXT NOT NULL);"
    "CREATE TABLE agent_calls ("
    "  id INTEGER PRIMARY KEY, session_id INTEGER NOT NULL, prompt_id INTEGER, attempt INTEGER NOT NULL,"
    "  url TEXT, request TEXT NOT NULL, status INTEGER, reply TEXT, content TEXT, reasoning TEXT,"
    "  finish_reason TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, latency_ms REAL, error TEXT,"
    "  created_at TEXT NOT NULL);"
    "CREATE TABLE agent_candidates ("
    "  id INTEGER PRIMARY KEY, session_id INTEGER NOT NULL, prompt_id INTEGER, call_id INTEGER,"
    "  role TEXT NOT NULL, parent_eval_id INTEGER, eval_id INTEGER, island INTEGER, features TEXT,"
    "  source TEXT, outcome TEXT NOT NULL, median_ms REAL, note TEXT, created_at TEXT NOT NULL);"
    "CREATE INDEX agent_calls_session ON agent_calls(session_id, id);"
    "CREATE INDEX agent_candidates_session ON agent_candidates(session_id, id);";

static const struct migration migrations[] = {
    {1, "the first schema", schema_v1, add_run_id},
    {2, "task content and device identity keys, lineage", schema_v2, NULL},
    {3, "benches", schema_v3, NULL},
    {4, "the gym's job queue", schema_v4, NULL},
    {5, "the agent's sessions, prompts, calls and candidates", schema_v5, NULL},
};

_Static_assert(sizeof(migrations) / sizeof(migrations[0]) == TEMPER_STORE_SCHEMA_VERSION,
               "one migration per schema version");

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

/* Runs the migrations the store has not had. Each re-reads the version inside its transaction,
 * so that two processes opening an old store at once migrate it once. */
static int migrate(struct temper_store *s, char *msg, size_t msg_size)
{
    int version = 0;
    if (user_version(s->db, &version) != SQLITE_OK)
        return store_fail(s, msg, msg_size, "reading the schema version");
    if (version > TEMPER_STORE_SCHEMA_VERSION)
        return temper_fail(msg, msg_size, TEMPER_ESTORE,
                           "%s has schema version %d, newer than this temper knows (%d): it was written by a newer "
                           "temper; use that one, or another store ($TEMPER_HOME)",
                           s->path, version, TEMPER_STORE_SCHEMA_VERSION);
    for (size_t i = 0; i < sizeof(migrations) / sizeof(migrations[0]); i++) {
        const struct migration *m = &migrations[i];
        if (version >= m->version)
            continue;
        char what[160];
        snprintf(what, sizeof(what), "migrating to schema version %d (%s)", m->version, m->what);
        if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
            return store_fail(s, msg, msg_size, what);
        int rc = user_version(s->db, &version);
        if (rc == SQLITE_OK && version < m->version) {
            rc = sqlite3_exec(s->db, m->sql, NULL, NULL, NULL);
            if (rc == SQLITE_OK && m->fn)
                rc = m->fn(s->db);
            char set[64];
            snprintf(set, sizeof(set), "PRAGMA user_version = %d", m->version);
            if (rc == SQLITE_OK)
                rc = sqlite3_exec(s->db, set, NULL, NULL, NULL);
        }
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
        if (rc != SQLITE_OK)
            return store_write_abort(s, what, msg, msg_size);
        if (version < m->version)
            version = m->version;
    }
    return 0;
}

int temper_store_open(const char *path, struct temper_store **out, char *msg, size_t msg_size)
{
    char def[4200], home_buf[4096];
    *out = NULL;
    if (!path) {
        const char *home = temper_home_dir(home_buf, sizeof(home_buf));
        if (temper_mkdirs(home))
            return temper_fail(msg, msg_size, TEMPER_ESTORE, "cannot create %s", home);
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
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK)
        err = temper_fail(msg, msg_size, TEMPER_ESTORE, "%s: cannot open the store: %s", path,
                          s->db ? sqlite3_errmsg(s->db) : "out of memory");
    if (!err) {
        sqlite3_busy_timeout(s->db, STORE_BUSY_MS);
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
