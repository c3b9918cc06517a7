/* cmd_export.c: `temper export`: the store's evaluations as JSON lines to train on: every
 * record (jsonl), the improving steps as (prompt, completion) pairs (sft), or every evaluation
 * with a reward (rl). docs/export.md describes each format. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "temper/error.h"
#include "report/report.h"
#include "store/store_export.h"
#include "temper/task.h"

static const char usage_line[] = "usage: temper export --format jsonl|sft|rl (--run ID | --task T | --all) [-o FILE]\n";

static void help(FILE *out)
{
    fprintf(out, "%s\n", usage_line);
    fprintf(out,
            "Writes the store's evaluations as JSON, one object per line (docs/export.md has every field):\n"
            "  jsonl   one record per evaluation: the task's specification, the candidate's source and\n"
            "          its parent's, the operator or client that made it, the feedback temper gave\n"
            "          (compile log, failing check, timings, roofline share), the verdict and metrics\n"
            "  sft     a (prompt, completion) pair for each improving step: a correct evaluation whose\n"
            "          parent (or, in a tune, the run's best before it) was not correct or was slower\n"
            "  rl      a (prompt, completion, reward) triple for each evaluation: reward 0 when not\n"
            "          correct, 1 + log2(speedup over the baseline) / 2 when correct (log2 held to [-1, 2]:\n"
            "          0.5 to 2, the gym's compute_score reward)\n\n"
            "  --run ID       the evaluations of one tune run\n"
            "  --task T       every evaluation of a task\n"
            "  --all          every evaluation in the store\n"
            "  -o, --out FILE write there (replaced only when the export succeeds); default: standard output\n"
            "  --tasks DIR    where task folders are looked up (for their specifications)\n\n"
            "exit status: 0 written, 1 no evaluation matched, 2 bad usage, a run id that names no run, an\n"
            "unknown task (no task folder and nothing stored has the name) or an unwritable file, 4 the\n"
            "store failed\n");
}

/* The command line of one export, as given. */
struct export_options {
    int format;                       /* --format, as temper_export_format_parse reads it */
    struct temper_store_filter filter; /* --run ID or --task T (neither: --all) */
    const char *out_path;             /* -o FILE, or NULL: standard output */
    const char *tasks_dir;            /* --tasks DIR, or NULL */
};

static const struct option export_opts[] = {
    {"format", required_argument, 0, 'f'}, {"run", required_argument, 0, 'r'}, {"task", required_argument, 0, 't'},
    {"all", no_argument, 0, 'a'},          {"out", required_argument, 0, 'o'}, {"tasks", required_argument, 0, 'T'},
    {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};

/* Reads the options into o and checks that one format and one selection are given. Returns
 * CLI_CONTINUE, or the exit status for --help or bad usage (said on stderr). */
static int parse_export_options(int argc, char **argv, struct export_options *o)
{
    memset(o, 0, sizeof(*o));
    const char *format_name = NULL;
    int selectors = 0, c;
    while ((c = getopt_long(argc, argv, "o:h", export_opts, NULL)) != -1) {
        switch (c) {
        case 'f': format_name = optarg; break;
        case 'r':
            if (cli_parse_id("--run", "run id", optarg, &o->filter.run_id))
                return CLI_USAGE;
            selectors++;
            break;
        case 't':
            if (!temper_task_name_ok(optarg)) {
                fprintf(stderr, "temper: --task: '%s' is not a task name ([a-z0-9_]+)\n", optarg);
                return CLI_USAGE;
            }
            o->filter.task = optarg;
            selectors++;
            break;
        case 'a': selectors++; break; /* --all: no filter */
        case 'o': o->out_path = optarg; break;
        case 'T': o->tasks_dir = optarg; break;
        case 'h':
            help(stdout);
            return CLI_OK;
        default:
            fputs(usage_line, stderr);
            return CLI_USAGE;
        }
    }
    if (optind != argc || !format_name || selectors != 1) {
        if (optind != argc)
            fprintf(stderr, "temper: export takes no file argument ('%s'); use -o FILE\n", argv[optind]);
        else if (!format_name)
            fprintf(stderr, "temper: export needs --format jsonl, sft or rl\n");
        else
            fprintf(stderr, "temper: export needs exactly one of --run ID, --task T and --all\n");
        fputs(usage_line, stderr);
        return CLI_USAGE;
    }
    o->format = temper_export_format_parse(format_name);
    if (o->format < 0) {
        fprintf(stderr, "temper: --format: '%s' is not a format (jsonl, sft or rl)\n", format_name);
        return CLI_USAGE;
    }
    return CLI_CONTINUE;
}

/* Opens the store, where the run named must be. Returns CLI_CONTINUE with *store open (caller
 * closes), or the exit status (said on stderr): no store yet is no evaluation matched. */
static int open_export_store(const struct export_options *o, struct temper_store **store)
{
    char msg[2048];
    const struct temper_store_filter *filter = &o->filter;
    int err = cli_store_open_existing(store, msg, sizeof(msg));
    if (err == TEMPER_ENOTFOUND && !filter->run_id) { /* no store yet: no evaluation matched (none made) */
        char nothing[2200];
        snprintf(nothing, sizeof(nothing), "no evaluation%s%s%s: %s", filter->task ? " of task '" : "",
                 filter->task ? filter->task : "", filter->task ? "'" : "", msg);
        return cli_nothing_for_task(temper_tasks_root(o->tasks_dir), filter->task, nothing);
    }
    if (err)
        return cli_error(err, msg); /* a run id names nothing: bad input (2) */
    if (filter->run_id && (err = cli_store_run_exists(*store, filter->run_id, msg, sizeof(msg)))) {
        temper_store_close(*store);
        return cli_error(err, msg); /* an id that names no run is bad input (2) */
    }
    return CLI_CONTINUE;
}

/* Says that nothing matched and returns the exit status: 1, or 2 for an unknown task. */
static int export_matched_nothing(const struct export_options *o)
{
    char msg[2048];
    if (o->filter.run_id)
        fprintf(stderr, "temper: no evaluation of run %lld in the store\n", (long long)o->filter.run_id);
    else if (o->filter.task) { /* an unknown task is bad input (2) */
        snprintf(msg, sizeof(msg), "no evaluation of task '%s' in the store", o->filter.task);
        return cli_nothing_for_task(temper_tasks_root(o->tasks_dir), o->filter.task, msg);
    } else
        fprintf(stderr, "temper: the store holds no evaluation\n");
    return CLI_NOT_OK;
}

int cmd_export(int argc, char **argv)
{
    struct export_options o;
    struct temper_store *store = NULL;
    int status = parse_export_options(argc, argv, &o);
    if (status == CLI_CONTINUE)
        status = open_export_store(&o, &store);
    if (status != CLI_CONTINUE)
        return status;
    /* A file is written beside its final name and renamed into place once whole. */
    char tmp[4096], msg[2048];
    FILE *out = stdout;
    if (o.out_path) {
        snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", o.out_path, (long)getpid());
        if (!(out = fopen(tmp, "w"))) {
            fprintf(stderr, "temper: cannot write %s: %s\n", o.out_path, strerror(errno));
            temper_store_close(store);
            return CLI_USAGE;
        }
    }
    struct temper_export_stats stats;
    int err = temper_export(store, &o.filter, (enum temper_export_format)o.format, temper_tasks_root(o.tasks_dir),
                            out, &stats, msg, sizeof(msg));
    temper_store_close(store);
    if (!err && !stats.evaluations) { /* nothing matched: no file, not even an empty one */
        if (o.out_path) {
            fclose(out);
            unlink(tmp);
        }
        return export_matched_nothing(&o);
    }
    if (o.out_path) {
        if (fclose(out) && !err)
            err = temper_fail(msg, sizeof(msg), TEMPER_EIO, "writing %s failed: %s", o.out_path, strerror(errno));
        if (!err && rename(tmp, o.out_path))
            err = temper_fail(msg, sizeof(msg), TEMPER_EIO, "cannot rename %s to %s: %s", tmp, o.out_path,
                              strerror(errno));
        if (err)
            unlink(tmp);
    }
    if (err)
        return cli_error(err, msg);
    if (stats.no_task)
        fprintf(stderr, "temper: warning: %lld evaluation%s of tasks not found on the task path: their \"spec\" is null\n",
                (long long)stats.no_task, stats.no_task == 1 ? "" : "s");
    fprintf(stderr, "temper: %lld evaluation%s read, %lld record%s written%s%s\n", (long long)stats.evaluations,
            stats.evaluations == 1 ? "" : "s", (long long)stats.records, stats.records == 1 ? "" : "s",
            o.out_path ? " to " : "", o.out_path ? o.out_path : "");
    return CLI_OK;
}
