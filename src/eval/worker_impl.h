/* worker_impl.h: what the parent and the worker process (temper-worker) share: the beats by which
 * the worker says when it waits for the device, which phase it is in and that a candidate's code
 * runs in it (so that the parent, with its own clock, can kill a hung launch and replace a worker
 * a kernel may have written into), the page in which it says in words what it is doing, the
 * framing of messages on their socket, and starting the executable. */
#ifndef TEMPER_WORKER_IMPL_H
#define TEMPER_WORKER_IMPL_H

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/sandbox.h"

/* Phases the worker reports. */
enum worker_phase {
    WORKER_IDLE,
    WORKER_OPENING,   /* opening the device */
    WORKER_BUILDING,  /* compiling a kernel */
    WORKER_RUNNING,   /* running checks or timing */
    WORKER_REFERENCE, /* running the task's C reference: a crash or a hang here is the task's error */
    WORKER_BASELINE,  /* running the task's baseline: a crash or a hang here is the task's error too */
};

/* Shared between the parent and one worker: a memfd the parent maps, passed to the worker as
 * descriptor 4, which maps it too. On a CPU device a kernel runs in the worker and can write any
 * of its memory, this page included: so it holds only words for people, and nothing the parent
 * decides by. */
struct worker_shared {
    char doing[512];                      /* a sentence: what the worker is doing now */
    struct temper_sandbox_status sandbox; /* what confines the worker, written once at its start */
};

/* Beats: 8 bytes the worker writes on its socket between frames, a little-endian word
 * WORKER_BEAT | kind, then a little-endian value. No frame is that long, so the parent tells them
 * apart by their first word, and times each with its own clock when it reads it. A kernel cannot
 * send one (it makes no system calls) nor take back one sent before it ran: the beat that begins
 * a wait goes out before the kernel it waits for runs, so that wait is timed whatever the kernel
 * writes. */
#define WORKER_BEAT 0xfffffff0u
enum worker_beat_kind {
    BEAT_BUSY = 1,  /* a wait for the device began; value: its grace in ms (first launches) */
    BEAT_IDLE,      /* the wait ended */
    BEAT_PHASE,     /* a phase began; value: enum worker_phase */
    BEAT_CANDIDATE, /* a candidate's kernel is about to run in this process (an in-process device):
                     * the parent replaces the worker after this job */
};
/* The descriptor of the worker's socket, where the beats go (worker_main.c). */
#define WORKER_SOCKET_FD 3

/* Starts the beats: from now on worker_doing, worker_candidate_runs and every wait of a device
 * (temper_device_watch) send them on WORKER_SOCKET_FD. Then the setting is read-only (worker_page.c). */
void worker_beats_start(void);
/* Sets the phase and the sentence (the worker side; worker_page.c). */
void worker_doing(struct worker_shared *s, int phase, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Extra seconds the waits that begin from now on may take (first launches on OpenCL), 0 for none;
 * the parent allows at most WORKER_FIRST_LAUNCH_GRACE_S whatever it is told. */
void worker_grace(double seconds);
/* Tells the parent that a candidate's kernel is about to run in this process. */
void worker_candidate_runs(void);
/* Sends msg to the parent as a frame of its own ahead of the reply (the truth frame), where the
 * beats go; nothing where they do not (a worker run in-process by a test). */
void worker_tell(json_t *msg);

/* Extra seconds a launch may take on OpenCL the first time a kernel runs at a work-group size:
 * PoCL compiles it then, and on a loaded machine that compile alone can outlast the launch limit. */
#define WORKER_FIRST_LAUNCH_GRACE_S 30.0

/* The largest frame either side accepts, in bytes of JSON. */
#define WORKER_FRAME_MAX (256u << 20)

/* Whether n bytes of s are valid UTF-8 without a NUL byte. */
int worker_utf8_valid(const char *s, size_t n);
/* Encodes msg as one frame: 4 bytes of length (little-endian), then compact JSON. A top-level
 * string that is not valid UTF-8 or holds a NUL (made with json_stringn_nocheck) travels as
 * base64 under its key plus "_b64". *frame: caller frees. Returns 0, or -1 on failure. */
int worker_encode(json_t *msg, char **frame, size_t *frame_len);
/* The size of the frame that data begins with (length prefix included), or 0 if fewer than
 * 4 bytes are there. */
size_t worker_frame_size(const void *data, size_t len);
/* Decodes a request frame: data must be exactly one frame. Keys "K_b64" become "K" holding the
 * decoded bytes exactly (json_string_length gives their count; they may hold any byte). Returns
 * 0 and *req (caller decrefs), or -1 with *req NULL on anything malformed. This is the decoder a
 * fuzz harness calls. */
int worker_decode_request(const void *data, size_t len, json_t **req);
/* Base64 of n bytes; caller frees. NULL when out of memory. */
char *worker_b64_encode(const unsigned char *in, size_t n);
/* Decodes strict, padded base64; *out (caller frees) gets *len bytes plus a NUL. 0, or -1 when
 * malformed or out of memory. */
int worker_b64_decode(const char *in, size_t n, char **out, size_t *len);

/* What the calling program judges itself on a device whose kernels run in the worker
 * (worker_truth.c, pipeline.c, pipeline_verify.c). The parent gives each worker two memfds,
 * descriptors WORKER_TRUTH_FD and WORKER_OUTPUTS_FD, which the worker writes with pwrite and
 * never maps. Before a candidate's kernel first runs in it, the worker writes the reference's
 * outputs (doubles) at every check shape and seed into the first, made while no candidate's code
 * had run in the process, seals it (no write, no resize: not even the worker can change it
 * then), and sends a frame {"truth": {"atol", "rtol", "checks": [{"shape", "seed", "outputs":
 * [{"name", "dtype", "elements", "at"}]}]}} saying where each lies. It writes the outputs of the
 * candidate's first run at each check into the second, and its reply says where, in each check's
 * "outputs_at": {NAME: offset}. */
#define WORKER_TRUTH_FD 6
#define WORKER_OUTPUTS_FD 7
/* Makes the two memfds for a new worker (-1 each when it cannot: the worker then sends no truth
 * and a candidate's correct verdict on an in-process device does not stand). */
void worker_truth_fds(int *truth_fd, int *outputs_fd);
/* Whether frame data (len bytes, one whole frame) is a truth frame: 1, and *truth gets it if it
 * has none, no candidate's kernel has run (tainted 0) and truth_fd is sealed; else 0. */
int worker_truth_take(const void *data, size_t len, int tainted, int truth_fd, json_t **truth);
/* Whether a reply to request is to be judged against the truth (an eval that runs checks). */
int worker_truth_wanted(json_t *request);
/* Judges reply, of a worker in which a candidate's kernel ran (tainted) when judge is set: a
 * correct verdict stands only if every check of truth is in it, passed, with outputs (read from
 * outputs_fd) that temper's own comparison with the reference's (read from truth_fd) passes too;
 * otherwise the verdict becomes incorrect (or runtime_error when what the judgement needs is
 * missing), saying so. "outputs_at" is removed from every reply. */
void worker_truth_judge(json_t *truth, int judge, int tainted, int truth_fd, int outputs_fd, json_t *reply);
/* worker_truth_judge, and with restarted (the calling program replaces the worker after this
 * reply) the result says worker_restarted: the reply, read once as a result, is written again by
 * the generated writer (result.h), in place. */
void worker_truth_reply(json_t *truth, int judge, int tainted, int truth_fd, int outputs_fd, int restarted,
                        json_t *reply);
/* The worker's side: the descriptor to write the truth into, or -1 where there is none (a worker
 * run in-process by a test, or one started without them). */
int worker_truth_out(int which);

/* Decodes a reply frame as worker_decode_request does, except that decoded bytes that are not
 * valid UTF-8 become U+FFFD, so a reply can be printed and stored as JSON. */
int worker_decode_reply(const void *data, size_t len, json_t **reply);

/* An array the parent keeps for the life of the handle, across the worker processes it starts
 * (eval.c keeps there the results a later build of the same code may take, since a worker that
 * ran a candidate in-process does not live to the next). Borrowed; never NULL but out of memory. */
struct temper_worker;
json_t *worker_memo(struct temper_worker *w);

/* Writes a message as one frame (blocking; MSG_NOSIGNAL, so a closed peer is an error, not a
 * signal). */
int worker_send(int fd, json_t *msg);
/* Reads one request frame (blocking); NULL at end of file or on a malformed frame. Caller
 * decrefs. */
json_t *worker_recv(int fd);

/* Starts exe with argv; the child's descriptor i is fds[i] for i < nfds (at most 8), and
 * descriptors 0-2 not given are /dev/null (2 stays the parent's with TEMPER_WORKER_STDERR=1).
 * No signal disposition of the caller changes; SIGPIPE is default in the child. The child starts
 * in scratch (its working folder) with worker_child_env(scratch) as its environment. */
int worker_spawn_exe(const char *exe, char *const argv[], const int *fds, int nfds, const char *scratch, pid_t *pid,
                     char *msg, size_t msg_size);

/* A compile process (`temper-worker compile SCRATCH`): it reads its request (worker_encode'd)
 * from descriptor 0 and writes one frame to descriptor 1: {"log", "binary" (bytes), "compiler",
 * "target", "specs"}; exit 0 built, 1 did not build, 2 could not try. It runs no candidate. */
struct compile_proc {
    pid_t pid;                /* the process, 0 once reaped */
    int out_fd;               /* the memfd it writes its output frame into */
    char scratch[4096];       /* its scratch folder (its HOME, TMPDIR and PoCL cache) */
    double start_s;           /* when it started */
};
/* Starts one for req (cache_service.c). */
int compile_proc_start(json_t *req, struct compile_proc *p, char *msg, size_t msg_size);
/* Reaps it (waiting if it still runs), removes its scratch folder and returns its output frame
 * decoded (NULL if none); *status gets its wait status. Caller decrefs. */
json_t *compile_proc_end(struct compile_proc *p, int *status);

/* Called in the worker after each request is handled (worker_cache.c reports what it built);
 * NULL: nothing. */
extern void (*worker_job_done_hook)(void);

/* The environment a worker or compile process starts with (worker_env.c): the caller's variables
 * that temper_sandbox_env_allowed lets through, with HOME, TMPDIR, POCL_CACHE_DIR and
 * CUDA_CACHE_PATH in scratch (NULL: none of those). Free with worker_child_env_free. */
char **worker_child_env(const char *scratch);
void worker_child_env_free(char **env);
/* Removes a folder and everything in it (a worker's or a compile process's scratch folder),
 * following no link. */
void worker_remove_tree(const char *path);
/* Removes the scratch folders in tmp of workers and compile processes whose parent died without
 * cleaning up. */
void worker_remove_stale_scratch(const char *tmp);
/* Resident bytes of pid and, a few generations down, what it started (the worker runs two
 * generations below the process the parent starts). */
uint64_t worker_resident_bytes(pid_t pid);
/* Whether this worker runs under a profiler (TEMPER_SANDBOX_NETWORK=1, set by `eval --profile` and
 * `--sanitize`), whose injected library talks to its tool over sockets and may start helpers. */
int worker_profiled(void);
/* The PoCL kernel cache of the calling program, which a worker's mount namespace hides. */
void worker_pocl_cache_of_caller(char *out, size_t size);

/* The calling program's side of a worker's cache service (cache_service.c): a thread per worker
 * process that answers its requests on fd (kernel binaries from the build cache and task
 * references, seals checked; references only of tasks under read_dirs) and builds, in compile
 * processes that run no candidate, what the worker reports it had to build. */
struct cache_service;
struct cache_service_group;
struct temper_limits;
/* The services of one temper_worker, so that stopping it waits for theirs alone. */
struct cache_service_group *cache_service_group_new(void);
int cache_service_start(struct cache_service_group *group, int fd, const char *device_spec, char *const *read_dirs,
                        int nread, const struct temper_limits *limits, struct cache_service **out, char *msg,
                        size_t msg_size);
/* Ends the worker's side (shuts fd down); the thread finishes the builds it has queued and then
 * frees itself. */
void cache_service_stop(struct cache_service *s);
/* Waits until every service thread of g has finished its builds (at most timeout_s), then lets go
 * of g (the caller's hold). */
void cache_service_group_drain(struct cache_service_group *g, double timeout_s);

/* The sandbox a worker runs in, as JSON: {"no_new_privs", "rlimits", "seccomp",
 * "network_blocked", "exec_blocked", "landlock", "landlock_abi", "reason"}. Caller decrefs. */
json_t *worker_sandbox_json(const struct worker_shared *s);

/* ---- inside the worker ---- */

#include "device/device.h"
#include "eval/eval_internal.h"
#include "kernel/kernel_internal.h"
#include "util/util.h"

#define MAX_VARIANTS 2 /* input sets of the checks, alternated between warm-up launches */
/* The input set of timed launches: drawn anew on the device before every timed launch, so that
 * no launch sees inputs an earlier one saw (pipeline_timing.c). */
#define FRESH_SET MAX_VARIANTS
/* Baseline samples a bench arena keeps across the evaluations of one worker: a baseline far
 * slower than the candidates (the naive GEMMs run 250 ms at their bench shapes) is not re-timed
 * ten times for every candidate. */
#define BASE_POOL 256
/* Output sets of an arena: the candidate's, the baseline's and the expert's timed outputs, and
 * the baseline's output for each input set, which bench checks compare against. */
enum {
    OUT_CAND,
    OUT_BASE,
    OUT_EXPERT,
    OUT_EXPECT,
    OUT_SETS = OUT_EXPECT + MAX_VARIANTS,
};

/* A device buffer with guard zones on both sides; kernels see only the view. */
struct slot {
    struct temper_dbuf *whole; /* guard + data + guard */
    struct temper_dbuf *view;  /* the data */
    size_t bytes;              /* bytes of data */
    unsigned char canary;      /* the byte its guard zones are filled with */
    uint64_t sum;              /* keyed checksum of the data when it must not change, else 0 */
};

/* A candidate built and ready to launch. */
struct plan {
    struct temper_candidate cand;                        /* the parsed source */
    struct temper_knobs knobs;                           /* its knob values */
    char options[2048];                                  /* compiler options */
    struct temper_dmodule *mod;                          /* the built program */
    struct temper_dkernel *kernels[TEMPER_MAX_LAUNCHES]; /* one per launch line */
    struct slot scratch[TEMPER_MAX_SCRATCH];             /* scratch buffers at the current shape, guarded */
    int cache_hit;                                       /* 1 if the binary came from the build cache */
    uint64_t code;                                       /* temper_code_hash of its binary, 0 if unknown */
    size_t knob_len;                                     /* options[0, knob_len) come from its knobs */
    int nseen;                                           /* work-group shapes launched so far */
    size_t seen[16][3];                                  /* them: a new one may compile at launch */
    const char *expert;                                  /* set: a vendor routine instead of launches */
    int candidate;                                       /* 1: the candidate's plan, whose kernels are
                                                          * untrusted code (worker_candidate_runs) */
};

/* Every buffer of one shape. Invariant: the check sets' inputs and expected outputs never change
 * after arena_init (a kernel that changes them is caught by their checksums); FRESH_SET's inputs
 * change before every timed launch, and their checksum is taken anew each time. */
struct arena {
    const struct temper_task *task;                  /* the task */
    struct temper_shape shape;                       /* sizes */
    char shape_text[256];                            /* the sizes, for messages */
    int nvariants;                                   /* input sets */
    int nsets;                                       /* output sets allocated */
    size_t guard;                                    /* guard bytes on each side */
    size_t total_bytes;                              /* device bytes of its buffers with guards */
    unsigned char canary;                            /* seeds the guard bytes */
    int nslots;                                      /* buffers allocated so far */
    uint64_t key;                                    /* the checksum key (secret) */
    int64_t elems[TEMPER_MAX_ARGS];                  /* elements per argument */
    int64_t scalars[TEMPER_MAX_ARGS];                /* values of scalar arguments */
    struct slot in[MAX_VARIANTS + 1][TEMPER_MAX_ARGS]; /* inputs: the check sets, then FRESH_SET */
    int fresh_ready;                                 /* 1 once the FRESH_SET buffers are allocated */
    uint64_t fresh_seed;                             /* the seed FRESH_SET's inputs were last drawn from */
    struct slot out[OUT_SETS][TEMPER_MAX_ARGS];      /* outputs, by set */
    void *host_in[MAX_VARIANTS][TEMPER_MAX_ARGS];    /* host copies of the inputs */
    void *host_fresh[TEMPER_MAX_ARGS];               /* FRESH_SET's inputs on a CPU device (made on the
                                                      * host), and a buffer to read them back into */
    void *host_back[TEMPER_MAX_ARGS];
    double *want[TEMPER_MAX_ARGS];                   /* the C reference's outputs (check shapes) */
    int expected_ready;                              /* 1 once OUT_EXPECT sets hold the baseline's */
    struct temper_result_bench_check *expert_check;  /* the expert's check against them, if any (owned) */
    double base_ms[BASE_POOL];                       /* the baseline's timed samples (bench shapes), a ring */
    int base_n;                                      /* samples taken, all evaluations of this worker */
};

/* The utility kernels every evaluation uses: device-side comparison and checksums. */
struct devcheck {
    struct temper_dmodule *mod;     /* their program */
    struct temper_dkernel *cmp;     /* tolerance comparison of f32, f16 and bf16 arrays */
    struct temper_dkernel *sum_u32; /* keyed checksum, partial sums per thread */
    struct temper_dkernel *touch;   /* reads a buffer, writes nothing */
    struct temper_dkernel *fill;    /* draws an input's values on the device (timed launches' inputs) */
    struct temper_dkernel *fill_check; /* counts the elements that differ from what fill wrote */
    struct temper_dbuf *results;    /* where they write */
    struct temper_dbuf *clean;      /* zeros read by devcheck_flush, twice the cache; made on first use */
    size_t clean_bytes;             /* its size */
    size_t threads;                 /* threads they run with */
};

/* A finished evaluation that a configuration with the same code may take instead of running: same
 * source, same knobs (so the same launches), the same binary code, asked the same way. */
struct same_code {
    uint64_t source;    /* the candidate's source hash */
    uint64_t code;      /* its binary's code hash */
    char knobs[1024];   /* its knob options, which also fix its launch plan */
    int timing;         /* 1 if it was timed */
    int checks_only;    /* 1 if only check shapes ran */
    double budget;      /* its timing budget */
    char path[1024];    /* its file and all its compiler options, to name it */
    char options[2048];
    json_t *result;     /* what it got (a copy) */
};

#define SAME_CODE_MAX 128

/* A task's state in the worker, kept between evaluations of the task with the same seeds: inputs
 * drawn, references run, baselines run once per worker, not once per candidate. */
struct task_state {
    char task_dir[4096];                                /* the task they belong to */
    uint64_t seed;                                      /* the public seed */
    uint64_t secret;                                    /* the secret seed */
    struct temper_task task;                            /* the loaded task */
    temper_reference_fn ref;                            /* its reference */
    int base_built;                                     /* 1 once base holds the baseline */
    int base_verified;                                  /* 1 once the baseline matched the C reference at
                                                         * every check shape (pipeline_baseline.c) */
    int expert_verified;                                /* 1: the expert matched it wherever it ran; -1:
                                                         * it did not (expert_fault says where); 0: unknown */
    char expert_fault[1024];                            /* why the expert is left out, with -1 */
    struct plan base;                                   /* the baseline */
    struct arena *check[TEMPER_MAX_SHAPES][2];          /* check arenas by shape and seed */
    struct arena *bench[TEMPER_MAX_SHAPES];             /* bench arenas by shape */
    struct same_code *same;                             /* evaluations by code, SAME_CODE_MAX, a ring */
    int nsame;                                          /* how many were added (the ring holds the last) */
};

/* The worker's long-lived state. */
struct worker_state {
    char device_spec[64];         /* what to open */
    struct worker_shared *shared; /* the page the parent watches */
    int open;                     /* 1 once dev is open */
    struct temper_device dev;     /* the device */
    struct devcheck dc;           /* utility kernels, built on first use */
    struct task_state s;          /* the task's arenas, kept between evaluations */
};

/* A failure found by a check: the verdict and a sentence. */
struct failure {
    enum temper_verdict verdict; /* what it means */
    char message[2048];          /* what failed, where and why */
    int task_error;              /* 1: the task's own fault (its reference or its baseline), not the
                                  * candidate's: the job ends with an error, never a verdict */
};

int fail_with(struct failure *f, enum temper_verdict v, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Builds source with options through the build cache; *code (code may be NULL) gets the hash of
 * the binary's code, 0 where there is no binary (pipeline_build.c). */
int worker_build_module(struct worker_state *ws, const char *source, size_t len, const char *options,
                        struct temper_buf *log, struct temper_dmodule **mod, int *cache_hit, uint64_t *code, char *msg,
                        size_t n);

/* Whether the device comparison reads n elements of type t (devcheck.c). */
int devcheck_compares(enum temper_dtype t, int64_t n);
/* Compares n elements of type t of out with want on the device, as temper_compare_values does on
 * the host (devcheck.c). */
int devcheck_compare(struct worker_state *ws, enum temper_dtype t, struct temper_dbuf *out, struct temper_dbuf *want,
                     int64_t n, double atol, double rtol, struct temper_compare *r, char *msg, size_t msg_size);
/* A checksum of bytes of buf under key, computed on the device (devcheck.c). */
int devcheck_sum(struct worker_state *ws, struct temper_dbuf *buf, size_t bytes, uint64_t key, uint64_t *sum,
                 char *msg, size_t msg_size);
/* Writes n elements of type t into buf, drawn on the device from the distribution kind(a, b) as
 * task inputs are (normal: mean a, deviation b; uniform: [a, b); randint: [a, b]), from a
 * counter-based generator keyed by seed: each seed gives contents no other seed gives. Queued, not
 * waited for (devcheck.c). */
int devcheck_fill(struct worker_state *ws, struct temper_dbuf *buf, enum temper_dtype t, int64_t n,
                  enum temper_init_kind kind, double a, double b, uint64_t seed, char *msg, size_t msg_size);
/* Counts the elements of buf that differ from what devcheck_fill wrote with the same arguments
 * (*changed, and the first of them in *first, -1 if none): the fill drawn again on the device and
 * compared element by element, one read of the buffer (devcheck.c). */
int devcheck_fill_check(struct worker_state *ws, struct temper_dbuf *buf, enum temper_dtype t, int64_t n,
                        enum temper_init_kind kind, double a, double b, uint64_t seed, int64_t *changed,
                        int64_t *first, char *msg, size_t msg_size);
/* Evicts the cache before a timed run and leaves it clean: the device's flush writes a buffer of
 * twice the cache, then, on GPUs, a read of another buffer that size replaces those dirty lines
 * with clean ones, so the timed kernel does not pay for writing the flush's data back to memory
 * (60 MB on an H200: a fifth of the traffic of a 64-microsecond RMSNorm). Queued, not waited
 * for (devcheck.c). */
int devcheck_flush(struct worker_state *ws, char *msg, size_t msg_size);
void devcheck_free(struct worker_state *ws);

/* The worker's request handlers (pipeline.c). */
json_t *worker_handle(struct worker_state *ws, json_t *request, int *fatal);
struct worker_state *worker_state_new(const char *device_spec, struct worker_shared *shared);
/* A reply that carries an error instead of a result (pipeline_build.c). */
json_t *worker_error_reply(const char *msg, int code);
/* Measures the device's ceilings (calibrate.c). */
json_t *worker_calibrate(struct worker_state *ws, int *fatal);

#endif
