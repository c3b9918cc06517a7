/* kernel.h: the candidate format (a .cu or .cl file with @temper directives), knob assignments,
 * compiler options, and the content-addressed build cache. */
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
};

/* A value for each knob. */
struct temper_knobs {
    int n;                                          /* number of knobs set */
    char names[TEMPER_MAX_PARAMS][TEMPER_NAME_MAX]; /* knob names */
    char values[TEMPER_MAX_PARAMS][TEMPER_NAME_MAX]; /* their values */
};

/* "cuda" -> TEMPER_LANG_CUDA, "opencl" -> TEMPER_LANG_OPENCL; -1 for anything else. */
int temper_lang_parse(const char *name);
/* "cuda" or "opencl"; a static string. */
const char *temper_lang_name(enum temper_lang lang);

/* Parses a candidate from len bytes of source (any bytes but NUL; not NUL-terminated) in the
 * language named by lang ("cuda" or "opencl"), or, with lang NULL, by the path's extension (.cu,
 * .cl). path names the candidate in messages (NULL: "<source>"). Every error is TEMPER_EPARSE
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
/* Checks every `require` against the knobs; the message names the failing line. */
int temper_candidate_check(const struct temper_candidate *cand, const struct temper_knobs *knobs, char *msg,
                           size_t msg_size);
/* Compiler options: -DNAME=value for each knob, then the flags (with $NAME replaced by knob
 * values); options the allow-list refuses (temper_compiler_options_check) are TEMPER_EPARSE. */
int temper_candidate_options(const struct temper_candidate *cand, const struct temper_knobs *knobs, char *out,
                             size_t out_size, char *msg, size_t msg_size);
/* Evaluates an expression over a shape's sizes and the knobs. */
int temper_launch_eval(const struct temper_shape *shape, const struct temper_knobs *knobs, const char *expr,
                       int64_t *value, char *msg, size_t msg_size);

/* The device attributes expressions may name (docs/candidate.md), filled from the device query. */
#define TEMPER_DEV_ATTRS 9
struct temper_dev_attrs {
    const char *names[TEMPER_DEV_ATTRS]; /* "SMS", "SMEM_PER_BLOCK", ...: static strings */
    int64_t values[TEMPER_DEV_ATTRS];    /* their values on the device */
};
struct temper_device_info;
/* Fills attrs from a device's description. */
void temper_dev_attrs_fill(const struct temper_device_info *info, struct temper_dev_attrs *attrs);
/* temper_launch_eval that also sees the device attributes (attrs may be NULL: none); a size wins
 * over a knob of the same name and both over an attribute. */
int temper_launch_eval_dev(const struct temper_shape *shape, const struct temper_knobs *knobs,
                           const struct temper_dev_attrs *attrs, const char *expr, int64_t *value, char *msg,
                           size_t msg_size);
/* 1 when an args(...) entry is a plain name (letters, digits and '_', not starting with a digit),
 * 0 when it is an expression. */
int temper_launch_arg_is_name(const char *arg);
/* An args(...) entry `tensormap(NAME, SWIZZLE, BOX0[, BOX1 ...])`: a TMA tensor map over task
 * argument NAME (CUDA), its swizzle span and box (elements per dimension, innermost first) as
 * expressions. */
struct temper_tensormap_arg {
    char name[TEMPER_NAME_MAX];                /* the task argument */
    char swizzle[TEMPER_NAME_MAX];             /* swizzle span in bytes: 0, 32, 64 or 128 */
    int rank;                                  /* box expressions given, 1 to 5 */
    char box[5][TEMPER_NAME_MAX];              /* elements per dimension, innermost first */
};
/* Splits an args(...) entry of the form tensormap(...) into out: 0 when arg has that form, 1 when
 * it does not begin with `tensormap(`, TEMPER_EPARSE (msg says why) when it does but is malformed. */
int temper_launch_arg_tensormap(const char *arg, struct temper_tensormap_arg *out, char *msg, size_t msg_size);
/* The kind of each parameter of kernel `kernel` as declared in source (comments skipped): the
 * first declaration or definition of that name marked __global__ (CUDA) or __kernel / kernel
 * (OpenCL). Fills up to max kinds; returns the number of parameters, or -1 when the kernel's
 * parameter list is not found. */
int temper_kernel_param_kinds(const char *source, size_t len, const char *kernel, enum temper_param_kind *kinds,
                              int max);
/* temper_kernel_param_kinds that also says whether the count is the compiler's too (*certain 1):
 * 0 when the list is not found, holds a preprocessor line, has an entry that is not at least a
 * type and a name (a macro may stand for several parameters there), or another declaration of
 * the kernel (a branch of an #if) has another count or list. */
int temper_kernel_params(const char *source, size_t len, const char *kernel, enum temper_param_kind *kinds, int max,
                         int *certain);

/* ---- what a candidate may reach: the include rule and the compiler-option allow-list ---- */

/* The headers a candidate in lang may include, NULL-terminated; static. None for OpenCL. */
const char *const *temper_allowed_headers(enum temper_lang lang);
/* The toolkit folders ("cub/", ...) under which a candidate in lang may include any header by a
 * relative path in angle brackets (no "..", no part starting with '.'), NULL-terminated; static.
 * None for OpenCL. */
const char *const *temper_allowed_header_folders(enum temper_lang lang);
/* Scans len bytes of source for every preprocessor directive any compiler could see (after
 * splicing lines, through comments, digraphs) and refuses, with TEMPER_EPARSE and a message naming
 * path:line, an include of anything but an allowed header (by name, not a macro or path),
 * #include_next, #import, #embed, #line, trigraphs and __has_include / __has_embed. */
int temper_candidate_check_includes(enum temper_lang lang, const char *path, const char *source, size_t len,
                                    char *msg, size_t msg_size);
/* Checks compiler options (a NUL-terminated string, split at spaces) against the allow-list of
 * lang: -D/-U, and options that take no file (CUDA: --use_fast_math, --maxrregcount=N, -Xptxas
 * -dlcm=cg, ...; OpenCL: -cl-*, -w, -Werror, -g, -O0..-O3); quotes, backslashes and non-ASCII bytes are
 * refused. TEMPER_EPARSE with a message naming the option. For every option string a stranger can
 * influence, such as a request's extra flags. */
int temper_compiler_options_check(enum temper_lang lang, const char *options, char *msg, size_t msg_size);

/* ---- the build cache ---- */

/* The name every OpenCL build defines inline assembly's keywords to, after the candidate's own
 * options: a keyword that token pasting built (the word rule refuses every one it can see) becomes
 * this undeclared name, and the build fails (docs/candidate.md). */
#define TEMPER_NO_ASM "temper_inline_assembly_is_not_allowed"
/* The options a build of lang is given for the candidate's options: for OpenCL, followed by the
 * defines of TEMPER_NO_ASM. Every build and every build key uses these, so that a binary a compile
 * process built is the one a worker looks up. TEMPER_ECOMPILE when they do not fit out. */
int temper_build_options(enum temper_lang lang, const char *options, char *out, size_t out_size, char *msg,
                         size_t msg_size);

/* The cache key: a hash of the source, the options, the compiler's version and the target. */
uint64_t temper_build_key(const char *source, size_t len, const char *options, const char *compiler_version,
                          const char *target);
/* Entries are sealed (seal.h): written only by a process that runs no candidate, and checked
 * when read; an entry whose seal does not verify is a miss (and is built again). */
/* Looks a binary up; on a hit *data is malloc'ed (caller frees). TEMPER_ENOTFOUND on a miss. In a
 * worker (temper_build_cache_set_remote), the lookup is the calling program's. */
int temper_build_cache_get(uint64_t key, void **data, size_t *size);
/* 1 if the cache holds a binary for key whose seal verifies. */
int temper_build_cache_has(uint64_t key);
/* Stores a binary atomically (temporary name, then rename), sealed, so concurrent processes share
 * it. In a worker it stores nothing: a process that runs candidates writes no cache. */
int temper_build_cache_put(uint64_t key, const void *data, size_t size);
/* Says that key is about to be built or loaded from source with options, for the device of
 * backend ("cuda", "opencl"), name, arch and compiler version that the key was computed for (a
 * worker tells the calling program what it built, so that a process that runs no candidate builds
 * it for the cache); does nothing outside a worker. */
void temper_build_cache_note(uint64_t key, const char *source, size_t len, const char *options, const char *backend,
                             const char *name, const char *arch, const char *compiler);
/* The sealed metadata stored beside an OpenCL entry: which specialised work-group functions its
 * binary holds ("256-1-1-goffs0-smallgrid", as PoCL names them), comma-separated, into out ("" if
 * none or no metadata). */
void temper_build_cache_specs(uint64_t key, char *out, size_t out_size);
/* Stores key's binary and its specialisations (NULL: none) together; what
 * temper_build_cache_put does, plus the metadata. data NULL: the metadata only. */
int temper_build_cache_put_specs(uint64_t key, const void *data, size_t size, const char *specs);

/* How a worker reaches the calling program's cache (worker_cache.c installs these): fetch gets
 * key's binary (and its specialisations into specs, specs_size bytes) or TEMPER_ENOTFOUND; note
 * records what the worker builds. */
struct temper_build_cache_remote {
    int (*fetch)(void *user, uint64_t key, void **data, size_t *size, char *specs, size_t specs_size);
    void (*note)(void *user, uint64_t key, const char *source, size_t len, const char *options, const char *backend,
                 const char *name, const char *arch, const char *compiler);
    void *user; /* passed to both */
};
/* Routes this process's build cache through remote (a worker's); NULL restores the files. */
void temper_build_cache_set_remote(const struct temper_build_cache_remote *remote);

#endif
