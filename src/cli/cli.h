/* cli.h: the commands of the temper binary, one per file, and what they share. */
#ifndef TEMPER_CLI_H
#define TEMPER_CLI_H

#include <stdio.h>

/* Exit statuses of DESIGN.md. */
enum cli_exit {
    CLI_OK = 0,        /* success; for eval: correct */
    CLI_NOT_OK = 1,    /* evaluated, but not correct */
    CLI_USAGE = 2,     /* bad usage or input */
    CLI_NODEVICE = 3,  /* no usable device */
};

int cmd_devices(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_tasks(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_best(int argc, char **argv);

/* Maps a library error to an exit status (no device: 3; anything else: 2). */
int cli_exit_for(int err);
/* Prints "temper: <msg>" on stderr and returns the exit status for err. */
int cli_error(int err, const char *msg);

#endif
