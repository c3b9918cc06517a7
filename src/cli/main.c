/* main.c: `temper <command>`: dispatches to one file per command. */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "temper/error.h"
#include "store/store_export.h"
#include "temper/task.h"
#include "util/util.h"

/* A command: its name, entry point and one line for the overview. */
static const struct {
    const char *name;                 /* as typed */
    int (*run)(int argc, char **argv); /* argv[0] is the command name */
    const char *summary;              /* for `temper --help` */
} commands[] = {
    {"devices", cmd_devices, "list the devices temper can use"},
    {"calibrate", cmd_calibrate, "measure a device's copy bandwidth and FMA throughput"},
    {"tasks", cmd_tasks, "list the benchmark tasks by level"},
    {"show", cmd_show, "print a task's spec, shapes and baselines"},
    {"eval", cmd_eval, "check a candidate kernel and time it: a verdict you can trust"},
    {"tune", cmd_tune, "search a candidate's knobs and compiler controls for the fastest correct one"},
    {"best", cmd_best, "the fastest correct kernel known for a task on a device"},
    {"mcp", cmd_mcp, "a Model Context Protocol server on stdio: temper's tools for AI coding agents"},
    {"export", cmd_export, "the store's evaluations as JSON lines to train on (jsonl, sft, rl)"},
    {"report", cmd_report, "one HTML page of a tune, a task or a bench: roofline, convergence, table, source"},
    {"bench", cmd_bench, "evaluate a folder of samples per task and sum them up: pass@k, fast_p, speedups"},
    {"history", cmd_history, "past evaluations, runs and benches, newest first"},
    {"compare", cmd_compare, "two stored results or files side by side; --retime times them again, interleaved"},
    {"agent", cmd_agent, "a language model writes kernels for a task, judged, tuned and recorded by temper"},
    {"knowledge", cmd_knowledge, "search the kernel knowledge base: what an agent's prompt would retrieve"},
    {"schema", cmd_schema, "the fields of an evaluation result, as docs/result.md lists them"},
    {"serve", cmd_serve, "the kernel gym: an HTTP/JSON API for evaluations (docs/serve.md)"},
#ifdef TEMPER_HAVE_WORKER_CMD
    {"worker", cmd_worker, "evaluate the gym's jobs from a Redis queue on one device"},
#endif
};

static void usage(FILE *out)
{
    fprintf(out, "usage: temper <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n`temper <command> --help` describes a command; `temper --version` prints the version.\n");
}

int cli_exit_for(int err)
{
    return err == TEMPER_ENODEVICE ? CLI_NODEVICE : err == TEMPER_ESTORE ? CLI_STORE : CLI_USAGE;
}

/* The length of the UTF-8 sequence at p that is a printable character (not C0, DEL or C1), or 0. */
static size_t printable_at(const unsigned char *p)
{
    if (*p >= 0x20 && *p < 0x7f)
        return 1;
    size_t n = *p >= 0xc2 && *p <= 0xdf ? 2 : *p >= 0xe0 && *p <= 0xef ? 3 : *p >= 0xf0 && *p <= 0xf4 ? 4 : 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    if (n == 2 && *p == 0xc2 && p[1] < 0xa0) /* C1 controls: some terminals act on them */
        return 0;
    if ((n == 3 && *p == 0xe0 && p[1] < 0xa0) || (n == 4 && *p == 0xf0 && p[1] < 0x90) ||
        (n == 4 && *p == 0xf4 && p[1] > 0x8f)) /* overlong, or past U+10FFFF */
        return 0;
    return n;
}

/* text (NULL: "") for a terminal, in a buffer of at least 256 bytes: printable UTF-8 as is, any
 * other byte as \xNN, cut with "..." when it does not fit. */
const char *cli_shown(const char *text, char *out, size_t size)
{
    size_t used = 0;
    const unsigned char *p = (const unsigned char *)(text ? text : "");
    while (*p) {
        size_t n = printable_at(p);
        if (used + (n ? n : 4) + 4 >= size) {
            memcpy(out + used, "...", 4);
            return out;
        }
        if (n) {
            memcpy(out + used, p, n);
            used += n;
            p += n;
        } else {
            used += (size_t)snprintf(out + used, size - used, "\\x%02x", *p++);
        }
    }
    out[used] = 0;
    return out;
}

int cli_error(int err, const char *msg)
{
    fprintf(stderr, "temper: %s\n", msg && *msg ? msg : temper_strerror(err));
    return cli_exit_for(err);
}

int cli_help_exit(void (*help)(FILE *out), int asked)
{
    help(asked ? stdout : stderr);
    return asked ? CLI_OK : CLI_USAGE;
}

int cli_usage_error(const char *msg)
{
    fprintf(stderr, "temper: %s\n", msg);
    return CLI_USAGE;
}

int cli_parse_id(const char *option, const char *what, const char *text, int64_t *id)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v <= 0) {
        fprintf(stderr, "temper: %s: '%s' is not a %s (a positive integer)\n", option, text, what);
        return CLI_USAGE;
    }
    *id = v;
    return 0;
}

int cli_store_open_existing(struct temper_store **store, char *msg, size_t msg_size)
{
    char home[4096], path[4200];
    struct stat st;
    *store = NULL;
    snprintf(path, sizeof(path), "%s/temper.db", temper_home_dir(home, sizeof(home)));
    if (stat(path, &st) && errno == ENOENT)
        return temper_fail(msg, msg_size, TEMPER_ENOTFOUND,
                           "no store yet at %s (nothing has been stored with this TEMPER_HOME)", path);
    return temper_store_open(path, store, msg, msg_size);
}

int cli_store_run_exists(struct temper_store *store, int64_t run_id, char *msg, size_t msg_size)
{
    json_t *run = NULL;
    int err = temper_store_run_get(store, run_id, &run, msg, msg_size);
    json_decref(run);
    return err;
}

int cli_nothing_for_task(const char *root, const char *task, const char *nothing)
{
    char dir[4096], msg[1024];
    if (task && temper_task_find(root, task, dir, sizeof(dir), msg, sizeof(msg)) == TEMPER_ENOTFOUND) {
        fprintf(stderr, "temper: %s (and nothing in the store for it)\n", msg);
        return CLI_USAGE;
    }
    fprintf(stderr, "temper: %s\n", nothing);
    return CLI_NOT_OK;
}

static int count_task(void *user, const char *dir)
{
    (void)dir;
    ++*(int *)user;
    return 1; /* one is enough */
}

int cli_tasks_present(const char *tasks_dir)
{
    const char *root = temper_tasks_root(tasks_dir);
    int n = 0;
    temper_task_each(root, count_task, &n);
    if (n)
        return CLI_OK;
    fprintf(stderr, "temper: no tasks under %s (set --tasks DIR or TEMPER_TASKS; a task is DIR/L<level>/<name>/task.json, "
                    "in a level folder such as L1)\n", root);
    return CLI_USAGE;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return CLI_OK;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("temper %s\n", TEMPER_VERSION);
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (!strcmp(argv[1], commands[i].name)) {
            /* getopt names the program in its messages: "temper eval: unrecognized option" */
            char name[64];
            snprintf(name, sizeof(name), "temper %s", commands[i].name);
            argv[1] = name;
            return commands[i].run(argc - 1, argv + 1);
        }
    fprintf(stderr, "temper: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return CLI_USAGE;
}
