/* eval_source.c: evaluates one candidate kernel through the installed libtemper's session API (the
 * one evaluation core the temper command line also uses) and prints the result record as JSON.
 *
 *   usage: eval_source [--store] cuda|opencl [DEVICE] < candidate
 *
 * The candidate's source comes on standard input, with its @temper directives (which name its
 * task). Its language, cuda or opencl, is the first argument and picks the device (the first one
 * of that backend) unless a second argument names one (cuda:1, opencl:0).
 *
 *   cc eval_source.c $(pkg-config --cflags --libs temper) -o eval_source
 *   ./eval_source opencl < rows.cl
 *
 * Nothing is written to the store unless --store is given: then the result is recorded in
 * $TEMPER_HOME/temper.db (without it, in $XDG_DATA_HOME/temper or ~/.local/share/temper) and
 * carries its row id ("store_id"). Builds are cached in $TEMPER_CACHE either way. Tasks are
 * looked up as temper looks them up: $TEMPER_TASKS (folders separated by ':'), else the installed
 * suite (../share/temper/tasks from this program, else the data folder the library was built
 * for). The worker executable is $TEMPER_WORKER, else temper-worker beside this program or in
 * ../libexec/temper from it, else where the library was built to install it: put this program in
 * the prefix's bin to use an install made with `cmake --install --prefix`.
 *
 * Exit status: 0 correct, 1 evaluated but not correct, 2 bad usage or input (a candidate that
 * could not be evaluated at all; its result is still printed), 3 no usable device, 4 the store
 * failed (with --store; the result is still printed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <temper/session.h>

enum { EXIT_CORRECT = 0, EXIT_NOT_CORRECT = 1, EXIT_USAGE = 2, EXIT_NO_DEVICE = 3, EXIT_STORE = 4 };

/* The most source read from standard input (what the candidate parser takes). */
#define SOURCE_MAX_BYTES ((size_t)TEMPER_SOURCE_MAX)

/* The exit status for an error code of the library. */
static int exit_for(int err)
{
    return err == TEMPER_ENODEVICE ? EXIT_NO_DEVICE : err == TEMPER_ESTORE ? EXIT_STORE : EXIT_USAGE;
}

/* Reads all of standard input into a NUL-terminated malloc'ed string (the caller frees it) of
 * *len bytes (NUL bytes among them are kept, for the library to judge), or NULL with a message
 * on stderr. */
static char *read_stdin(size_t *len_out)
{
    size_t cap = 64 << 10, len = 0;
    char *text = malloc(cap + 1);
    while (text) {
        size_t got = fread(text + len, 1, cap - len, stdin);
        len += got;
        if (got == 0)
            break;
        if (len == cap) {
            if (cap > SOURCE_MAX_BYTES) {
                fprintf(stderr, "eval_source: the source on standard input is over %zu bytes\n", SOURCE_MAX_BYTES);
                free(text);
                return NULL;
            }
            cap *= 2;
            char *bigger = realloc(text, cap + 1);
            if (!bigger)
                free(text);
            text = bigger;
        }
    }
    if (!text) {
        fprintf(stderr, "eval_source: out of memory reading standard input\n");
        return NULL;
    }
    if (ferror(stdin)) {
        fprintf(stderr, "eval_source: cannot read standard input\n");
        free(text);
        return NULL;
    }
    text[len] = '\0';
    *len_out = len;
    return text;
}

/* Notices and warnings of the session (calibrating, a result not recorded), on stderr. */
static void on_event(void *user, const struct temper_session_event *ev)
{
    (void)user;
    if (ev->message)
        fprintf(stderr, "eval_source: %s%s\n", ev->kind == TEMPER_SESSION_WARNING ? "warning: " : "", ev->message);
}

int main(int argc, char **argv)
{
    int store = argc > 1 && !strcmp(argv[1], "--store");
    int nargs = argc - 1 - store;
    const char *lang = nargs >= 1 ? argv[1 + store] : NULL;
    if (nargs < 1 || nargs > 2 || (strcmp(lang, "cuda") && strcmp(lang, "opencl"))) {
        fprintf(stderr, "usage: eval_source [--store] cuda|opencl [DEVICE] < candidate\n");
        return EXIT_USAGE;
    }
    size_t source_len = 0;
    char *source = read_stdin(&source_len);
    if (!source)
        return EXIT_USAGE;

    /* The device: the one named, else the first of the language's backend. No store unless asked
     * (store_path NULL: $TEMPER_HOME/temper.db). */
    struct temper_session_config config = {
        .device = nargs == 2 ? argv[2 + store] : lang,
        .no_store = !store,
        .on_event = on_event,
    };
    char msg[2048];
    struct temper_session *session;
    int err = temper_session_open(&config, &session, msg, sizeof(msg));
    if (err) {
        fprintf(stderr, "eval_source: %s\n", msg);
        free(source);
        return exit_for(err);
    }

    /* The session copies the source: it can be freed once submitted. */
    struct temper_session_request req = {.path = "<stdin>", .source = source, .source_len = source_len, .lang = lang};
    int64_t id;
    json_t *result = NULL;
    err = temper_session_submit(session, &req, &id, msg, sizeof(msg));
    free(source);
    if (!err)
        err = temper_session_wait(session, id, &result, msg, sizeof(msg));
    temper_session_close(session);
    if (err) {
        fprintf(stderr, "eval_source: %s\n", msg);
        return exit_for(err);
    }

    json_dumpf(result, stdout, JSON_INDENT(2));
    printf("\n");
    int status;
    const char *store_error = temper_session_result_store_error(result);
    int result_err = temper_session_result_error(result);
    if (result_err) { /* not evaluated at all: an unknown task, a malformed directive, another device's language */
        fprintf(stderr, "eval_source: %s\n", json_string_value(json_object_get(result, "message")));
        status = exit_for(result_err);
    } else if (store_error) { /* evaluated and printed, but not kept (on_event said why) */
        status = EXIT_STORE;
    } else {
        const char *verdict = temper_session_result_verdict(result);
        status = verdict && !strcmp(verdict, "correct") ? EXIT_CORRECT : EXIT_NOT_CORRECT;
    }
    json_decref(result);
    return status;
}
