/* cmd_report.c: `temper report`: one self-contained HTML page (inline SVG, no script, no
 * external resource) of a tune run, of a task's evaluations, or of a bench (docs/report.md). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "temper/error.h"
#include "report/report.h"
#include "temper/store.h"
#include "store/store_export.h"
#include "temper/task.h"
#include "util/util.h"

static const char usage_line[] =
    "usage: temper report (--run ID | --task T | --bench ID | --bench-json FILE) -o report.html [--device-key K]\n";

static void help(FILE *out)
{
    fprintf(out, "%s\n", usage_line);
    fprintf(out,
            "Writes one self-contained HTML file (inline SVG; readable offline, no script):\n"
            "  --run ID          a tune run: the device's roofline from its measured ceilings with every\n"
            "                    evaluation as a point (baseline and expert marked), best time against\n"
            "                    evaluations, the table, the best kernel's source against the baseline\n"
            "  --task T          every evaluation of a task on one device (default: the device of its newest\n"
            "                    evaluation; --device-key K picks another), one convergence line per run\n"
            "  --bench ID        a bench stored by `temper bench`: the fast_p curve and the suite's and\n"
            "                    tasks' tables\n"
            "  --bench-json FILE the same from what `temper bench --json` printed\n"
            "  -o, --out FILE    the HTML file (required; replaced only when the report is complete)\n"
            "  --title TEXT      the page's title\n"
            "  --tasks DIR       where task folders are looked up (the baseline's source)\n\n"
            "exit status: 0 written, 1 nothing to report (no evaluation of the run or task in the store),\n"
            "2 bad usage, a run or bench id that names none, an unknown task (no task folder and nothing\n"
            "stored has the name), or an unwritable file, 4 the store failed\n");
}

/* The command line of one report, as given. */
struct report_options {
    struct temper_report_request req; /* the run or task to report (req.run_id, req.task) */
    const char *out_path;             /* -o FILE */
    const char *tasks_dir;            /* --tasks DIR, or NULL */
    const char *bench_path;           /* --bench-json FILE, or NULL */
    int64_t bench_id;                 /* --bench ID, or 0 */
};

static const struct option report_opts[] = {
    {"run", required_argument, 0, 'r'},       {"task", required_argument, 0, 't'},
    {"bench-json", required_argument, 0, 'b'}, {"out", required_argument, 0, 'o'},
    {"bench", required_argument, 0, 'B'},
    {"device-key", required_argument, 0, 'd'}, {"title", required_argument, 0, 'T'},
    {"tasks", required_argument, 0, 'k'},      {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0}};

/* Reads the options into o and checks that exactly one thing is reported, to a file. Returns
 * CLI_CONTINUE, or the exit status for --help or bad usage (said on stderr). */
static int parse_report_options(int argc, char **argv, struct report_options *o)
{
    memset(o, 0, sizeof(*o));
    int selectors = 0, c;
    while ((c = getopt_long(argc, argv, "o:h", report_opts, NULL)) != -1) {
        switch (c) {
        case 'r': {
            int64_t run;
            if (cli_parse_id("--run", "run id", optarg, &run))
                return CLI_USAGE;
            o->req.run_id = run;
            selectors++;
            break;
        }
        case 't':
            if (!temper_task_name_ok(optarg)) {
                fprintf(stderr, "temper: --task: '%s' is not a task name ([a-z0-9_]+)\n", optarg);
                return CLI_USAGE;
            }
            o->req.task = optarg;
            selectors++;
            break;
        case 'b':
            o->bench_path = optarg;
            selectors++;
            break;
        case 'B':
            if (cli_parse_id("--bench", "bench id", optarg, &o->bench_id))
                return CLI_USAGE;
            selectors++;
            break;
        case 'o': o->out_path = optarg; break;
        case 'd': o->req.device_key = optarg; break;
        case 'T': o->req.title = optarg; break;
        case 'k': o->tasks_dir = optarg; break;
        case 'h':
            help(stdout);
            return CLI_OK;
        default:
            fputs(usage_line, stderr);
            return CLI_USAGE;
        }
    }
    if (optind != argc || selectors != 1 || !o->out_path) {
        if (optind != argc)
            fprintf(stderr, "temper: report takes no file argument ('%s'); use -o FILE\n", argv[optind]);
        else if (selectors != 1)
            fprintf(stderr, "temper: report needs exactly one of --run ID, --task T, --bench ID and --bench-json FILE\n");
        else
            fprintf(stderr, "temper: report needs -o FILE (the HTML file to write)\n");
        fputs(usage_line, stderr);
        return CLI_USAGE;
    }
    o->req.tasks_root = temper_tasks_root(o->tasks_dir);
    return CLI_CONTINUE;
}

/* Reads what `temper bench --json` printed from path. Returns CLI_CONTINUE with *bench (caller
 * frees), or CLI_USAGE (said on stderr). */
static int load_bench_json(const char *path, json_t **bench)
{
    json_error_t jerr;
    *bench = json_load_file(path, 0, &jerr);
    if (!*bench && jerr.line < 0) { /* not read at all: say why, not where its JSON breaks */
        fprintf(stderr, "temper: --bench-json: cannot read %s: %s\n", path, strerror(errno));
        return CLI_USAGE;
    }
    if (*bench && json_is_object(*bench) &&
        (!json_is_array(json_object_get(*bench, "tasks")) || !json_is_object(json_object_get(*bench, "suite")))) {
        fprintf(stderr, "temper: %s: not a bench's JSON (temper bench --json): it needs \"tasks\" (a list) and "
                        "\"suite\" (an object)\n", path);
        json_decref(*bench);
        return CLI_USAGE;
    }
    if (!*bench || !json_is_object(*bench)) {
        fprintf(stderr, "temper: %s:%d: not a bench's JSON (temper bench --json): %s\n", path, jerr.line,
                *bench ? "not an object" : jerr.text);
        json_decref(*bench);
        return CLI_USAGE;
    }
    return CLI_CONTINUE;
}

/* Opens what the report is made from: the bench's JSON file, or the store, where the bench, run
 * or task named must be. Returns CLI_CONTINUE with *store or *bench (caller frees), or the exit
 * status (said on stderr). */
static int open_report_source(const struct report_options *o, struct temper_store **store, json_t **bench)
{
    char msg[2048];
    int err;
    if (o->bench_path)
        return load_bench_json(o->bench_path, bench);
    if ((err = cli_store_open_existing(store, msg, sizeof(msg)))) {
        if (err == TEMPER_ENOTFOUND && o->req.task) { /* no store yet: no evaluation of the task (none made) */
            char nothing[2200];
            snprintf(nothing, sizeof(nothing), "no evaluation of task '%s': %s", o->req.task, msg);
            return cli_nothing_for_task(o->req.tasks_root, o->req.task, nothing);
        }
        return cli_error(err, msg); /* a run or bench id names nothing: bad input (2) */
    }
    if (o->bench_id && (err = temper_store_bench_get(*store, o->bench_id, bench, msg, sizeof(msg)))) {
        temper_store_close(*store);
        return cli_error(err, msg); /* an id that names no bench is bad input (2) */
    }
    if (o->req.run_id && (err = cli_store_run_exists(*store, o->req.run_id, msg, sizeof(msg)))) {
        temper_store_close(*store);
        return cli_error(err, msg); /* an id that names no run is bad input (2) */
    }
    return CLI_CONTINUE;
}

int cmd_report(int argc, char **argv)
{
    struct report_options o;
    json_t *bench = NULL;
    struct temper_store *store = NULL;
    int status = parse_report_options(argc, argv, &o);
    if (status == CLI_CONTINUE)
        status = open_report_source(&o, &store, &bench);
    if (status != CLI_CONTINUE)
        return status;
    /* Written beside its final name and renamed into place once whole. */
    char tmp[4096], msg[2048];
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", o.out_path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "temper: cannot write %s: %s\n", o.out_path, strerror(errno));
        temper_store_close(store);
        json_decref(bench);
        return CLI_USAGE;
    }
    int err = bench ? temper_report_bench_write(bench, f, msg, sizeof(msg)) :
                      temper_report_write(store, &o.req, f, msg, sizeof(msg));
    temper_store_close(store);
    json_decref(bench);
    if (fclose(f) && !err)
        err = temper_fail(msg, sizeof(msg), TEMPER_EIO, "writing %s failed: %s", o.out_path, strerror(errno));
    if (!err && rename(tmp, o.out_path))
        err = temper_fail(msg, sizeof(msg), TEMPER_EIO, "cannot rename %s to %s: %s", tmp, o.out_path,
                          strerror(errno));
    if (err) {
        unlink(tmp);
        if (err == TEMPER_ENOTFOUND) /* nothing to report; an unknown task is bad input (2) */
            return cli_nothing_for_task(o.req.tasks_root, o.req.task, msg);
        return cli_error(err, msg);
    }
    fprintf(stderr, "temper: wrote %s\n", o.out_path);
    return CLI_OK;
}
