/* torch_reference.h: the calling program's side of tasks whose reference is a PyTorch program
 * (task_torch.h, docs/task.md): it runs python/temper_torch.py in a sandboxed interpreter
 * (`temper-worker python`) to compute a reference's outputs from the inputs a worker drew, caching
 * them, and to import a KernelBench problem. */
#ifndef TEMPER_TORCH_REFERENCE_H
#define TEMPER_TORCH_REFERENCE_H

#include <stddef.h>

#include <jansson.h>

#include "temper/task.h"

/* The outputs of task's Python reference at the shape the scalars give, for the inputs in
 * `inputs` (every input argument's doubles, in order, back to back): *out gets every output's
 * doubles back to back (caller frees). Cached under the task's content, the scalars and the
 * inputs' bytes (so under the shape and the seed that drew them). The interpreter runs at most
 * timeout_s; a fault in the reference (an exception, a crash, a hang) is TEMPER_EINVALID with msg
 * naming the file, the line and the exception, or the signal or the limit. */
int torch_reference_compute(const struct temper_task *task, const long long *scalars, const void *inputs,
                            size_t inputs_len, double timeout_s, void **out, size_t *out_len, char *msg,
                            size_t msg_size);

/* Reads a problem in the sandboxed interpreter: kind "kernelbench" (a KernelBench problem, .py) or
 * "flashinfer" (a FlashInfer-Bench definition, .json). *result gets {"task": task.json's content}
 * (and for a definition "reference_text", the program made around its reference) or
 * {"refused": why} (caller decrefs). An error when the interpreter could not run it at all. */
int torch_import(const char *kind, const char *file, int level, json_t **result, char *msg, size_t msg_size);

#endif
