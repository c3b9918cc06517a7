/* cli.h: the commands of the temper binary, one per file, and what they share. */
#ifndef TEMPER_CLI_H
#define TEMPER_CLI_H

#include <stdio.h>

#include "temper/eval.h"
#include "temper/store.h"

/* Exit statuses of DESIGN.md. */
enum cli_exit {
    CLI_OK = 0,        /* success; for eval: correct */
    CLI_NOT_OK = 1,    /* evaluated, but not correct */
    CLI_USAGE = 2,     /* bad usage or input */
    CLI_NODEVICE = 3,  /* no usable device */
    CLI_STORE = 4,     /* the store failed: a write failed, or the store is damaged */
};

int cmd_devices(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_tasks(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_best(int argc, char **argv);

/* What a command that runs kernels holds. */
struct cli_session {
    struct temper_store *store;   /* the store */
    struct temper_worker *worker; /* the device worker */
    json_t *info;                 /* the device's description, once asked for */
    json_t *ceilings;             /* its measured ceilings, once asked for */
};

/* Opens the store and starts a worker for device; with want_ceilings, also gets the device's
 * ceilings (measuring and storing them the first time). Close with cli_session_close. */
int cli_session_open(struct cli_session *s, const char *device, const struct temper_limits *limits,
                     int want_ceilings, char *msg, size_t msg_size);
/* Gets the ceilings from the store, or measures them (always, with measure_again). */
int cli_session_ceilings(struct cli_session *s, int measure_again, char *msg, size_t msg_size);
void cli_session_close(struct cli_session *s);

/* Maps a library error to an exit status (no device: 3; the store: 4; anything else: 2). */
int cli_exit_for(int err);
/* Prints "temper: <msg>" on stderr and returns the exit status for err. */
int cli_error(int err, const char *msg);

#endif
