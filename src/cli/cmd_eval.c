/* cmd_eval.c: `temper eval FILE`: the verdict for one candidate kernel, recorded in the store. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "temper/eval.h"
#include "temper/store.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: temper eval FILE [--device D] [--set NAME=VALUE ...] [--no-timing] [--json]\n\n"
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
            "  --launch-timeout S    kill a launch that runs longer (default 5 s)\n"
            "  --time-budget S       timing budget per bench shape (default 2 s)\n"
            "  --no-store            do not record the evaluation\n\n"
            "exit status: 0 correct, 1 evaluated but not correct, 2 bad usage or input, 3 no usable device\n");
}

int cmd_eval(int argc, char **argv)
{
    static const struct option opts[] = {
        {"device", required_argument, 0, 'd'},   {"set", required_argument, 0, 's'},
        {"no-timing", no_argument, 0, 'n'},      {"json", no_argument, 0, 'j'},
        {"tasks", required_argument, 0, 't'},    {"seed", required_argument, 0, 'S'},
        {"launch-timeout", required_argument, 0, 'L'}, {"time-budget", required_argument, 0, 'B'},
        {"no-store", no_argument, 0, 'N'},       {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    struct temper_eval_request req = {0};
    struct temper_limits limits;
    temper_limits_default(&limits);
    const char *device = NULL;
    const char *sets[65] = {0};
    int nsets = 0, json = 0, store_it = 1, c;
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
        case 'h':
            help(stdout);
            return CLI_OK;
        default:
            help(stderr);
            return CLI_USAGE;
        }
        if (end && (*end || end == optarg)) {
            fprintf(stderr, "temper: --%s: '%s' is not a number\n", c == 'S' ? "seed" : c == 'L' ? "launch-timeout" :
                                                                                   "time-budget",
                    optarg);
            return CLI_USAGE;
        }
    }
    if (optind + 1 != argc) {
        help(stderr);
        return CLI_USAGE;
    }
    if (limits.launch_timeout_s <= 0 || req.time_budget_s < 0) {
        fprintf(stderr, "temper: time limits must be positive\n");
        return CLI_USAGE;
    }
    req.path = argv[optind];
    req.sets = sets;
    char msg[4096];
    char *source = NULL;
    int err = temper_read_file(req.path, TEMPER_SOURCE_MAX, &source, NULL, msg, sizeof(msg));
    if (err)
        return cli_error(err, msg);
    req.source = source;
    struct temper_store *store = NULL;
    if ((err = temper_store_open(NULL, &store, msg, sizeof(msg)))) {
        free(source);
        return cli_error(err, msg);
    }
    struct temper_worker *w;
    if ((err = temper_worker_start(device, &limits, &w, msg, sizeof(msg)))) {
        free(source);
        temper_store_close(store);
        return cli_error(err, msg);
    }
    temper_progress_start();
    json_t *calib = NULL, *info = NULL, *result = NULL;
    if (!req.no_timing && !(err = temper_worker_device_info(w, &info, msg, sizeof(msg)))) {
        calib = temper_store_calibration(store, info);
        if (!calib) {
            fprintf(stderr, "temper: %s has no measured ceilings yet: calibrating it once...\n",
                    json_string_value(json_object_get(info, "id")));
            if (!(err = temper_calibrate(w, &calib, msg, sizeof(msg))))
                err = temper_store_put_calibration(store, info, calib, msg, sizeof(msg));
        }
    }
    if (!err) {
        temper_progress("evaluating %s...", req.path);
        err = temper_eval(w, &req, calib, &result, msg, sizeof(msg));
    }
    temper_progress_done();
    temper_worker_stop(w);
    json_decref(calib);
    json_decref(info);
    if (err) {
        free(source);
        temper_store_close(store);
        return cli_error(err, msg);
    }
    if (store_it && (err = temper_store_record(store, result, source, NULL, msg, sizeof(msg))))
        fprintf(stderr, "temper: warning: %s\n", msg);
    temper_store_close(store);
    free(source);
    if (json) {
        json_dumpf(result, stdout, JSON_INDENT(2));
        printf("\n");
    } else {
        temper_eval_print(stdout, result);
    }
    int correct = !strcmp(json_string_value(json_object_get(result, "verdict")), "correct");
    json_decref(result);
    return correct ? CLI_OK : CLI_NOT_OK;
}
