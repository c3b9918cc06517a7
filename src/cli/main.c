/* main.c: `temper <command>`: dispatches to one file per command. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
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
