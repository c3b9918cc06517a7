/* util.h: strings, growable buffers, integer expressions, hashing, dtypes, random numbers,
 * files, clocks and child processes: the pieces every other module uses. */
#ifndef TEMPER_UTIL_H
#define TEMPER_UTIL_H

#include <jansson.h>
#include <spawn.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "temper/error.h"
#include "temper/task.h" /* enum temper_dtype: the element type of a task's arguments */

/* ---- growable buffer with a hard maximum ---- */

/* A byte buffer that grows up to max_bytes and refuses beyond it; always NUL-terminated. */
struct temper_buf {
    char *data;       /* owned; NULL until the first append */
    size_t len;       /* bytes used, not counting the terminating NUL */
    size_t cap;       /* bytes allocated */
    size_t max_bytes; /* appends that would pass this fail with TEMPER_ERANGE */
};

void temper_buf_init(struct temper_buf *b, size_t max_bytes);
void temper_buf_free(struct temper_buf *b);
int temper_buf_append(struct temper_buf *b, const void *data, size_t n);
int temper_buf_printf(struct temper_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Copies at most max_shown of the n bytes of text into out for a message: printable ASCII as is,
 * any other byte as \xNN, "..." when cut, so that a message never carries bytes a terminal or
 * JSON cannot take. out is always terminated. */
void temper_show_bytes(const char *text, size_t n, size_t max_shown, char *out, size_t out_size);

/* ---- files and paths ---- */

/* Reads a whole file into a NUL-terminated string; caller frees *out. Files over max_bytes fail. */
int temper_read_file(const char *path, size_t max_bytes, char **out, size_t *len, char *msg, size_t msg_size);
/* Writes data to path atomically (a temporary name, then rename), creating parent folders. */
int temper_write_file_atomic(const char *path, const void *data, size_t n, char *msg, size_t msg_size);
/* mkdir -p. */
int temper_mkdirs(const char *path);
/* Writes the folder temper keeps its store in ($TEMPER_HOME, else $XDG_DATA_HOME/temper, else
 * ~/.local/share/temper) into out and returns out (4096 bytes are enough). */
const char *temper_home_dir(char *out, size_t out_size);
/* Writes the build cache folder ($TEMPER_CACHE, else $XDG_CACHE_HOME/temper, else
 * ~/.cache/temper) into out and returns out. */
const char *temper_cache_dir(char *out, size_t out_size);
/* Copies the folder part of path (without the trailing slash) into out; "." if none. */
void temper_dirname(const char *path, char *out, size_t out_size);

/* ---- JSON ---- */

/* 1 if v is an integer in JSON's sense (1 and 1.0 alike) that fits int64, with its value in *out;
 * 0 for anything else (a fraction, a string, NULL). */
int temper_json_int64(const json_t *v, int64_t *out);
/* 1 if every key of obj is in the NULL-terminated list known; else 0, with *bad the first key that
 * is not (borrowed from obj). */
int temper_json_keys_known(json_t *obj, const char *const *known, const char **bad);

/* ---- clocks ---- */

/* Monotonic nanoseconds. */
uint64_t temper_now_ns(void);
double temper_now_s(void);

/* ---- hashing (xxHash XXH3 64-bit) ---- */

uint64_t temper_hash64(const void *data, size_t n, uint64_t seed);
/* Formats a 64-bit hash as 16 hex digits plus NUL into out (17 bytes). */
void temper_hash_hex(uint64_t h, char out[17]);
/* A hash of the code in a compiled binary: for a 64-bit ELF image (a CUDA cubin), every section
 * but notes, by name, type and contents, so two builds that differ only in what the compiler
 * records about itself (NVRTC notes its options) hash alike; any other binary, whole. */
uint64_t temper_code_hash(const void *binary, size_t size);

/* ---- integer expressions ---- */

/* Looks up a variable; returns 0 and sets *value if known, nonzero if not. */
typedef int (*temper_expr_lookup)(void *user, const char *name, size_t len, int64_t *value);

/* Evaluates an integer expression: + - * / %, comparisons, && || !, unary minus, parentheses,
 * min(a,b) max(a,b) ceil_div(a,b). Division by zero and unknown names fail with a message that
 * gives the column. */
int temper_expr_eval(const char *expr, temper_expr_lookup lookup, void *user, int64_t *value, char *msg,
                     size_t msg_size);

/* ---- dtypes ---- */

/* Parses "f32", "bf16", ...; returns -1 if unknown. */
int temper_dtype_parse(const char *name);
const char *temper_dtype_name(enum temper_dtype t);
size_t temper_dtype_size(enum temper_dtype t);
int temper_dtype_is_float(enum temper_dtype t);
/* Element i of a typed array as a double (exact for every dtype here but large i64). */
double temper_dtype_load(enum temper_dtype t, const void *base, size_t i);
/* Stores v into element i, rounding to nearest even and saturating integers. */
void temper_dtype_store(enum temper_dtype t, void *base, size_t i, double v);
float temper_half_to_float(uint16_t h);
uint16_t temper_float_to_half(float f);
float temper_bf16_to_float(uint16_t h);
uint16_t temper_float_to_bf16(float f);

/* ---- random numbers (xoshiro256**, seeded with splitmix64) ---- */

/* splitmix64's step and finalizer: z + the golden-ratio constant, mixed; a bijection of 64-bit
 * words whose outputs look independent (counter-based draws: temper_mix64(seed ^ i)). */
uint64_t temper_mix64(uint64_t z);

struct temper_rng {
    uint64_t s[4]; /* generator state */
};

void temper_rng_seed(struct temper_rng *r, uint64_t seed);
uint64_t temper_rng_next(struct temper_rng *r);
/* Uniform in [0, 1). */
double temper_rng_uniform(struct temper_rng *r);
/* Standard normal (the ziggurat method). */
double temper_rng_normal(struct temper_rng *r);
/* A seed nobody can predict (getrandom). */
uint64_t temper_secret_seed(void);

/* ---- child processes ---- */

/* Result of running a command to completion. */
struct temper_proc_result {
    int exit_code;  /* exit status, or -1 if killed by a signal */
    int signal;     /* the signal that ended it, or 0 */
    int timed_out;  /* 1 if it was killed for running past its limit */
    char *output;   /* stdout and stderr together, NUL-terminated, truncated at the limit; owned */
};

/* Sets up attr for a child that must not inherit what the caller does with signals: no signal
 * blocked, SIGPIPE at its default, and a process group of its own (so that Ctrl-C at the terminal
 * reaches the program, not its children, and a time limit can kill a child with what it started).
 * Caller destroys attr. */
void temper_spawnattr_init(posix_spawnattr_t *attr);

/* Calls fn with each folder of a search path (folders separated by ':'; empty entries and ones
 * too long for a path are skipped), in order, until fn returns nonzero, which is returned; 0
 * when every folder was visited. */
int temper_search_path_each(const char *path, int (*fn)(void *user, const char *folder), void *user);

/* Runs argv[0] with argv (searching PATH), killing it after timeout_s; the output is kept up to
 * max_output bytes. Caller frees result->output. */
int temper_proc_run(char *const argv[], double timeout_s, size_t max_output, struct temper_proc_result *result,
                    char *msg, size_t msg_size);

/* The CPU seconds the whole machine has spent busy (every core's user, nice, system, irq,
 * softirq and steal time, from /proc/stat) since boot; -1 when it cannot be read. */
double temper_machine_busy_s(void);
/* The 1-minute load average and the number of online cores; 0 when it cannot be read. Used to say
 * that a limit was hit on a busy machine. */
int temper_machine_load(double *load1, int *cores);

#endif
