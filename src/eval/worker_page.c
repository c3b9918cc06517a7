/* worker_page.c: the worker's side of the page it shares with the parent (worker_impl.h): what it
 * is doing now, and since when. Every part of the worker (the request handlers, the builds, the
 * checks, the timing, the calibration) reports through here, so this file calls nothing of them. */
#include <stdarg.h>
#include <stdio.h>

#include "temper/util.h"
#include "worker_impl.h"

void worker_doing(struct worker_shared *s, int phase, const char *fmt, ...)
{
    if (!s)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->doing, sizeof(s->doing), fmt, ap);
    va_end(ap);
    s->phase_since_ns = temper_now_ns();
    s->phase = phase;
}
