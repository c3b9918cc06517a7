/* eval_internal.h: the verdict pipeline, inside libtemper. A candidate is parsed and its knobs
 * checked here, then all device work (builds, correctness runs, timing, calibration) runs in a
 * worker process that the parent watches and kills when a launch hangs or memory runs away; the
 * parent never opens a device. The session, the command line and tests use it; a user of the
 * library goes through the session (temper/session.h), and temper/eval.h holds what it sees of
 * an evaluation. Results are JSON objects (jansson), the same ones `temper eval --json` prints. */
#ifndef TEMPER_EVAL_INTERNAL_H
#define TEMPER_EVAL_INTERNAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "temper/eval.h"
#include "temper/kernel.h"
#include "temper/request.h"
#include "temper/result.h"
#include "temper/task.h"

/* ---- comparing outputs ---- */

/* The outcome of comparing one output with what it should be. */
struct temper_compare {
    int64_t count;       /* elements compared */
    int64_t mismatches;  /* elements outside the tolerance */
    int64_t first_bad;   /* index of the first mismatch, -1 if none */
    double first_got;    /* the output there */
    double first_want;   /* what it should be */
    double max_abs_err;  /* largest |out - want| over finite pairs */
    double max_rel_err;  /* largest |out - want| / |want| over finite pairs with want != 0 */
    int64_t nonfinite;   /* NaN or inf where a finite value was wanted */
};

/* Compares n elements of out (dtype t) with want: |out - want| <= atol + rtol * |want|; NaN or inf
 * where want is finite fails; where want is NaN or inf, out must be the same. */
void temper_compare_values(enum temper_dtype t, const void *out, const double *want, int64_t n, double atol,
                           double rtol, struct temper_compare *r);
/* The same, with want an array of dtype t too (as another kernel wrote it). */
void temper_compare_arrays(enum temper_dtype t, const void *out, const void *want, int64_t n, double atol, double rtol,
                           struct temper_compare *r);

/* ---- the worker (its limits, struct temper_limits, are in temper/eval.h) ---- */

struct temper_worker; /* opaque: a worker process (temper-worker), its socket and watched page */

/* Finds the worker executable: $TEMPER_WORKER, else temper-worker beside the running program
 * (/proc/self/exe), else in ../libexec/temper from it (an install moved as a whole), else where
 * the build installs it (libexec/temper/temper-worker under CMAKE_INSTALL_PREFIX). */
int temper_worker_path(char *out, size_t out_size, char *msg, size_t msg_size);

/* Makes a worker handle that will start temper-worker (posix_spawn, never fork alone) to open
 * device_spec (NULL: the default device) on its first job. No signal disposition of the caller
 * changes. Caller stops it with temper_worker_stop, which ends the process. */
int temper_worker_start(const char *device_spec, const struct temper_limits *limits, struct temper_worker **w,
                        char *msg, size_t msg_size);

/* Starts a worker exactly as temper_worker_start's first job would (the same executable, the same
 * confinement), but in its self-test mode, which tries the attacks a candidate's code could make
 * from inside it against targets (an object: "cache", "pocl_cache", "store", "cwd", "cwd_file",
 * "beside_scratch", "host_socket", "parent_pid", "parent_cmdline", "secret_value",
 * "escapee_name") and returns {attack: "blocked: ..." | "ESCAPED: ...", ..., "sandbox": {...}} in
 * *report (caller decrefs). For `temper devices --selftest` and tests/untrusted_test.sh. */
int temper_worker_selftest(json_t *targets, json_t **report, char *msg, size_t msg_size);
void temper_worker_stop(struct temper_worker *w);
/* Sends one request and waits for its reply, watching the limits (blocking form of
 * temper_worker_send and temper_worker_service: it sleeps in poll until the reply or the next
 * deadline). If the worker crashes, hangs or runs out of memory, *reply is a result object with
 * verdict runtime_error, compile_error or timeout and a message saying what it was doing, and the
 * next call starts a fresh worker. If the job was cancelled, *reply is {"cancelled": true,
 * "message": ...} with no verdict: a caller must not store it. Caller decrefs *reply. */
int temper_worker_call(struct temper_worker *w, json_t *request, json_t **reply, char *msg, size_t msg_size);

/* Non-blocking use, for an event loop. One job at a time per worker:
 *   temper_worker_send(w, req)      starts the job (starts the worker if none runs);
 *   watch temper_worker_fd(w) for temper_worker_events(w), at most temper_worker_timeout_ms(w);
 *   temper_worker_service(w, &reply) on any wake-up: *reply stays NULL until the job is done,
 *   then is what temper_worker_call would return. The descriptor changes when a worker is
 *   replaced: read it again after each job. */
int temper_worker_send(struct temper_worker *w, json_t *request, char *msg, size_t msg_size);
int temper_worker_service(struct temper_worker *w, json_t **reply, char *msg, size_t msg_size);
/* The socket to the worker process, -1 when none runs. */
int temper_worker_fd(const struct temper_worker *w);
/* The poll events to wait for: POLLIN, with POLLOUT while the request is still being written. */
short temper_worker_events(const struct temper_worker *w);
/* Milliseconds until a watchdog deadline (launch, build, job or memory sample) is due, -1 when no
 * job is in flight. */
int temper_worker_timeout_ms(const struct temper_worker *w);
/* Cancels the job in flight: kills the worker process, so the waiting call (or the next
 * temper_worker_service) returns {"cancelled": true}; the next job starts a fresh worker. Safe to
 * call from another thread. Returns 1 if a job was cancelled, 0 if none was in flight. */
int temper_worker_cancel(struct temper_worker *w);

/* The body of a worker process: serves requests on in_fd, replies on out_fd (the same socket in
 * temper-worker); never returns. shared is the page the parent watches. */
void temper_worker_main(int in_fd, int out_fd, const char *device_spec, void *shared);

/* ---- evaluation ---- */

/* The states of a request's cancel word (struct temper_eval_request's cancel), which the batch
 * and a cancelling thread change only with atomic compare-and-swap (__atomic builtins, sequentially
 * consistent). The batch moves WAITING to SENT before it sends the job and SENT to DONE once the
 * reply is in (WAITING to DONE for a request that never reaches the worker); a canceller moves
 * WAITING to SKIP, or SENT to KILL and then calls temper_worker_cancel. Whichever side finds the
 * other's state gives the request a cancelled result, so a cancel that succeeded is never lost:
 * the batch also cancels the worker's job if it finds KILL just after its send, and a reply that
 * comes after a KILL is dropped. The canceller must call temper_worker_cancel before the batch
 * can send the next job: hold a lock that the batch's callback takes for this request. */
enum temper_eval_cancel {
    TEMPER_EVAL_WAITING = 0, /* not at the worker yet (the word's value before the batch) */
    TEMPER_EVAL_SKIP,        /* cancelled before it was sent: it never runs */
    TEMPER_EVAL_SENT,        /* sent to the worker, its reply not yet in */
    TEMPER_EVAL_KILL,        /* cancelled after it was sent: its job is killed */
    TEMPER_EVAL_DONE,        /* its result is decided: too late to cancel */
};

/* What to evaluate and how: a request (request.h), held whole as .request and member by member
 * (.path, .seed, ...), plus what only the evaluation needs. The session's options (sanitize,
 * profile, no_store) and the lineage are not looked at here. */
struct temper_eval_request {
    union {
        struct temper_request request; /* the request, whole */
        struct {
            TEMPER_REQUEST_MEMBERS
        }; /* the same members, by name */
    };
    const char *tasks_dir; /* where tasks are looked up, NULL for the default */
    int *cancel;           /* optional (NULL: none), borrowed: an enum temper_eval_cancel word,
                            * TEMPER_EVAL_WAITING before the batch, through which another thread
                            * cancels the request. A skipped request gets a result with
                            * "cancelled": true and verdict invalid without running; a killed one,
                            * "cancelled": true and no verdict */
};

/* Evaluates one candidate and returns its result object (caller decrefs). Returns nonzero only
 * for bad usage (a missing file, an unknown task) with msg saying so; a bad candidate gets a
 * result with verdict invalid. The device info and calibration come from the worker and store. */
int temper_eval(struct temper_worker *w, const struct temper_eval_request *req, json_t *calibration,
                json_t **result, char *msg, size_t msg_size);

/* Called with each result of a batch, in order. result is the caller's to decref; it is NULL
 * when that candidate could not be evaluated at all (a missing file, an unknown knob), and then
 * err and error say why. */
typedef void (*temper_eval_cb)(void *user, int index, json_t *result, int err, const char *error);

/* Gives the request with the given index (0, 1, 2, ... in turn) of a stream, or NULL when none
 * is ready now. The request must stay valid until its result has been delivered. */
typedef const struct temper_eval_request *(*temper_eval_next)(void *user, int index);

/* Evaluates requests as next gives them, with one worker, until next gives none while nothing
 * taken is left: each request's index is the order it was taken in. Compiles run ahead across
 * every request taken (up to jobs processes), so a request that comes while others run joins
 * the pipeline instead of waiting for them. A request without a secret seed takes one drawn by
 * the stream, drawn again every 256 such requests or 5 minutes. Results are delivered in order.
 * Returns nonzero only if no device answers (nothing taken) or memory ran out (then every
 * request taken and not evaluated has had its callback with the error). */
int temper_eval_stream(struct temper_worker *w, temper_eval_next next, void *next_user, json_t *calibration, int jobs,
                       temper_eval_cb cb, void *user, char *msg, size_t msg_size);

/* Evaluates n candidates with one worker and one secret seed for the whole run, so that inputs,
 * references and baseline outputs are made once. Where the backend compiles without a device
 * (NVRTC), candidates compile in separate processes, up to jobs at a time (0: one per core),
 * ahead of their device runs, each with a time and memory limit; a compiler crash costs that
 * candidate a compile_error and nothing else. Returns nonzero only if no device answers. */
int temper_eval_batch(struct temper_worker *w, const struct temper_eval_request *reqs, int n, json_t *calibration,
                      int jobs, temper_eval_cb cb, void *user, char *msg, size_t msg_size);

/* Asks the worker for its device's description (an object). */
int temper_worker_device_info(struct temper_worker *w, json_t **info, char *msg, size_t msg_size);
/* The share of a CPU device's machine that other processes may use while it is calibrated before
 * the measure is taken again. */
#define TEMPER_CALIBRATE_BUSY_SHARE 0.25
/* Measures the device's copy bandwidth and FMA throughput: {"copy_gbs": .., "fma_gflops": ..}.
 * On a CPU device, "other_cpu_share" says how much of the machine other processes used meanwhile;
 * over TEMPER_CALIBRATE_BUSY_SHARE the device is measured up to twice more and the best of each
 * ceiling kept, with the quietest run's share. */
int temper_calibrate(struct temper_worker *w, json_t **ceilings, char *msg, size_t msg_size);
/* Lists every device of every backend: an array of device objects. */
int temper_list_devices(struct temper_worker *w, json_t **devices, char *msg, size_t msg_size);

/* ---- deep checks (CUDA; their modes, TEMPER_SANITIZE_*, are in temper/eval.h) ---- */

/* What the deep checks run on: the candidate as `temper eval` was given it. */
struct temper_deep_request {
    const char *self_exe;                  /* the temper binary to run under the tool */
    const char *path;                      /* the candidate */
    const char *device;                    /* --device, or NULL */
    const char *tasks_dir;                 /* --tasks, or NULL */
    const struct temper_knob_value *knobs; /* the knob values it was evaluated with (--set), or NULL */
    int nknobs;                            /* how many (0: its defaults) */
    double timeout_s;                      /* each tool run is killed after this */
    const char *lang;                      /* --lang: the candidate's language over its extension, or NULL */
};

/* Runs compute-sanitizer's memcheck, racecheck (warnings included), initcheck and synccheck on
 * the candidate at its check shapes: {"memcheck": {...temper_sanitizer_findings...}, ...}. Caller
 * decrefs. */
int temper_deep_sanitize(const struct temper_deep_request *req, json_t **out, char *msg, size_t msg_size);
/* What one compute-sanitizer run printed, read: {"errors": N, "warnings": W, "report": [first
 * lines of findings], "exit_code": E}, for racecheck also "hazards" and "hazard_instances"
 * (objects: "write_write", "read_write": reported access pairs, and the hazards they stand for),
 * plus "incomplete" when no summary line was seen or the run timed out. Errors and warnings are
 * summed over the summaries of every process ("ERROR SUMMARY: N errors", racecheck's "RACECHECK
 * SUMMARY: H hazards displayed (N errors, W warnings)"); without one, counted from the finding
 * lines. Caller decrefs. */
json_t *temper_sanitizer_findings(const char *output, int exit_code, int timed_out);
/* One line for people from a result's "sanitize" object: "memcheck 0 errors; racecheck 0 errors,
 * 2 warnings (write_write 2); ...", or "not run: WHY". */
void temper_sanitize_summary(json_t *sanitize, char *out, size_t out_size);
/* Runs Nsight Compute on the candidate's launches at its first bench shape, with the clocks as
 * they are: per kernel, duration, DRAM throughput, achieved occupancy, registers and local
 * memory traffic. Caller decrefs. */
int temper_deep_profile(const struct temper_deep_request *req, json_t **out, char *msg, size_t msg_size);

/* When r's device is not CUDA, sets its sanitize to {"error": "--sanitize is not supported on ...
 * device ..."} and returns 1; else 0. For every result of a --sanitize request, whatever its
 * verdict, so that the option is never ignored in silence. */
int temper_deep_sanitize_unsupported(struct temper_result *r);

/* Runs the deep checks asked for (sanitize: TEMPER_SANITIZE_*, compute-sanitizer; profile: Nsight
 * Compute) on a correct kernel and adds their findings to its result r (sanitize, profile); a
 * sanitizer error (in strict mode also a warning) makes the verdict incorrect. On a device that is
 * not CUDA, sanitize says it is not supported. req->path must name the candidate's file. */
void temper_deep_check_result(struct temper_deep_request *req, struct temper_result *r, int sanitize, int profile);
/* temper_deep_check_result on a result held as JSON (read leniently, written again in place in the
 * one form). */
void temper_deep_check(struct temper_deep_request *req, json_t *result, int sanitize, int profile);

/* Marks a result's timings people should not trust as they are (a spread over 10 %, a machine
 * whose load average exceeded its cores): each gets "warning", the result a "warnings" list
 * (result.c). */
struct temper_result;
void eval_timing_warnings(struct temper_result *r);

#endif
