/* eval_source.c: evaluates one candidate kernel through the installed libtemper and prints the
 * result as JSON. The candidate's source comes on standard input (with its @temper directives,
 * which name its task); its language, cuda or opencl, is the first argument and picks the device
 * (the first one of that backend) unless a second argument names one (cuda:1, opencl:0).
 *
 *   cc eval_source.c $(pkg-config --cflags --libs temper) -o eval_source
 *   ./eval_source opencl < tasks/L1/softmax/rows.cl
 *
 * Tasks are looked up as temper looks them up ($TEMPER_TASKS names the folder); results are
 * recorded in the store ($TEMPER_HOME). Exit status: 0 correct, 1 evaluated but not correct,
 * 2 bad usage or input, 3 no usable device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <temper/eval.h>

/* The most source read from standard input. */
#define SOURCE_MAX_BYTES ((size_t)4 << 20)

/* Reads all of standard input into a NUL-terminated malloc'ed string (the caller frees it), or
 * NULL with a message on stderr. */
static char *read_stdin(void)
{
    size_t cap = 64 << 10, len = 0;
    char *text = malloc(cap + 1);
    while (text) {
        size_t got = fread(text + len, 1, cap - len, stdin);
        len += got;
        if (got == 0)
            break;
        if (len == cap) {
            if (cap >= SOURCE_MAX_BYTES) {
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
    return text;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3 || (strcmp(argv[1], "cuda") && strcmp(argv[1], "opencl"))) {
        fprintf(stderr, "usage: eval_source cuda|opencl [DEVICE] < candidate\n");
        return 2;
    }
    const int cuda = !strcmp(argv[1], "cuda");
    char *source = read_stdin();
    if (!source)
        return 2;

    char msg[2048];
    struct temper_worker *worker;
    int err = temper_worker_start(argc == 3 ? argv[2] : argv[1], NULL, &worker, msg, sizeof(msg));
    if (err) {
        fprintf(stderr, "eval_source: %s\n", msg);
        free(source);
        return err == TEMPER_ENODEVICE ? 3 : 2;
    }
    /* The path only names the candidate in messages and gives its language by its extension. */
    struct temper_eval_request req = {.path = cuda ? "stdin.cu" : "stdin.cl", .source = source};
    json_t *result = NULL;
    err = temper_eval(worker, &req, NULL, &result, msg, sizeof(msg));
    temper_worker_stop(worker);
    free(source);
    if (err || !result) {
        fprintf(stderr, "eval_source: %s\n", msg);
        json_decref(result);
        return err == TEMPER_ENODEVICE ? 3 : 2;
    }
    json_dumpf(result, stdout, JSON_INDENT(2));
    printf("\n");
    const char *verdict = json_string_value(json_object_get(result, "verdict"));
    int status = verdict && !strcmp(verdict, "correct") ? 0 : 1;
    json_decref(result);
    return status;
}
