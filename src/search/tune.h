/* tune.h: the driver behind `temper tune`, inside libtemper: a tune as a state machine (propose
 * points, observe their results) over a candidate's space (temper/search.h) and a strategy, which
 * the session drives through the verdict pipeline and the store (src/session/session_tune.c);
 * and what the command line, MCP and the agent do with a tune's summary and its best point. */
#ifndef TEMPER_TUNE_H
#define TEMPER_TUNE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "eval/eval_internal.h"
#include "temper/kernel.h"
#include "temper/search.h"

struct temper_buf; /* a growable buffer (internal) */

/* A point's score from a result: its median time if correct and timed, else INFINITY. */
double temper_result_score(json_t *result);

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
