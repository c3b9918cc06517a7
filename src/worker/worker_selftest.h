/* worker_selftest.h: the attacks `temper-worker selftest` makes from inside the worker's
 * confinement (worker_selftest.c). */
#ifndef TEMPER_WORKER_SELFTEST_H
#define TEMPER_WORKER_SELFTEST_H

#include <jansson.h>

/* Tries each attack against targets (an object of paths and the parent's pid, from the calling
 * program) and returns {attack: "blocked: ..." | "ESCAPED: ..."} plus "working_folder" and
 * "environment_names". Caller decrefs. */
json_t *worker_selftest_run(json_t *targets);

#endif
