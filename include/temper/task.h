/* task.h: the task spec (tasks/L<level>/<name>/task.json), its shapes and size expressions,
 * input generation, and the trusted C reference compiled at run time and loaded with dlopen. */
#ifndef TEMPER_TASK_H
#define TEMPER_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "temper/error.h"

#define TEMPER_MAX_ARGS 16
#define TEMPER_MAX_DIMS 6
#define TEMPER_MAX_SIZES 12
#define TEMPER_MAX_SHAPES 16
#define TEMPER_NAME_MAX 64
#define TEMPER_EXPR_MAX 256
#define TEMPER_PATH_MAX 4096
#define TEMPER_MAX_INIT 4

/* The element type of an argument, named in task.json "f32", "f16", "bf16", "i8", "u8", "i32", "i64". */
enum temper_dtype {
    TEMPER_DTYPE_F32,
    TEMPER_DTYPE_F16,
    TEMPER_DTYPE_BF16,
    TEMPER_DTYPE_I8,
    TEMPER_DTYPE_U8,
    TEMPER_DTYPE_I32,
    TEMPER_DTYPE_I64,
    TEMPER_DTYPE_COUNT
};

enum temper_arg_role {
    TEMPER_ROLE_OUTPUT,
    TEMPER_ROLE_INPUT,
    TEMPER_ROLE_SCALAR,
};

enum temper_init_kind {
    TEMPER_INIT_NORMAL,  /* normal(mean, std) */
    TEMPER_INIT_UNIFORM, /* uniform(lo, hi), lo inclusive, hi exclusive */
    TEMPER_INIT_RANDINT, /* randint(lo, hi), both inclusive */
};

/* One kernel argument of a task. */
struct temper_task_arg {
    char name[TEMPER_NAME_MAX];              /* as named in kernels' args(...) */
    enum temper_arg_role role;               /* output, input or scalar */
    enum temper_dtype dtype;                 /* element type (scalars: i32 or i64) */
    int ndim;                                /* number of dimensions; 0 for scalars */
    char shape[TEMPER_MAX_DIMS][TEMPER_EXPR_MAX]; /* each dimension, an expression over the sizes */
    enum temper_init_kind init;              /* how inputs are drawn */
    double init_a;                           /* mean, or low bound */
    double init_b;                           /* standard deviation, or high bound */
    int64_t max;                             /* scalars: the largest value a shape may give it (its
                                              * dtype's maximum unless task.json says less) */
    char large_exempt[256];                  /* scalars: why no check shape takes it past 65,536,
                                              * "" when one does (see docs/task.md) */
};

/* Values for the task's size parameters, e.g. {R: 7, C: 1000}, and optionally inputs drawn
 * from another distribution at this shape ("init": {"x": "normal(0,1000)"}), for adversarial
 * inputs where the math has them. */
struct temper_shape {
    int n;                                         /* number of sizes */
    char names[TEMPER_MAX_SIZES][TEMPER_NAME_MAX]; /* size names */
    int64_t values[TEMPER_MAX_SIZES];              /* their values */
    int ninit;                                     /* inputs drawn differently here */
    char init_arg[TEMPER_MAX_INIT][TEMPER_NAME_MAX]; /* which input */
    char init[TEMPER_MAX_INIT][64];                /* its distribution, as args[].init reads */
};

/* A loaded task. Invariant: outputs come first, then inputs, then scalars. */
struct temper_task {
    char dir[TEMPER_PATH_MAX];        /* the folder holding task.json */
    char name[TEMPER_NAME_MAX];       /* the task's name */
    int level;                        /* 1, 2 or 3 */
    char summary[512];                /* one line for people */
    int nargs;                        /* number of arguments */
    struct temper_task_arg args[TEMPER_MAX_ARGS]; /* in kernel order */
    char flops[TEMPER_EXPR_MAX];      /* floating-point operations, an expression */
    char bytes[TEMPER_EXPR_MAX];      /* bytes that must move, an expression */
    double atol;                      /* absolute tolerance */
    double rtol;                      /* relative tolerance */
    int ncheck;                       /* number of check shapes */
    struct temper_shape check[TEMPER_MAX_SHAPES]; /* shapes checked against the C reference */
    int nbench_gpu;                   /* bench shapes for GPUs */
    struct temper_shape bench_gpu[TEMPER_MAX_SHAPES];
    int nbench_cpu;                   /* bench shapes for CPUs (OpenCL on a CPU) */
    struct temper_shape bench_cpu[TEMPER_MAX_SHAPES];
    char reference[TEMPER_PATH_MAX];  /* path of reference.c */
    char baseline_cuda[TEMPER_PATH_MAX];   /* path of the naive CUDA baseline, "" if none */
    char baseline_opencl[TEMPER_PATH_MAX]; /* path of the naive OpenCL baseline, "" if none */
    char expert_cuda[64];             /* a vendor-library expert baseline ("cublas_sgemm"), "" if none */
    char compute_ceiling[32];         /* which measured ceiling bounds its arithmetic: "fma_gflops"
                                       * (default), "tensor_bf16_gflops" or "tensor_int8" */
};

/* The check-shape value every size parameter must pass in some check shape (docs/task.md): past
 * CUDA's grid limit in y and z (65,535), and past any small-shape shortcut. */
#define TEMPER_LARGE_SIZE 65536

/* Loads dir/task.json (dir may also be the task.json path itself) and validates it: the name is
 * [a-z0-9_]+ and is its folder's name, every file it names is a plain name in its folder, every
 * expression evaluates at every shape, and every scalar's value fits its dtype and its max.
 * Every error names the file and the field. */
int temper_task_load(const char *dir, struct temper_task *task, char *msg, size_t msg_size);

/* 1 if name is a valid task name: 1 to TEMPER_NAME_MAX - 1 characters of [a-z0-9_]. */
int temper_task_name_ok(const char *name);

/* The task search path: tasks_dir if given and not empty, else $TEMPER_TASKS, else the installed
 * data folder (TEMPER_TASKS_DATADIR, set at build time; temper_task_each and temper_task_find
 * read it as the running program's ../share/temper/tasks when that exists, for an install made
 * under another prefix or moved). A search path is one folder or several separated by ':'.
 * Borrowed: tasks_dir itself, the environment's string or a constant. */
const char *temper_tasks_root(const char *tasks_dir);

/* The hash of the task's content: task.json, the reference and the baselines, as 16 hex
 * digits in hex. Results are stored under it, so that a task changed in any of these never
 * reuses a result judged against the old one. Fails naming a file that cannot be read. */
int temper_task_content_hash(const struct temper_task *task, char hex[17], char *msg, size_t msg_size);
/* Finds the task named name on the search path root, loads it and hashes its content: what results
 * of it are stored under now. */
int temper_task_content_hash_named(const char *root, const char *name, char hex[17], char *msg, size_t msg_size);

/* Finds a task by name in a search path (the first folder F of it holding F/L<level>/<name>/
 * task.json wins); writes its folder to out. */
int temper_task_find(const char *root, const char *name, char *out, size_t out_size, char *msg, size_t msg_size);

/* Calls fn with each task folder in a search path: folder by folder in the path's order, within
 * one sorted by level then name, leaving out a task whose name came earlier (shadowed: it is never
 * the one temper_task_find gives); stops on nonzero and returns it. TEMPER_ENOTFOUND if no folder of
 * the path can be read. */
int temper_task_each(const char *root, int (*fn)(void *user, const char *dir), void *user);

/* Evaluates an expression over a shape's sizes. */
int temper_shape_eval(const struct temper_shape *shape, const char *expr, int64_t *value, char *msg,
                      size_t msg_size);
/* Formats a shape as "R=7 C=1000". */
void temper_shape_format(const struct temper_shape *shape, char *out, size_t out_size);
/* The number of elements of an array argument at a shape (1 for a scalar). */
int temper_task_arg_elems(const struct temper_task *task, int arg, const struct temper_shape *shape,
                          int64_t *elems, char *msg, size_t msg_size);
/* Fills an input argument's host array (elems of its dtype) with values drawn from its init
 * distribution; the same seed always gives the same values. */
void temper_task_fill_input(const struct temper_task *task, int arg, uint64_t seed, void *host, int64_t elems);
/* The same, with the shape's own distribution for this input where it names one. */
void temper_task_fill_input_at(const struct temper_task *task, int arg, const struct temper_shape *shape,
                               uint64_t seed, void *host, int64_t elems);

/* The argument as drawn at shape: the task's own, with the shape's distribution for it where the
 * shape names one (shape may be NULL). */
struct temper_task_arg temper_task_input_at(const struct temper_task *task, int arg, const struct temper_shape *shape);

/* The trusted reference: void reference(double **out, const double **in, const long long *scalars) */
typedef void (*temper_reference_fn)(double **out, const double **in, const long long *scalars);

/* Compiles the task's reference.c with the system C compiler ($CC, else cc) into the build cache,
 * once per source and compiler, sealed (seal.h), and writes the shared object's path into so
 * (so_size bytes). A cached one whose seal does not verify is built again. TEMPER_ECOMPILE with the
 * compiler's words when it does not compile. Never called in a worker. */
int temper_task_reference_build(const struct temper_task *task, char *so, size_t so_size, char *msg,
                                size_t msg_size);
/* temper_task_reference_build, then the shared object's bytes, checked against their seal, in
 * *data (caller frees). */
int temper_task_reference_bytes(const struct temper_task *task, void **data, size_t *size, char *msg,
                                size_t msg_size);
/* Loads the reference: its checked bytes (from temper_task_reference_bytes, or in a worker from
 * the calling program) are copied into a private file and loaded from there, so nothing another
 * process writes between the check and the load is ever loaded. The handle stays loaded for the
 * life of the process. */
int temper_task_reference(const struct temper_task *task, temper_reference_fn *fn, char *msg, size_t msg_size);

/* How a worker gets reference bytes from the calling program (worker_cache.c installs it); NULL
 * fetch restores the local build. */
struct temper_reference_remote {
    int (*fetch)(void *user, const struct temper_task *task, void **data, size_t *size, char *msg, size_t msg_size);
    void *user; /* passed to fetch */
};
void temper_task_reference_set_remote(const struct temper_reference_remote *remote);

const char *temper_role_name(enum temper_arg_role role);

#endif
