/* store.h: everything temper sees, kept in SQLite (WAL) under $TEMPER_HOME: devices and their
 * measured ceilings, tasks, candidates (with their parent and the operator that made them), and
 * every evaluation with its checks and timings. */
#ifndef TEMPER_STORE_H
#define TEMPER_STORE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct temper_store; /* opaque: an open database */

/* Opens (creating if needed) the store at path, or $TEMPER_HOME/temper.db when path is NULL.
 * Caller closes with temper_store_close. */
int temper_store_open(const char *path, struct temper_store **store, char *msg, size_t msg_size);
void temper_store_close(struct temper_store *store);

/* The measured ceilings of a device (as described by the worker's info object), or NULL if it
 * was never calibrated. Caller decrefs. */
json_t *temper_store_calibration(struct temper_store *store, json_t *device_info);
/* Stores a device's ceilings, replacing older ones. */
int temper_store_put_calibration(struct temper_store *store, json_t *device_info, json_t *ceilings, char *msg,
                                 size_t msg_size);

/* Records an evaluation result (the object temper_eval returns) with the candidate's source;
 * *id (optional) gets the evaluation's row id. A candidate seen before is stored once. */
int temper_store_record(struct temper_store *store, json_t *result, const char *source, int64_t *id, char *msg,
                        size_t msg_size);

/* As temper_store_record, and ties the evaluation to a run (0: none). */
int temper_store_record_run(struct temper_store *store, json_t *result, const char *source, int64_t run_id,
                            int64_t *id, char *msg, size_t msg_size);

/* The latest result (caller decrefs) of this source, with these exact compiler options, on this
 * device, or NULL: what makes a configuration evaluated before never run again. A correct result
 * counts only if it was timed (not from --no-timing or a check-only run); any other verdict
 * counts as it is. */
json_t *temper_store_lookup(struct temper_store *store, const char *source_hash, const char *device,
                            const char *options);

/* The fastest correct, timed evaluation of a task on a device ("cuda:0"; NULL: any): its result
 * (caller decrefs) and source (*source, caller frees), or NULL if there is none. */
json_t *temper_store_best(struct temper_store *store, const char *task, const char *device, char **source);

/* Every result of a source on a device, oldest first, with the source itself (*source, caller
 * frees): the data a search strategy can be replayed on. Caller decrefs the array. */
json_t *temper_store_results(struct temper_store *store, const char *source_hash, const char *device, char **source);

/* Tuning runs: one row each, so that an interrupted run can be resumed. */
int temper_store_run_begin(struct temper_store *store, json_t *settings, int64_t *run_id, char *msg, size_t msg_size);
/* The newest unfinished run of a candidate on a device: its id and settings (caller decrefs), or 0. */
int64_t temper_store_run_unfinished(struct temper_store *store, const char *source_hash, const char *device,
                                    json_t **settings);
/* Results recorded in a run, oldest first (caller decrefs the array). */
json_t *temper_store_run_results(struct temper_store *store, int64_t run_id);
int temper_store_run_finish(struct temper_store *store, int64_t run_id, json_t *summary, char *msg, size_t msg_size);

/* Number of evaluations stored, optionally only those of one verdict (NULL: all). */
int64_t temper_store_count(struct temper_store *store, const char *verdict);

#endif
