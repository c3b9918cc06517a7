/* search.h: tuning, as a user of the library sees it: the parameter space of a candidate (its
 * knobs and the compiler's controls), the search strategies by name, and what a tune is asked to
 * do and reports of each evaluation (the session runs tunes: temper/session.h). The driver behind
 * `temper tune` (a tune as a state machine: propose points, observe their results) is internal:
 * src/search/tune.h. */
#ifndef TEMPER_SEARCH_H
#define TEMPER_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "temper/kernel.h"
#include "temper/request.h"

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

/* ---- a tune: what it is asked to do and what each evaluation did to it ---- */

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

#endif
