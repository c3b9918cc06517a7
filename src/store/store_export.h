/* store_export.h: read-only queries over the store for the commands that show and export what
 * it holds (`temper export`, `temper report`): every evaluation of a run, a task or the whole
 * store, streamed one row at a time with its candidate's source and the evaluation it improved
 * on, and a run's or a device's row. Nothing here writes. */
#ifndef TEMPER_STORE_EXPORT_H
#define TEMPER_STORE_EXPORT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "temper/store.h"

/* Which evaluations to read. Both members unset: every evaluation in the store. */
struct temper_store_filter {
    int64_t run_id;   /* only this tune run's evaluations; 0: any */
    const char *task; /* only this task's evaluations; NULL: any */
};

/* Called once per evaluation, oldest first, with a row object (borrowed: valid during the call)
 * whose keys are listed in docs/export.md ("The row the store gives"): the evaluation's columns,
 * its candidate's path and source, its result object (parsed), and the base it is compared
 * with ("base_*": its lineage parent, or for a point of a tune without one, the run's fastest
 * correct evaluation before it; null when neither exists). Return nonzero to stop. The store's
 * lock is held during the walk: fn must not call the store. */
typedef int (*temper_store_row_fn)(void *user, json_t *row);

/* Walks the evaluations the filter selects, one row in memory at a time, in one read
 * transaction (a consistent snapshot). Returns 0 after the last row, fn's nonzero value when it
 * stopped the walk, or TEMPER_ESTORE with msg naming the file and the cause. */
int temper_store_each_evaluation(struct temper_store *store, const struct temper_store_filter *filter,
                                 temper_store_row_fn fn, void *user, char *msg, size_t msg_size);

/* The row of run run_id (keys: the columns of `runs`, with settings and summary parsed; summary
 * null while unfinished) in *run (caller decrefs). TEMPER_ENOTFOUND (msg says so) when there is
 * no such run, TEMPER_ESTORE when the store failed. */
int temper_store_run_get(struct temper_store *store, int64_t run_id, json_t **run, char *msg, size_t msg_size);

/* The calibration row of a device by its key (keys: the columns of `devices`, with info and
 * ceilings parsed) in *device (caller decrefs), or NULL when it was never calibrated (returns
 * 0 then). TEMPER_ESTORE when the store failed. */
int temper_store_device_get(struct temper_store *store, const char *device_key, json_t **device, char *msg,
                            size_t msg_size);

#endif
