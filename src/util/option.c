/* option.c: numeric command-line options read whole and checked against their range; every
 * message names the option. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "temper/error.h"
#include "util/option.h"
#include "util/util.h"

/* Copies at most 40 bytes of text into out for a message (temper_show_bytes). */
static void quote_text(const char *text, char *out, size_t out_size)
{
    temper_show_bytes(text, strlen(text), 40, out, out_size);
}

int temper_parse_i64_option(const char *option, const char *text, int64_t min, int64_t max, int64_t *out,
                            char *msg, size_t msg_size)
{
    char shown[200];
    quote_text(text, shown, sizeof(shown));
    const char *p = text;
    int negative = 0;
    if (*p == '+' || *p == '-')
        negative = *p++ == '-';
    int base = 10;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
    }
    if (!*p)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s: '%s' is not an integer", option, shown);
    /* Accumulate as a negative number, whose range holds every int64_t magnitude. */
    int64_t v = 0;
    int overflow = 0;
    for (; *p; p++) {
        int d;
        if (isdigit((unsigned char)*p))
            d = *p - '0';
        else if (base == 16 && isxdigit((unsigned char)*p))
            d = tolower((unsigned char)*p) - 'a' + 10;
        else
            return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s: '%s' is not an integer", option, shown);
        if (!overflow && (__builtin_mul_overflow(v, base, &v) || __builtin_sub_overflow(v, d, &v)))
            overflow = 1;
    }
    if (!negative && !overflow) {
        if (v == INT64_MIN)
            overflow = 1;
        else
            v = -v;
    }
    if (overflow || v < min || v > max)
        return temper_fail(msg, msg_size, TEMPER_ERANGE, "%s: %s is out of range: it must be between %lld and %lld%s",
                           option, shown, (long long)min, (long long)max,
                           overflow ? " (it does not fit in 64 bits)" : "");
    *out = v;
    return 0;
}

int temper_parse_int_option(const char *option, const char *text, int min, int max, int *out, char *msg,
                            size_t msg_size)
{
    int64_t v;
    int err = temper_parse_i64_option(option, text, min, max, &v, msg, msg_size);
    if (!err)
        *out = (int)v;
    return err;
}

int temper_parse_double_option(const char *option, const char *text, double min, double max, double *out,
                               char *msg, size_t msg_size)
{
    char shown[200];
    quote_text(text, shown, sizeof(shown));
    /* strtod would take leading spaces, "nan", "inf" and hexadecimal: only a plain decimal
     * number is a duration or a budget. */
    const char *p = text;
    if (*p == '+' || *p == '-')
        p++;
    int digits = 0;
    for (const char *q = p; *q && *q != 'e' && *q != 'E'; q++)
        digits += isdigit((unsigned char)*q) != 0;
    char *end = NULL;
    errno = 0;
    double v = digits && (isdigit((unsigned char)*p) || *p == '.') && !(p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
                   ? strtod(text, &end)
                   : 0;
    if (!end || end == text || *end)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s: '%s' is not a number", option, shown);
    if (!isfinite(v) || v < min || v > max)
        return temper_fail(msg, msg_size, TEMPER_ERANGE, "%s: %s is out of range: it must be between %g and %g",
                           option, shown, min, max);
    *out = v;
    return 0;
}
