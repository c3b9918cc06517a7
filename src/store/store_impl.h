/* store_impl.h: what the store's own files share: the open store, and how a SQLite failure becomes
 * an error message (naming the file, and a damaged file as such). Other modules use
 * store_module.h. */
#ifndef TEMPER_STORE_IMPL_H
#define TEMPER_STORE_IMPL_H

#include <pthread.h>
#include <sqlite3.h>
#include <stddef.h>

#include "store_module.h"
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

#endif
