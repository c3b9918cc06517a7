/* cmd_compare.c: `temper compare X Y`: two stored results (by store id) or candidate files side
 * by side; with --retime both are evaluated again through the session, interleaved in one batch
 * for several rounds, and the ratio of their times is shown with its spread (temper_metric_ratio). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "temper/bench.h"
#include "temper/kernel.h"
#include "temper/result.h"
#include "util/option.h"
#include "util/util.h"

#define COMPARE_MAX_ROUNDS 100

static void help(FILE *out)
{
    fprintf(out,
            "usage: temper compare X Y [--retime] [--rounds N] [--device D] [--time-budget S] [--json]\n\n"
            "Shows two results side by side: each of X and Y is a stored evaluation's id (`temper history`\n"
            "lists them) or a candidate file (evaluated now, both in one batch). With --retime both are\n"
            "evaluated again (a stored one from its stored source, knobs and compiler options), alternating\n"
            "X, Y, X, Y in one batch for N rounds, and the ratio of their times is the median over the rounds,\n"
            "with its range and spread. Every evaluation is recorded in the store (a re-timed stored one with\n"
            "that evaluation as its parent, and batch id \"compare\").\n\n"
            "  --retime              evaluate both again, interleaved\n"
            "  --rounds N            rounds of --retime (default 5)\n"
            "  --device D            cuda[:N] or opencl[:N] for evaluations (default: first CUDA device, else\n"
            "                        OpenCL)\n"
            "  --time-budget S       timing budget per bench shape of each evaluation (default 2 s)\n"
            "  --tasks DIR           where tasks are looked up\n"
            "  --json                print one JSON object\n\n"
            "exit status: 0 both correct, 1 either not correct, 2 bad usage or input (a missing file, an unknown\n"
            "store id), 3 no usable device, 4 the store failed\n");
}

/* One side of the comparison. */
struct side {
    const char *arg;         /* as given */
    int64_t stored_id;       /* the stored evaluation's id, or 0 for a file */
    json_t *stored;          /* its stored result, or NULL */
    char *source;            /* its stored source (caller frees), or NULL */
    char path[4096];         /* the file, or the stored candidate's path */
    const char *lang;        /* the stored candidate's language */
    struct temper_knob_value knobs[64]; /* its stored knob values (strings borrowed from stored) */
    int nknobs;                         /* how many */
    char extra[1024];        /* compiler options beyond its knobs and flags */
    json_t *results;         /* the results of this run's evaluations, in round order */
};

/* Reads a stored side's request back: language, knobs and extra compiler options. The stored
 * result is read as stored; its knobs object is stored's own (the reader holds a reference), so
 * the knob names and values stay borrowed from stored. */
static int stored_request(struct side *s, char *msg, size_t msg_size)
{
    struct temper_result r;
    if (temper_result_from_stored(s->stored, &r))
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory reading evaluation %lld",
                           (long long)s->stored_id);
    const char *cand_path = r.candidate ?: "<stored>.cl";
    snprintf(s->path, sizeof(s->path), "%s", cand_path);
    size_t n = strlen(cand_path);
    s->lang = n > 3 && !strcmp(cand_path + n - 3, ".cu") ? "cuda" : "opencl";
    const char *name;
    json_t *v;
    s->nknobs = 0;
    json_object_foreach(r.knobs, name, v) {
        if (s->nknobs == 64)
            break;
        s->knobs[s->nknobs++] = (struct temper_knob_value){name, TEMPER_KNOB_TEXT, 0, 0, json_string_value(v)};
    }
    struct temper_candidate cand;
    int err = temper_candidate_parse_lang(s->path, s->lang, s->source, strlen(s->source), &cand, msg, msg_size);
    if (err) {
        temper_result_free(&r);
        return err;
    }
    /* The options are the knobs' -D definitions, the candidate's flags, then the extra ones. */
    const char *options = r.options ?: "";
    const char *extra = options;
    if (cand.flags[0] && strstr(options, cand.flags)) {
        extra = strstr(options, cand.flags) + strlen(cand.flags);
    } else {
        while (extra && !strncmp(extra, "-D", 2) && (extra = strchr(extra, ' ')))
            extra++;
        extra = extra ? extra : "";
    }
    while (*extra == ' ')
        extra++;
    snprintf(s->extra, sizeof(s->extra), "%s", extra);
    temper_candidate_free(&cand);
    temper_result_free(&r);
    return 0;
}

/* Resolves X or Y: an existing file, else a store id. */
static int resolve(struct side *s, struct temper_store **store, char *msg, size_t msg_size)
{
    struct stat st;
    if (!stat(s->arg, &st)) {
        snprintf(s->path, sizeof(s->path), "%s", s->arg);
        return 0;
    }
    int64_t id;
    if (temper_parse_i64_option("compare", s->arg, 1, INT64_MAX, &id, msg, msg_size))
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "compare: '%s' is neither a file nor a stored evaluation's id",
                           s->arg);
    int err = *store ? 0 : cli_store_open_existing(store, msg, msg_size); /* none yet: the id names nothing */
    if (!err)
        err = temper_store_evaluation(*store, id, &s->stored, &s->source, msg, msg_size);
    if (err == TEMPER_ENOTFOUND)
        err = TEMPER_EINVALID; /* a bad id is bad input: exit 2 */
    if (err)
        return err;
    s->stored_id = id;
    if (!s->source)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "compare: evaluation %lld has no stored source", (long long)id);
    return 0;
}

/* A side's results, each read once into struct temper_result, as stored: a side evaluated now has
 * the session's results (in the one form), one that was not has its stored result. */
struct side_results {
    size_t n;                 /* results */
    struct temper_result *v; /* the results, in round order */
};

/* Reads a side's results (s->results); 0, or TEMPER_ENOMEM with nothing to free. */
static int side_results_read(const struct side *s, struct side_results *out)
{
    out->n = json_array_size(s->results);
    out->v = calloc(out->n ? out->n : 1, sizeof(*out->v));
    for (size_t i = 0; out->v && i < out->n; i++)
        if (temper_result_from_stored(json_array_get(s->results, i), &out->v[i])) {
            while (i--)
                temper_result_free(&out->v[i]);
            free(out->v);
            out->v = NULL;
        }
    return out->v ? 0 : TEMPER_ENOMEM;
}

static void side_results_free(struct side_results *rs)
{
    for (size_t i = 0; rs->v && i < rs->n; i++)
        temper_result_free(&rs->v[i]);
    free(rs->v);
}

/* The first bench shape's median time of a result, 0 when not timed. */
static double median_ms(const struct temper_result *r)
{
    const struct temper_result_timing *t = temper_result_first_timing(r);
    return t ? t->median_ms.v : 0;
}

/* The index of the result shown for a side: the first that is not correct, else the round of
 * median time. */
static size_t representative(const struct side_results *rs)
{
    size_t n = rs->n, i;
    for (i = 0; i < n; i++)
        if (!rs->v[i].verdict || strcmp(rs->v[i].verdict, "correct"))
            return i;
    double t[COMPARE_MAX_ROUNDS];
    for (i = 0; i < n; i++)
        t[i] = median_ms(&rs->v[i]);
    for (i = 0; i < n; i++) {
        int below = 0, above = 0;
        for (size_t j = 0; j < n; j++) {
            below += t[j] < t[i];
            above += t[j] > t[i];
        }
        if (2 * below <= (int)n && 2 * above <= (int)n)
            return i;
    }
    return 0;
}

/* A string, number or integer of a result as JSON (new references), null where it is null. */
static json_t *str_json(const char *v)
{
    return v ? json_string(v) : json_null();
}

static json_t *real_json(struct temper_opt_f64 v)
{
    return v.set ? json_real(v.v) : json_null();
}

static json_t *int_json(struct temper_opt_i64 v)
{
    return v.set ? json_integer((json_int_t)v.v) : json_null();
}

/* What a side shows (r: the result shown); a new reference. */
static json_t *side_json(const struct side *s, const struct temper_result *r)
{
    static const struct temper_result_timing untimed;
    const struct temper_result_timing *t = temper_result_first_timing(r) ?: &untimed;
    json_t *ids = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(s->results, i, e) {
        int64_t id = temper_session_result_store_id(e);
        json_array_append_new(ids, id ? json_integer(id) : json_null());
    }
    return json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "arg", s->arg,
                     "stored_id", s->stored_id ? json_integer(s->stored_id) : json_null(), "evaluations", ids,
                     "task", str_json(r->task), "candidate", str_json(r->candidate), "options", str_json(r->options),
                     "device", str_json(r->device), "verdict", str_json(r->verdict), "message", str_json(r->message),
                     "median_ms", real_json(t->median_ms), "spread", real_json(t->spread), "speedup",
                     real_json(t->speedup), "roofline_share", real_json(t->roofline_share), "parent_id",
                     int_json(r->parent_id), "made_by", str_json(r->made_by));
}

/* Prints one line of the side-by-side table. */
static void line(const char *label, json_t *a, json_t *b, const char *key, double scale, const char *fmt)
{
    printf("%-14s", label);
    json_t *v[2] = {json_object_get(a, key), json_object_get(b, key)};
    for (int i = 0; i < 2; i++) {
        char cell[512];
        if (json_is_string(v[i])) /* a client's origin, a file's name: shown safe for a terminal */
            cli_shown(json_string_value(v[i]), cell, sizeof(cell));
        else if (json_is_integer(v[i]))
            snprintf(cell, sizeof(cell), "%lld", (long long)json_integer_value(v[i]));
        else if (json_is_number(v[i]))
            snprintf(cell, sizeof(cell), fmt, scale * json_number_value(v[i]));
        else
            snprintf(cell, sizeof(cell), "-");
        printf(i ? "  %s\n" : "  %-38s", cell);
    }
}

static void print_table(json_t *out)
{
    json_t *x = json_object_get(out, "x"), *y = json_object_get(out, "y");
    line("", x, y, "arg", 1, "");
    line("task", x, y, "task", 1, "");
    line("candidate", x, y, "candidate", 1, "");
    line("options", x, y, "options", 1, "");
    line("device", x, y, "device", 1, "");
    line("verdict", x, y, "verdict", 1, "");
    line("median ms", x, y, "median_ms", 1, "%.4g");
    line("spread", x, y, "spread", 100, "%.1f%%");
    line("speedup", x, y, "speedup", 1, "%.3gx");
    line("roofline", x, y, "roofline_share", 100, "%.3g%%");
    line("parent", x, y, "parent_id", 1, "%g");
    line("made by", x, y, "made_by", 1, "");
    json_t *ratio = json_object_get(out, "ratio");
    if (json_is_number(json_object_get(ratio, "median"))) {
        double m = json_number_value(json_object_get(ratio, "median"));
        printf("\ntime X/Y      %.4g (%s %.3gx faster)", m, m > 1 ? "Y is" : "X is", m > 1 ? m : 1 / m);
        long long rounds = json_integer_value(json_object_get(ratio, "rounds"));
        if (rounds > 1)
            printf("; over %lld interleaved rounds: %.4g to %.4g, spread %.1f%%", rounds,
                   json_number_value(json_object_get(ratio, "min")), json_number_value(json_object_get(ratio, "max")),
                   100 * json_number_value(json_object_get(ratio, "spread")));
        printf("\n");
    } else {
        printf("\ntime X/Y      - (%s)\n", json_string_value(json_object_get(ratio, "why")) ?: "not timed");
    }
}

/* Submits one side's request for a round. */
static int submit_side(struct temper_session *session, struct side *s, const struct temper_session_request *base,
                       int64_t *id, char *msg, size_t msg_size)
{
    struct temper_session_request req = *base;
    req.path = s->path;
    if (s->stored) {
        req.source = s->source;
        req.lang = s->lang;
        req.knobs = s->knobs;
        req.nknobs = s->nknobs;
        req.extra_flags = s->extra[0] ? s->extra : NULL;
        req.parent_id = s->stored_id; /* lineage: a re-timing of that evaluation */
    }
    return temper_session_submit(session, &req, id, msg, msg_size);
}

/* The error of a result not evaluated at all (temper_session_result_error), its message in msg. The
 * session's result is in the one form: it is read strictly. */
static int unevaluated_error(json_t *result, char *msg, size_t msg_size)
{
    struct temper_result r;
    int err = temper_result_from_json(result, &r, msg, msg_size);
    if (err)
        return err;
    err = temper_fail(msg, msg_size, temper_session_result_error(result), "%s", r.message ?: "not evaluated");
    temper_result_free(&r);
    return err;
}

/* Evaluates what needs it (files, and with retime stored ones) for rounds rounds, X and Y
 * alternating, all queued before the first wait so that they run in one batch. */
static int evaluate(struct side *sides, int retime, int rounds, const char *device, const char *tasks_dir,
                    double budget_s, int *store_failed, char *msg, size_t msg_size)
{
    struct temper_session *session = NULL;
    int err = cli_session_open(&session, device, NULL, tasks_dir, 0, 0, msg, msg_size);
    if (err)
        return err;
    struct temper_session_request base = {0};
    base.seed = 1;
    base.secret_seed = temper_secret_seed() & 0x7fffffffffffffffull;
    base.secret_seed = base.secret_seed ? base.secret_seed : 1;
    base.time_budget_s = budget_s;
    base.batch_id = "compare";
    int64_t ids[COMPARE_MAX_ROUNDS][2] = {{0}};
    for (int r = 0; r < rounds && !err; r++)
        for (int i = 0; i < 2 && !err; i++)
            if (retime || !sides[i].stored)
                err = submit_side(session, &sides[i], &base, &ids[r][i], msg, msg_size);
    for (int r = 0; r < rounds && !err; r++)
        for (int i = 0; i < 2 && !err; i++) {
            if (!ids[r][i])
                continue;
            json_t *result = NULL;
            if ((err = temper_session_wait(session, ids[r][i], &result, msg, msg_size)))
                break;
            if (temper_session_result_error(result)) {
                err = unevaluated_error(result, msg, msg_size);
                json_decref(result);
                break;
            }
            if (temper_session_result_store_error(result)) {
                fprintf(stderr, "temper: %s\n", temper_session_result_store_error(result));
                ++*store_failed;
            }
            json_array_append_new(sides[i].results, result);
        }
    temper_session_close(session);
    return err;
}

/* The comparison (*out, a new reference) of two sides whose results are in, and the exit status
 * their verdicts give (*status). Returns 0, or TEMPER_ENOMEM. */
static int compare_output(const struct side *sides, int retime, json_t **out, int *status)
{
    struct side_results rs[2] = {{0}};
    if (side_results_read(&sides[0], &rs[0]) || side_results_read(&sides[1], &rs[1])) {
        side_results_free(&rs[0]);
        return TEMPER_ENOMEM;
    }
    const struct temper_result *rx = &rs[0].v[representative(&rs[0])], *ry = &rs[1].v[representative(&rs[1])];
    size_t nx = rs[0].n, ny = rs[1].n;
    size_t n = nx > ny ? nx : ny;
    double xs[COMPARE_MAX_ROUNDS], ys[COMPARE_MAX_ROUNDS];
    for (size_t r = 0; r < n; r++) {
        xs[r] = median_ms(&rs[0].v[r < nx ? r : nx - 1]);
        ys[r] = median_ms(&rs[1].v[r < ny ? r : ny - 1]);
    }
    struct temper_metric_ratio ratio;
    int same_task = !strcmp(rx->task ?: "", ry->task ?: "");
    temper_metric_ratio(xs, ys, same_task ? (int)n : 0, &ratio);
    json_t *rj = ratio.rounds ? json_pack("{s:i, s:f, s:f, s:f, s:f}", "rounds", ratio.rounds, "median", ratio.median,
                                          "min", ratio.min, "max", ratio.max, "spread", ratio.spread) :
                                json_pack("{s:i, s:n, s:s}", "rounds", 0, "median", "why",
                                          same_task ? "not both timed" : "different tasks");
    *out = json_pack("{s:o, s:o, s:o, s:b}", "x", side_json(&sides[0], rx), "y", side_json(&sides[1], ry), "ratio",
                     rj, "retimed", retime);
    const char *vx = rx->verdict, *vy = ry->verdict;
    *status = vx && vy && !strcmp(vx, "correct") && !strcmp(vy, "correct") ? CLI_OK : CLI_NOT_OK;
    side_results_free(&rs[0]);
    side_results_free(&rs[1]);
    return 0;
}

int cmd_compare(int argc, char **argv)
{
    static const struct option opts[] = {
        {"retime", no_argument, 0, 'r'},         {"rounds", required_argument, 0, 'n'},
        {"device", required_argument, 0, 'd'},   {"time-budget", required_argument, 0, 'B'},
        {"tasks", required_argument, 0, 't'},    {"json", no_argument, 0, 'j'},
        {"help", no_argument, 0, 'h'},           {0, 0, 0, 0}};
    const char *device = NULL, *tasks_dir = NULL;
    int retime = 0, rounds = 5, json = 0, c;
    double budget_s = 0;
    char msg[4096];
    while ((c = getopt_long(argc, argv, "d:h", opts, NULL)) != -1) {
        int bad = 0;
        if (c == 'r')
            retime = 1;
        else if (c == 'n')
            bad = temper_parse_int_option("--rounds", optarg, 1, COMPARE_MAX_ROUNDS, &rounds, msg, sizeof(msg));
        else if (c == 'd')
            device = optarg;
        else if (c == 'B')
            bad = temper_parse_double_option("--time-budget", optarg, 0.01, 3600, &budget_s, msg, sizeof(msg));
        else if (c == 't')
            tasks_dir = optarg;
        else if (c == 'j')
            json = 1;
        else
            return cli_help_exit(help, c == 'h');
        if (bad)
            return cli_usage_error(msg);
    }
    if (argc - optind != 2) {
        fprintf(stderr, "usage: temper compare X Y [--retime] [--rounds N] [--device D] [--json]\n");
        return CLI_USAGE;
    }
    struct side *sides = calloc(2, sizeof(*sides));
    if (!sides)
        return cli_error(TEMPER_ENOMEM, NULL);
    struct temper_store *store = NULL;
    int err = 0, store_failed = 0;
    for (int i = 0; i < 2 && !err; i++) {
        sides[i].arg = argv[optind + i];
        sides[i].results = json_array();
        err = resolve(&sides[i], &store, msg, sizeof(msg));
        if (!err && sides[i].stored && retime)
            err = stored_request(&sides[i], msg, sizeof(msg));
    }
    temper_store_close(store);
    int need_eval = retime || !sides[0].stored || !sides[1].stored;
    if (!err && need_eval)
        err = evaluate(sides, retime, retime ? rounds : 1, device, tasks_dir, budget_s, &store_failed, msg,
                       sizeof(msg));
    json_t *out = NULL;
    int status = CLI_OK;
    if (!err) {
        for (int i = 0; i < 2; i++)
            if (!json_array_size(sides[i].results))
                json_array_append(sides[i].results, sides[i].stored);
        err = compare_output(sides, retime, &out, &status);
    }
    for (int i = 0; i < 2; i++) {
        json_decref(sides[i].stored);
        json_decref(sides[i].results);
        free(sides[i].source);
    }
    free(sides);
    if (err)
        return cli_error(err, msg);
    if (json) {
        json_dumpf(out, stdout, JSON_INDENT(2));
        printf("\n");
    } else {
        print_table(out);
    }
    json_decref(out);
    if (store_failed) {
        fprintf(stderr, "temper: %d evaluation%s not stored (the store's message is above)\n", store_failed,
                store_failed == 1 ? " was" : "s were");
        return CLI_STORE;
    }
    return status;
}
