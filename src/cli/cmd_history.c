/* cmd_history.c: `temper history [TASK]`: what the store holds, newest first: evaluations with
 * their verdict, time, spread, speedup, roofline share, parent and origin, tune runs and benches
 * (temper_store_history). Every text it prints from the store is shown safe for a terminal (a
 * client of the gym chose the origin, a candidate's file its name): control characters and bytes
 * that are not UTF-8 as \xNN. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "util/option.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: temper history [TASK] [--device D] [--limit N] [--json]\n\n"
            "Lists what the store holds, newest first: evaluations (verdict, median time, spread, speedup\n"
            "over the baseline, share of the roofline, the evaluation it was derived from, and its origin:\n"
            "the operator that made the candidate and the client that asked), tune runs and benches.\n\n"
            "  TASK                  only this task's evaluations and runs, and the benches holding it\n"
            "  --device D            only this device: as named when it ran (opencl:0), its identity, or a\n"
            "                        backend (cuda, opencl)\n"
            "  --limit N             the newest N rows (default 30; 0: all)\n"
            "  --json                print one JSON array (docs/bench.md lists the fields)\n\n"
            "exit status: 0 rows listed, 1 nothing in the store matches (or no store yet: none is made), 2 bad\n"
            "usage or an unknown TASK (no task folder and nothing stored has the name), 4 the store failed\n");
}

/* A number with a format, or "-" in its width. */
static void cell(const char *fmt, int width, double scale, json_t *v)
{
    if (json_is_number(v))
        printf(fmt, scale * json_number_value(v));
    else
        printf("%*s", width, "-");
}

/* The row's string field as shown on a terminal (a buffer of the caller's, 512 bytes). */
#define FIELD(row, name, buf) cli_shown(json_string_value(json_object_get(row, name)), buf, sizeof(buf))

static void print_row(json_t *row)
{
    char t[512], a[512], b[512];
    const char *kind = json_string_value(json_object_get(row, "kind")) ?: "";
    printf("%-20s %-5s %6lld  ", FIELD(row, "time", t), !strcmp(kind, "evaluation") ? "eval" : cli_shown(kind, a, sizeof(a)),
           (long long)json_integer_value(json_object_get(row, "id")));
    if (!strcmp(kind, "evaluation")) {
        const char *op = json_string_value(json_object_get(row, "operator"));
        const char *client = json_string_value(json_object_get(row, "client"));
        char origin[300], o1[512];
        snprintf(origin, sizeof(origin), "%s%s%s", op ? op : "", op && client ? "/" : "", client ? client : "");
        printf("%-16s %-13s ", FIELD(row, "task", a), FIELD(row, "verdict", b));
        cell("%9.4g ms", 12, 1, json_object_get(row, "median_ms"));
        cell(" %5.1f%%", 7, 100, json_object_get(row, "spread"));
        cell(" %7.3gx", 9, 1, json_object_get(row, "speedup"));
        cell(" %6.2g%%", 8, 100, json_object_get(row, "roofline_share"));
        json_t *parent = json_object_get(row, "parent_id");
        if (json_is_integer(parent))
            printf(" %6lld", (long long)json_integer_value(parent));
        else
            printf(" %6s", "-");
        printf(" %-10s %s", origin[0] ? cli_shown(origin, o1, sizeof(o1)) : "-", FIELD(row, "candidate", t));
        json_t *run = json_object_get(row, "run_id");
        if (json_is_integer(run))
            printf(" (run %lld)", (long long)json_integer_value(run));
    } else if (!strcmp(kind, "run")) {
        printf("%-16s %-13s %lld evaluations of %s", FIELD(row, "task", a),
               json_is_string(json_object_get(row, "finished_at")) ? "finished" : "unfinished",
               (long long)json_integer_value(json_object_get(row, "evaluations")), FIELD(row, "candidate", b));
        if (json_is_number(json_object_get(row, "best_speedup")))
            printf("; best %.4g ms, %.3gx", json_number_value(json_object_get(row, "best_median_ms")),
                   json_number_value(json_object_get(row, "best_speedup")));
    } else {
        printf("%-16s %-13s %lld tasks, %lld of %lld samples correct", FIELD(row, "level", a), FIELD(row, "device", b),
               (long long)json_integer_value(json_object_get(row, "tasks")),
               (long long)json_integer_value(json_object_get(row, "correct_samples")),
               (long long)json_integer_value(json_object_get(row, "samples")));
        if (json_is_number(json_object_get(row, "pass_at_1")))
            printf(", pass@1 %.3f", json_number_value(json_object_get(row, "pass_at_1")));
        if (json_is_number(json_object_get(row, "geomean_speedup")))
            printf(", geomean %.3gx", json_number_value(json_object_get(row, "geomean_speedup")));
    }
    printf("\n");
}

int cmd_history(int argc, char **argv)
{
    static const struct option opts[] = {{"device", required_argument, 0, 'd'}, {"limit", required_argument, 0, 'n'},
                                         {"json", no_argument, 0, 'j'},          {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *device = NULL;
    int json = 0, limit = 30, c;
    char msg[2048];
    while ((c = getopt_long(argc, argv, "d:n:h", opts, NULL)) != -1) {
        if (c == 'd') {
            device = optarg;
        } else if (c == 'n') {
            if (temper_parse_int_option("--limit", optarg, 0, 1000000000, &limit, msg, sizeof(msg)))
                return cli_usage_error(msg);
        } else if (c == 'j') {
            json = 1;
        } else {
            return cli_help_exit(help, c == 'h');
        }
    }
    if (argc - optind > 1) {
        help(stderr);
        return CLI_USAGE;
    }
    const char *task = optind < argc ? argv[optind] : NULL;
    struct temper_store *store = NULL;
    json_t *rows = NULL;
    int err = cli_store_open_existing(&store, msg, sizeof(msg));
    int no_store = err == TEMPER_ENOTFOUND; /* nothing stored yet: no history, and no store made for it */
    if (!err)
        err = temper_store_history(store, task, device, limit, &rows, msg, sizeof(msg));
    temper_store_close(store);
    if (no_store && (rows = json_array()))
        err = 0;
    if (err)
        return cli_error(err, msg);
    if (json) {
        json_dumpf(rows, stdout, JSON_INDENT(2));
        printf("\n");
    } else if (json_array_size(rows)) {
        printf("%-20s %-5s %6s  %-16s %-13s %12s %7s %9s %8s %6s %-10s %s\n", "time", "kind", "id", "task", "verdict",
               "time", "spread", "speedup", "roofline", "parent", "origin", "candidate");
        size_t i;
        json_t *row;
        json_array_foreach(rows, i, row) print_row(row);
    }
    int found = json_array_size(rows) > 0;
    json_decref(rows);
    if (!found) {
        /* Nothing for a name no task folder has: an unknown task, bad input (2). A task's history
         * can outlive its folder, so the name is looked up only when nothing was found. */
        char nothing[2200];
        if (no_store)
            snprintf(nothing, sizeof(nothing), "no history: %s", msg);
        else
            snprintf(nothing, sizeof(nothing), "nothing in the store%s%s%s%s", task ? " for task " : "",
                     task ? task : "", device ? " on " : "", device ? device : "");
        return cli_nothing_for_task(temper_tasks_root(NULL), task, nothing);
    }
    return CLI_OK;
}
