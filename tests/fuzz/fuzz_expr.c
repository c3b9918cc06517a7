/* fuzz_expr.c: libFuzzer harness for the integer expression parser (src/util/expr.c), which reads
 * shapes, flops and bytes in task.json and `require` directives in candidates. The input is the
 * expression; names R, C and N are known (with values near the limits of int64), others are not.
 * A failure must come with a message. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

static int lookup(void *user, const char *name, size_t len, int64_t *value)
{
    (void)user;
    static const struct {
        const char *name; /* a variable */
        int64_t value;    /* its value */
    } vars[] = {{"R", 7}, {"C", INT64_MAX}, {"N", INT64_MIN}};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        if (strlen(vars[i].name) == len && !memcmp(vars[i].name, name, len)) {
            *value = vars[i].value;
            return 0;
        }
    return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *expr = malloc(size + 1); /* the parser takes a string: the input up to its first NUL */
    if (!expr)
        return 0;
    memcpy(expr, data, size);
    expr[size] = 0;
    int64_t value = 0;
    char msg[512] = "";
    if (temper_expr_eval(expr, lookup, NULL, &value, msg, sizeof(msg)) && !msg[0])
        abort(); /* an error without a message */
    /* without a message buffer too, as callers that only want the value do */
    temper_expr_eval(expr, lookup, NULL, &value, NULL, 0);
    free(expr);
    return 0;
}
