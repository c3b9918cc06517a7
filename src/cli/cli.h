/* cli.h: the commands of the temper binary, one per file, and what they share. */
#ifndef TEMPER_CLI_H
#define TEMPER_CLI_H

#include <stdio.h>

#include "temper/eval.h"
#include "temper/session.h"
#include "temper/store.h"

/* Exit statuses, as README.md lists them. */
enum cli_exit {
    CLI_OK = 0,        /* success; for eval: correct */
    CLI_NOT_OK = 1,    /* evaluated, but not correct */
    CLI_USAGE = 2,     /* bad usage or input */
    CLI_NODEVICE = 3,  /* no usable device */
    CLI_STORE = 4,     /* the store failed: a write failed, or the store is damaged */
    CLI_INTERRUPTED = 130, /* stopped by Ctrl-C (SIGINT) */
    CLI_CONTINUE = -1, /* never an exit status: a command's phase found nothing to stop for */
};

int cmd_devices(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_tasks(int argc, char **argv);
/* `temper tasks import kernelbench ...` (cmd_import.c); argv[0] is "import". */
int cmd_tasks_import(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_best(int argc, char **argv);
int cmd_schema(int argc, char **argv);
int cmd_mcp(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_history(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_worker(int argc, char **argv); /* cmd_worker.c, built with hiredis and the consumer loop */
int cmd_agent(int argc, char **argv);
int cmd_knowledge(int argc, char **argv);

/* Opens a session on device (NULL: the default) whose notices and warnings are printed on
 * stderr; no_store: record nothing. Caller closes with temper_session_close. */
int cli_session_open(struct temper_session **s, const char *device, const struct temper_limits *limits,
                     const char *tasks_dir, int no_store, int jobs, char *msg, size_t msg_size);

/* Whether a device's description (temper devices --json, a session's device info) says its
 * kernels run inside the worker's process (the in_process capability: PoCL on the CPU). */
int cli_device_in_process(json_t *device);

/* Maps a library error to an exit status (no device: 3; the store: 4; anything else: 2). */
int cli_exit_for(int err);
/* text (NULL: "") as a terminal may show it, in out (at least 16 bytes): printable UTF-8 as is,
 * control characters (C0, DEL, C1) and bytes that are not UTF-8 as \xNN, cut with "..." when it
 * does not fit. For every string from the store or a client that a command prints as text. */
const char *cli_shown(const char *text, char *out, size_t size);
/* Prints "temper: <msg>" on stderr and returns the exit status for err. */
int cli_error(int err, const char *msg);
/* Opens the store ($TEMPER_HOME/temper.db) for a command that only reads it, creating neither it
 * nor its folder: TEMPER_ENOTFOUND, msg saying "no store yet at PATH", when there is none yet.
 * Caller closes *store with temper_store_close. */
int cli_store_open_existing(struct temper_store **store, char *msg, size_t msg_size);
/* 0 when the store has run run_id, else the error (TEMPER_ENOTFOUND for an id that names no run),
 * msg saying why. */
int cli_store_run_exists(struct temper_store *store, int64_t run_id, char *msg, size_t msg_size);
/* The tail of a command's getopt loop: asked (--help) prints help on stdout and returns CLI_OK;
 * otherwise (an option getopt refused, which it has said) help goes to stderr and CLI_USAGE is
 * returned. */
int cli_help_exit(void (*help)(FILE *out), int asked);
/* A command found nothing stored for task (NULL: it named none): an unknown task is bad input, so
 * when no task folder on the search path root has that name this says so and returns CLI_USAGE;
 * otherwise it prints "temper: <nothing>" and returns CLI_NOT_OK. */
int cli_nothing_for_task(const char *root, const char *task, const char *nothing);
/* A command that serves evaluations to others (serve, worker) needs tasks to judge them by:
 * returns CLI_OK when the search path of tasks_dir (temper_tasks_root) holds at least one task
 * folder, else prints "temper: no tasks under PATH ..." and returns CLI_USAGE. Without it each
 * candidate would be refused or judged `invalid` for the operator's mistake. */
int cli_tasks_present(const char *tasks_dir);
/* A bad option value or argument: prints "temper: <msg>" on stderr and returns CLI_USAGE. */
int cli_usage_error(const char *msg);
/* Reads a store id given to option ("--run"): a positive decimal integer. Returns 0 with *id set,
 * or prints "temper: OPTION: 'TEXT' is not a WHAT (a positive integer)" and returns CLI_USAGE. */
int cli_parse_id(const char *option, const char *what, const char *text, int64_t *id);

/* Prints a progress line on stderr when stderr is a terminal and the operation has taken over a
 * second since cli_progress_start; a no-op otherwise. cli_progress_done clears the line
 * (progress.c; one thread only). */
void cli_progress_start(void);
void cli_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_progress_done(void);

#endif
