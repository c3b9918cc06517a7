/* cmd_mcp.c: `temper mcp`: serves temper's tools to AI coding agents over the Model Context
 * Protocol on standard input and output (src/mcp/, docs/mcp.md). Standard output carries the
 * protocol and nothing else: the protocol gets a descriptor of its own, and descriptor 1 is
 * pointed at standard error, so that nothing printed by the library or a child can reach the
 * client. */
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../mcp/mcp.h"
#include "cli.h"
#include "util/util.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: temper mcp [--device D] [--store PATH] [--tasks DIR]\n\n"
            "A Model Context Protocol server on standard input and output (newline-delimited JSON-RPC 2.0;\n"
            "logs on standard error) for AI coding agents: list_tasks, show_task, evaluate, tune, profile,\n"
            "best_kernel, history and search_knowledge. It speaks protocol versions 2024-11-05 to\n"
            "2025-11-25 (initialize) and 2026-07-28 (the version in each request's _meta). The session\n"
            "(worker, store) opens at the first tool call that needs a device, so a machine without one\n"
            "still answers initialize and tools/list. docs/mcp.md describes the tools; README.md how to\n"
            "register it with Claude Code, Codex and Cursor.\n\n"
            "  --device D     cuda[:N] or opencl[:N] (default: the first evaluate's device argument, else\n"
            "                 the first CUDA device, else OpenCL)\n"
            "  --store PATH   the store (default: $TEMPER_HOME/temper.db)\n"
            "  --tasks DIR    where tasks are looked up\n\n"
            "exit status: 0 when the input ends, 2 bad usage\n");
}

int cmd_mcp(int argc, char **argv)
{
    static const struct option opts[] = {{"device", required_argument, 0, 'd'}, {"store", required_argument, 0, 's'},
                                         {"tasks", required_argument, 0, 't'},  {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    struct mcp_config config = {0};
    int c;
    while ((c = getopt_long(argc, argv, "d:h", opts, NULL)) != -1) {
        switch (c) {
        case 'd': {
            /* cuda[:N] or opencl[:N]: a kind that is none of these is bad usage now, not an error at
             * every tool call (whether the device is there is the first call's to find out). */
            size_t kind = strcspn(optarg, ":");
            const char *idx = optarg[kind] ? optarg + kind + 1 : "0";
            int ok = ((kind == 4 && !strncmp(optarg, "cuda", 4)) || (kind == 6 && !strncmp(optarg, "opencl", 6))) &&
                     *idx && strspn(idx, "0123456789") == strlen(idx) && strlen(idx) < 4;
            if (!ok) {
                fprintf(stderr, "temper mcp: --device '%s' is not cuda[:N] or opencl[:N]\n", optarg);
                return CLI_USAGE;
            }
            config.device = optarg;
            break;
        }
        case 's':
            config.store_path = optarg;
            break;
        case 't':
            config.tasks_dir = optarg;
            break;
        case 'h':
        default:
            return cli_help_exit(help, c == 'h');
        }
    }
    if (optind != argc) {
        help(stderr);
        return CLI_USAGE;
    }
    if (config.store_path) { /* the session opens at the first call: a store that cannot be is said now */
        char dir[4096];
        struct stat st;
        temper_dirname(config.store_path, dir, sizeof(dir));
        if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
            fprintf(stderr, "temper: --store %s: its folder %s does not exist\n", config.store_path, dir);
            return CLI_USAGE;
        }
    }
    /* The protocol's own descriptors (closed in children), then 1 becomes standard error and 0
     * /dev/null: nothing else writes to the client or reads its messages. */
    fflush(stdout);
    int in = fcntl(0, F_DUPFD_CLOEXEC, 3), out = fcntl(1, F_DUPFD_CLOEXEC, 3);
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in < 0 || out < 0 || devnull < 0 || dup2(2, 1) < 0 || dup2(devnull, 0) < 0) {
        perror("temper mcp: setting up the protocol's descriptors");
        return CLI_USAGE;
    }
    close(devnull);
    /* a client that goes away makes writes fail with EPIPE, not kill the server */
    signal(SIGPIPE, SIG_IGN);
    fprintf(stderr, "temper mcp: serving on standard input and output (protocol 2024-11-05 to 2026-07-28)\n");
    char msg[1024];
    int err = mcp_serve(&config, in, out, msg, sizeof(msg));
    close(in);
    close(out);
    if (err)
        return cli_error(err, msg);
    return CLI_OK;
}
