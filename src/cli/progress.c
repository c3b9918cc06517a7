/* progress.c: the command line's one-line progress display on a terminal, shown only for work
 * that takes over a second, so that quick commands and piped output stay clean. The library never
 * prints: only the command line, one thread, calls this. */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "util/util.h"
#include "cli.h"

static double progress_started_s;
static int progress_shown;

void cli_progress_start(void)
{
    progress_started_s = temper_now_s();
    progress_shown = 0;
}

void cli_progress(const char *fmt, ...)
{
    if (!isatty(2) || temper_now_s() - progress_started_s < 1.0)
        return;
    char line[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "\r\033[K%s", line);
    fflush(stderr);
    progress_shown = 1;
}

void cli_progress_done(void)
{
    if (progress_shown)
        fprintf(stderr, "\r\033[K");
    progress_shown = 0;
}
