/* kernel_internal.h: what temper does with a parsed candidate (temper/kernel.h), inside libtemper:
 * checking its requires, its compiler options, evaluating its launch expressions over a shape,
 * its knobs and the device's attributes, reading its kernels' parameter lists, the include rule
 * and the compiler-option allow-list, and the content-addressed build cache. */
#ifndef TEMPER_KERNEL_INTERNAL_H
#define TEMPER_KERNEL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "temper/kernel.h"
#include "temper/task.h"

/* ---- a candidate with its knobs: its requires, its options, its launch expressions ---- */

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

/* ---- Triton candidates (triton.c) ---- */

/* One parameter of a @triton.jit kernel, as its `def` line gives it. */
struct temper_triton_param {
    char name[TEMPER_NAME_MAX]; /* the parameter's name */
    int constexpr_;             /* 1: annotated tl.constexpr (a knob gives it; no argument is passed) */
};
/* Reads the parameter list of `def kernel(...)` under a jit decorator in source: up to max
 * parameters into params; returns their number, -1 when there is no such function, -2 when the
 * list is not one temper reads (*args, **kwargs, /, more than max). */
int temper_triton_params(const char *source, size_t len, const char *kernel, struct temper_triton_param *params,
                         int max);
/* Completes a parsed Triton candidate (block_given[l]: launch l had a block(...) clause): refuses
 * flags, block(...) and smem(...), knobs that are neither tl.constexpr parameters of a launched
 * kernel nor num_warps or num_stages, launch options temper does not pass, kernels that are not
 * there and argument counts that differ from the kernel's parameters that are not tl.constexpr;
 * sets each launch's block to 32 * num_warps threads. TEMPER_EPARSE with path:line. */
int temper_triton_finish(struct temper_candidate *cand, const int *block_given, char *msg, size_t msg_size);
/* The compile request of a Triton candidate with these knobs (canonical JSON, keys sorted: the
 * build cache's key covers it as it covers a CUDA candidate's options): each launched kernel's
 * parameters, the signature the task's element types give its arguments, its constexprs (the
 * knobs' text), num_warps and num_stages. */
int temper_triton_options(const struct temper_candidate *cand, const struct temper_task *task,
                          const struct temper_knobs *knobs, char *out, size_t out_size, char *msg, size_t msg_size);

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
