/* worker_triton.h: the compile process's Triton path (worker_triton.c). */
#ifndef TEMPER_WORKER_TRITON_H
#define TEMPER_WORKER_TRITON_H

#include <jansson.h>
#include <stddef.h>

/* What a Triton compile made. */
struct worker_triton_out {
    char *binary;      /* temper's container of cubins (malloc'ed), NULL on failure */
    size_t size;       /* its bytes */
    char version[64];  /* Triton's version, "" when it could not be imported */
    char verdict[32];  /* on failure: "compile_error", "invalid" or "unavailable" */
    char log[8192];    /* on failure: Triton's message, or why it could not run */
};

/* Compiles the request (source, options: the compile request of temper_triton_options, arch:
 * "sm_NN", python: the interpreter's absolute path; or probe: true for the version only) in this
 * process, after confining it for good; scratch is its only writable folder and toolkit the folder
 * holding the helper. 0 when built, TEMPER_ECOMPILE when Triton refused the candidate, another
 * error when it could not try. */
int worker_triton_compile(json_t *req, const char *toolkit, const char *scratch, struct worker_triton_out *out);

#endif
