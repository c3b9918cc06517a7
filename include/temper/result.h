/* result.h: the one record of an evaluation. Every field of a result, and of the records inside it,
 * is listed once below, in an X-macro per record; the macros generate the C structs, the JSON
 * reader and writer (src/eval/result.c) and the tables of docs/result.md (`temper schema`), so a
 * field is added in one place. Every key is present in every result, whatever its verdict: null
 * where a value does not apply. `schema_version` changes when a meaning changes.
 *
 * A field is X(KIND, name, SUB, doc): KIND is STR (a string), INT (a 64-bit integer), REAL (a
 * number), BOOL, JSON (any JSON value, described in the doc), REC (an object holding the record
 * SUB), or LIST (an array of records SUB); SUB is `none` for the others. */
#ifndef TEMPER_RESULT_H
#define TEMPER_RESULT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TEMPER_RESULT_SCHEMA_VERSION 1

/* Where an output first differed from what it should be. */
#define TEMPER_RESULT_MISMATCH_FIELDS(X)                                                                      \
    X(STR, output, none, "The output argument's name.")                                                     \
    X(INT, index, none, "The element's flat index in the output.")                                           \
    X(STR, position, none, "The element's position by dimension, as `[i][j]`.")                              \
    X(REAL, got, none, "What the kernel wrote there; null where that is NaN or infinite (JSON has neither).") \
    X(STR, got_text, none, "What the kernel wrote, as text: the number (9 significant digits), `nan`, `inf` or `-inf`.") \
    X(REAL, expected, none, "What it should have written (the reference, baseline or verified output).")

/* Where two runs of the same kernel on the same input differed. */
#define TEMPER_RESULT_DIFFERENCE_FIELDS(X)                                                                    \
    X(STR, output, none, "The output argument's name.")                                                     \
    X(STR, position, none, "The first element that differed, as `[i][j]`.")

/* One check shape run with one seed, compared with the C reference. */
#define TEMPER_RESULT_CHECK_FIELDS(X)                                                                         \
    X(STR, shape, none, "The shape, as `R=7 C=1000`.")                                                      \
    X(STR, seed, none, "`public` (the request's seed) or `secret` (drawn for the run).")                     \
    X(REAL, max_abs_err, none, "Largest absolute error over finite pairs.")                                   \
    X(REAL, max_rel_err, none, "Largest relative error over finite pairs with a nonzero reference.")          \
    X(INT, mismatches, none, "Elements outside the tolerance.")                                               \
    X(INT, nonfinite, none, "Output elements NaN or infinite where the answer is finite (counted in mismatches, left out of the errors above); null if not compared.") \
    X(INT, elements, none, "Output elements compared, all outputs together; null if not compared.")            \
    X(BOOL, passed, none, "Every output element within the tolerance, guards and inputs intact.")            \
    X(BOOL, deterministic, none, "A second run on the same input gave the same bits; null if not reached.")   \
    X(STR, message, none, "Why this check failed (with --keep-going every failed check says); null when it passed.") \
    X(REC, first_mismatch, mismatch, "The first element outside the tolerance; null when none.")             \
    X(REC, nondeterministic_at, difference, "Where two runs differed; null when they did not.")

/* A bench shape's check against the trusted baseline (or the expert), on the device. */
#define TEMPER_RESULT_BENCH_CHECK_FIELDS(X)                                                                   \
    X(STR, shape, none, "The bench shape.")                                                                  \
    X(STR, against, none, "`baseline`: the candidate compared with the task's baseline.")                   \
    X(REAL, max_abs_err, none, "Largest absolute difference from the baseline's output.")                     \
    X(REAL, max_rel_err, none, "Largest relative difference from the baseline's output.")                     \
    X(INT, mismatches, none, "Elements outside the tolerance.")                                               \
    X(INT, nonfinite, none, "Output elements NaN or infinite where the baseline's are finite (counted in mismatches, left out of the differences above); null if not compared.") \
    X(INT, elements, none, "Output elements compared, all outputs together; null if not compared.")            \
    X(BOOL, passed, none, "Within the tolerance of the baseline everywhere.")                                 \
    X(BOOL, timed_output_verified, none, "Every timed launch's output was verified and matched; null if not timed.") \
    X(INT, timed_launches_verified, none, "Timed launches whose outputs were verified: the warm-ups, on the two input sets checked above, against the verified output for their set, and every sample, on fresh inputs, against `timed_answer`; null if not timed.") \
    X(INT, timed_launches_by_tolerance, none, "Of the warm-ups, the ones compared within tolerance with the baseline's output, because the kernel's runs differ bit for bit.") \
    X(INT, timed_inputs_fresh, none, "Samples timed on inputs drawn anew on the device before the launch (every sample: no launch sees inputs an earlier one saw); null if not timed.") \
    X(STR, timed_answer, none, "What each sample's output was compared with, within the tolerance, on the same fresh inputs: `expert` (the vendor routine, where the task has one that passed its check) or `baseline`; null if not timed.") \
    X(REC, first_mismatch, mismatch, "The first element outside the tolerance; null when none.")             \
    X(STR, routine, none, "The expert routine checked (an expert's check only); null otherwise.")            \
    X(STR, message, none, "Why the expert's own check failed; null when it passed.")                         \
    X(REC, expert, bench_check, "The expert's check against the baseline at this shape; null without one.")

/* The time per launch plan at one bench shape, with the baseline and expert timed interleaved. */
#define TEMPER_RESULT_TIMING_FIELDS(X)                                                                        \
    X(STR, shape, none, "The bench shape.")                                                                  \
    X(REAL, median_ms, none, "Median time of the candidate's launch plan, in milliseconds.")                  \
    X(REAL, min_ms, none, "Fastest sample.")                                                                  \
    X(REAL, spread, none, "(p90 - p10) / median of the samples.")                                             \
    X(INT, samples, none, "Timed launches of the candidate.")                                                 \
    X(INT, samples_under_floor, none, "Samples faster than impossible_floor_ms (each sample is held against it on a GPU; on a CPU, all of them when the median is); null uncalibrated.") \
    X(INT, fast_samples, none, "Samples under a tenth (GPU) or a fiftieth (CPU) of the median: launches that did less work; two or more, and 1 in 50, fail the verdict.") \
    X(REAL, baseline_median_ms, none, "Median time of the task's baseline.")                                  \
    X(REAL, baseline_spread, none, "The baseline's spread.")                                                  \
    X(REAL, speedup, none, "baseline_median_ms / median_ms.")                                                 \
    X(INT, flops, none, "Floating-point operations at this shape (the task's `flops`).")                     \
    X(INT, bytes, none, "Bytes moved at this shape (the task's `bytes`).")                                    \
    X(REAL, gbps, none, "bytes / median time, in GB/s.")                                                      \
    X(REAL, tflops, none, "flops / median time, in TFLOP/s.")                                                 \
    X(INT, baseline_samples, none, "Baseline samples pooled in the worker for this shape.")                  \
    X(INT, baseline_samples_now, none, "Baseline samples taken during this evaluation.")                     \
    X(REAL, warmup_ms, none, "Wall time of the untimed warm-up launches before the samples.")               \
    X(REAL, loop_ms, none,                                                                                    \
      "Wall time of the samples, each with its fresh inputs, answer and checks (docs/timing.md): "           \
      "`loop_ms / samples - median_ms` is what verifying a sample costs.")                                   \
    X(JSON, loop_steps_ms, none,                                                                              \
      "The samples' wall time by step, summed (object): `draw` (queued, not waited for), `candidate` (its "  \
      "timed run with the cache flush, waiting for the draw), `candidate_timed` (the samples' sum), "        \
      "`answer`, `inputs_check`, `compare`.")                                                                \
    X(STR, expert, none, "The expert routine timed; null without one.")                                      \
    X(REAL, expert_median_ms, none, "The expert's median time; null without one.")                           \
    X(REAL, expert_spread, none, "The expert's spread; null without one.")                                   \
    X(REAL, speedup_vs_expert, none, "expert_median_ms / median_ms; null without one.")                      \
    X(REAL, roofline_floor_ms, none, "The time the device's measured ceilings allow at best; null uncalibrated.") \
    X(REAL, roofline_share, none, "roofline_floor_ms / median_ms.")                                           \
    X(REAL, baseline_roofline_share, none, "roofline_floor_ms / baseline_median_ms.")                         \
    X(STR, bound, none, "`memory` or `compute`: which ceiling sets the floor.")                               \
    X(STR, compute_ceiling, none, "The calibration key of the compute ceiling used (`fma_gflops`, ...).")    \
    X(BOOL, impossible, none, "Faster than the device's measured peak (impossible_floor_ms): the work was not done (verdict incorrect).") \
    X(REAL, impossible_floor_ms, none, "The floor at the measured peak: the task's bytes and flops at the ceilings raised by what honest kernels are measured to beat them by (1.25x each; on a CPU also in proportion to other_cpu_share, the machine's share other processes took during calibration); no honest launch is faster; null uncalibrated.") \
    X(JSON, ceilings, none, "The device's measured ceilings used (object, as `temper calibrate --json`).") \
    X(STR, warning, none, "Why this timing should not be trusted as it is (spread over 10 %, load over the cores); null when none.")

/* Where the evaluation's time went, in milliseconds; null for phases not reached. */
#define TEMPER_RESULT_PHASES_FIELDS(X)                                                                        \
    X(REAL, build, none, "Compiling (or loading from the build cache) the candidate and baseline.")          \
    X(REAL, inputs, none, "Generating inputs.")                                                              \
    X(REAL, reference, none, "Computing the C reference and the baseline's outputs.")                         \
    X(REAL, device, none, "Running the candidate at the check shapes.")                                       \
    X(REAL, compare, none, "Comparing outputs.")                                                             \
    X(REAL, timing, none, "Timing at the bench shapes.")                                                      \
    X(REAL, worker, none, "Everything the worker did for this request.")

/* The device that ran the evaluation. */
#define TEMPER_RESULT_DEVICE_FIELDS(X)                                                                        \
    X(STR, id, none, "`cuda:N` or `opencl:N`.")                                                              \
    X(STR, name, none, "The device's own name.")                                                             \
    X(STR, vendor, none, "Its vendor.")                                                                      \
    X(STR, platform, none, "The OpenCL platform, or `CUDA`.")                                                \
    X(STR, driver, none, "The driver's version.")                                                            \
    X(STR, compiler, none, "The compiler's version (part of the build cache key).")                          \
    X(STR, arch, none, "The target architecture (`sm_90`), or empty.")                                       \
    X(STR, class, none, "`gpu` or `cpu`: which bench shapes apply.")                                          \
    X(INT, compute_units, none, "SMs or OpenCL compute units.")                                               \
    X(INT, cc_major, none, "CUDA compute capability, major (0 elsewhere).")                                   \
    X(INT, cc_minor, none, "CUDA compute capability, minor (0 elsewhere).")                                   \
    X(INT, clock_mhz, none, "Core clock in MHz, 0 if unknown.")                                               \
    X(INT, mem_bus_bits, none, "Memory bus width, 0 if unknown.")                                             \
    X(INT, global_mem_bytes, none, "Device memory.")                                                          \
    X(INT, local_mem_bytes, none, "Shared (local) memory per block without opt-in.")                          \
    X(INT, local_mem_optin_bytes, none, "Shared memory per block with opt-in.")                               \
    X(INT, cache_bytes, none, "Last-level cache, 0 if unknown.")                                              \
    X(INT, max_work_group, none, "Threads per block at most.")                                             \
    X(STR, language, none, "The source language its compiler takes: `cuda` or `opencl`.")                   \
    X(JSON, caps, none, "What the backend can do, a list of names: `offline_compile` (NVRTC, without a device), `in_process` (kernels run in the worker's address space), `expert` (vendor-library experts).") \
    X(STR, uuid, none, "The device's UUID where the driver tells it, else empty.")                           \
    X(STR, pci_bus_id, none, "Its PCI bus id (`0000:1b:00.0`) where known, else empty.")                    \
    X(JSON, attrs, none, "The device attributes launch expressions may name, an object of integers: `SMS`, `SMEM_PER_BLOCK`, `SMEM_PER_BLOCK_OPTIN`, `SMEM_PER_SM`, `WARP`, `L2_BYTES`, `MAX_THREADS_PER_BLOCK`, `CC`, `MEM_BYTES` (docs/candidate.md).") \
    X(JSON, sandbox, none, "What confines the worker that ran it: an object of `no_new_privs`, `rlimits`, `seccomp`, `network_blocked`, `exec_blocked`, `landlock`, `sockets_blocked` (no new socket but an unnamed pair, no connect or bind), `signals_blocked` (signals to itself only, no new session), `user_namespace`, `pid_namespace`, `mount_namespace`, `proc_private` (no other process's `/proc`), `env_clean` (only the variables a runtime needs), `cwd_scratch` (works in its scratch folder), `writes_only_scratch` and `nothing_outlives` (booleans), `landlock_abi` and `reason` (what is not enforced, and why).")

/* One evaluation. */
#define TEMPER_RESULT_FIELDS(X)                                                                               \
    X(INT, schema_version, none, "The version of this format; this page describes version 1.")              \
    X(INT, store_id, none, "The evaluation's row id in the store; null when it was not stored.")              \
    X(STR, store_error, none, "Why it could not be stored (the store's file and cause); null when stored or not asked.") \
    X(STR, verdict, none, "`correct`, `incorrect`, `compile_error`, `runtime_error`, `timeout` or `invalid`; null only when cancelled while it ran.") \
    X(STR, message, none, "One sentence for people: what passed, or what failed and where.")                  \
    X(STR, task, none, "The task the candidate names; empty when none could be read (no task directive read before the candidate's first error, or it names no task there is).")        \
    X(STR, task_hash, none, "xxHash of the task's content (task.json, reference, baselines): results are kept under it.") \
    X(STR, candidate, none, "The candidate's path as given (`<stdin>.cl` or `<stdin>.cu` for standard input).") \
    X(STR, source_hash, none, "xxHash of the candidate's source, 16 hex digits.")                              \
    X(STR, options, none, "The compiler options used (knobs as -D, flags, extra flags).")                     \
    X(JSON, knobs, none, "The knob values used: an object of NAME: \"VALUE\" strings.")                      \
    X(STR, compile_log, none, "What the compiler printed.")                                                  \
    X(BOOL, cache_hit, none, "The build came from the content-addressed build cache.")                      \
    X(STR, baseline, none, "The task's baseline source the candidate was compared and timed against.")     \
    X(STR, expert, none, "The vendor-library routine timed as an expert; null without one.")                \
    X(STR, device, none, "The device's id (`cuda:0`).")                                                      \
    X(REC, device_info, device, "The device's description.")                                                \
    X(STR, device_class, none, "`gpu` or `cpu`: which bench shapes were used.")                               \
    X(INT, seed, none, "The public seed.")                                                                   \
    X(INT, secret_seed, none, "The secret seed drawn for the run (stored, so a result can be replayed): one per `temper eval` or `temper tune` run; a long-running session (the gym's workers) draws a new one every 256 evaluations or 5 minutes.")   \
    X(LIST, checks, check, "Every check shape and seed run, in order; empty when none ran.")                 \
    X(LIST, bench_checks, bench_check, "Every bench shape's check against the baseline; empty when none.")  \
    X(LIST, timings, timing, "Every bench shape timed; empty when not timed.")                               \
    X(INT, failed_checks, none, "With keep_going: how many checks failed; null otherwise.")                 \
    X(REC, phases_ms, phases, "Where the time went; null when the worker was not reached.")                  \
    X(REAL, elapsed_ms, none, "Wall time of this evaluation, from its turn in the batch.")                    \
    X(BOOL, worker_restarted, none, "The worker was replaced after this evaluation (a fault; or, on a device whose kernels run in the worker (PoCL), any candidate kernel that ran, since it may have written anywhere in it).") \
    X(STR, same_code_as, none, "Not run: the compiler options of an earlier, identical build it took its result from (`\"\"` when that build had none; null when this one ran).") \
    X(STR, same_code_path, none, "The candidate path of that earlier build.")                                \
    X(STR, tune_phase, none, "In a tune: the phase that proposed this configuration.")                       \
    X(JSON, sanitize, none, "compute-sanitizer's findings (`eval --sanitize[=strict]`, CUDA): an object with `mode` (`report` or `strict`) and one object per tool (`memcheck`, `racecheck`, `initcheck`, `synccheck`) holding `errors`, `warnings`, `exit_code`, `report` (the first lines of findings), `incomplete` where the tool printed no summary or ran out of time, and for racecheck `hazards` and `hazard_instances` by kind (`write_write`, `read_write`: reported access pairs, and the hazards they stand for; `hazards` also has `not_printed` when racecheck's summary counted more hazards than it reported, the tool printing at most 20); or `{\"error\": WHY}` when the tools did not run (on an OpenCL device: not supported). null without --sanitize.")   \
    X(JSON, profile, none, "Nsight Compute's metrics per kernel (`eval --profile`); null otherwise.")      \
    X(JSON, warnings, none, "Why a timing should not be trusted as it is, a list of sentences; null when none.") \
    X(BOOL, cancelled, none, "true: the request was cancelled before it finished, and nothing was stored.") \
    X(INT, error_code, none, "Not evaluated at all (a missing file, an unknown knob): temper's error code; null otherwise.") \
    X(INT, parent_id, none, "Lineage: the store row id of the result this candidate was made from.")      \
    X(STR, made_by, none, "Lineage: the operator or client that made the candidate (`tune`, a model's name).") \
    X(STR, batch_id, none, "Lineage: the client's batch (an RL step, an agent's round).")

/* ---- generated types ---- */

struct temper_opt_i64 {
    int set;   /* 0: null */
    int64_t v; /* the value */
};
struct temper_opt_f64 {
    int set;  /* 0: null */
    double v; /* the value */
};
struct temper_opt_bool {
    int set; /* 0: null */
    int v;   /* 0 or 1 */
};

#define TEMPER_RESULT_TYPE_STR(sub) char *
#define TEMPER_RESULT_TYPE_INT(sub) struct temper_opt_i64
#define TEMPER_RESULT_TYPE_REAL(sub) struct temper_opt_f64
#define TEMPER_RESULT_TYPE_BOOL(sub) struct temper_opt_bool
#define TEMPER_RESULT_TYPE_JSON(sub) json_t *
#define TEMPER_RESULT_TYPE_REC(sub) struct temper_result_##sub *
#define TEMPER_RESULT_TYPE_LIST(sub) struct temper_result_##sub##_list
#define TEMPER_RESULT_MEMBER(kind, name, sub, doc) TEMPER_RESULT_TYPE_##kind(sub) name;

/* A record's struct and its list: strings, JSON values, records and lists are owned by the record
 * (freed with temper_result_free); NULL, `set == 0` or `n == 0` mean null or empty. */
#define TEMPER_RESULT_RECORD(sub, FIELDS)                                                                     \
    struct temper_result_##sub {                                                                              \
        FIELDS(TEMPER_RESULT_MEMBER)                                                                          \
    };                                                                                                        \
    struct temper_result_##sub##_list {                                                                       \
        size_t n;                       /* entries */                                                         \
        struct temper_result_##sub *v; /* the entries (owned) */                                             \
    };

TEMPER_RESULT_RECORD(mismatch, TEMPER_RESULT_MISMATCH_FIELDS)
TEMPER_RESULT_RECORD(difference, TEMPER_RESULT_DIFFERENCE_FIELDS)
TEMPER_RESULT_RECORD(check, TEMPER_RESULT_CHECK_FIELDS)
TEMPER_RESULT_RECORD(bench_check, TEMPER_RESULT_BENCH_CHECK_FIELDS)
TEMPER_RESULT_RECORD(timing, TEMPER_RESULT_TIMING_FIELDS)
TEMPER_RESULT_RECORD(phases, TEMPER_RESULT_PHASES_FIELDS)
TEMPER_RESULT_RECORD(device, TEMPER_RESULT_DEVICE_FIELDS)

/* One evaluation, typed. */
struct temper_result {
    TEMPER_RESULT_FIELDS(TEMPER_RESULT_MEMBER)
};

/* ---- reading, writing, documenting ---- */

/* Reads a result object into *r (zeroed first). Strict: a key no record lists, or a value of the
 * wrong type, is an error naming its path ("timings[0].median_ms: a number was expected"); a key
 * that is missing reads as null. On error *r is freed and zeroed. Caller frees with
 * temper_result_free. */
int temper_result_from_json(json_t *obj, struct temper_result *r, char *msg, size_t msg_size);
/* Reads a result as a store may hold it (temper_store_record keeps whatever JSON it is given: results
 * from before the one form, results written by hand) into *r (zeroed first), as the JSON readers
 * of such results always did: a key that is not a field is skipped, a value of another type reads as
 * null (an integral number such as 1024.0 reads as an integer), a non-object reads as an empty
 * result. Fails only when out of memory (*r freed and zeroed). Caller frees with temper_result_free. */
int temper_result_from_stored(json_t *obj, struct temper_result *r);

/* The first timing (the first bench shape), the one headline numbers come from; NULL when none.
 * Borrowed from r. */
const struct temper_result_timing *temper_result_first_timing(const struct temper_result *r);

/* The records inside a result, each with three functions of its own, for code that fills one
 * apart from a result (the worker, record by record), named temper_result_SUB_to_json, _free and
 * _copy (temper_result_mismatch_to_json, temper_result_timing_free, ...):
 *   json_t *temper_result_SUB_to_json(const struct temper_result_SUB *rec): writes every field, null
 *     where unset; json null for NULL. Caller decrefs.
 *   void temper_result_SUB_free(struct temper_result_SUB *rec): frees what rec owns, zeroes it.
 *   int temper_result_SUB_copy(struct temper_result_SUB *dst, const struct temper_result_SUB *src):
 *     dst becomes a copy owning its own strings, values and records (0, or TEMPER_ENOMEM with dst
 *     zeroed). */
#define TEMPER_RESULT_RECORDS(X) X(mismatch) X(difference) X(check) X(bench_check) X(timing) X(phases) X(device)
#define TEMPER_RESULT_RECORD_FUNCTIONS(sub)                                                                   \
    json_t *temper_result_##sub##_to_json(const struct temper_result_##sub *rec);                            \
    void temper_result_##sub##_free(struct temper_result_##sub *rec);                                        \
    int temper_result_##sub##_copy(struct temper_result_##sub *dst, const struct temper_result_##sub *src);
TEMPER_RESULT_RECORDS(TEMPER_RESULT_RECORD_FUNCTIONS)

/* Writes every field of r, null where unset, in the order listed above. Caller decrefs. */
json_t *temper_result_to_json(const struct temper_result *r);
/* Frees what r owns and zeroes it. */
void temper_result_free(struct temper_result *r);

/* Reads obj and writes it back in the one form: every key present, the schema version set. Returns
 * a new object (caller decrefs), or NULL with msg saying which key was not a field. */
json_t *temper_result_normalize(json_t *obj, char *msg, size_t msg_size);

/* Checks that obj is a result in the one form: every key of every record present, nothing else,
 * each of its type. Returns 0, or an error with msg naming the first key that is wrong. */
int temper_result_validate(json_t *obj, char *msg, size_t msg_size);

/* Writes the field tables of docs/result.md (Markdown, one table per record). */
void temper_result_schema_markdown(FILE *out);

#endif
