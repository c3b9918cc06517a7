/* export.c: `temper export`: the store's evaluations as data to train on (docs/export.md).
 * jsonl: one record per evaluation with the task's specification, the candidate's source and
 * its base's (lineage parent, or the run's best before it), who made it, the feedback temper
 * gave, the verdict and the metrics; sft: (prompt, completion) for each improving step; rl:
 * (prompt, completion, reward) for each evaluation. Streams: one evaluation in memory at once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "temper/error.h"
#include "report/report.h"
#include "temper/result.h"
#include "temper/task.h"
#include "util/util.h"

/* Files of a task folder are read up to this size. */
#define EXPORT_FILE_MAX (1 << 20)

/* A task's specification, read once per export. */
struct task_info {
    struct task_info *next; /* the next task read */
    char *name;             /* the task's name (owned) */
    json_t *spec;           /* the record's "task" object without the per-evaluation keys; NULL: not found */
    char *current_hash;     /* the hash of its content now, NULL when not found (owned) */
};

/* The walk's state. */
struct export_state {
    enum temper_export_format format; /* what to write */
    const char *tasks_root;           /* the task search path */
    FILE *out;                        /* where */
    struct task_info *tasks;          /* the specifications read so far */
    struct temper_export_stats *stats; /* counts */
    char *msg;                        /* for a write failure */
    size_t msg_size;                  /* its size */
};

int temper_export_format_parse(const char *name)
{
    return !strcmp(name, "jsonl") ? TEMPER_EXPORT_JSONL :
           !strcmp(name, "sft")   ? TEMPER_EXPORT_SFT :
           !strcmp(name, "rl")    ? TEMPER_EXPORT_RL :
                                    -1;
}

double temper_export_reward(int correct, double speedup)
{
    if (!correct)
        return 0.0;
    if (!(speedup > 0) || isinf(speedup))
        return 1.0;
    /* the gym client's compute_score reward too (clients/python): a correct kernel never scores
     * below 0.5, so correctness outweighs any speed */
    return 1.0 + 0.5 * fmax(-1.0, fmin(2.0, log2(speedup)));
}

/* A file's text as a JSON string, null when it cannot be read. */
static json_t *file_json(const char *path)
{
    char *text = NULL, msg[256];
    size_t len = 0;
    if (!path || !*path || temper_read_file(path, EXPORT_FILE_MAX, &text, &len, msg, sizeof(msg)))
        return json_null();
    json_t *v = json_stringn(text, len);
    free(text);
    return v ? v : json_null();
}

/* Finds, loads and describes a task (once per export); NULL spec when it is not found. */
static struct task_info *task_get(struct export_state *st, const char *name)
{
    for (struct task_info *t = st->tasks; t; t = t->next)
        if (!strcmp(t->name, name))
            return t;
    struct task_info *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->name = strdup(name);
    t->next = st->tasks;
    st->tasks = t;
    char dir[TEMPER_PATH_MAX], msg[512], hex[17];
    struct temper_task *task = malloc(sizeof(*task));
    if (task && temper_task_name_ok(name) &&
        !temper_task_find(st->tasks_root, name, dir, sizeof(dir), msg, sizeof(msg)) &&
        !temper_task_load(dir, task, msg, sizeof(msg))) {
        char json_path[TEMPER_PATH_MAX + 16];
        snprintf(json_path, sizeof(json_path), "%s/task.json", task->dir);
        char *text = NULL;
        size_t len = 0;
        json_t *spec = NULL;
        if (!temper_read_file(json_path, EXPORT_FILE_MAX, &text, &len, msg, sizeof(msg)))
            spec = json_loadb(text, len, 0, NULL);
        free(text);
        if (!temper_task_content_hash(task, hex, msg, sizeof(msg)))
            t->current_hash = strdup(hex);
        t->spec = json_pack("{s:i, s:s, s:s, s:s, s:o, s:o, s:o, s:o}", "level", task->level, "summary",
                            task->summary, "flops", task->flops, "bytes", task->bytes, "spec",
                            spec ? spec : json_null(), "reference", file_json(task->reference), "baseline_opencl",
                            file_json(task->baseline_opencl), "baseline_cuda", file_json(task->baseline_cuda));
    }
    free(task);
    return t;
}

static void tasks_free(struct task_info *t)
{
    while (t) {
        struct task_info *next = t->next;
        free(t->name);
        free(t->current_hash);
        json_decref(t->spec);
        free(t);
        t = next;
    }
}

/* A string of a store row (not a result: its columns), or NULL. */
static const char *str(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* A value of a store row, or null: a new reference. */
static json_t *copy_of(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return v ? json_incref(v) : json_null();
}

/* A typed field of a result as JSON: null where unset. New references. */
static json_t *str_json(const char *s)
{
    json_t *v = s ? json_string(s) : NULL;
    return v ? v : json_null();
}

static json_t *i64_json(struct temper_opt_i64 o)
{
    return o.set ? json_integer((json_int_t)o.v) : json_null();
}

static json_t *f64_json(struct temper_opt_f64 o)
{
    return o.set ? json_real(o.v) : json_null();
}

static json_t *json_or_null(json_t *v)
{
    return v ? json_incref(v) : json_null();
}

/* One failed check (or bench check) as the feedback shows it. New reference. */
static json_t *failing_json(const char *kind, const char *shape, const char *seed, const char *message,
                            struct temper_opt_i64 mismatches, const struct temper_result_mismatch *first)
{
    return json_pack("{s:s, s:o, s:o, s:o, s:o, s:o}", "kind", kind, "shape", str_json(shape), "seed", str_json(seed),
                     "message", str_json(message), "mismatches", i64_json(mismatches), "first_mismatch",
                     temper_result_mismatch_to_json(first));
}

/* The first check (or bench check) that failed, with where it failed; null when none did. */
static json_t *failing_check(const struct temper_result *r)
{
    for (size_t i = 0; i < r->checks.n; i++) {
        const struct temper_result_check *c = &r->checks.v[i];
        if (c->passed.set && !c->passed.v)
            return failing_json("check", c->shape, c->seed, c->message, c->mismatches, c->first_mismatch);
    }
    for (size_t i = 0; i < r->bench_checks.n; i++) {
        const struct temper_result_bench_check *c = &r->bench_checks.v[i];
        if (c->passed.set && !c->passed.v) /* a bench check has no seed */
            return failing_json("bench", c->shape, NULL, c->message, c->mismatches, c->first_mismatch);
    }
    return json_null();
}

/* The timings as temper showed them: time, spread, baseline, speedups, roofline share. */
static json_t *timings_feedback(const struct temper_result *r)
{
    json_t *out = json_array();
    for (size_t i = 0; i < r->timings.n; i++) {
        const struct temper_result_timing *t = &r->timings.v[i];
        json_t *o = json_object();
        json_object_set_new(o, "shape", str_json(t->shape));
        json_object_set_new(o, "median_ms", f64_json(t->median_ms));
        json_object_set_new(o, "spread", f64_json(t->spread));
        json_object_set_new(o, "samples", i64_json(t->samples));
        json_object_set_new(o, "baseline_median_ms", f64_json(t->baseline_median_ms));
        json_object_set_new(o, "speedup", f64_json(t->speedup));
        json_object_set_new(o, "expert", str_json(t->expert));
        json_object_set_new(o, "expert_median_ms", f64_json(t->expert_median_ms));
        json_object_set_new(o, "speedup_vs_expert", f64_json(t->speedup_vs_expert));
        json_object_set_new(o, "roofline_floor_ms", f64_json(t->roofline_floor_ms));
        json_object_set_new(o, "roofline_share", f64_json(t->roofline_share));
        json_object_set_new(o, "bound", str_json(t->bound));
        json_object_set_new(o, "flops", i64_json(t->flops));
        json_object_set_new(o, "bytes", i64_json(t->bytes));
        json_object_set_new(o, "gbps", f64_json(t->gbps));
        json_object_set_new(o, "tflops", f64_json(t->tflops));
        json_object_set_new(o, "warning", str_json(t->warning));
        json_array_append_new(out, o);
    }
    return out;
}

/* The feedback temper gave for a result: its message, compile log, first failing check and
 * timings. New reference. */
static json_t *feedback(const struct temper_result *r)
{
    int64_t passed = 0;
    for (size_t i = 0; i < r->checks.n; i++)
        passed += r->checks.v[i].passed.set && r->checks.v[i].passed.v;
    return json_pack("{s:o, s:o, s:I, s:I, s:o, s:o, s:o, s:o}", "message", str_json(r->message), "compile_log",
                     str_json(r->compile_log), "checks_run", (json_int_t)r->checks.n, "checks_passed",
                     (json_int_t)passed, "failing", failing_check(r), "timings", timings_feedback(r), "warnings",
                     json_or_null(r->warnings), "same_code_as", str_json(r->same_code_as));
}

/* The speedup of a result's first timing; null when not timed. New reference. */
static json_t *first_speedup(const struct temper_result *r)
{
    const struct temper_result_timing *t = temper_result_first_timing(r);
    return t ? f64_json(t->speedup) : json_null();
}

/* The headline numbers of a result, from its first timing; null members when not timed. */
static json_t *metrics(const struct temper_result *r)
{
    static const struct temper_result_timing none;
    const struct temper_result_timing *t = temper_result_first_timing(r);
    if (!t)
        t = &none;
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "median_ms", f64_json(t->median_ms), "spread",
                     f64_json(t->spread), "speedup", f64_json(t->speedup), "speedup_vs_expert",
                     f64_json(t->speedup_vs_expert), "roofline_share", f64_json(t->roofline_share), "gbps",
                     f64_json(t->gbps), "tflops", f64_json(t->tflops));
}

/* The candidate's language: the device's, else from the file name. */
static const char *language(const struct temper_result *r, const char *path)
{
    const char *lang = r->device_info ? r->device_info->language : NULL;
    if (lang && *lang)
        return lang;
    size_t n = path ? strlen(path) : 0;
    return n > 3 && !strcmp(path + n - 3, ".cu") ? "cuda" : "opencl";
}

/* A row's result and its base's, read once (temper_result_from_stored: a store keeps whatever a
 * result was when it was recorded). */
struct row_results {
    struct temper_result result; /* the evaluation's */
    struct temper_result base;   /* its base's; empty without one */
};

/* The jsonl record of one row. New reference. */
static json_t *jsonl_record(json_t *row, const struct row_results *rr, struct task_info *ti)
{
    const char *task_hash = str(row, "task_hash");
    json_t *task = ti && ti->spec ? json_deep_copy(ti->spec) : json_object();
    json_object_set_new(task, "name", copy_of(row, "task"));
    json_object_set_new(task, "hash", copy_of(row, "task_hash"));
    json_object_set_new(task, "current_hash", ti && ti->current_hash ? json_string(ti->current_hash) : json_null());
    json_object_set_new(task, "spec_matches",
                        json_boolean(ti && ti->current_hash && task_hash && !strcmp(ti->current_hash, task_hash)));
    if (!ti || !ti->spec)
        json_object_set_new(task, "spec", json_null());
    json_t *base = json_null();
    if (json_is_integer(json_object_get(row, "base_id")))
        base = json_pack("{s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:o, s:o}", "eval_id", json_object_get(row, "base_id"),
                         "relation", json_object_get(row, "base_relation"), "hash", json_object_get(row, "base_candidate"),
                         "source", json_object_get(row, "base_source"), "options", json_object_get(row, "base_options"),
                         "knobs", json_object_get(row, "base_knobs"), "verdict", json_object_get(row, "base_verdict"),
                         "median_ms", json_object_get(row, "base_median_ms"), "speedup", first_speedup(&rr->base),
                         "feedback", feedback(&rr->base));
    return json_pack("{s:s, s:O, s:O, s:O, s:o, s:{s:O, s:O, s:s, s:O, s:O, s:O}, s:o, s:{s:O, s:O, s:O}, "
                     "s:{s:O, s:O}, s:O, s:O, s:o, s:o}",
                     "format", "temper.export.jsonl/1", "eval_id", json_object_get(row, "id"), "run_id",
                     json_object_get(row, "run_id"), "created_at", json_object_get(row, "created_at"), "task", task,
                     "candidate", "hash", json_object_get(row, "candidate"), "path", json_object_get(row, "path"),
                     "language", language(&rr->result, str(row, "path")), "source", json_object_get(row, "source"),
                     "options", json_object_get(row, "options"), "knobs", json_object_get(row, "knobs"), "parent",
                     base, "origin", "operator", json_object_get(row, "operator"), "client",
                     json_object_get(row, "client"), "batch_id", json_object_get(row, "batch_id"), "device", "id",
                     json_object_get(row, "device"), "key", json_object_get(row, "device_key"), "verdict",
                     json_object_get(row, "verdict"), "message", json_object_get(row, "message"), "feedback",
                     feedback(&rr->result), "metrics", metrics(&rr->result));
}

/* Appends the feedback of a result as temper prints it, for a prompt. */
static void feedback_text(struct temper_buf *b, const struct temper_result *r)
{
    temper_buf_printf(b, "Verdict: %s. %s\n", r->verdict ?: "none", r->message ?: "");
    if (r->compile_log && *r->compile_log)
        temper_buf_printf(b, "Compiler output:\n%s\n", r->compile_log);
    for (size_t i = 0; i < r->timings.n; i++) {
        const struct temper_result_timing *t = &r->timings.v[i];
        temper_buf_printf(b, "Timing at %s: %.4g ms (spread %.1f%%); baseline %.4g ms, speedup %.2fx", t->shape ?: "",
                          t->median_ms.v, 100 * t->spread.v, t->baseline_median_ms.v, t->speedup.v);
        if (t->speedup_vs_expert.set)
            temper_buf_printf(b, "; %.2fx the expert (%s)", t->speedup_vs_expert.v, t->expert ?: "");
        if (t->roofline_share.set)
            temper_buf_printf(b, "; %.1f%% of the roofline (%s bound)", 100 * t->roofline_share.v, t->bound ?: "");
        temper_buf_printf(b, "\n");
    }
}

/* A kernel as the prompt and completion show it: its source in a fenced block, then its
 * compiler options (a tune's points differ only in those). */
static void kernel_text(struct temper_buf *b, const char *lang, const char *source, const char *options)
{
    temper_buf_printf(b, "```%s\n%s%s```\nCompiler options: %s\n", lang, source ? source : "",
                      source && *source && source[strlen(source) - 1] != '\n' ? "\n" : "",
                      options && *options ? options : "(none)");
}

/* The prompt of a row: the task, its reference, and the base with its feedback (or the task's
 * baseline when there is no base). Caller frees. */
static char *prompt_text(json_t *row, const struct temper_result *base, struct task_info *ti, const char *lang)
{
    struct temper_buf b;
    temper_buf_init(&b, 64u << 20);
    json_t *spec = ti ? ti->spec : NULL;
    temper_buf_printf(&b, "Task: %s", str(row, "task") ?: "");
    if (spec)
        temper_buf_printf(&b, " (level %d): %s", (int)json_integer_value(json_object_get(spec, "level")),
                          str(spec, "summary") ?: "");
    temper_buf_printf(&b, "\nWrite a correct, fast %s kernel for temper (a candidate file with @temper directives).\n",
                      !strcmp(lang, "cuda") ? "CUDA" : "OpenCL");
    if (spec && json_is_object(json_object_get(spec, "spec"))) {
        char *text = json_dumps(json_object_get(spec, "spec"), JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        temper_buf_printf(&b, "\nSpecification (task.json):\n%s\n", text ? text : "");
        free(text);
    }
    if (spec && str(spec, "reference"))
        temper_buf_printf(&b, "\nReference (C, computed in double):\n```c\n%s```\n", str(spec, "reference"));
    if (json_is_integer(json_object_get(row, "base_id"))) {
        temper_buf_printf(&b, "\nA previous kernel (evaluation %lld):\n",
                          (long long)json_integer_value(json_object_get(row, "base_id")));
        kernel_text(&b, lang, str(row, "base_source"), str(row, "base_options"));
        temper_buf_printf(&b, "\nWhat temper reported for it:\n");
        feedback_text(&b, base);
        temper_buf_printf(&b, "\nWrite a faster kernel that stays correct.\n");
    } else {
        const char *baseline = spec ? str(spec, !strcmp(lang, "cuda") ? "baseline_cuda" : "baseline_opencl") : NULL;
        if (baseline) {
            temper_buf_printf(&b, "\nThe task's naive baseline:\n");
            kernel_text(&b, lang, baseline, "");
        }
        temper_buf_printf(&b, "\nWrite a kernel faster than the baseline.\n");
    }
    char *out = b.data ? b.data : strdup("");
    return out;
}

/* Writes one JSON object and a newline; TEMPER_EIO on failure. */
static int emit(struct export_state *st, json_t *record, json_t *row)
{
    if (!record)
        return temper_fail(st->msg, st->msg_size, TEMPER_ENOMEM, "building the record of evaluation %lld failed",
                           (long long)json_integer_value(json_object_get(row, "id")));
    int bad = json_dumpf(record, st->out, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII) ||
              fputc('\n', st->out) == EOF;
    json_decref(record);
    if (bad)
        return temper_fail(st->msg, st->msg_size, TEMPER_EIO, "writing the export failed");
    st->stats->records++;
    return 0;
}

/* Whether a row is an improving step: correct, with a base that was not correct or was slower,
 * and another kernel than its base (a re-timing of the same source and options is no step). */
static int improving(json_t *row)
{
    if (strcmp(str(row, "verdict") ?: "", "correct") || !json_is_integer(json_object_get(row, "base_id")))
        return 0;
    if (!strcmp(str(row, "candidate") ?: "", str(row, "base_candidate") ?: "-") &&
        !strcmp(str(row, "options") ?: "", str(row, "base_options") ?: ""))
        return 0;
    if (strcmp(str(row, "base_verdict") ?: "", "correct"))
        return 1;
    double ms = json_number_value(json_object_get(row, "median_ms"));
    double base_ms = json_number_value(json_object_get(row, "base_median_ms"));
    return ms > 0 && base_ms > 0 && ms < base_ms;
}

/* The sft or rl record of one row: (prompt, completion), with the reward or the base. New
 * reference. */
static json_t *pair_record(struct export_state *st, json_t *row, const struct row_results *rr, struct task_info *ti)
{
    const char *lang = language(&rr->result, str(row, "path"));
    char *prompt = prompt_text(row, &rr->base, ti, lang);
    struct temper_buf c;
    temper_buf_init(&c, 64u << 20);
    kernel_text(&c, lang, str(row, "source"), str(row, "options"));
    json_t *speedup = first_speedup(&rr->result);
    int correct = !strcmp(str(row, "verdict") ?: "", "correct");
    json_t *rec = json_pack("{s:s, s:O, s:O, s:O, s:s, s:s?, s:s?, s:O, s:o}", "format",
                            st->format == TEMPER_EXPORT_SFT ? "temper.export.sft/1" : "temper.export.rl/1", "eval_id",
                            json_object_get(row, "id"), "base_id", json_object_get(row, "base_id"), "task",
                            json_object_get(row, "task"), "language", lang, "prompt", prompt, "completion", c.data,
                            "verdict", json_object_get(row, "verdict"), "speedup", speedup);
    if (rec && st->format == TEMPER_EXPORT_SFT) {
        json_object_set_new(rec, "base_relation", copy_of(row, "base_relation"));
        json_object_set_new(rec, "base_verdict", copy_of(row, "base_verdict"));
        json_object_set_new(rec, "base_speedup", first_speedup(&rr->base));
    } else if (rec) {
        json_object_set_new(rec, "reward", json_real(temper_export_reward(correct, json_number_value(speedup))));
    }
    free(prompt);
    temper_buf_free(&c);
    return rec;
}

static int export_row(void *user, json_t *row)
{
    struct export_state *st = user;
    st->stats->evaluations++;
    const char *task_name = str(row, "task") ?: "";
    struct task_info *ti = task_get(st, task_name);
    if (!ti || !ti->spec)
        st->stats->no_task++;
    if (st->format == TEMPER_EXPORT_SFT && !improving(row))
        return 0;
    /* A store keeps a result as it was recorded: read it as stored, once. */
    struct row_results rr;
    memset(&rr.base, 0, sizeof(rr.base));
    if (temper_result_from_stored(json_object_get(row, "result"), &rr.result) ||
        temper_result_from_stored(json_object_get(row, "base_result"), &rr.base)) {
        temper_result_free(&rr.result);
        return temper_fail(st->msg, st->msg_size, TEMPER_ENOMEM, "reading the result of evaluation %lld failed",
                           (long long)json_integer_value(json_object_get(row, "id")));
    }
    json_t *rec = st->format == TEMPER_EXPORT_JSONL ? jsonl_record(row, &rr, ti) : pair_record(st, row, &rr, ti);
    temper_result_free(&rr.result);
    temper_result_free(&rr.base);
    return emit(st, rec, row);
}

int temper_export(struct temper_store *store, const struct temper_store_filter *filter,
                  enum temper_export_format format, const char *tasks_root, FILE *out,
                  struct temper_export_stats *stats, char *msg, size_t msg_size)
{
    struct temper_export_stats none;
    struct export_state st = {format, tasks_root, out, NULL, stats ? stats : &none, msg, msg_size};
    memset(st.stats, 0, sizeof(*st.stats));
    int err = temper_store_each_evaluation(store, filter, export_row, &st, msg, msg_size);
    tasks_free(st.tasks);
    if (!err && fflush(out))
        err = temper_fail(msg, msg_size, TEMPER_EIO, "writing the export failed");
    return err;
}
