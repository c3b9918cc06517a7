/* cmd_eval.c: `temper eval FILE`: the verdict for one candidate kernel, recorded in the store. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: temper eval FILE... [--device D] [--set NAME=VALUE ...] [--no-timing] [--json]\n\n"
            "Checks a candidate kernel (.cu or .cl with @temper directives) against its task's C reference\n"
            "on every check shape with a public and a secret seed, against the task's baseline at the bench\n"
            "shapes, and times it against the baseline. Prints the verdict: correct, incorrect,\n"
            "compile_error, runtime_error, timeout or invalid. Every evaluation is recorded in the store.\n\n"
            "  --device D            cuda[:N] or opencl[:N] (default: first CUDA device, else OpenCL)\n"
            "  --set NAME=VALUE      set a knob (a param of the candidate); repeatable\n"
            "  --no-timing           correctness only\n"
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
            "  --sanitize            CUDA: for a correct kernel, also run compute-sanitizer's memcheck,\n"
            "                        racecheck and synccheck on its check shapes; findings make it incorrect\n"
            "  --profile             CUDA: for a correct kernel, also run Nsight Compute on its launches at\n"
            "                        the first bench shape (duration, DRAM throughput, occupancy, registers,\n"
            "                        local memory)\n\n"
            "Several files are evaluated in one run with one secret seed: one line each (one JSON object per\n"
            "line with --json), compiling ahead of the device runs where the backend allows.\n\n"
            "exit status: 0 correct, 1 evaluated but not correct, 2 bad usage or input, 3 no usable device,\n"
            "4 the store failed (a write failed, or the store is damaged; the message names the file)\n");
}

/* Where results go as they come. */
struct eval_output {
    struct temper_store *store; /* records every result, NULL for --no-store */
    char **sources;             /* each candidate's source */
    int json;                   /* 1: JSON (one object per line for several) */
    int store_it;               /* 1: record */
    int n;                      /* candidates */
    int correct;                /* counts by outcome */
    int not_correct;
    int failed;                 /* not evaluated at all */
    int failed_err;             /* the error of the last of those */
    double start_s;             /* when the batch began */
    struct temper_deep_request *deep; /* deep checks to run on correct kernels, or NULL */
    int sanitize;               /* 1: compute-sanitizer */
    int profile;                /* 1: Nsight Compute */
    int store_err;              /* results that could not be stored */
    char store_msg[1024];       /* the first one's message */
};

/* Runs the deep checks asked for on a correct kernel and adds their findings to its result;
 * a sanitizer finding makes the verdict incorrect. */
static void deep_checks(struct eval_output *o, json_t *result)
{
    char msg[2048];
    o->deep->path = json_string_value(json_object_get(result, "candidate"));
    if (o->sanitize) {
        json_t *found = NULL;
        if (temper_deep_sanitize(o->deep, &found, msg, sizeof(msg))) {
            json_object_set_new(result, "sanitize", json_pack("{s:s}", "error", msg));
        } else {
            json_int_t errors = 0;
            const char *tool;
            json_t *r;
            json_object_foreach(found, tool, r) errors += json_integer_value(json_object_get(r, "errors"));
            json_object_set_new(result, "sanitize", found);
            if (errors) {
                char text[512];
                snprintf(text, sizeof(text), "compute-sanitizer reported %lld error%s (see sanitize)",
                         (long long)errors, errors == 1 ? "" : "s");
                json_object_set_new(result, "verdict", json_string("incorrect"));
                json_object_set_new(result, "message", json_string(text));
            }
        }
    }
    if (o->profile) {
        json_t *prof = NULL;
        if (temper_deep_profile(o->deep, &prof, msg, sizeof(msg)))
            prof = json_pack("{s:s}", "error", msg);
        json_t *t = json_array_get(json_object_get(result, "timings"), 0);
        json_t *k0 = json_array_get(json_object_get(prof, "kernels"), 0);
        if (t && k0 && json_array_size(json_object_get(prof, "kernels")) == 1)
            json_object_set_new(prof, "ncu_over_temper",
                                json_real(json_number_value(json_object_get(k0, "duration_ms")) /
                                          json_number_value(json_object_get(t, "median_ms"))));
        json_object_set_new(result, "profile", prof);
    }
}

static void on_result(void *user, int index, json_t *result, int err, const char *error)
{
    struct eval_output *o = user;
    if (!result) {
        fprintf(stderr, "temper: %s\n", error);
        o->failed++;
        o->failed_err = err;
        return;
    }
    char msg[1024];
    const char *v0 = json_string_value(json_object_get(result, "verdict"));
    if (o->deep && v0 && !strcmp(v0, "correct"))
        deep_checks(o, result);
    int store_err = o->store_it ? temper_store_record(o->store, result, o->sources[index], NULL, msg, sizeof(msg)) : 0;
    if (store_err && !o->store_err++) /* every result is tried; the first failure is reported */
        snprintf(o->store_msg, sizeof(o->store_msg), "%s", msg);
    const char *verdict = json_string_value(json_object_get(result, "verdict"));
    int correct = verdict && !strcmp(verdict, "correct");
    o->correct += correct;
    o->not_correct += !correct;
    if (o->json) {
        json_dumpf(result, stdout, o->n > 1 ? JSON_COMPACT : JSON_INDENT(2));
        printf("\n");
    } else if (o->n == 1) {
        temper_eval_print(stdout, result);
    } else {
        json_t *t = json_array_get(json_object_get(result, "timings"), 0);
        printf("%-44s %-13s", json_string_value(json_object_get(result, "candidate")), verdict);
        if (t)
            printf(" %9.4g ms %6.2fx", json_number_value(json_object_get(t, "median_ms")),
                   json_number_value(json_object_get(t, "speedup")));
        printf("  %s\n", json_string_value(json_object_get(result, "message")));
    }
    fflush(stdout);
}

int cmd_eval(int argc, char **argv)
{
    static const struct option opts[] = {
        {"device", required_argument, 0, 'd'},   {"set", required_argument, 0, 's'},
        {"no-timing", no_argument, 0, 'n'},      {"json", no_argument, 0, 'j'},
        {"tasks", required_argument, 0, 't'},    {"seed", required_argument, 0, 'S'},
        {"launch-timeout", required_argument, 0, 'L'}, {"time-budget", required_argument, 0, 'B'},
        {"no-store", no_argument, 0, 'N'},       {"jobs", required_argument, 0, 'J'},
        {"sanitize", no_argument, 0, 'Z'},       {"profile", no_argument, 0, 'P'},
        {"checks-only", no_argument, 0, 'C'},    {"profile-run", no_argument, 0, 'R'},
        {"reuse-same-code", no_argument, 0, 'U'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    struct temper_eval_request req = {0};
    struct temper_limits limits;
    temper_limits_default(&limits);
    const char *device = NULL;
    const char *sets[65] = {0};
    int nsets = 0, json = 0, store_it = 1, jobs = 0, sanitize = 0, profile = 0, c;
    req.seed = 1;
    while ((c = getopt_long(argc, argv, "d:s:h", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'd':
            device = optarg;
            break;
        case 's':
            if (nsets == 64) {
                fprintf(stderr, "temper: too many --set options\n");
                return CLI_USAGE;
            }
            sets[nsets++] = optarg;
            break;
        case 'n':
            req.no_timing = 1;
            break;
        case 'j':
            json = 1;
            break;
        case 't':
            req.tasks_dir = optarg;
            break;
        case 'S':
            req.seed = strtoull(optarg, &end, 0);
            break;
        case 'L':
            limits.launch_timeout_s = strtod(optarg, &end);
            break;
        case 'B':
            req.time_budget_s = strtod(optarg, &end);
            break;
        case 'N':
            store_it = 0;
            break;
        case 'J':
            jobs = (int)strtol(optarg, &end, 10);
            break;
        case 'Z':
            sanitize = 1;
            break;
        case 'P':
            profile = 1;
            break;
        case 'C':
            req.checks_only = 1;
            break;
        case 'R':
            req.profile_run = 1;
            break;
        case 'U':
            req.reuse_same_code = 1;
            break;
        case 'h':
            help(stdout);
            return CLI_OK;
        default:
            help(stderr);
            return CLI_USAGE;
        }
        if (end && (*end || end == optarg)) {
            fprintf(stderr, "temper: --%s: '%s' is not a number\n",
                    c == 'S' ? "seed" : c == 'L' ? "launch-timeout" : c == 'J' ? "jobs" : "time-budget",
                    optarg);
            return CLI_USAGE;
        }
    }
    if (optind >= argc) {
        help(stderr);
        return CLI_USAGE;
    }
    if (limits.launch_timeout_s <= 0 || req.time_budget_s < 0) {
        fprintf(stderr, "temper: time limits must be positive\n");
        return CLI_USAGE;
    }
    int n = argc - optind;
    struct temper_eval_request *reqs = calloc((size_t)n, sizeof(*reqs));
    char **sources = calloc((size_t)n, sizeof(char *));
    if (!reqs || !sources)
        return cli_error(TEMPER_ENOMEM, NULL);
    char msg[4096];
    int err = 0;
    for (int i = 0; i < n && !err; i++) {
        reqs[i] = req;
        reqs[i].path = argv[optind + i];
        reqs[i].sets = sets;
        err = temper_read_file(reqs[i].path, TEMPER_SOURCE_MAX, &sources[i], NULL, msg, sizeof(msg));
        reqs[i].source = sources[i];
    }
    struct cli_session session = {0};
    if (!err)
        err = cli_session_open(&session, device, &limits, !req.no_timing, msg, sizeof(msg));
    temper_progress_start();
    struct eval_output out = {session.store, sources, json, store_it, n, 0, 0, 0, 0, temper_now_s(), NULL, 0, 0, 0, ""};
    struct temper_deep_request deep = {NULL, NULL, device, req.tasks_dir, sets, 600};
    char self[4096];
    ssize_t self_len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (self_len > 0 && (sanitize || profile)) {
        self[self_len] = 0;
        deep.self_exe = self;
        out.deep = &deep;
        out.sanitize = sanitize;
        out.profile = profile;
    }
    if (!err) {
        temper_progress("evaluating %d candidate%s...", n, n == 1 ? "" : "s");
        err = temper_eval_batch(session.worker, reqs, n, session.ceilings, jobs, on_result, &out, msg, sizeof(msg));
    }
    temper_progress_done();
    cli_session_close(&session);
    for (int i = 0; i < n; i++)
        free(sources[i]);
    free(sources);
    free(reqs);
    if (err)
        return cli_error(err, msg);
    if (n > 1 && !json)
        printf("%d candidates: %d correct, %d not correct, %d not evaluated; %.1f s\n", n, out.correct,
               out.not_correct, out.failed, temper_now_s() - out.start_s);
    if (out.store_err) { /* the results are printed, but not all kept: said last, with its own status */
        fprintf(stderr, "temper: %s (%d of %d results not stored)\n", out.store_msg, out.store_err, n);
        return CLI_STORE;
    }
    if (out.failed)
        return cli_exit_for(out.failed_err);
    return out.not_correct ? CLI_NOT_OK : CLI_OK;
}
