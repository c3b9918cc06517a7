/* fuzz_task.c: libFuzzer harness for the task loader (temper_task_load, src/task/task.c). The
 * input is written as task.json into a temporary folder and loaded from there, the way a task is
 * loaded from a tasks folder; a failure must come with a message. The folder is named after the
 * input's "name" where that is a plain name, so a check that the name matches its folder does not
 * stop every input. The temporary folder is removed at exit. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <sys/stat.h>

#include "temper/task.h"
#include "util/util.h"

static char root[64]; /* the temporary folder, made once; written only before the first input */

static void remove_root(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz_task: could not remove %s\n", root);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    snprintf(root, sizeof(root), "/tmp/temper-fuzz-task-XXXXXX");
    if (!mkdtemp(root))
        abort();
    atexit(remove_root);
    return 0;
}

/* The folder's name: the input's "name" if it is 1-63 of [a-z0-9_], else "task". */
static void folder_name(const uint8_t *data, size_t size, char *out, size_t out_size)
{
    snprintf(out, out_size, "task");
    json_t *root_json = json_loadb((const char *)data, size, 0, NULL);
    const char *name = json_string_value(json_object_get(root_json, "name"));
    size_t n = name ? strlen(name) : 0;
    if (n > 0 && n < 64 && n < out_size && strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") == n)
        snprintf(out, out_size, "%s", name);
    json_decref(root_json);
}

/* What evaluation does with a loaded task before any device: every shape's flops, bytes and
 * argument sizes. Errors are expected (an overflow, an unknown name); crashes are findings. */
static void exercise(const struct temper_task *task)
{
    const struct temper_shape *sets[] = {task->check, task->bench_gpu, task->bench_cpu};
    const int counts[] = {task->ncheck, task->nbench_gpu, task->nbench_cpu};
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < counts[s]; i++) {
            const struct temper_shape *shape = &sets[s][i];
            int64_t v;
            char msg[512], text[512];
            temper_shape_format(shape, text, sizeof(text));
            temper_shape_eval(shape, task->flops, &v, msg, sizeof(msg));
            temper_shape_eval(shape, task->bytes, &v, msg, sizeof(msg));
            for (int a = 0; a < task->nargs; a++)
                temper_task_arg_elems(task, a, shape, &v, msg, sizeof(msg));
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char name[64], dir[256], file[512], msg[1024] = "";
    folder_name(data, size, name, sizeof(name));
    snprintf(dir, sizeof(dir), "%s/%s", root, name);
    snprintf(file, sizeof(file), "%s/task.json", dir);
    if (temper_write_file_atomic(file, data, size, msg, sizeof(msg))) {
        fprintf(stderr, "fuzz_task: %s\n", msg);
        abort();
    }
    struct temper_task *task = malloc(sizeof(*task)); /* large: not on the stack */
    if (!task)
        return 0;
    if (temper_task_load(dir, task, msg, sizeof(msg))) {
        if (!msg[0])
            abort(); /* an error without a message */
    } else {
        exercise(task);
    }
    free(task);
    unlink(file);
    rmdir(dir);
    return 0;
}
