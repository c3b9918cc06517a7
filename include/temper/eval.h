/* eval.h: verdicts and what a session's client sets or reads of an evaluation: the limits on the
 * worker that runs it, the values of a request's sanitize, how a task's own error begins, and a
 * result printed for people. Results are JSON objects (jansson), the same ones `temper eval
 * --json` prints. The verdict pipeline itself (the worker process, comparisons, evaluation, deep
 * checks) is internal: src/eval/eval_internal.h. */
#ifndef TEMPER_EVAL_H
#define TEMPER_EVAL_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

/* Verdicts, in the order docs/result.md lists them. */
enum temper_verdict {
    TEMPER_VERDICT_CORRECT,
    TEMPER_VERDICT_INCORRECT,
    TEMPER_VERDICT_COMPILE_ERROR,
    TEMPER_VERDICT_RUNTIME_ERROR,
    TEMPER_VERDICT_TIMEOUT,
    TEMPER_VERDICT_INVALID,
};

const char *temper_verdict_name(enum temper_verdict v);
/* Parses a verdict name; -1 if unknown. */
int temper_verdict_parse(const char *name);

/* Limits the parent enforces on a worker (temper_session_config.limits). */
struct temper_limits {
    double launch_timeout_s;  /* a launch (or a wait for one) running longer is killed: timeout */
    double compile_timeout_s; /* a build running longer is killed: compile_error */
    double job_timeout_s;     /* a whole job running longer is killed: timeout */
    double reference_timeout_s; /* the task's C reference at one shape running longer is killed: the
                                 * task's error, not a verdict */
    uint64_t mem_limit_bytes; /* worker resident memory above this is killed: runtime_error */
};

/* Sets l to the defaults, what a session takes when its config's limits is NULL. */
void temper_limits_default(struct temper_limits *l);

/* How the message of a task's own error begins (its reference crashed or ran past its limit, or
 * its baseline does not build, is wrong at a check shape, failed, crashed or hung): such an error
 * is the task's, never the candidate's verdict, and a tune ends at the first. */
#define TEMPER_TASK_ERROR_PREFIX "task error: "

/* How --sanitize judges (temper_session_request.sanitize): compute-sanitizer's deep checks, on a
 * CUDA device. */
#define TEMPER_SANITIZE_REPORT 1 /* report every tool's errors and warnings; errors fail */
#define TEMPER_SANITIZE_STRICT 2 /* --sanitize=strict: any hazard, warnings included, fails */

/* Prints a result for people. */
void temper_eval_print(FILE *out, json_t *result);

#endif
