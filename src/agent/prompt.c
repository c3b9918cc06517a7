/* prompt.c: the agent's prompts, built from named sections each cut to a hard bound (the task,
 * the device, the current best, recent attempts, a reflection, constraints, retrieved examples,
 * the target and the output contract), and one system prompt per role. A section's text comes
 * from what temper measured, never from the model's claims. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_impl.h"
#include "temper/error.h"
#include "temper/result.h"
#include "temper/task.h"
#include "util/util.h"

/* A section's name and the most characters it may hold in a prompt. */
static const struct {
    const char *name; /* its heading */
    size_t max_chars; /* its bound */
} sections[AGENT_SEC_COUNT] = {
    [AGENT_SEC_TASK] = {"task", 4000},
    [AGENT_SEC_DEVICE] = {"device", 1500},
    [AGENT_SEC_BEST] = {"current best", 1500},
    [AGENT_SEC_PARENT] = {"kernel to start from", 12000},
    [AGENT_SEC_ATTEMPTS] = {"recent attempts", 4000},
    [AGENT_SEC_REFLECTION] = {"reflection", 2000},
    [AGENT_SEC_CONSTRAINTS] = {"constraints", 1500},
    [AGENT_SEC_EXAMPLES] = {"retrieved examples", 5000},
    [AGENT_SEC_PLAN] = {"plan", 3000},
    [AGENT_SEC_FEEDBACK] = {"feedback", 14000},
    [AGENT_SEC_RESULT] = {"result", 3000},
    [AGENT_SEC_TARGET] = {"target", 600},
    [AGENT_SEC_CONTRACT] = {"output contract", 1500},
};

/* The sections each role's prompt carries, in order. */
static const enum agent_section role_sections[AGENT_ROLE_COUNT][AGENT_SEC_COUNT + 1] = {
    [AGENT_PLANNER] = {AGENT_SEC_TASK, AGENT_SEC_DEVICE, AGENT_SEC_BEST, AGENT_SEC_PARENT, AGENT_SEC_ATTEMPTS,
                       AGENT_SEC_REFLECTION, AGENT_SEC_CONSTRAINTS, AGENT_SEC_EXAMPLES, AGENT_SEC_TARGET,
                       AGENT_SEC_COUNT},
    [AGENT_CODER] = {AGENT_SEC_TASK, AGENT_SEC_DEVICE, AGENT_SEC_BEST, AGENT_SEC_PARENT, AGENT_SEC_ATTEMPTS,
                     AGENT_SEC_REFLECTION, AGENT_SEC_CONSTRAINTS, AGENT_SEC_EXAMPLES, AGENT_SEC_PLAN, AGENT_SEC_TARGET,
                     AGENT_SEC_CONTRACT, AGENT_SEC_COUNT},
    [AGENT_DEBUGGER] = {AGENT_SEC_TASK, AGENT_SEC_DEVICE, AGENT_SEC_FEEDBACK, AGENT_SEC_CONSTRAINTS,
                        AGENT_SEC_CONTRACT, AGENT_SEC_COUNT},
    [AGENT_JUDGE] = {AGENT_SEC_TASK, AGENT_SEC_DEVICE, AGENT_SEC_BEST, AGENT_SEC_PARENT, AGENT_SEC_RESULT,
                     AGENT_SEC_ATTEMPTS, AGENT_SEC_COUNT},
};

static const char *const role_names[AGENT_ROLE_COUNT] = {"planner", "coder", "debugger", "judge"};

static const char *const system_prompts[AGENT_ROLE_COUNT] = {
    [AGENT_PLANNER] =
        "You are the planner of temper's kernel agent. temper compiles GPU kernels, checks them against a trusted "
        "C reference on many shapes (odd sizes, tails, a secret seed), times them against the task's baseline and "
        "tunes their knobs. Read the task, the device, the current best kernel with its bottleneck, the recent "
        "attempts and the reflection, then propose ONE strategy for a faster correct kernel in at most eight "
        "sentences: what to change, why it addresses the bottleneck, which knobs a tuner should search, and the "
        "risk to correctness. Write no code.",
    [AGENT_CODER] =
        "You are the coder of temper's kernel agent. Write one complete kernel that implements the plan for the "
        "task and the device given, following the output contract exactly. The kernel must be correct for every "
        "shape, including sizes that are not multiples of any block or vector width and very large ones: a kernel "
        "that writes only part of the output, skips a tail, or special-cases the check shapes is judged incorrect. "
        "Prefer compile-time knobs (@temper param) over fixed constants so that the tuner can finish the work.",
    [AGENT_DEBUGGER] =
        "You are the debugger of temper's kernel agent. A kernel failed to compile or failed temper's checks; the "
        "feedback gives the kernel and what the compiler or the checker said. Find the cause and return the whole "
        "repaired kernel following the output contract. Change only what the failure needs.",
    [AGENT_JUDGE] =
        "You are the judge of temper's kernel agent. A correct kernel was timed on the device. From its result "
        "(time, roofline share, the harness's memory- or compute-bound model, speedup over the baseline) and the "
        "device's measured ceilings, name the bottleneck: memory-bound, compute-bound or latency-bound, with the "
        "evidence in numbers. Then write a reflection for the next attempts: lines beginning 'Avoid:' and "
        "'Try:'. At most twelve lines; no code.",
};

const char *agent_role_name(enum agent_role role)
{
    return role_names[role];
}

const char *agent_section_name(enum agent_section sec)
{
    return sections[sec].name;
}

const char *agent_system_prompt(enum agent_role role)
{
    return system_prompts[role];
}

char *agent_user_prompt(enum agent_role role, const struct agent_sections *sec)
{
    struct temper_buf b;
    temper_buf_init(&b, 1u << 20);
    for (const enum agent_section *s = role_sections[role]; *s != AGENT_SEC_COUNT; s++) {
        const char *text = sec->text[*s];
        if (!text || !*text)
            continue;
        size_t len = strlen(text), max = sections[*s].max_chars;
        temper_buf_printf(&b, "%s## %s\n", b.len ? "\n" : "", sections[*s].name);
        if (len > max) {
            /* cut at a line where one is near, and say so */
            size_t cut = max;
            for (size_t k = max; k > max * 3 / 4; k--)
                if (text[k] == '\n') {
                    cut = k;
                    break;
                }
            temper_buf_append(&b, text, cut);
            temper_buf_printf(&b, "\n[... %zu more characters cut]\n", len - cut);
        } else {
            temper_buf_append(&b, text, len);
            if (text[len - 1] != '\n')
                temper_buf_append(&b, "\n", 1);
        }
    }
    char *out = strdup(b.data ? b.data : "");
    temper_buf_free(&b);
    return out;
}

/* Finishes a buffer into a string the caller frees. */
static char *take(struct temper_buf *b)
{
    char *out = strdup(b->data ? b->data : "");
    temper_buf_free(b);
    return out;
}

char *agent_section_task(const struct temper_task *t, const char *lang)
{
    struct temper_buf b;
    temper_buf_init(&b, 1u << 16);
    temper_buf_printf(&b, "%s (level %d): %s\n", t->name, t->level, t->summary);
    temper_buf_printf(&b, "Language: %s. Arguments, in kernel order:\n", lang);
    for (int i = 0; i < t->nargs; i++) {
        const struct temper_task_arg *a = &t->args[i];
        temper_buf_printf(&b, "- %s: %s %s", a->name, temper_role_name(a->role), temper_dtype_name(a->dtype));
        if (a->ndim) {
            temper_buf_printf(&b, " [");
            for (int d = 0; d < a->ndim; d++)
                temper_buf_printf(&b, "%s%s", d ? ", " : "", a->shape[d]);
            temper_buf_printf(&b, "]");
        }
        temper_buf_printf(&b, "\n");
    }
    temper_buf_printf(&b, "FLOPs: %s. Bytes that must move: %s.\n", t->flops, t->bytes);
    temper_buf_printf(&b, "Tolerance: atol %g, rtol %g (elementwise against the C reference in double).\n", t->atol,
                      t->rtol);
    char shape[256];
    temper_buf_printf(&b, "Check shapes:");
    for (int i = 0; i < t->ncheck; i++) {
        temper_shape_format(&t->check[i], shape, sizeof(shape));
        temper_buf_printf(&b, "%s %s", i ? ";" : "", shape);
    }
    temper_buf_printf(&b, "\nBench shapes (GPU):");
    for (int i = 0; i < t->nbench_gpu; i++) {
        temper_shape_format(&t->bench_gpu[i], shape, sizeof(shape));
        temper_buf_printf(&b, "%s %s", i ? ";" : "", shape);
    }
    temper_buf_printf(&b, "\nBench shapes (CPU):");
    for (int i = 0; i < t->nbench_cpu; i++) {
        temper_shape_format(&t->bench_cpu[i], shape, sizeof(shape));
        temper_buf_printf(&b, "%s %s", i ? ";" : "", shape);
    }
    temper_buf_printf(&b, "\nEvery output element is compared at every check shape, with a public and a secret seed.\n");
    return take(&b);
}

char *agent_section_device(json_t *info, json_t *ceilings)
{
    struct temper_buf b;
    temper_buf_init(&b, 1u << 14);
    const char *name = json_string_value(json_object_get(info, "name"));
    const char *cls = json_string_value(json_object_get(info, "class"));
    temper_buf_printf(&b, "%s (%s, %s, %s)\n", name ? name : "unknown", json_string_value(json_object_get(info, "id")) ?: "?",
                      cls ? cls : "?", json_string_value(json_object_get(info, "compiler")) ?: "?");
    int cc = (int)json_integer_value(json_object_get(info, "cc_major"));
    if (cc)
        temper_buf_printf(&b, "Compute capability %d.%d. ", cc, (int)json_integer_value(json_object_get(info, "cc_minor")));
    temper_buf_printf(&b, "%lld compute units at %lld MHz; %.1f GiB global memory; %lld KiB shared/local memory "
                          "per block (%lld KiB opt-in); %lld KiB cache; at most %lld threads per block.\n",
                      (long long)json_integer_value(json_object_get(info, "compute_units")),
                      (long long)json_integer_value(json_object_get(info, "clock_mhz")),
                      (double)json_integer_value(json_object_get(info, "global_mem_bytes")) / (1 << 30),
                      (long long)json_integer_value(json_object_get(info, "local_mem_bytes")) / 1024,
                      (long long)json_integer_value(json_object_get(info, "local_mem_optin_bytes")) / 1024,
                      (long long)json_integer_value(json_object_get(info, "cache_bytes")) / 1024,
                      (long long)json_integer_value(json_object_get(info, "max_work_group")));
    if (ceilings && json_is_object(ceilings)) {
        temper_buf_printf(&b, "Measured ceilings:");
        const char *key;
        json_t *v;
        int first = 1;
        json_object_foreach(ceilings, key, v)
        {
            size_t n = strlen(key);
            int gb = n > 4 && !strcmp(key + n - 4, "_gbs"), gf = n > 7 && !strcmp(key + n - 7, "_gflops");
            if (json_is_number(v) && (gb || gf)) {
                temper_buf_printf(&b, "%s %s %.1f %s", first ? "" : ";", key, json_number_value(v),
                                  gb ? "GB/s" : "GFLOP/s");
                first = 0;
            }
        }
        temper_buf_printf(&b, "\n");
    } else {
        temper_buf_printf(&b, "Ceilings: not measured yet (`temper calibrate` measures them).\n");
    }
    return take(&b);
}

/* The agent's results come from the session (an evaluation it just ran) or from a tune's best,
 * which may be a result the store held (an interrupted tune's best screening point): each is read
 * once, as the store's are, through the generated reader (on a result in the one form it reads what
 * the strict reader reads). Out of memory, r is left empty: the sections then say "unknown". */
static void result_read(json_t *json, struct temper_result *r)
{
    temper_result_from_stored(json, r);
}

/* The bound of a timing as a constant, so that it outlives the result it was read from: the
 * harness writes `memory` or `compute` (docs/result.md); NULL for anything else. */
static const char *bound_name(const char *bound)
{
    if (bound && !strcmp(bound, "memory"))
        return "memory";
    if (bound && !strcmp(bound, "compute"))
        return "compute";
    return NULL;
}

static void result_numbers(const struct temper_result *r, double *median_ms, double *share, double *speedup,
                           const char **bound)
{
    *median_ms = *share = *speedup = NAN;
    *bound = NULL;
    size_t n = r->timings.n;
    if (!n)
        return;
    /* the sum over bench shapes, the geometric mean of the ratios */
    double sum = 0, logsp = 0, logsh = 0;
    int nsp = 0, nsh = 0;
    for (size_t i = 0; i < n; i++) {
        const struct temper_result_timing *t = &r->timings.v[i];
        sum += t->median_ms.set ? t->median_ms.v : 0;
        if (t->speedup.set && t->speedup.v > 0) {
            logsp += log(t->speedup.v);
            nsp++;
        }
        if (t->roofline_share.set && t->roofline_share.v > 0) {
            logsh += log(t->roofline_share.v);
            nsh++;
        }
    }
    *median_ms = sum;
    if (nsp)
        *speedup = exp(logsp / nsp);
    if (nsh)
        *share = exp(logsh / nsh);
    *bound = bound_name(temper_result_first_timing(r)->bound);
}

void agent_result_numbers(json_t *result, double *median_ms, double *share, double *speedup, const char **bound)
{
    struct temper_result r;
    result_read(result, &r);
    result_numbers(&r, median_ms, share, speedup, bound);
    temper_result_free(&r);
}

/* A number of a timing as the prompts print it: 0 where it is null. */
static double num_of(struct temper_opt_f64 v)
{
    return v.set ? v.v : 0;
}

static char *best_text(const struct temper_result *r, const char *label)
{
    struct temper_buf b;
    temper_buf_init(&b, 1u << 14);
    double ms, share, speedup;
    const char *bound;
    result_numbers(r, &ms, &share, &speedup, &bound);
    temper_buf_printf(&b, "%s: verdict %s", label, r->verdict ? r->verdict : "unknown");
    if (!isnan(ms))
        temper_buf_printf(&b, ", %.4g ms over the bench shapes", ms);
    if (!isnan(speedup))
        temper_buf_printf(&b, ", %.3gx the baseline", speedup);
    if (!isnan(share))
        temper_buf_printf(&b, ", %.1f%% of the roofline", share * 100);
    temper_buf_printf(&b, ".\n");
    if (json_object_size(r->knobs)) {
        char *k = json_dumps(r->knobs, JSON_COMPACT | JSON_SORT_KEYS);
        temper_buf_printf(&b, "Knobs: %s.\n", k ? k : "");
        free(k);
    }
    if (bound) {
        const struct temper_result_timing *t = temper_result_first_timing(r);
        temper_buf_printf(&b,
                          "Bottleneck by the harness's roofline model: %s-bound at %s (the roofline floor is %.4g ms, "
                          "%.3g GB/s achieved against the measured copy ceiling, %.3g TFLOP/s).\n",
                          bound, t->shape ? t->shape : "?", num_of(t->roofline_floor_ms), num_of(t->gbps),
                          num_of(t->tflops));
        if (!isnan(share) && share < 0.2)
            temper_buf_printf(&b, "At %.1f%% of the roofline it is far from both ceilings: latency (too little "
                                  "parallelism or work in flight, serial dependences, barriers, occupancy) limits it "
                                  "more than bandwidth or arithmetic.\n", share * 100);
    } else {
        temper_buf_printf(&b, "Not timed: no roofline share or bottleneck is known.\n");
    }
    if (json_is_object(r->profile) || json_is_array(r->profile)) {
        char *p = json_dumps(r->profile, JSON_COMPACT | JSON_SORT_KEYS);
        temper_buf_printf(&b, "Profiler metrics: %s\n", p ? p : "");
        free(p);
    }
    return take(&b);
}

char *agent_section_best(json_t *result, const char *label)
{
    if (!result) {
        struct temper_buf b;
        temper_buf_init(&b, 1u << 14);
        temper_buf_printf(&b, "No kernel has been judged yet; the kernel to start from is %s.\n", label);
        return take(&b);
    }
    struct temper_result r;
    result_read(result, &r);
    char *text = best_text(&r, label);
    temper_result_free(&r);
    return text;
}

static char *feedback_text(const struct temper_result *r, int error_chars)
{
    struct temper_buf b;
    temper_buf_init(&b, 1u << 20);
    temper_buf_printf(&b, "Verdict: %s. %s\n", r->verdict ? r->verdict : "unknown", r->message ? r->message : "");
    const char *log = r->compile_log;
    if (log && *log) {
        size_t n = strlen(log);
        temper_buf_printf(&b, "Compiler output%s:\n%.*s\n", (int)n > error_chars ? " (cut)" : "",
                          (int)n > error_chars ? error_chars : (int)n, log);
    }
    int shown = 0;
    for (size_t i = 0; i < r->checks.n; i++) {
        const struct temper_result_check *c = &r->checks.v[i];
        if ((c->passed.set && c->passed.v) || shown >= 4)
            continue;
        shown++;
        const char *m = c->message;
        json_t *mismatch = c->first_mismatch ? temper_result_mismatch_to_json(c->first_mismatch) : NULL;
        char *first = mismatch ? json_dumps(mismatch, JSON_COMPACT) : NULL;
        json_decref(mismatch);
        char nonfinite[96] = "";
        if (c->nonfinite.v > 0)
            snprintf(nonfinite, sizeof(nonfinite), " (over the finite outputs; %lld of %lld outputs NaN or inf)",
                     (long long)c->nonfinite.v, (long long)c->elements.v);
        temper_buf_printf(&b, "Failed check at %s (%s seed): %lld mismatches, max abs err %g, max rel err %g%s%s%s%s%s\n",
                          c->shape ? c->shape : "?", c->seed ? c->seed : "?", (long long)c->mismatches.v,
                          num_of(c->max_abs_err), num_of(c->max_rel_err), nonfinite, m ? "; " : "", m ? m : "",
                          first ? "; first mismatch " : "", first ? first : "");
        free(first);
    }
    if (b.len > (size_t)error_chars * 2) {
        b.data[error_chars * 2] = 0;
        b.len = (size_t)error_chars * 2;
    }
    return take(&b);
}

char *agent_result_feedback(json_t *result, int error_chars)
{
    struct temper_result r;
    result_read(result, &r);
    char *text = feedback_text(&r, error_chars);
    temper_result_free(&r);
    return text;
}

char *agent_section_result(json_t *result, int error_chars)
{
    struct temper_result r;
    result_read(result, &r);
    char *best = best_text(&r, "This kernel");
    char *fb = feedback_text(&r, error_chars);
    struct temper_buf b;
    temper_buf_init(&b, 1u << 20);
    temper_buf_printf(&b, "%s", best ? best : "");
    for (size_t i = 0; i < r.timings.n; i++) {
        const struct temper_result_timing *t = &r.timings.v[i];
        temper_buf_printf(&b, "At %s: median %.4g ms (spread %.2g), baseline %.4g ms, roofline floor %.4g ms.\n",
                          t->shape ? t->shape : "?", num_of(t->median_ms), num_of(t->spread),
                          num_of(t->baseline_median_ms), num_of(t->roofline_floor_ms));
    }
    if (!r.timings.n)
        temper_buf_printf(&b, "%s", fb ? fb : "");
    free(best);
    free(fb);
    temper_result_free(&r);
    return take(&b);
}

char *agent_section_target(json_t *best, const char *baseline_label, int no_timing)
{
    struct temper_buf b;
    temper_buf_init(&b, 4096);
    double ms, share, speedup;
    const char *bound;
    agent_result_numbers(best, &ms, &share, &speedup, &bound);
    if (no_timing)
        temper_buf_printf(&b, "A correct kernel (this run checks correctness only, without timing).\n");
    else if (!isnan(ms))
        temper_buf_printf(&b, "A correct kernel at least 10%% faster than %.4g ms (the current best), which is "
                              "%.1f%% of the roofline.\n", ms * 0.9, isnan(share) ? 0 : share * 100);
    else
        temper_buf_printf(&b, "A correct kernel faster than %s.\n", baseline_label);
    return take(&b);
}

char *agent_section_contract(const struct temper_task *t, const char *lang)
{
    struct temper_buf b;
    temper_buf_init(&b, 8192);
    int cuda = !strcmp(lang, "cuda");
    temper_buf_printf(&b,
                      "Reply with exactly one fenced code block (```%s ... ```) holding the whole kernel file, and "
                      "nothing after it but at most three sentences. The file starts with temper's directives in "
                      "comments:\n"
                      "// @temper task %s\n"
                      "// @temper param NAME V1 V2 ...   (knobs: compile-time constants the tuner searches; welcome)\n"
                      "// @temper require EXPR           (constraints on knobs, e.g. 1024 %% BLOCK == 0)\n"
                      "// @temper launch KERNEL grid(EXPR[, EXPR]) block(EXPR[, EXPR]) args(",
                      cuda ? "cuda" : "c", t->name);
    for (int i = 0; i < t->nargs; i++)
        temper_buf_printf(&b, "%s%s", i ? ", " : "", t->args[i].name);
    temper_buf_printf(&b, ")\n"
                          "Grid and block expressions use the task's sizes and the knobs; grid counts %s. "
                          "Arguments come in the order above: arrays as %s pointers to their element type "
                          "(f32: float; f16 and bf16 hold raw bits: unsigned short, converted by the kernel), "
                          "an i32 scalar as int, an i64 scalar as %s. Only the standard %s headers are allowed.\n",
                      cuda ? "blocks" : "work-groups", cuda ? "device" : "__global", cuda ? "long long" : "long",
                      cuda ? "CUDA" : "OpenCL C");
    return take(&b);
}

char *agent_section_source(const char *heading, const char *source, const char *lang)
{
    struct temper_buf b;
    temper_buf_init(&b, 1u << 20);
    temper_buf_printf(&b, "%s\n```%s\n%s%s```\n", heading, strcmp(lang, "cuda") ? "c" : "cuda", source,
                      *source && source[strlen(source) - 1] == '\n' ? "" : "\n");
    return take(&b);
}
