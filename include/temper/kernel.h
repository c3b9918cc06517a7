/* kernel.h: the candidate format (a .cu or .cl file with @temper directives): its languages,
 * reading a candidate, and its knob assignments. What a build does with a candidate (launch
 * expressions, the include and compiler-option rules, the build cache) is internal:
 * src/kernel/kernel_internal.h. */
#ifndef TEMPER_KERNEL_H
#define TEMPER_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "temper/task.h"

#define TEMPER_MAX_PARAMS 24
#define TEMPER_MAX_VALUES 64
#define TEMPER_MAX_LAUNCHES 8
#define TEMPER_MAX_REQUIRES 16
#define TEMPER_MAX_SCRATCH 8
#define TEMPER_MAX_LAUNCH_ARGS 24
#define TEMPER_SOURCE_MAX (1u << 20)
/* A candidate file (or standard input) is read up to this many bytes, so that one over
 * TEMPER_SOURCE_MAX is judged `invalid` (hashed and recorded whole) like any other bad source;
 * a larger one is not read at all (it is not evaluated: "larger than ... bytes"). */
#define TEMPER_SOURCE_READ_MAX (16u << 20)

enum temper_lang {
    TEMPER_LANG_CUDA,   /* .cu: CUDA C++, compiled with NVRTC */
    TEMPER_LANG_OPENCL, /* .cl: OpenCL C */
    TEMPER_LANG_TRITON, /* .py: @triton.jit kernels, compiled by Triton for a CUDA device */
};

/* A knob: `@temper param NAME v1 v2 ...`. */
struct temper_param {
    char name[TEMPER_NAME_MAX];                   /* passed as -DNAME=value */
    int nvalues;                                  /* number of values */
    char values[TEMPER_MAX_VALUES][TEMPER_NAME_MAX]; /* the values, as written */
    int line;                                     /* line of the directive */
};

/* What temper read from the kernel's own parameter list in the source, for one position: how an
 * integer expression in args(...) is passed there. */
enum temper_param_kind {
    TEMPER_PARAM_UNKNOWN = 0, /* not found in the source, or a type temper does not know (a typedef) */
    TEMPER_PARAM_I32,         /* int, int32_t, signed */
    TEMPER_PARAM_U32,         /* unsigned, unsigned int, uint32_t, uint */
    TEMPER_PARAM_I64,         /* long, long long, int64_t, ptrdiff_t, intptr_t, ssize_t */
    TEMPER_PARAM_U64,         /* unsigned long (long), uint64_t, size_t, uintptr_t, ulong */
    TEMPER_PARAM_OTHER,       /* a pointer, a float, a short or a char: no integer expression goes there */
    TEMPER_PARAM_GRID_CONSTANT, /* `const __grid_constant__` of a type temper does not know (a tensor
                                 * map's struct): only a tensormap(...) goes there */
};

/* One launch: `@temper launch KERNEL grid(...) block(...) [smem(...)] [args(...)] [when(...)]`. */
struct temper_launch {
    char kernel[128];                               /* the kernel's name */
    int grid_n;                                     /* grid dimensions given (1 to 3) */
    char grid[3][TEMPER_EXPR_MAX];                  /* blocks per dimension */
    int block_n;                                    /* block dimensions given (1 to 3) */
    char block[3][TEMPER_EXPR_MAX];                 /* threads per block per dimension */
    char smem[TEMPER_EXPR_MAX];                     /* dynamic shared memory bytes, "" for none */
    char when[TEMPER_EXPR_MAX];                     /* the launch group's condition, "" for none */
    int nargs;                                      /* -1: the task's argument order */
    char args[TEMPER_MAX_LAUNCH_ARGS][TEMPER_NAME_MAX]; /* task arguments, scratch buffers, knobs or
                                                       * integer expressions */
    enum temper_param_kind arg_kind[TEMPER_MAX_LAUNCH_ARGS]; /* the kernel's parameter at each
                                                               * position, as read from the source */
    int line;                                       /* line of the directive */
    int kernel_nparams;                             /* the kernel's parameter count as read from the
                                                     * source, -1 when not certain */
};

/* A scratch buffer: `@temper scratch NAME DTYPE COUNT`. */
struct temper_scratch {
    char name[TEMPER_NAME_MAX];  /* as named in args(...) */
    enum temper_dtype dtype;     /* element type */
    char count[TEMPER_EXPR_MAX]; /* elements, an expression over sizes and knobs */
    int line;                    /* line of the directive */
};

/* A parsed candidate. */
struct temper_candidate {
    char path[TEMPER_PATH_MAX];        /* where it came from */
    enum temper_lang lang;             /* as given, else from the file's extension */
    char *source;                      /* the whole file; owned */
    size_t source_len;                 /* its length */
    uint64_t source_hash;              /* XXH3 of the source */
    char task[TEMPER_NAME_MAX];        /* `@temper task NAME` */
    int task_line;                     /* the line of that directive */
    int nparams;                       /* knobs */
    struct temper_param params[TEMPER_MAX_PARAMS];
    int nrequires;                     /* constraints */
    char requires[TEMPER_MAX_REQUIRES][TEMPER_EXPR_MAX];
    int require_lines[TEMPER_MAX_REQUIRES]; /* their lines */
    int nlaunches;                     /* launches, run in order */
    struct temper_launch launches[TEMPER_MAX_LAUNCHES];
    int nscratch;                      /* scratch buffers */
    struct temper_scratch scratch[TEMPER_MAX_SCRATCH];
    char flags[1024];                  /* compiler options from `@temper flags` lines, joined */
    int block_given[TEMPER_MAX_LAUNCHES]; /* 1: the launch line had block(...) (a Triton launch may not) */
};

/* A value for each knob. */
struct temper_knobs {
    int n;                                          /* number of knobs set */
    char names[TEMPER_MAX_PARAMS][TEMPER_NAME_MAX]; /* knob names */
    char values[TEMPER_MAX_PARAMS][TEMPER_NAME_MAX]; /* their values */
};

/* "cuda" -> TEMPER_LANG_CUDA, "opencl" -> TEMPER_LANG_OPENCL, "triton" -> TEMPER_LANG_TRITON; -1 for
 * anything else. */
int temper_lang_parse(const char *name);
/* "cuda", "opencl" or "triton"; a static string. */
const char *temper_lang_name(enum temper_lang lang);

/* Parses a candidate from len bytes of source (any bytes but NUL; not NUL-terminated) in the
 * language named by lang ("cuda", "opencl" or "triton"), or, with lang NULL, by the path's
 * extension (.cu, .cl, .py). path names the candidate in messages (NULL: "<source>"). Every error is TEMPER_EPARSE
 * (the candidate is invalid) but TEMPER_ENOMEM, with a message naming path:line (or the byte
 * offset of a NUL byte): malformed or over-long directives, a source over TEMPER_SOURCE_MAX, a
 * disallowed include or compiler option (docs/candidate.md). cand->source is a NUL-terminated
 * copy; free with temper_candidate_free (also safe after a failure, which frees it already). */
int temper_candidate_parse_lang(const char *path, const char *lang, const char *source, size_t len,
                                struct temper_candidate *cand, char *msg, size_t msg_size);
/* temper_candidate_parse_lang with the language from the path's extension. */
int temper_candidate_parse(const char *path, const char *source, size_t len, struct temper_candidate *cand,
                           char *msg, size_t msg_size);
/* Reads and parses a candidate file. */
int temper_candidate_load(const char *path, struct temper_candidate *cand, char *msg, size_t msg_size);
void temper_candidate_free(struct temper_candidate *cand);

/* Sets every knob to its first value. */
void temper_knobs_default(const struct temper_candidate *cand, struct temper_knobs *knobs);
/* Applies "NAME=VALUE"; the knob must exist; an integer knob takes any integer. */
int temper_knobs_set(const struct temper_candidate *cand, struct temper_knobs *knobs, const char *assignment,
                     char *msg, size_t msg_size);
/* The value of a knob as an integer, if it is one. */
int temper_knobs_int(const struct temper_knobs *knobs, const char *name, size_t len, int64_t *value);

#endif
