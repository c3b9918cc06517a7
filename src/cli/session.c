/* session.c (cli): opening a library session the way every command that runs kernels does:
 * with the device and limits from the command line, and notices and warnings printed on stderr
 * (the library prints nothing itself). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "device/device.h"

static void print_event(void *user, const struct temper_session_event *ev)
{
    (void)user;
    if (ev->kind == TEMPER_SESSION_WARNING)
        fprintf(stderr, "temper: warning: %s\n", ev->message);
    else if (ev->kind == TEMPER_SESSION_NOTICE)
        fprintf(stderr, "temper: %s\n", ev->message);
}

/* Requests one temper_eval_batch may take: more than a command line gives at once. */
#define CLI_MAX_BATCH 4096

int cli_session_open(struct temper_session **s, const char *device, const struct temper_limits *limits,
                     const char *tasks_dir, int no_store, int jobs, char *msg, size_t msg_size)
{
    struct temper_session_config config = {0};
    config.device = device;
    config.limits = limits;
    config.tasks_dir = tasks_dir;
    config.no_store = no_store;
    config.jobs = jobs;
    /* One process's own files: as many in one batch as are queued, so that compiles run ahead
     * across all of them (a batch boundary starts the compile pipeline again). */
    config.max_batch = CLI_MAX_BATCH;
    config.on_event = print_event;
    /* Deep checks run this binary again under their tool. */
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (len > 0) {
        self[len] = 0;
        config.deep_exe = self;
    }
    return temper_session_open(&config, s, msg, msg_size);
}

int cli_device_in_process(json_t *device)
{
    const char *in_process = temper_device_cap_name(TEMPER_DEVICE_CAP_IN_PROCESS);
    size_t i;
    json_t *cap;
    json_array_foreach(json_object_get(device, "caps"), i, cap) {
        if (json_string_value(cap) && !strcmp(json_string_value(cap), in_process))
            return 1;
    }
    return 0;
}
