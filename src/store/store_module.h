/* store_module.h: what the store offers the modules that keep their own tables in it (the gym's
 * queue, the agent's sessions): a registry of versioned schema steps, each owned by the module
 * whose tables it makes, and the store's connection, lock and write transactions for the
 * module's own statements. Internal to temper (not installed); a module includes this header,
 * never store_impl.h.
 *
 * One number, PRAGMA user_version, counts the steps of every owner: a store at version N has had
 * steps 1 to N, whoever owns them, so that a store file made by any program of this temper has
 * every owner's tables. Each owner lists its steps with the versions they were given (once given,
 * a version is never renumbered: stores in use read it); schema.c runs them in version order. */
#ifndef TEMPER_STORE_MODULE_H
#define TEMPER_STORE_MODULE_H

#include <sqlite3.h>
#include <stddef.h>

struct temper_store;

/* One step of the schema. Invariant: over every owner, versions run 1, 2, ...
 * TEMPER_STORE_SCHEMA_VERSION, each once. */
struct store_step {
    int version;            /* PRAGMA user_version once it has run */
    const char *what;       /* for messages: "migrating to schema version N (what)" */
    const char *sql;        /* statements, run in the step's transaction ("" for none) */
    int (*fn)(sqlite3 *db); /* then this, in the same transaction (NULL: none); returns a SQLite code */
    int again;              /* 1: safe on a store that has its tables already (IF NOT EXISTS only) */
};

/* A module's steps. */
struct store_owner {
    const char *name;              /* the module: "store", "gym", "agent" */
    const struct store_step *steps; /* its steps, in version order */
    size_t n_steps;                /* how many */
};

/* The owners of the store's tables besides the store itself, each defined by its module
 * (src/serve/serve_schema.c, src/agent/agent_schema.c) and registered in schema.c's list. Their
 * files are part of libtemper, whatever library holds the rest of the module, since every store
 * has every owner's tables. Each is data and step functions on a sqlite3 handle only. */
extern const struct store_owner serve_store_owner;
extern const struct store_owner agent_store_owner;

/* Takes the store's lock and returns its connection, for an owner's statements on its own tables
 * (borrowed: valid until store_unlock; one transaction at a time, as every function of the store
 * holds the same lock). */
sqlite3 *store_lock(struct temper_store *s);
/* Gives the lock back. */
void store_unlock(struct temper_store *s);

/* Begins a write transaction (BEGIN IMMEDIATE), counting it against $TEMPER_STORE_FAIL_AFTER.
 * Called with the lock held. On failure returns TEMPER_ESTORE with the message filled; no
 * transaction is open then. */
int store_write_begin(struct temper_store *s, const char *what, char *msg, size_t msg_size);
/* Commits, or on failure rolls back and returns TEMPER_ESTORE. */
int store_write_commit(struct temper_store *s, const char *what, char *msg, size_t msg_size);
/* Rolls back after a failed step and returns store_fail's error for it. */
int store_write_abort(struct temper_store *s, const char *what, char *msg, size_t msg_size);

/* The current time as ISO 8601 UTC text. */
void store_now_text(char *out, size_t size);

#endif
