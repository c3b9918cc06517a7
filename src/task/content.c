/* content.c: the hash of what a task's verdicts depend on (task.json, the C reference and the
 * baselines), which the store keys results on: a task changed in any of these never reuses a
 * result judged against the old one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "temper/task.h"
#include "util/util.h"

/* Largest file of a task that is hashed; a bigger one is an error, not a partial hash. */
#define CONTENT_FILE_MAX (64u << 20)

/* Folds one named file (or its absence, for "") into *h. */
static int fold_file(uint64_t *h, const char *label, const char *path, char *msg, size_t msg_size)
{
    *h = temper_hash64(label, strlen(label) + 1, *h);
    if (!path[0]) {
        *h = temper_hash64("absent", 6, *h);
        return 0;
    }
    char *text = NULL;
    size_t len = 0;
    int err = temper_read_file(path, CONTENT_FILE_MAX, &text, &len, msg, msg_size);
    if (err)
        return err;
    uint64_t n = len;
    *h = temper_hash64(&n, sizeof(n), *h);
    *h = temper_hash64(text, len, *h);
    free(text);
    return 0;
}

int temper_task_content_hash(const struct temper_task *task, char hex[17], char *msg, size_t msg_size)
{
    char json[TEMPER_PATH_MAX + 16];
    if (snprintf(json, sizeof(json), "%s/task.json", task->dir) >= (int)sizeof(json))
        return temper_fail(msg, msg_size, TEMPER_ERANGE, "%s: path too long", task->dir);
    uint64_t h = 0x74656d706572ull; /* "temper": the chain's start */
    int err = fold_file(&h, "task.json", json, msg, msg_size);
    if (!err)
        err = fold_file(&h, "reference", task->reference, msg, msg_size);
    if (!err)
        err = fold_file(&h, "baseline.cuda", task->baseline_cuda, msg, msg_size);
    if (!err)
        err = fold_file(&h, "baseline.opencl", task->baseline_opencl, msg, msg_size);
    if (err)
        return err;
    temper_hash_hex(h, hex);
    return 0;
}

int temper_task_content_hash_named(const char *root, const char *name, char hex[17], char *msg, size_t msg_size)
{
    char dir[TEMPER_PATH_MAX];
    int err = temper_task_find(root, name, dir, sizeof(dir), msg, msg_size);
    if (err)
        return err;
    struct temper_task *task = calloc(1, sizeof(*task)); /* large: not on the stack */
    if (!task)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    err = temper_task_load(dir, task, msg, msg_size);
    if (!err)
        err = temper_task_content_hash(task, hex, msg, msg_size);
    free(task);
    return err;
}
