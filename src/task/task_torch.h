/* task_torch.h: tasks whose reference is a PyTorch program in Python (docs/task.md's "A PyTorch
 * reference"). A worker cannot run Python (its sandbox refuses exec of anything but the system's
 * programs, and it must never start a process a candidate could reach), so the reference's outputs
 * are computed by the calling program (src/eval/torch_reference.c) in a sandboxed interpreter,
 * from the inputs the worker drew and handed over; in the worker, temper_task_reference gives a
 * function that asks for them through the compute hook. */
#ifndef TEMPER_TASK_TORCH_H
#define TEMPER_TASK_TORCH_H

#include <stddef.h>

#include "temper/task.h"

/* 1 when the task's reference is a Python file (its name ends in ".py"). */
int temper_task_reference_is_python(const struct temper_task *task);

/* Computes a Python reference's outputs at one shape: out[i] has as many doubles as the i-th
 * output's shape gives, in[i] likewise for the i-th input, scalars[i] is the i-th scalar. 0, or a
 * TEMPER_E* code with msg saying what the reference did (the file, the line, the exception). */
typedef int (*temper_python_compute_fn)(const struct temper_task *task, double **out, const double **in,
                                        const long long *scalars, char *msg, size_t msg_size);

/* Where a Python reference's outputs come from in this process (worker_cache.c installs the cache
 * service's; NULL: none, and every call fails saying so). */
void temper_task_python_set_compute(temper_python_compute_fn fn);

/* After a call of the function temper_task_reference gave: 1 with the failure's message in msg when
 * the last call failed (the task's error), 0 otherwise. Clears it. */
int temper_task_reference_failed(char *msg, size_t msg_size);

/* The shape whose sizes are the scalar arguments' values (scalars[i] the i-th scalar). */
void temper_task_shape_of_scalars(const struct temper_task *task, const long long *scalars, struct temper_shape *shape);

#endif
