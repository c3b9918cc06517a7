/* serve_schema.c: the gym's tables in the store (docs/store.md), which the gym owns: its job queue
 * on one machine (queue_local.c, queue_local_take.c), registered with the store as schema steps 4
 * and 7 (store_module.h). This file is part of libtemper, not of the gym's library: one schema
 * version counts every owner's steps, so every program that opens a store makes these tables. */
#include <stdio.h>

#include "../store/store_module.h"

/* Version 4: the gym's job queue on one machine (src/serve/queue_local.c): jobs with their state
 * and outcome, the content cache of results by device, consumers' reports, counters and the dead
 * letters. */
static const char schema_v4[] =
    "CREATE TABLE IF NOT EXISTS serve_jobs ("
    "  id TEXT PRIMARY KEY, batch TEXT NOT NULL, cache_key TEXT NOT NULL, item TEXT NOT NULL,"
    "  state TEXT NOT NULL, consumer TEXT, taken_us INTEGER, deliveries INTEGER NOT NULL,"
    "  outcome TEXT, submitted_us INTEGER NOT NULL, finished_us INTEGER);"
    "CREATE INDEX IF NOT EXISTS serve_jobs_state ON serve_jobs(state);"
    "CREATE INDEX IF NOT EXISTS serve_jobs_batch ON serve_jobs(batch);"
    "CREATE TABLE IF NOT EXISTS serve_cache (key TEXT PRIMARY KEY, result TEXT NOT NULL, created_us INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS serve_workers (consumer TEXT PRIMARY KEY, device TEXT NOT NULL, device_key TEXT NOT NULL,"
    "  busy INTEGER NOT NULL, jobs_done INTEGER NOT NULL, seen_us INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS serve_counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS serve_dead_letters (id TEXT PRIMARY KEY, deliveries INTEGER NOT NULL, result TEXT NOT NULL,"
    "  created_us INTEGER NOT NULL);";

/* Version 7: what a gym job's holder's deaths did to it (src/serve/queue_local_take.c):
 * serve_jobs.alone (1: it must run alone, its holder having died) and serve_jobs.deaths (the
 * deaths charged to it: those while it ran alone), added where missing, and the index by which a
 * take finds the oldest job of each kind. */
static int add_serve_job_guards(sqlite3 *db)
{
    static const char *const columns[] = {"alone", "deaths"};
    for (int i = 0; i < 2; i++) {
        sqlite3_stmt *st;
        int rc = sqlite3_prepare_v2(db, "SELECT count(*) FROM pragma_table_info('serve_jobs') WHERE name = ?", -1, &st,
                                    NULL);
        if (rc != SQLITE_OK)
            return rc;
        sqlite3_bind_text(st, 1, columns[i], -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        int have = rc == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
        sqlite3_finalize(st);
        if (rc != SQLITE_ROW)
            return rc;
        char sql[128];
        snprintf(sql, sizeof(sql), "ALTER TABLE serve_jobs ADD COLUMN %s INTEGER NOT NULL DEFAULT 0", columns[i]);
        if (!have && (rc = sqlite3_exec(db, sql, NULL, NULL, NULL)) != SQLITE_OK)
            return rc;
    }
    return sqlite3_exec(db, "CREATE INDEX IF NOT EXISTS serve_jobs_waiting ON serve_jobs(state, alone)", NULL, NULL,
                        NULL);
}


static const struct store_step serve_steps[] = {
    {4, "the gym's job queue", schema_v4, NULL, 1},
    {7, "the gym's jobs that must run alone, and their deaths", "", add_serve_job_guards, 0},
};

const struct store_owner serve_store_owner = {"gym", serve_steps, sizeof(serve_steps) / sizeof(serve_steps[0])};
