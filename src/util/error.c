/* error.c: messages for temper's error codes. */
#include "temper/error.h"

#include <stdarg.h>
#include <stdio.h>

const char *temper_strerror(int err)
{
    switch (err) {
    case TEMPER_OK:
        return "success";
#define TEMPER_ERR_CASE(name, msg) \
    case TEMPER_E##name:           \
        return msg;
        TEMPER_ERRNO_MAP(TEMPER_ERR_CASE)
#undef TEMPER_ERR_CASE
    default:
        return "unknown error";
    }
}

int temper_fail(char *msg, size_t msg_size, int err, const char *fmt, ...)
{
    if (msg && msg_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, msg_size, fmt, ap);
        va_end(ap);
    }
    return err;
}
