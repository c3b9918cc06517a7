/* cli.c: what every command shares: exit statuses for errors, messages, help, ids, the store and
 * the tasks a command needs (cli.h). */
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
