/* cmd_tasks.c: `temper tasks` and `temper show TASK`: the benchmark suite as data. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "temper/task.h"
#include "util/util.h"

/* State for listing tasks. */
struct list_state {
    int count;      /* tasks printed */
    int last_level; /* level of the previous task, for headings */
    int failed;     /* tasks that did not load */
};

/* Prints text word-wrapped to lines of at most width columns, each after indent spaces (the
 * first line's indent is already printed); a word longer than a line gets a line of its own. */
static void print_wrapped(const char *text, int indent, int width)
{
    int col = indent;
    for (const char *p = text; *p;) {
        while (*p == ' ')
            p++;
        size_t len = strcspn(p, " ");
        if (!len)
            break;
        if (col > indent && col + 1 + (int)len > width) {
            printf("\n%*s", indent, "");
            col = indent;
        }
        printf("%s%.*s", col > indent ? " " : "", (int)len, p);
        col += (col > indent ? 1 : 0) + (int)len;
        p += len;
    }
    printf("\n");
}

static int list_one(void *user, const char *dir)
{
    struct list_state *s = user;
    struct temper_task t;
    char msg[1024];
    if (temper_task_load(dir, &t, msg, sizeof(msg))) {
        fprintf(stderr, "temper: %s\n", msg);
        s->failed++;
        return 0;
    }
    if (t.level != s->last_level)
        printf("%sL%d\n", s->count ? "\n" : "", t.level);
    s->last_level = t.level;
    printf("  %-18s ", t.name);
    print_wrapped(t.summary, 21, 110);
    printf("%21sflops %s, bytes %s\n", "", t.flops, t.bytes);
    s->count++;
    return 0;
}

int cmd_tasks(int argc, char **argv)
{
    static const struct option opts[] = {{"tasks", required_argument, 0, 't'}, {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *dir = NULL;
    int c;
    if (argc >= 2 && !strcmp(argv[1], "import"))
        return cmd_tasks_import(argc - 1, argv + 1);
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 't')
            dir = optarg;
        else {
            FILE *out = c == 'h' ? stdout : stderr;
            fprintf(out, "usage: temper tasks [--tasks DIR]\n"
                         "       temper tasks import kernelbench FILE.py... [--out DIR]\n\n"
                         "Lists the tasks by level with their summaries and FLOP "
                         "and byte models.\nTasks are looked up in --tasks DIR, then $TEMPER_TASKS (folders separated "
                         "by ':'), then the installed suite.\n");
            return c == 'h' ? CLI_OK : CLI_USAGE;
        }
    }
    const char *root = temper_tasks_root(dir);
    struct list_state s = {0, 0, 0};
    if (temper_task_each(root, list_one, &s) == TEMPER_ENOTFOUND || (!s.count && !s.failed)) {
        fprintf(stderr, "temper: no tasks under %s (set --tasks DIR or TEMPER_TASKS; a task is DIR/L<level>/<name>/task.json, "
                        "in a level folder such as L1)\n", root);
        return CLI_USAGE;
    }
    return s.failed ? CLI_USAGE : CLI_OK;
}

static void print_shapes(const char *title, const struct temper_shape *shapes, int n)
{
    printf("%-12s", title);
    for (int i = 0; i < n; i++) {
        char text[256];
        temper_shape_format(&shapes[i], text, sizeof(text));
        printf("%s{%s}", i ? " " : "", text);
    }
    printf("\n");
}

int cmd_show(int argc, char **argv)
{
    static const struct option opts[] = {{"tasks", required_argument, 0, 't'}, {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *dir = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 't')
            dir = optarg;
        else {
            FILE *out = c == 'h' ? stdout : stderr;
            fprintf(out, "usage: temper show TASK [--tasks DIR]\n\nPrints a task's arguments, shapes, "
                         "FLOP and byte models, tolerance and baselines.\n");
            return c == 'h' ? CLI_OK : CLI_USAGE;
        }
    }
    if (optind + 1 != argc) {
        fprintf(stderr, "usage: temper show TASK [--tasks DIR]\n");
        return CLI_USAGE;
    }
    char task_dir[TEMPER_PATH_MAX], msg[1024];
    struct temper_task t;
    int err = temper_task_find(temper_tasks_root(dir), argv[optind], task_dir, sizeof(task_dir), msg, sizeof(msg));
    if (!err)
        err = temper_task_load(task_dir, &t, msg, sizeof(msg));
    if (err)
        return cli_error(err, msg);
    printf("task        %s (level %d)\n", t.name, t.level);
    printf("summary     %s\n", t.summary);
    printf("folder      %s\n", t.dir);
    printf("arguments   (kernel order)\n");
    for (int i = 0; i < t.nargs; i++) {
        const struct temper_task_arg *a = &t.args[i];
        printf("  %-8s %-6s %-5s", a->name, temper_role_name(a->role), temper_dtype_name(a->dtype));
        if (a->ndim) {
            printf(" [");
            for (int d = 0; d < a->ndim; d++)
                printf("%s%s", d ? ", " : "", a->shape[d]);
            printf("]");
        }
        if (a->role == TEMPER_ROLE_INPUT) {
            static const char *const kinds[] = {"normal", "uniform", "randint"};
            printf("  init %s(%g, %g)", kinds[a->init], a->init_a, a->init_b);
        }
        printf("\n");
    }
    printf("flops       %s\n", t.flops);
    printf("bytes       %s\n", t.bytes);
    printf("tolerance   atol %g, rtol %g\n", t.atol, t.rtol);
    printf("roofline    bytes against the measured copy bandwidth, flops against %s\n", t.compute_ceiling);
    print_shapes("check", t.check, t.ncheck);
    print_shapes("bench gpu", t.bench_gpu, t.nbench_gpu);
    print_shapes("bench cpu", t.bench_cpu, t.nbench_cpu);
    printf("reference   %s\n", t.reference);
    printf("baselines   cuda: %s\n            opencl: %s\n", t.baseline_cuda[0] ? t.baseline_cuda : "-",
           t.baseline_opencl[0] ? t.baseline_opencl : "-");
    if (t.expert_cuda[0])
        printf("expert      %s\n", t.expert_cuda);
    return CLI_OK;
}
