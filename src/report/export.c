/* export.c: `temper export`: the store's evaluations as data to train on (docs/export.md).
 * jsonl: one record per evaluation with the task's specification, the candidate's source and
 * its base's (lineage parent, or the run's best before it), who made it, the feedback temper
 * gave, the verdict and the metrics; sft: (prompt, completion) for each improving step; rl:
 * (prompt, completion, reward) for each evaluation. Streams: one evaluation in memory at once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "temper/error.h"
#include "temper/report.h"
#include "temper/task.h"
#include "temper/util.h"

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

static const char *str(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* A value of o, or null: a new reference. */
static json_t *copy_of(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return v ? json_incref(v) : json_null();
}

/* The first check (or bench check) that failed, with where it failed; null when none did. */
static json_t *failing_check(json_t *result)
{
    const char *lists[] = {"checks", "bench_checks"};
    for (int l = 0; l < 2; l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(result, lists[l]), i, c) {
            if (json_is_false(json_object_get(c, "passed")))
                return json_pack("{s:s, s:O?, s:O?, s:O?, s:O?, s:O?}", "kind", l ? "bench" : "check", "shape",
                                 json_object_get(c, "shape"), "seed", json_object_get(c, "seed"), "message",
                                 json_object_get(c, "message"), "mismatches", json_object_get(c, "mismatches"),
                                 "first_mismatch", json_object_get(c, "first_mismatch"));
        }
    }
    return json_null();
}

/* The timings as temper showed them: time, spread, baseline, speedups, roofline share. */
static json_t *timings_feedback(json_t *result)
{
    static const char *const keys[] = {"shape", "median_ms", "spread", "samples", "baseline_median_ms", "speedup",
                                       "expert", "expert_median_ms", "speedup_vs_expert", "roofline_floor_ms",
                                       "roofline_share", "bound", "flops", "bytes", "gbps", "tflops", "warning",
                                       NULL};
    json_t *out = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(result, "timings"), i, t) {
        json_t *o = json_object();
        for (int k = 0; keys[k]; k++)
            json_object_set_new(o, keys[k], copy_of(t, keys[k]));
        json_array_append_new(out, o);
    }
    return out;
}

/* The feedback temper gave for a result: its message, compile log, first failing check and
 * timings. New reference. */
static json_t *feedback(json_t *result)
{
    int64_t passed = 0, run = 0;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(result, "checks"), i, c) {
        run++;
        passed += json_is_true(json_object_get(c, "passed"));
    }
    return json_pack("{s:o, s:o, s:I, s:I, s:o, s:o, s:o, s:o}", "message", copy_of(result, "message"), "compile_log",
                     copy_of(result, "compile_log"), "checks_run", (json_int_t)run, "checks_passed",
                     (json_int_t)passed, "failing", failing_check(result), "timings", timings_feedback(result),
                     "warnings", copy_of(result, "warnings"), "same_code_as", copy_of(result, "same_code_as"));
}

/* The headline numbers of a result, from its first timing; null members when not timed. */
static json_t *metrics(json_t *result)
{
    json_t *t = json_array_get(json_object_get(result, "timings"), 0);
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "median_ms", copy_of(t, "median_ms"), "spread",
                     copy_of(t, "spread"), "speedup", copy_of(t, "speedup"), "speedup_vs_expert",
                     copy_of(t, "speedup_vs_expert"), "roofline_share", copy_of(t, "roofline_share"), "gbps",
                     copy_of(t, "gbps"), "tflops", copy_of(t, "tflops"));
}

/* The candidate's language: the device's, else from the file name. */
static const char *language(json_t *result, const char *path)
{
    const char *lang = str(json_object_get(result, "device_info"), "language");
    if (lang && *lang)
        return lang;
    size_t n = path ? strlen(path) : 0;
    return n > 3 && !strcmp(path + n - 3, ".cu") ? "cuda" : "opencl";
}

/* The jsonl record of one row. New reference. */
static json_t *jsonl_record(struct export_state *st, json_t *row, struct task_info *ti)
{
    json_t *result = json_object_get(row, "result");
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
                         "median_ms", json_object_get(row, "base_median_ms"), "speedup",
                         copy_of(json_array_get(json_object_get(json_object_get(row, "base_result"), "timings"), 0),
                                 "speedup"),
                         "feedback", feedback(json_object_get(row, "base_result")));
    (void)st;
    return json_pack("{s:s, s:O, s:O, s:O, s:o, s:{s:O, s:O, s:s, s:O, s:O, s:O}, s:o, s:{s:O, s:O, s:O}, "
                     "s:{s:O, s:O}, s:O, s:O, s:o, s:o}",
                     "format", "temper.export.jsonl/1", "eval_id", json_object_get(row, "id"), "run_id",
                     json_object_get(row, "run_id"), "created_at", json_object_get(row, "created_at"), "task", task,
                     "candidate", "hash", json_object_get(row, "candidate"), "path", json_object_get(row, "path"),
                     "language", language(result, str(row, "path")), "source", json_object_get(row, "source"),
                     "options", json_object_get(row, "options"), "knobs", json_object_get(row, "knobs"), "parent",
                     base, "origin", "operator", json_object_get(row, "operator"), "client",
                     json_object_get(row, "client"), "batch_id", json_object_get(row, "batch_id"), "device", "id",
                     json_object_get(row, "device"), "key", json_object_get(row, "device_key"), "verdict",
                     json_object_get(row, "verdict"), "message", json_object_get(row, "message"), "feedback",
                     feedback(result), "metrics", metrics(result));
}

/* Appends the feedback of a result as temper prints it, for a prompt. */
static void feedback_text(struct temper_buf *b, json_t *result)
{
    temper_buf_printf(b, "Verdict: %s. %s\n", str(result, "verdict") ?: "none", str(result, "message") ?: "");
    const char *log = str(result, "compile_log");
    if (log && *log)
        temper_buf_printf(b, "Compiler output:\n%s\n", log);
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(result, "timings"), i, t) {
        temper_buf_printf(b, "Timing at %s: %.4g ms (spread %.1f%%); baseline %.4g ms, speedup %.2fx",
                          str(t, "shape") ?: "", json_number_value(json_object_get(t, "median_ms")),
                          100 * json_number_value(json_object_get(t, "spread")),
                          json_number_value(json_object_get(t, "baseline_median_ms")),
                          json_number_value(json_object_get(t, "speedup")));
        if (json_is_number(json_object_get(t, "speedup_vs_expert")))
            temper_buf_printf(b, "; %.2fx the expert (%s)", json_number_value(json_object_get(t, "speedup_vs_expert")),
                              str(t, "expert") ?: "");
        if (json_is_number(json_object_get(t, "roofline_share")))
            temper_buf_printf(b, "; %.1f%% of the roofline (%s bound)",
                              100 * json_number_value(json_object_get(t, "roofline_share")), str(t, "bound") ?: "");
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
static char *prompt_text(json_t *row, struct task_info *ti, const char *lang)
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
        feedback_text(&b, json_object_get(row, "base_result"));
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

static int export_row(void *user, json_t *row)
{
    struct export_state *st = user;
    st->stats->evaluations++;
    const char *task_name = str(row, "task") ?: "";
    struct task_info *ti = task_get(st, task_name);
    if (!ti || !ti->spec)
        st->stats->no_task++;
    if (st->format == TEMPER_EXPORT_JSONL)
        return emit(st, jsonl_record(st, row, ti), row);
    if (st->format == TEMPER_EXPORT_SFT && !improving(row))
        return 0;
    json_t *result = json_object_get(row, "result");
    const char *lang = language(result, str(row, "path"));
    char *prompt = prompt_text(row, ti, lang);
    struct temper_buf c;
    temper_buf_init(&c, 64u << 20);
    kernel_text(&c, lang, str(row, "source"), str(row, "options"));
    json_t *t0 = json_array_get(json_object_get(result, "timings"), 0);
    json_t *speedup = copy_of(t0, "speedup");
    int correct = !strcmp(str(row, "verdict") ?: "", "correct");
    json_t *rec = json_pack("{s:s, s:O, s:O, s:O, s:s, s:s?, s:s?, s:O, s:o}", "format",
                            st->format == TEMPER_EXPORT_SFT ? "temper.export.sft/1" : "temper.export.rl/1", "eval_id",
                            json_object_get(row, "id"), "base_id", json_object_get(row, "base_id"), "task",
                            json_object_get(row, "task"), "language", lang, "prompt", prompt, "completion", c.data,
                            "verdict", json_object_get(row, "verdict"), "speedup", speedup);
    if (rec && st->format == TEMPER_EXPORT_SFT) {
        json_object_set_new(rec, "base_relation", copy_of(row, "base_relation"));
        json_object_set_new(rec, "base_verdict", copy_of(row, "base_verdict"));
        json_object_set_new(rec, "base_speedup",
                            copy_of(json_array_get(json_object_get(json_object_get(row, "base_result"), "timings"), 0),
                                    "speedup"));
    } else if (rec) {
        json_object_set_new(rec, "reward", json_real(temper_export_reward(correct, json_number_value(speedup))));
    }
    free(prompt);
    temper_buf_free(&c);
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
