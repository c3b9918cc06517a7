/* cmd_knowledge.c: `temper knowledge search QUERY`: what the knowledge base (the guides in
 * knowledge/ and the store's best kernels) gives for a query, as an agent's prompt gets it. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "temper/error.h"
#include "agent/knowledge.h"
#include "util/option.h"
#include "temper/task.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: temper knowledge search QUERY... [--limit N] [--task T] [--lang L] [--device D]\n"
            "                                        [--dir DIR] [--no-store] [--json] [--prompt]\n\n"
            "Searches the knowledge base with SQLite's full-text search (FTS5, bm25 ranking): the guides\n"
            "in knowledge/ (coalescing, vector loads, reductions, tiling, tensor cores, Hopper's TMA and\n"
            "wgmma, OpenCL on CPUs) and the store's fastest correct kernel of each task on each device.\n"
            "Any word of the query may match; titles weigh more than bodies.\n\n"
            "  --limit N     hits at most (default 5)\n"
            "  --task T      put task T's kernels first\n"
            "  --lang L      only kernels in cuda or opencl\n"
            "  --device D    only kernels timed on this device (\"opencl:0\")\n"
            "  --dir DIR     the guides' folder (default: $TEMPER_KNOWLEDGE, else the installed one)\n"
            "  --no-store    search the guides only\n"
            "  --json        print the hits as a JSON array\n"
            "  --prompt      print the section exactly as an agent's prompt would carry it\n\n"
            "exit status: 0 something matched, 1 nothing did, 2 bad usage\n");
}

int cmd_knowledge(int argc, char **argv)
{
    enum { O_LIMIT = 256, O_TASK, O_LANG, O_DEVICE, O_DIR, O_NOSTORE, O_JSON, O_PROMPT, O_HELP };
    static const struct option opts[] = {{"limit", required_argument, 0, O_LIMIT}, {"task", required_argument, 0, O_TASK},
                                         {"lang", required_argument, 0, O_LANG},   {"device", required_argument, 0, O_DEVICE},
                                         {"dir", required_argument, 0, O_DIR},     {"no-store", no_argument, 0, O_NOSTORE},
                                         {"json", no_argument, 0, O_JSON},         {"prompt", no_argument, 0, O_PROMPT},
                                         {"help", no_argument, 0, O_HELP},         {0, 0, 0, 0}};
    struct temper_knowledge_config kc = {0};
    int limit = 5, json = 0, prompt = 0, c;
    char msg[4096];
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case O_LIMIT:
            if (temper_parse_int_option("--limit", optarg, 1, 1000, &limit, msg, sizeof(msg)))
                return cli_error(TEMPER_EINVALID, msg);
            break;
        case O_TASK: kc.task = optarg; break;
        case O_LANG: kc.lang = optarg; break;
        case O_DEVICE: kc.device = optarg; break;
        case O_DIR: kc.dir = optarg; break;
        case O_NOSTORE: kc.store_path = ""; break;
        case O_JSON: json = 1; break;
        case O_PROMPT: prompt = 1; break;
        case O_HELP:
        default: return cli_help_exit(help, c == O_HELP);
        }
    }
    if (optind < argc && strcmp(argv[optind], "search")) {
        fprintf(stderr, "temper: knowledge: '%s' is not a subcommand (search)\n", argv[optind]);
        return CLI_USAGE;
    }
    if (optind + 1 >= argc) {
        help(stderr);
        return CLI_USAGE;
    }
    char dir[4096]; /* a task no folder has is a typo: the guides and the store cannot know it */
    if (kc.task && temper_task_find(temper_tasks_root(NULL), kc.task, dir, sizeof(dir), msg, sizeof(msg))) {
        fprintf(stderr, "temper: --task: %s\n", msg);
        return CLI_USAGE;
    }
    if (kc.lang && strcmp(kc.lang, "cuda") && strcmp(kc.lang, "opencl")) {
        fprintf(stderr, "temper: --lang: '%s' is not a language (cuda or opencl)\n", kc.lang);
        return CLI_USAGE;
    }
    char where[4096];
    if (!temper_knowledge_dir(&kc, where, sizeof(where))) {
        fprintf(stderr, "temper: no guides folder at %s (set --dir DIR or TEMPER_KNOWLEDGE; in a checkout, "
                        "TEMPER_KNOWLEDGE=$PWD/knowledge)\n", where);
        return CLI_USAGE;
    }
    char query[4096] = "";
    for (int i = optind + 1; i < argc; i++) {
        size_t n = strlen(query);
        snprintf(query + n, sizeof(query) - n, "%s%s", n ? " " : "", argv[i]);
    }
    if (prompt) {
        char *text = NULL;
        int err = temper_knowledge_prompt(&kc, query, limit, 4500, &text, msg, sizeof(msg));
        if (err)
            return cli_error(err, msg);
        fputs(text, stdout);
        int found = *text != 0;
        free(text);
        return found ? CLI_OK : CLI_NOT_OK;
    }
    json_t *hits = NULL;
    int err = temper_knowledge_search(&kc, query, limit, &hits, msg, sizeof(msg));
    if (err)
        return cli_error(err, msg);
    size_t n = json_array_size(hits);
    if (json) {
        json_dumpf(hits, stdout, JSON_INDENT(2));
        printf("\n");
    } else {
        size_t i;
        json_t *h;
        json_array_foreach(hits, i, h)
        {
            const char *text = json_string_value(json_object_get(h, "text"));
            printf("%zu. %s: %s (%s; bm25 %.3g)\n", i + 1, json_string_value(json_object_get(h, "kind")),
                   json_string_value(json_object_get(h, "title")), json_string_value(json_object_get(h, "ref")),
                   json_number_value(json_object_get(h, "rank")));
            /* the first lines, as a preview */
            const char *p = text;
            for (int line = 0; p && *p && line < 4; line++) {
                const char *nl = strchr(p, '\n');
                int len = nl ? (int)(nl - p) : (int)strlen(p);
                printf("   %.*s\n", len > 100 ? 100 : len, p);
                p = nl ? nl + 1 : NULL;
            }
        }
        if (!n)
            printf("nothing matched '%s'\n", query);
    }
    json_decref(hits);
    return n ? CLI_OK : CLI_NOT_OK;
}
