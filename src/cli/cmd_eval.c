/* cmd_eval.c: `temper eval FILE`: the verdict for one candidate kernel, recorded in the store. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "eval/eval_internal.h"
#include "temper/result.h"
#include "util/option.h"
#include "util/util.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: temper eval FILE... [--device D] [--set NAME=VALUE ...] [--no-timing] [--json]\n"
            "       temper eval - --lang cuda|opencl [options]   (the candidate on standard input)\n\n"
            "Checks a candidate kernel (.cu or .cl with @temper directives) against its task's C reference\n"
            "on every check shape with a public and a secret seed, against the task's baseline at the bench\n"
            "shapes, and times it against the baseline. Prints the verdict: correct, incorrect,\n"
            "compile_error, runtime_error, timeout or invalid. Every evaluation is recorded in the store.\n\n"
            "  --device D            cuda[:N] or opencl[:N] (default: first CUDA device, else OpenCL)\n"
            "  --set NAME=VALUE      set a knob (a param of the candidate); repeatable\n"
            "  --no-timing           correctness only\n"
            "  --lang L              cuda, opencl or triton: the candidates' language, over their files' extensions\n"
            "                        (a file's extension gives it otherwise); required for standard input\n"
            "                        (FILE '-')\n"
            "  --keep-going          after a failed check, check every other shape too and report each\n"
            "  --json                print one JSON object\n"
            "  --tasks DIR           where tasks are looked up\n"
            "  --seed N              the public seed (default 1); a secret one is drawn every run\n"
            "  --launch-timeout S    kill a launch that runs longer (default 5 s; on OpenCL the first\n"
            "                        launch of each work-group shape may take 30 s more, as runtimes\n"
            "                        such as PoCL compile then)\n"
            "  --time-budget S       timing budget per bench shape (default 2 s)\n"
            "  --no-store            do not record the evaluation\n"
            "  --reuse-same-code     a candidate with the source, knobs and compiled code of one evaluated\n"
            "                        before in this run takes that result (\"same_code_as\") instead of\n"
            "                        running: for batches with repeats, such as RL rollouts\n"
            "  --jobs N              compile processes at a time (default: one per core)\n"
            "  --sanitize[=strict]   CUDA: for a correct kernel, also run compute-sanitizer's memcheck,\n"
            "                        racecheck, initcheck and synccheck on its check shapes and report each\n"
            "                        tool's errors and warnings (racecheck's hazards by kind); errors make it\n"
            "                        incorrect, and with =strict any hazard, warnings included (not\n"
            "                        supported on OpenCL: the result says so)\n"
            "  --profile             CUDA: for a correct kernel, also run Nsight Compute on its launches at\n"
            "                        the first bench shape (duration, DRAM throughput, occupancy, registers,\n"
            "                        local memory)\n\n"
            "Several files are evaluated in one run with one secret seed: one line each (one JSON object per\n"
            "line with --json), compiling ahead of the device runs where the backend allows. A file that is\n"
            "missing or cannot be read gets an invalid result and the others are still evaluated. A timing\n"
            "whose spread is over 10%%, or taken while the load average exceeded the cores, says so.\n\n"
            "exit status: 0 correct, 1 evaluated but not correct, 2 bad usage or input (or a file that could\n"
            "not be evaluated at all), 3 no usable device, 4 the store failed (a write failed, or the store is damaged; the\n"
            "message names the file)\n");
}

/* What the run has seen so far. */
struct eval_output {
    int json;        /* 1: JSON (one object per line for several) */
    int n;           /* candidates */
    int correct;     /* counts by outcome */
    int not_correct;
    int failed;      /* not evaluated at all */
    int failed_err;  /* the error of the last of those */
    int store_failed; /* results that could not be recorded */
};

/* One line of a result among several: the candidate, verdict, time and message. */
static void print_line(const struct temper_result *r)
{
    const struct temper_result_timing *t = temper_result_first_timing(r);
    printf("%-44s %-13s", r->candidate, r->verdict);
    if (t)
        printf(" %9.4g ms %6.2fx", t->median_ms.v, t->speedup.v);
    printf("  %s", r->message);
    json_t *san = r->sanitize;
    if (json_is_object(san) && !(r->verdict && strcmp(r->verdict, "correct") && json_object_get(san, "memcheck"))) {
        char summary[1024]; /* a failing verdict's message already holds it */
        temper_sanitize_summary(san, summary, sizeof(summary));
        printf(" [sanitize: %s]", summary);
    }
    /* A timed line says its timing's warning, where it has one. */
    if (t && t->warning)
        printf(" (timing: %s)", t->warning);
    printf("\n");
}

/* Prints one result as it comes, in the order the files were given; takes result's reference. The
 * session's result is in the one form: it is read strictly, once. */
static void print_result(struct eval_output *o, json_t *result)
{
    char msg[1024];
    struct temper_result r;
    if (temper_result_from_json(result, &r, msg, sizeof(msg)))
        fprintf(stderr, "temper: %s\n", msg); /* a bug of the session's: r reads as all nulls */
    const char *verdict = r.verdict;
    int err = temper_session_result_error(result);
    if (err) {
        fprintf(stderr, "temper: %s\n", r.message);
        o->failed++;
        o->failed_err = err;
    } else {
        int correct = verdict && !strcmp(verdict, "correct");
        o->correct += correct;
        o->not_correct += !correct;
    }
    o->store_failed += temper_session_result_store_error(result) != NULL;
    if (o->json) {
        json_dumpf(result, stdout, o->n > 1 ? JSON_COMPACT : JSON_INDENT(2));
        printf("\n");
    } else if (o->n == 1) {
        if (!err)
            temper_eval_print(stdout, result);
    } else {
        print_line(&r);
    }
    fflush(stdout);
    temper_result_free(&r);
    json_decref(result);
}

/* The command line of one eval run, as given. The request points into knobs and names: the struct
 * is not copied once parsed. */
struct eval_options {
    struct temper_session_request req; /* what every candidate is evaluated with */
    struct temper_limits limits;       /* the session's limits */
    const char *device;                /* --device, or NULL: the default */
    const char *tasks_dir;             /* --tasks, or NULL */
    struct temper_knob_value knobs[64]; /* the --set NAME=VALUE options: text values, as written */
    char names[64][TEMPER_NAME_MAX];   /* their names */
    int nknobs;                        /* how many */
    int json;                          /* --json */
    int jobs;                          /* --jobs (0: one per core) */
};

static const struct option eval_opts[] = {
    {"device", required_argument, 0, 'd'},   {"set", required_argument, 0, 's'},
    {"no-timing", no_argument, 0, 'n'},      {"json", no_argument, 0, 'j'},
    {"tasks", required_argument, 0, 't'},    {"seed", required_argument, 0, 'S'},
    {"launch-timeout", required_argument, 0, 'L'}, {"time-budget", required_argument, 0, 'B'},
    {"no-store", no_argument, 0, 'N'},       {"jobs", required_argument, 0, 'J'},
    {"sanitize", optional_argument, 0, 'Z'},       {"profile", no_argument, 0, 'P'},
    {"checks-only", no_argument, 0, 'C'},    {"profile-run", no_argument, 0, 'R'},
    {"reuse-same-code", no_argument, 0, 'U'}, {"help", no_argument, 0, 'h'},
    {"lang", required_argument, 0, 'l'},     {"keep-going", no_argument, 0, 'K'},
    {0, 0, 0, 0}};

/* One --set NAME=VALUE into o's knobs, as text. Returns nonzero when it cannot be one (said on
 * stderr, in the words the evaluation uses for a value the candidate does not take). */
static int parse_set(struct eval_options *o, const char *assignment)
{
    const char *eq = strchr(assignment, '=');
    if (o->nknobs == 64) {
        fprintf(stderr, "temper: too many --set options\n");
        return -1;
    }
    if (!eq || eq == assignment) {
        fprintf(stderr, "temper: --set %s: expected NAME=VALUE\n", assignment);
        return -1;
    }
    size_t n = (size_t)(eq - assignment);
    if (n >= TEMPER_NAME_MAX) { /* longer than any knob's name */
        fprintf(stderr, "temper: --set %s: the candidate has no param '%.*s'\n", assignment, (int)n, assignment);
        return -1;
    }
    memcpy(o->names[o->nknobs], assignment, n);
    o->names[o->nknobs][n] = 0;
    o->knobs[o->nknobs] = (struct temper_knob_value){.name = o->names[o->nknobs], .kind = TEMPER_KNOB_TEXT,
                                                     .text = eq + 1};
    o->nknobs++;
    return 0;
}

/* Reads the options into o, the defaults first, and checks that files are named. Returns
 * CLI_CONTINUE, or the exit status for --help, an unknown option or a bad value (said on stderr). */
static int parse_eval_options(int argc, char **argv, struct eval_options *o)
{
    memset(o, 0, sizeof(*o));
    temper_limits_default(&o->limits);
    o->req.seed = 1;
    struct temper_session_request *req = &o->req;
    char optmsg[256];
    int64_t seed = 1;
    int c;
    while ((c = getopt_long(argc, argv, "d:s:h", eval_opts, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 'd': o->device = optarg; break;
        case 's':
            if (parse_set(o, optarg))
                return CLI_USAGE;
            break;
        case 'n': req->no_timing = 1; break;
        case 'j': o->json = 1; break;
        case 't': o->tasks_dir = optarg; break;
        case 'S':
            bad = temper_parse_i64_option("--seed", optarg, 0, INT64_MAX, &seed, optmsg, sizeof(optmsg));
            req->seed = (uint64_t)seed;
            break;
        case 'L':
            bad = temper_parse_double_option("--launch-timeout", optarg, 0.01, 3600, &o->limits.launch_timeout_s,
                                             optmsg, sizeof(optmsg));
            break;
        case 'B':
            bad = temper_parse_double_option("--time-budget", optarg, 0.01, 3600, &req->time_budget_s, optmsg,
                                             sizeof(optmsg));
            break;
        case 'N': req->no_store = 1; break;
        case 'J': bad = temper_parse_int_option("--jobs", optarg, 1, 1024, &o->jobs, optmsg, sizeof(optmsg)); break;
        case 'Z':
            req->sanitize = !optarg ? TEMPER_SANITIZE_REPORT : !strcmp(optarg, "strict") ? TEMPER_SANITIZE_STRICT : 0;
            if (!req->sanitize) {
                snprintf(optmsg, sizeof(optmsg), "--sanitize takes no value or =strict, not '%s'", optarg);
                bad = 1;
            }
            break;
        case 'P': req->profile = 1; break;
        case 'C': req->checks_only = 1; break;
        case 'R': req->profile_run = 1; break;
        case 'U': req->reuse_same_code = 1; break;
        case 'l':
            if (temper_lang_parse(optarg) < 0) {
                fprintf(stderr, "temper: --lang: '%s' is not a language (cuda, opencl or triton)\n", optarg);
                return CLI_USAGE;
            }
            req->lang = optarg;
            break;
        case 'K': req->keep_going = 1; break;
        case 'h':
        default: return cli_help_exit(help, c == 'h');
        }
        if (bad)
            return cli_usage_error(optmsg);
    }
    if (optind >= argc) {
        help(stderr);
        return CLI_USAGE;
    }
    return CLI_CONTINUE;
}

/* Finds standard input ('-') among the n files: *at is its index, or -1. Returns CLI_CONTINUE, or
 * CLI_USAGE when it is given twice. */
static int find_stdin(char **files, int n, int *at)
{
    *at = -1;
    for (int i = 0; i < n; i++)
        if (!strcmp(files[i], "-")) {
            if (*at >= 0) {
                fprintf(stderr, "temper: standard input ('-') can be given once\n");
                return CLI_USAGE;
            }
            *at = i;
        }
    return CLI_CONTINUE;
}

/* Reads the candidate on standard input, whose language is lang (--lang). Returns CLI_CONTINUE
 * with *source (caller frees) and *len set, or the exit status (said on stderr). */
static int read_stdin_candidate(const char *lang, char **source, size_t *len)
{
    /* A file's extension gives its language where --lang does not; standard input has none. */
    if (!lang) {
        fprintf(stderr, "temper: eval -: the language of the candidate on standard input is not known: "
                        "give --lang cuda or --lang opencl\n");
        return CLI_USAGE;
    }
    char msg[4096];
    int err = temper_read_file("/dev/stdin", TEMPER_SOURCE_READ_MAX, source, len, msg, sizeof(msg));
    return err ? cli_error(err, msg) : CLI_CONTINUE;
}

/* The candidate on standard input, if any. */
struct stdin_candidate {
    int at;       /* its index among the files, or -1 */
    char *source; /* its bytes, NULs too: they are judged (owned) */
    size_t len;   /* how many */
};

/* Submits every file, all before the first wait, then prints each result in order. Returns 0, or
 * the error that stopped it (msg filled). */
static int evaluate_files(struct temper_session *session, const struct temper_session_request *req, char **files,
                          int n, const struct stdin_candidate *in, struct eval_output *out, char *msg,
                          size_t msg_size)
{
    int64_t *ids = calloc((size_t)n, sizeof(*ids));
    if (!ids) {
        *msg = 0;
        return TEMPER_ENOMEM;
    }
    int err = 0;
    cli_progress_start();
    cli_progress("evaluating %d candidate%s...", n, n == 1 ? "" : "s");
    for (int i = 0; i < n && !err; i++) {
        struct temper_session_request r = *req;
        r.path = i == in->at ? "<stdin>" : files[i];
        r.source = i == in->at ? in->source : NULL;
        r.source_len = i == in->at ? in->len : 0;
        err = temper_session_submit(session, &r, &ids[i], msg, msg_size);
    }
    for (int i = 0; i < n && !err; i++) {
        json_t *result = NULL;
        err = temper_session_wait(session, ids[i], &result, msg, msg_size);
        if (!err) {
            cli_progress_done();
            print_result(out, result);
        }
    }
    cli_progress_done();
    free(ids);
    return err;
}

/* Prints the totals of several files and returns the run's exit status. */
static int eval_exit_status(const struct eval_output *out, double start_s)
{
    if (out->n > 1 && !out->json)
        printf("%d candidates: %d correct, %d not correct, %d not evaluated; %.1f s\n", out->n, out->correct,
               out->not_correct, out->failed, temper_now_s() - start_s);
    if (out->store_failed) { /* the results are printed, but not all kept: said last, with its own status */
        fprintf(stderr, "temper: %d of %d results not stored (the store's message is above)\n", out->store_failed,
                out->n);
        return CLI_STORE;
    }
    if (out->failed)
        return cli_exit_for(out->failed_err);
    return out->not_correct ? CLI_NOT_OK : CLI_OK;
}

int cmd_eval(int argc, char **argv)
{
    struct eval_options o;
    int status = parse_eval_options(argc, argv, &o);
    char **files = argv + optind;
    int n = argc - optind;
    struct stdin_candidate in = {-1, NULL, 0};
    if (status == CLI_CONTINUE)
        status = find_stdin(files, n, &in.at);
    if (status == CLI_CONTINUE && in.at >= 0)
        status = read_stdin_candidate(o.req.lang, &in.source, &in.len);
    if (status != CLI_CONTINUE)
        return status;
    o.req.knobs = o.knobs;
    o.req.nknobs = o.nknobs;
    /* One secret seed for the whole run, drawn now: inputs and references are made once. */
    o.req.secret_seed = temper_secret_seed() & 0x7fffffffffffffffull;
    o.req.secret_seed = o.req.secret_seed ? o.req.secret_seed : 1;
    struct temper_session *session = NULL;
    char msg[4096];
    /* --no-store is per request: the store still gives the device's ceilings */
    int err = cli_session_open(&session, o.device, &o.limits, o.tasks_dir, 0, o.jobs, msg, sizeof(msg));
    if (err) {
        free(in.source);
        return cli_error(err, msg);
    }
    struct eval_output out = {o.json, n, 0, 0, 0, 0, 0};
    double start_s = temper_now_s();
    err = evaluate_files(session, &o.req, files, n, &in, &out, msg, sizeof(msg));
    temper_session_close(session);
    free(in.source);
    if (err)
        return cli_error(err, msg);
    return eval_exit_status(&out, start_s);
}
