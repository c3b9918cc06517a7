/* report.h: what the store holds, turned into data to train on and pictures to read:
 * `temper export` (one JSON record per evaluation, or SFT pairs, or RL triples; docs/export.md)
 * and `temper report` (one self-contained HTML file with inline SVG; docs/report.md). Both read
 * the store only. */
#ifndef TEMPER_REPORT_H
#define TEMPER_REPORT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "temper/store.h"
#include "store/store_export.h"

/* The export formats (docs/export.md has one table each). */
enum temper_export_format {
    TEMPER_EXPORT_JSONL, /* one record per evaluation, everything known about it */
    TEMPER_EXPORT_SFT,   /* (prompt, completion) for each improving step */
    TEMPER_EXPORT_RL,    /* (prompt, completion, reward) for each evaluation */
};

/* Parses "jsonl", "sft" or "rl"; -1 for anything else. */
int temper_export_format_parse(const char *name);

/* Counts of an export. */
struct temper_export_stats {
    int64_t evaluations; /* evaluations read from the store */
    int64_t records;     /* records written */
    int64_t no_task;     /* evaluations whose task folder was not found (their spec is null) */
};

/* Writes the evaluations the filter selects to out, one JSON object per line, streaming (one
 * evaluation in memory at a time; each task's spec is read once). tasks_root is the task search
 * path (temper_tasks_root). Returns 0, TEMPER_EIO when out cannot be written, or the store's
 * error; msg says what and where. */
int temper_export(struct temper_store *store, const struct temper_store_filter *filter,
                  enum temper_export_format format, const char *tasks_root, FILE *out,
                  struct temper_export_stats *stats, char *msg, size_t msg_size);

/* The reward of the rl format: 0 for a verdict other than correct; for a correct one
 * 1 + log2(speedup) / 2, log2(speedup) held to [-1, 2] so that it stays in [0.5, 2]: 1 at the
 * baseline's speed, 1.5 at twice it, 0.5 at half and below; 1 when the evaluation was not timed
 * (speedup unknown: pass 0 or NaN). The gym client's compute_score gives the same. */
double temper_export_reward(int correct, double speedup);

/* What a report shows (one of run_id, task, bench). */
struct temper_report_request {
    int64_t run_id;         /* a tune run; 0: none */
    const char *task;       /* every evaluation of a task, each run a strategy curve; NULL: none */
    const char *device_key; /* with task: only this device (NULL: the device of its newest evaluation) */
    const char *tasks_root; /* the task search path, for the baseline's source; NULL: the default */
    const char *title;      /* NULL: made from the run or task */
};

/* Writes the report as one self-contained HTML document to out. TEMPER_ENOTFOUND (msg says
 * so) when the run or task has no evaluation. */
int temper_report_write(struct temper_store *store, const struct temper_report_request *req, FILE *out, char *msg,
                        size_t msg_size);

/* Writes the report of a bench (the object `temper bench --json` prints: id, tasks[],
 * suite{pass_at_k, fast_p, geomean_speedup, ...}) as one self-contained HTML document:
 * the fast_p curve and the suite's table. bench is borrowed. */
int temper_report_bench_write(json_t *bench, FILE *out, char *msg, size_t msg_size);

/* One line of a line diff. */
struct temper_diff_line {
    char op;          /* ' ' in both, '-' only in the old text, '+' only in the new */
    const char *text; /* the line in its text (borrowed), without its newline */
    size_t len;       /* its length */
    int old_no;       /* its line number in the old text (from 1), 0 for '+' */
    int new_no;       /* its line number in the new text (from 1), 0 for '-' */
};

/* Texts longer than this many lines (either) are not diffed (the table would be too large). */
#define TEMPER_DIFF_MAX_LINES 4000

/* Diffs two texts line by line: a shortest edit, by longest common subsequence, removals before
 * additions where both happen at one place (the report's best kernel against the baseline).
 * *lines (caller frees; its texts point into old_text and new_text) gets *n lines. Returns 0,
 * TEMPER_ERANGE when a text has over TEMPER_DIFF_MAX_LINES lines, TEMPER_ENOMEM. */
int temper_diff_lines(const char *old_text, const char *new_text, struct temper_diff_line **lines, size_t *n);

#endif
