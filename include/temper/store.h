/* store.h: everything temper sees, kept in SQLite (WAL) under $TEMPER_HOME: devices and their
 * measured ceilings, tasks, candidates (with their parent and the operator that made them), and
 * every evaluation with its checks and timings. The schema and how to query it are described
 * in docs/store.md.
 *
 * Keys: a result counts for reuse and for `best` only under the task content it was judged
 * against (its "task_hash", temper_task_content_hash) and on the device it ran on, named by a
 * stable identity (temper_store_device_key), never by an index such as "cuda:0".
 *
 * Failures are errors: every write that fails returns TEMPER_ESTORE with a message naming the
 * file and the cause; a damaged file is named as such with the words of SQLite's
 * `PRAGMA integrity_check`. For tests, $TEMPER_STORE_FAIL_AFTER=N lets a store opened while it
 * is set make N writes and fail every later one, as a full disk would. */
#ifndef TEMPER_STORE_H
#define TEMPER_STORE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* The schema version this code writes (PRAGMA user_version); an older store is migrated on
 * open, a newer one is refused. */
#define TEMPER_STORE_SCHEMA_VERSION 7

struct temper_store; /* opaque: an open database; threads may share one (each call holds its lock) */

/* Where a result came from, stored with it. Every member is optional. */
struct temper_lineage {
    int64_t parent_id;    /* the evaluation (row id) it was derived from; 0: none */
    const char *op;       /* the operator that made the candidate ("mutate", "tune"); NULL: none */
    const char *client;   /* who asked for it ("cli", "gym", "mcp", an agent's name); NULL: none */
    const char *batch_id; /* the batch it was submitted in; NULL: none */
};

/* Opens (creating if needed) the store at path, or $TEMPER_HOME/temper.db when path is NULL,
 * migrating an older schema (each step in its own transaction). Fails with TEMPER_ESTORE for a
 * file that cannot be opened, a damaged one (the message says so, with the integrity check's
 * words) and a store newer than this code. Caller closes with temper_store_close. */
int temper_store_open(const char *path, struct temper_store **store, char *msg, size_t msg_size);
void temper_store_close(struct temper_store *store);
/* The file the store is in; borrowed, valid until close. */
const char *temper_store_path(const struct temper_store *store);

/* A device's stable identity, "backend|name|driver" plus "|uuid" (or "|pci_bus_id") where the
 * description (the worker's device info object) has one: what evaluations and calibrations
 * are keyed on. Writes at most out_size bytes including the NUL. */
void temper_store_device_key(json_t *device_info, char *out, size_t out_size);

/* The measured ceilings of a device (as described by the worker's info object), or NULL if it
 * was never calibrated. Caller decrefs. */
json_t *temper_store_calibration(struct temper_store *store, json_t *device_info);
/* Stores a device's ceilings, replacing older ones. */
int temper_store_put_calibration(struct temper_store *store, json_t *device_info, json_t *ceilings, char *msg,
                                 size_t msg_size);

/* Records an evaluation result (the object temper_eval returns: its "task_hash" and
 * "device_info" give the keys) with the candidate's source, tied to a run (0: none), with its
 * lineage (NULL: none); *id (optional) gets the evaluation's row id. A candidate seen before
 * is stored once. One transaction: on failure nothing is stored. */
int temper_store_record_lineage(struct temper_store *store, json_t *result, const char *source, int64_t run_id,
                                const struct temper_lineage *lineage, int64_t *id, char *msg, size_t msg_size);
/* temper_store_record_lineage with the source's length: all source_len bytes are stored, NUL
 * bytes too (a candidate holding one is invalid, and its result is recorded with its exact text;
 * readers of the text see it up to its first NUL). */
int temper_store_record_source(struct temper_store *store, json_t *result, const char *source, size_t source_len,
                               int64_t run_id, const struct temper_lineage *lineage, int64_t *id, char *msg,
                               size_t msg_size);
/* temper_store_record_lineage without a run or lineage. */
int temper_store_record(struct temper_store *store, json_t *result, const char *source, int64_t *id, char *msg,
                        size_t msg_size);
/* temper_store_record_lineage without lineage. */
int temper_store_record_run(struct temper_store *store, json_t *result, const char *source, int64_t run_id,
                            int64_t *id, char *msg, size_t msg_size);

/* The latest result (caller decrefs) of this source, judged against this task content, with
 * these exact compiler options, on this device (temper_store_device_key), or NULL: what makes
 * a configuration evaluated before never run again. A correct result counts only if it was
 * timed (not from --no-timing or a check-only run); any other verdict counts as it is. */
json_t *temper_store_lookup(struct temper_store *store, const char *source_hash, const char *task_hash,
                            const char *device_key, const char *options);

/* The fastest correct, timed evaluation of a task judged against its content task_hash, on a
 * device (device_key; NULL: any), each configuration (source, options, device) counting with its
 * latest timed evaluation (a tune's full re-timing, not its screening sample): its result (*result, caller decrefs) and source (*source,
 * caller frees). Returns 0, TEMPER_ENOTFOUND when there is none (msg says so, and how many
 * results judged against other contents of the task were left out), or TEMPER_ESTORE. */
int temper_store_best(struct temper_store *store, const char *task, const char *task_hash, const char *device_key,
                      json_t **result, char **source, char *msg, size_t msg_size);

/* Every result of a source on a device (its key, or the id "cuda:0" it had), oldest first,
 * with the source itself (*source, caller frees): the data a search strategy can be replayed
 * on. Caller decrefs the array. */
json_t *temper_store_results(struct temper_store *store, const char *source_hash, const char *device, char **source);

/* Tuning runs: one row each, so that an interrupted run can be resumed. settings holds at
 * least "source_hash", "task_hash", "device_key" and "device" (the id it was started as). */
int temper_store_run_begin(struct temper_store *store, json_t *settings, int64_t *run_id, char *msg, size_t msg_size);
/* The newest unfinished run of a candidate, judged against this task content, on a device
 * (its key): its id and settings (caller decrefs), or 0. */
int64_t temper_store_run_unfinished(struct temper_store *store, const char *source_hash, const char *task_hash,
                                    const char *device_key, json_t **settings);
/* Results recorded in a run, oldest first (caller decrefs the array). */
json_t *temper_store_run_results(struct temper_store *store, int64_t run_id);
int temper_store_run_finish(struct temper_store *store, int64_t run_id, json_t *summary, char *msg, size_t msg_size);

/* Number of evaluations stored, optionally only those of one verdict (NULL: all); -1 on failure. */
int64_t temper_store_count(struct temper_store *store, const char *verdict);

/* ---- reading evaluations back, benches, history (store_bench.c, store_history.c) ---- */

/* One stored evaluation by its row id: its result (*result, caller decrefs, with "store_id"
 * set) and, when source is not NULL, its candidate's source (*source, caller frees).
 * TEMPER_ENOTFOUND (msg says so) when there is no such row. */
int temper_store_evaluation(struct temper_store *store, int64_t id, json_t **result, char **source, char *msg,
                            size_t msg_size);
/* The results recorded in a run, oldest first, each with its "store_id" (*results, caller
 * decrefs the array). TEMPER_ENOTFOUND when there is no such run. */
int temper_store_run_evaluations(struct temper_store *store, int64_t run_id, json_t **results, char *msg,
                                 size_t msg_size);

/* Stores a bench (docs/bench.md: the object temper_bench_compute builds, with "source",
 * "level" and "devices" added by its caller), linked to every evaluation its tasks list by
 * "store_id", in one transaction; sets "id" in bench (borrowed; the caller keeps it) and *id
 * (optional) to the new bench's id. TEMPER_EINVALID when an evaluation it names is not in the
 * store (nothing is stored then). */
int temper_store_bench_put(struct temper_store *store, json_t *bench, int64_t *id, char *msg, size_t msg_size);
/* A stored bench identical to bench (borrowed): the same "source" and content, "id" aside, as a
 * second `bench --run` of a run that has not changed makes. *id gets the newest such bench's id,
 * 0 when none. Returns 0 or TEMPER_ESTORE. */
int temper_store_bench_find(struct temper_store *store, json_t *bench, int64_t *id, char *msg, size_t msg_size);
/* Reads a bench back: *bench (caller decrefs) is the object `temper bench --json` printed when it
 * was stored, with its "id". TEMPER_ENOTFOUND (msg says so) when no bench has that id. */
int temper_store_bench_get(struct temper_store *store, int64_t id, json_t **bench, char *msg, size_t msg_size);

/* What the store holds, newest first (*history, caller decrefs): evaluations, tune runs and
 * benches, each an object with "kind" ("evaluation", "run" or "bench"), "id" and "time" (ISO
 * 8601 UTC); an evaluation also has task, candidate (the file that evaluation read), source_hash, knobs, device, verdict,
 * message, median_ms, spread, speedup, roofline_share, parent_id, operator, client, run_id,
 * batch_id and tune_phase (null where not known); a run task, candidate, source_hash, device,
 * run_kind, finished_at, evaluations, best_median_ms, best_speedup, best_roofline_share; a bench
 * level, device, tasks, samples, correct_samples, pass_at_1, geomean_speedup (docs/bench.md).
 * task (NULL: any) keeps a task's evaluations and runs and the benches that hold it; device
 * (NULL: any) is a device as named in the run ("opencl:0"), its identity
 * (temper_store_device_key) or a backend ("cuda"); limit (<= 0: none) is the most rows. */
int temper_store_history(struct temper_store *store, const char *task, const char *device, int limit,
                         json_t **history, char *msg, size_t msg_size);

/* Runs SQLite's full integrity check: 0 when it says "ok", else TEMPER_ESTORE with its words. */
int temper_store_check(struct temper_store *store, char *msg, size_t msg_size);

#endif
