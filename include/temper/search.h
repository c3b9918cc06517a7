/* search.h: tuning: the parameter space of a candidate (its knobs and the compiler's controls),
 * search strategies behind one interface (propose a batch, observe results), and the driver
 * behind `temper tune` (a tune as a state machine: propose points, observe their results), which the
 * session drives through the verdict pipeline and the store. */
#ifndef TEMPER_SEARCH_H
#define TEMPER_SEARCH_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "temper/eval.h"
#include "temper/kernel.h"
#include "temper/store.h"

struct temper_buf; /* a growable buffer (internal) */
struct temper_rng; /* a random number generator's state (internal) */

#define TEMPER_MAX_DIMS_SPACE (TEMPER_MAX_PARAMS + 4)

/* One dimension of a space: a knob of the candidate, or a compiler control. */
struct temper_dim {
    char name[TEMPER_NAME_MAX];                   /* the knob's name, or the control's ("regcap") */
    int nvalues;                                  /* number of values */
    char values[TEMPER_MAX_VALUES][TEMPER_NAME_MAX]; /* the values as written; "none" for no flag */
    int is_flag;                                  /* 1: a compiler control, passed as an option */
    char flag_format[64];                         /* printf format of its option, e.g. "--maxrregcount=%s" */
    int ordered;                                  /* 1 if values are integers in increasing order */
};

/* The space: every combination of dimension values that satisfies the candidate's requires. */
struct temper_space {
    const struct temper_candidate *cand; /* the candidate (borrowed) */
    int ndims;                           /* dimensions */
    struct temper_dim dims[TEMPER_MAX_DIMS_SPACE];
    double size;                         /* combinations before constraints */
};

/* A point: one value index per dimension. */
struct temper_config {
    int v[TEMPER_MAX_DIMS_SPACE]; /* value index per dimension */
};

/* Builds the space of a candidate; with compiler_knobs, adds the backend's compiler controls
 * (CUDA: register cap, fast math; OpenCL: fast relaxed math, mad). */
int temper_space_init(struct temper_space *s, const struct temper_candidate *cand, int compiler_knobs, char *msg,
                      size_t msg_size);
/* 1 if the point satisfies every require. */
int temper_space_valid(const struct temper_space *s, const struct temper_config *c);
/* Counts the valid points, enumerating at most limit of them (returns -1 past that). */
int64_t temper_space_count(const struct temper_space *s, int64_t limit);
/* The i-th point in enumeration order (mixed radix, first dimension fastest). */
void temper_space_point(const struct temper_space *s, int64_t i, struct temper_config *c);
/* A uniformly random valid point (rejection sampling); nonzero if none was found. */
int temper_space_sample(const struct temper_space *s, struct temper_rng *rng, struct temper_config *c);
/* A random valid neighbour: one dimension moved (to an adjacent value where ordered). */
int temper_space_neighbour(const struct temper_space *s, struct temper_rng *rng, const struct temper_config *c,
                           struct temper_config *out);
/* A point's knob values into knobs (room for TEMPER_MAX_DIMS_SPACE): TEMPER_KNOB_TEXT, the values
 * the candidate lists, as written (names and texts borrowed from the space); returns how many. And
 * its extra compiler flags (the compiler controls' options), into flags. */
int temper_space_render(const struct temper_space *s, const struct temper_config *c, struct temper_knob_value *knobs,
                        char *flags, size_t flags_size);
/* The exact compiler options a point builds with (the -D knob definitions, the candidate's flags,
 * the compiler controls), as results in the store record them. */
int temper_space_options(const struct temper_space *s, const struct temper_config *c, char *out, size_t size);
/* A point's score from a result: its median time if correct and timed, else INFINITY. */
double temper_result_score(json_t *result);
/* A point as text, "BLOCK=256 VEC=4 regcap=64", for people. */
void temper_space_format(const struct temper_space *s, const struct temper_config *c, char *out, size_t size);
int temper_config_equal(const struct temper_space *s, const struct temper_config *a, const struct temper_config *b);

/* ---- strategies ---- */

/* A strategy: proposes points, learns from their scores (lower is better; INFINITY: failed). */
struct temper_strategy_ops {
    const char *name;    /* as on the command line */
    const char *summary; /* one line for --help */
    /* Makes the strategy's state; budget is the number of evaluations it will get. */
    void *(*init)(const struct temper_space *s, uint64_t seed, int budget);
    /* Fills up to max points it wants evaluated next; returns how many (0: it has nothing more). */
    int (*propose)(void *state, struct temper_config *out, int max);
    /* Tells it a point's score. */
    void (*observe)(void *state, const struct temper_config *c, double score);
    void (*free)(void *state);
};

/* The strategies, NULL-terminated; the first is the default. */
const struct temper_strategy_ops *const *temper_strategies(void);
const struct temper_strategy_ops *temper_strategy(const char *name);

/* ---- the driver ---- */

/* What to tune and how. */
struct temper_tune_request {
    const char *path;           /* the candidate */
    const char *source;         /* its text, or NULL to read path */
    const char *tasks_dir;      /* where tasks are, NULL for the default */
    const char *strategy;       /* a strategy name, NULL for the default */
    int budget;                 /* evaluations at most (0: no limit but time) */
    double time_s;              /* seconds at most (0: no limit but budget) */
    uint64_t seed;              /* the strategy's seed */
    int compiler_knobs;         /* 1: search compiler controls too */
    int resume;                 /* 1: continue the last unfinished run of this candidate here */
    int retime;                 /* how many of the best to re-time in full (default 3) */
    double screen_budget_s;     /* timing budget of a screening evaluation */
    double full_budget_s;       /* timing budget of a re-timing */
    int batch;                  /* points per batch (0: one per compile process) */
};

#define TEMPER_TUNE_MAX_BATCH 32

struct temper_tune; /* opaque: a tune in progress (a space, a strategy and the run's accounting) */

/* One evaluation a tune asks for. req points into the point itself (its knob settings and flags),
 * so a point must not be copied or moved while req is used. */
struct temper_tune_point {
    struct temper_eval_request req;                 /* the evaluation to run */
    char options[4096];                             /* the compiler options it builds with (the
                                                     * store's key for it; "" for none) */
    int options_known;                              /* 0: options could not be rendered */
    char config[512];                               /* the point for people, "BLOCK=256 regcap=64" */
    int retime;                                     /* 1: a full re-timing of one of the best */
    struct temper_config c;                         /* the point */
    struct temper_knob_value knobs[TEMPER_MAX_DIMS_SPACE]; /* req.knobs */
    char flags[512];                                /* req.extra_flags */
};

/* What one scored point did to the tune: one per evaluation, for progress displays. */
struct temper_tune_event {
    int index;            /* 1 for the first evaluation of the run (re-timings continue the count) */
    const char *config;   /* the point (borrowed from the point) */
    char verdict[32];     /* its verdict ("?" when it has none) */
    double time_ms;       /* its median time, NAN if it was not timed or not correct */
    double best_ms;       /* the best screening time so far, INFINITY if none */
    int from_store;       /* 1: taken from the store, not run */
    int same_code;        /* 1: its compiled code was an earlier one's, whose result it took */
    int retime;           /* 1: a full re-timing of one of the best */
    char why[256];        /* why it failed, on one line: its verdict message's first line, or for a
                           * compile error the compiler log's first error line; "" when correct */
};

/* Starts a tune of req->path on the device whose results name it device_id ("opencl:0"). To
 * continue an unfinished run, pass its settings (borrowed) and row id; else NULL and 0. No store,
 * no device: the driver (the session) looks points up, evaluates and records them. Caller frees
 * with temper_tune_free. */
int temper_tune_init(const struct temper_tune_request *req, const char *device_id, json_t *resumed_settings,
                     int64_t resumed_run, struct temper_tune **t, char *msg, size_t msg_size);
void temper_tune_free(struct temper_tune *t);
/* The candidate's source hash (hex; borrowed), its source (borrowed) and task. */
const char *temper_tune_source_hash(const struct temper_tune *t);
const char *temper_tune_source(const struct temper_tune *t);
const char *temper_tune_task(const struct temper_tune *t);
/* The settings a new run records (caller decrefs); what a resumed run continues with. */
json_t *temper_tune_settings(const struct temper_tune *t);
/* Ties the tune to its run's row, as the summary reports it. */
void temper_tune_set_run(struct temper_tune *t, int64_t run_id);
/* Fills up to max points (at most TEMPER_TUNE_MAX_BATCH) to score next: screening points while
 * the budget and time last, then once the re-timings of the best few; returns how many, 0 when
 * the tune is over. Every point of a proposal must be observed before the next proposal. */
int temper_tune_propose(struct temper_tune *t, struct temper_tune_point *points, int max);
/* Scores a proposed point with its result (borrowed); from_store: it was found in the store,
 * not run. Fills *ev (which borrows from p and result). */
void temper_tune_observe(struct temper_tune *t, const struct temper_tune_point *p, json_t *result, int from_store,
                         struct temper_tune_event *ev);
/* The summary (caller decrefs): the best point, its times, speedups, roofline share, the
 * convergence history and "failures", the distinct reasons configurations failed (verdict,
 * message, count, the first one's config and evaluation index, and for a compile error the
 * compiler log's first lines), most frequent first. interrupted: the tune was stopped early; the
 * best is then the best screening result, not re-timed, and "interrupted" is true. */
json_t *temper_tune_summary(struct temper_tune *t, int interrupted);
/* A summary's "failures" as text for people, appended to out: a line per distinct failure (up to
 * shown of them, each starting with prefix: verdict, count, the first configuration, the
 * message's first line), a compile error's log head below it with each line after log_indent,
 * and, past shown, a line saying how many more there are and that all_in lists them. */
int temper_tune_failures_text(json_t *failures, int shown, const char *prefix, const char *log_indent,
                              const char *all_in, struct temper_buf *out);

/* Writes the candidate with the knobs of a point fixed (one value each, flags spelled out), as a
 * plain candidate that `temper eval` accepts. */
int temper_tune_write_fixed(const struct temper_candidate *cand, json_t *knobs, const char *extra_flags,
                            const char *path, char *msg, size_t msg_size);

#endif
