/* option.h: numeric command-line options, read whole and checked against their range, so that a
 * value out of range, negative where it cannot be, too large for its type, or not a number at
 * all gets a message naming the option instead of a silent truncation or wrap. */
#ifndef TEMPER_OPTION_H
#define TEMPER_OPTION_H

#include <stddef.h>
#include <stdint.h>

/* Reads text as an integer in [min, max]: an optional sign, then decimal digits or 0x and hex
 * digits, and nothing else (no spaces, no fraction). On success sets *out and returns 0; else
 * returns TEMPER_EINVALID (not an integer) or TEMPER_ERANGE (outside [min, max], overflow
 * included) with a message naming option ("--budget"), e.g.
 * "--budget: 0 is out of range: it must be between 1 and 1000000". *out is left alone on error. */
int temper_parse_i64_option(const char *option, const char *text, int64_t min, int64_t max, int64_t *out,
                            char *msg, size_t msg_size);

/* The same for an int. */
int temper_parse_int_option(const char *option, const char *text, int min, int max, int *out, char *msg,
                            size_t msg_size);

/* Reads text as a finite decimal number in [min, max] ("0.5", "2", "1e-3"); NaN, infinity,
 * hexadecimal, spaces and trailing text are refused. Errors as temper_parse_i64_option. */
int temper_parse_double_option(const char *option, const char *text, double min, double max, double *out,
                               char *msg, size_t msg_size);

#endif
