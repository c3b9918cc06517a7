/* cmd_import.c: `temper tasks import kernelbench FILE.py... [--out DIR] [--level N]` and
 * `temper tasks import flashinfer DEFINITION.json...`: a task folder per problem, whose reference is
 * the problem's own PyTorch program (docs/task.md, "A PyTorch reference"; for a definition, a
 * program in KernelBench's format made around its `run`). The problem is read in the sandboxed
 * interpreter that runs references (torch_reference.c), which infers the arguments, shapes and
 * tolerance; this side writes the folder, the program and any naive baselines beside the problem,
 * and loads the task back to check it. Each problem is reported: what was imported, what was not
 * and why. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "eval/torch_reference.h"
#include "temper/task.h"
#include "util/util.h"

#define PROGRAM_MAX (1u << 20)

/* Copies src to dst (at most PROGRAM_MAX bytes). */
static int copy_file(const char *src, const char *dst, char *msg, size_t msg_size)
{
    char *data;
    size_t n;
    int err = temper_read_file(src, PROGRAM_MAX, &data, &n, msg, msg_size);
    if (err)
        return err;
    FILE *f = fopen(dst, "wb");
    int ok = f && fwrite(data, 1, n, f) == n;
    ok &= f && fclose(f) == 0;
    free(data);
    return ok ? 0 : temper_fail(msg, msg_size, TEMPER_EIO, "%s: %s", dst, strerror(errno));
}

/* A naive baseline written beside the problem (FILE.naive.cl, FILE.naive.cu, FILE without its
 * extension) becomes the task's. */
static void copy_baselines(const char *file, const char *dir, json_t *task)
{
    static const char *const ext[2][2] = {{"opencl", "cl"}, {"cuda", "cu"}};
    const char *dot = strrchr(file, '.');
    size_t stem = dot ? (size_t)(dot - file) : strlen(file);
    json_t *base = json_object();
    for (int i = 0; i < 2; i++) {
        char src[TEMPER_PATH_MAX], dst[TEMPER_PATH_MAX + 32], msg[512];
        snprintf(src, sizeof(src), "%.*s.naive.%s", (int)stem, file, ext[i][1]);
        snprintf(dst, sizeof(dst), "%s/naive.%s", dir, ext[i][1]);
        if (access(src, R_OK) || copy_file(src, dst, msg, sizeof(msg)))
            continue;
        char name[16];
        snprintf(name, sizeof(name), "naive.%s", ext[i][1]);
        json_object_set_new(base, ext[i][0], json_string(name));
        printf("  baseline (%s): %s\n", ext[i][0], src);
    }
    if (json_object_size(base)) {
        json_object_set_new(task, "baseline", base);
        return;
    }
    printf("  no baseline: none was written beside it (%.*s.naive.cl or .cu); the task cannot be evaluated "
           "until one is, since PyTorch eager as a baseline is not built yet\n", (int)stem, file);
    json_decref(base);
}

/* Writes text to path. */
static int write_text(const char *path, const char *text, char *msg, size_t msg_size)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fputs(text, f) >= 0;
    ok &= f && fclose(f) == 0;
    return ok ? 0 : temper_fail(msg, msg_size, TEMPER_EIO, "%s: %s", path, strerror(errno));
}

/* Imports one problem of kind ("kernelbench", "flashinfer") into out; 0 imported, 1 not. */
static int import_one(const char *kind, const char *file, const char *out, int level)
{
    char msg[4096];
    json_t *r = NULL;
    const char *ext = strcmp(kind, "kernelbench") ? ".json" : ".py";
    size_t len = strlen(file);
    if (len <= strlen(ext) || strcmp(file + len - strlen(ext), ext)) {
        printf("%s: not imported: a %s problem is a %s file\n", file, kind, ext);
        return 1;
    }
    if (torch_import(kind, file, level, &r, msg, sizeof(msg))) {
        printf("%s: not imported: %s\n", file, msg);
        return 1;
    }
    json_t *task = json_object_get(r, "task");
    const char *name = json_string_value(json_object_get(task, "name"));
    if (!task || !name) {
        const char *why = json_string_value(json_object_get(r, "refused"));
        printf("%s: not imported: %s\n", file, why ? why : "the importer gave no task");
        json_decref(r);
        return 1;
    }
    char dir[TEMPER_PATH_MAX], path[TEMPER_PATH_MAX + 64];
    snprintf(dir, sizeof(dir), "%.2000s/L%d/%.100s", out, level, name);
    temper_mkdirs(dir);
    snprintf(path, sizeof(path), "%s/reference.py", dir);
    printf("%s: imported as %s\n", file, dir);
    const char *text = json_string_value(json_object_get(r, "reference_text"));
    int err = text ? write_text(path, text, msg, sizeof(msg)) : copy_file(file, path, msg, sizeof(msg));
    copy_baselines(file, dir, task);
    snprintf(path, sizeof(path), "%s/task.json", dir);
    if (!err && json_dump_file(task, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER))
        err = temper_fail(msg, sizeof(msg), TEMPER_EIO, "%s: cannot write it", path);
    struct temper_task t;
    if (!err)
        err = temper_task_load(dir, &t, msg, sizeof(msg));
    if (!err) {
        printf("  %d arguments, %d check shapes, bench %d (gpu) and %d (cpu) shapes, tolerance atol %g rtol %g\n",
               t.nargs, t.ncheck, t.nbench_gpu, t.nbench_cpu, t.atol, t.rtol);
        size_t i;
        json_t *note;
        json_array_foreach(json_object_get(task, "import_notes"), i, note) printf("  note: %s\n",
                                                                                  json_string_value(note));
    } else {
        printf("  not usable: %s\n", msg);
    }
    json_decref(r);
    return err != 0;
}

int cmd_tasks_import(int argc, char **argv)
{
    static const struct option opts[] = {{"out", required_argument, 0, 'o'}, {"level", required_argument, 0, 'l'},
                                         {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *out = ".";
    int level = 1, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        if (c == 'o')
            out = optarg;
        else if (c == 'l' && atoi(optarg) >= 1 && atoi(optarg) <= 3)
            level = atoi(optarg);
        else
            break;
    }
    const char *kind = optind < argc ? argv[optind] : "";
    if (c != -1 || optind + 2 > argc || (strcmp(kind, "kernelbench") && strcmp(kind, "flashinfer"))) {
        FILE *f = c == 'h' ? stdout : stderr;
        fprintf(f, "usage: temper tasks import kernelbench FILE.py... [--out DIR] [--level 1|2|3]\n"
                   "       temper tasks import flashinfer DEFINITION.json... [--out DIR] [--level 1|2|3]\n\n"
                   "Writes a task folder DIR/L<level>/<name>/ per KernelBench problem or FlashInfer-Bench "
                   "definition (default DIR: the current folder), its reference the problem's PyTorch program, "
                   "run in float64 on the CPU by $TEMPER_PYTHON (default python3), sandboxed. FILE.naive.cl and "
                   "FILE.naive.cu beside a problem become its baselines. Says for each problem what was imported, "
                   "what was not and why.\n");
        return c == 'h' ? CLI_OK : CLI_USAGE;
    }
    int failed = 0;
    for (int i = optind + 1; i < argc; i++)
        failed += import_one(kind, argv[i], out, level);
    return failed ? CLI_USAGE : CLI_OK;
}
