/* report_plots.h: what the report gathers from the store (its evaluations as points, the device's
 * ceilings, the runs) and the two plots drawn from it (report_plots.c); report.c gathers and writes
 * the page. Internal to src/report. */
#ifndef TEMPER_REPORT_PLOTS_H
#define TEMPER_REPORT_PLOTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "temper/result.h"

/* One evaluation as the report shows it. */
struct point {
    int64_t id;          /* evaluations.id */
    int64_t run_id;      /* its run, 0 for none */
    int64_t parent_id;   /* its lineage parent, 0 for none */
    int index;           /* its place in its run, from 1 (0 outside runs) */
    int timed;           /* 1: correct with a time at the first bench shape */
    int correct;         /* the verdict is correct */
    double ms;           /* median time at the first bench shape */
    double spread;       /* its spread */
    double speedup;      /* over the baseline */
    double vs_expert;    /* over the expert, NAN without one */
    double share;        /* roofline share, NAN when unknown */
    double flops;        /* the task's FLOP model at that shape */
    double bytes;        /* its byte model */
    double baseline_ms;  /* the baseline's median in the same evaluation */
    double expert_ms;    /* the expert's, NAN without one */
    char verdict[24];    /* the verdict */
    char phase[16];      /* the tune phase (screen, retime), "" outside tunes */
    char *device_key;    /* the device's identity (owned) */
    char *options;       /* the compiler options (owned) */
    char *source_hash;   /* the candidate's source hash (owned) */
    char *made_by;       /* lineage operator, or NULL (owned) */
};

/* What the walk gathers. */
struct gather {
    struct point *pts;        /* the evaluations, oldest first */
    size_t n, cap;            /* used and allocated */
    struct temper_result *timed; /* the newest timed evaluation's result (its first timing: ceilings, shape) */
    char *baseline_path;      /* the baseline the evaluations were timed against (owned) */
    char *task;               /* the task (owned) */
    char *language;           /* the candidates' language (owned) */
    char *device_name;        /* the device's own name (owned) */
    int64_t want_id;          /* second walk: the evaluation whose source is wanted */
    char *source;             /* its source (owned) */
    char *source_path;        /* its file (owned) */
};

/* The device's ceilings for the roofline: memory bandwidth (GB/s) and compute (GFLOP/s). */
struct ceilings {
    double mem_gbs;         /* copy bandwidth, as the roofline floor uses it */
    double compute_gflops;  /* the task's compute ceiling */
    char compute_key[32];   /* which one (fma_gflops, ...) */
    char source[160];       /* where they came from, for the caption */
};

/* A run shown on the convergence chart. */
struct run_info {
    int64_t id;         /* runs.id */
    char strategy[32];  /* its strategy */
    int evaluations;    /* its evaluations here */
};

/* 1 when two evaluations are of the same configuration: source, options and device. */
static inline int same_config(const struct point *p, const struct point *q)
{
    return !strcmp(q->source_hash, p->source_hash) && !strcmp(q->options, p->options) &&
           !strcmp(q->device_key, p->device_key);
}

/* The roofline: every timed evaluation at its arithmetic intensity under the device's roof. */
void report_roofline(FILE *f, const struct gather *g, const struct ceilings *c, long best);

/* Best time against evaluations, one line per tune run. */
void report_convergence(FILE *f, const struct gather *g, const struct run_info *runs, int nruns, long best);

#endif
