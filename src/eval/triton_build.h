/* triton_build.h: the calling program's side of Triton candidates (triton_build.c). */
#ifndef TEMPER_TRITON_BUILD_H
#define TEMPER_TRITON_BUILD_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "temper/kernel.h"

/* The Python that compiles Triton candidates, as an absolute path: TEMPER_PYTHON (a path, or a
 * name looked up on the PATH), else python3 on the PATH. TEMPER_ENOTFOUND with a sentence when
 * there is none. */
int triton_python(char *out, size_t size, char *msg, size_t msg_size);
/* A compile process's request for a Triton candidate: its source, options (temper_triton_options'
 * compile request), the device's architecture ("sm_90") and the configured Python. */
json_t *triton_compile_request(const struct temper_candidate *cand, const char *options, const char *arch,
                               uint64_t mem_limit_bytes);
/* What a compile process's refusal of a Triton candidate means: the verdict (TEMPER_VERDICT_INVALID
 * for what temper cannot launch, else TEMPER_VERDICT_COMPILE_ERROR) and, in why, Triton's message
 * or why the compile could not finish. */
int triton_refusal(json_t *out, int status, int overdue, double timeout_s, char *why, size_t why_size);
/* Which Triton the configured Python has: "3.6.0 (/path/to/python3)" into version, from a compile
 * process confined as for a compile; otherwise an error with why (no Python, no triton module). */
int triton_probe(char *version, size_t size, char *msg, size_t msg_size);

#endif
