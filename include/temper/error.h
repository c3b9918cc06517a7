/* error.h: temper's error codes and their messages, from one X-macro table.
 * Every function that can fail returns 0 or one of these (negative), and fills an optional
 * message buffer for people. */
#ifndef TEMPER_ERROR_H
#define TEMPER_ERROR_H

#include <stddef.h>

#define TEMPER_ERRNO_MAP(X)                                                   \
    X(NOMEM, "out of memory")                                                 \
    X(IO, "input/output error")                                               \
    X(PARSE, "malformed input")                                               \
    X(INVALID, "invalid argument")                                            \
    X(NOTFOUND, "not found")                                                  \
    X(RANGE, "value out of range")                                            \
    X(NODEVICE, "no usable device")                                           \
    X(DEVICE, "device error")                                                 \
    X(COMPILE, "compilation failed")                                          \
    X(LAUNCH, "kernel launch failed")                                         \
    X(TIMEOUT, "time limit exceeded")                                         \
    X(CRASH, "process crashed")                                               \
    X(STORE, "store error")                                                   \
    X(UNSUPPORTED, "not supported")

enum temper_err {
    TEMPER_OK = 0,
#define TEMPER_ERR_ENUM(name, msg) TEMPER_E##name,
    TEMPER_ERR_FIRST_ = -100,
    TEMPER_ERRNO_MAP(TEMPER_ERR_ENUM)
#undef TEMPER_ERR_ENUM
};

/* The message for an error code; a static string. */
const char *temper_strerror(int err);

/* Formats into msg (of msg_size bytes, may be NULL or 0) and returns err, so that
 * `return temper_fail(msg, n, TEMPER_EPARSE, "%s:%d: ...", ...)` reads as one statement. */
int temper_fail(char *msg, size_t msg_size, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
