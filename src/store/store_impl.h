/* store_impl.h: what the store's files share: the open store, and how a SQLite failure becomes
 * an error message (naming the file, and a damaged file as such). */
#ifndef TEMPER_STORE_IMPL_H
#define TEMPER_STORE_IMPL_H

#include <pthread.h>
#include <sqlite3.h>
#include <stddef.h>

#include "temper/store.h"

/* An open store. */
struct temper_store {
    sqlite3 *db;      /* the connection */
    char *path;       /* the file, for messages */
    long fail_after;  /* $TEMPER_STORE_FAIL_AFTER at open: writes allowed, -1 for no limit */
    long writes;      /* writes begun so far */
    pthread_mutex_t lock; /* held by every public function: one transaction at a time */
};

/* Fills msg with "<file>: <what>: <SQLite's message>" for the connection's last error, adding
 * the integrity check's words when SQLite found the file damaged; returns TEMPER_ESTORE. */
int store_fail(struct temper_store *s, char *msg, size_t msg_size, const char *what);

/* Begins a write transaction (BEGIN IMMEDIATE), counting it against $TEMPER_STORE_FAIL_AFTER.
 * On failure returns TEMPER_ESTORE with the message filled; no transaction is open then. */
int store_write_begin(struct temper_store *s, const char *what, char *msg, size_t msg_size);
/* Commits, or on failure rolls back and returns TEMPER_ESTORE. */
int store_write_commit(struct temper_store *s, const char *what, char *msg, size_t msg_size);
/* Rolls back after a failed step and returns store_fail's error for it. */
int store_write_abort(struct temper_store *s, const char *what, char *msg, size_t msg_size);

/* The current time as ISO 8601 UTC text. */
void store_now_text(char *out, size_t size);

#endif
