/* worker_page.c: the worker's side of what it tells the parent while it works (worker_impl.h):
 * the beats on its socket (a wait for the device began or ended, a phase began, a candidate's
 * kernel is about to run), which the parent times with its own clock, and the sentence in the
 * shared page saying what it is doing. Every part of the worker (the request handlers, the builds,
 * the checks, the timing, the calibration) reports through here, so this file calls nothing of
 * them.
 *
 * On a CPU device a kernel is native code in this process and can write any of its memory. Without
 * inline assembly (refused in OpenCL C, word_rule.c) it makes no system call, so it cannot send a
 * beat, and it cannot take back the beat that began the wait it runs in; what it could change is
 * this process's state for later waits. So whether beats are sent, and where, is fixed before any
 * kernel runs and kept in a read-only page (the descriptor is a constant), and the grace a beat
 * asks for is capped by the parent. Code-reuse attacks, which make the process's own code run
 * otherwise than written, are beyond that: the parent's job limit, the sandbox and the worker's
 * replacement after every candidate that ran in it bound them (docs/candidate.md). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "device/device.h"
#include "util/util.h"
#include "eval/worker_impl.h"

/* Whether beats are sent, alone in a page (of up to 64 KiB) made read-only by worker_beats_start. */
static union {
    int on;           /* 1 once worker_beats_start ran */
    char page[65536]; /* the page it fills */
} beats __attribute__((aligned(65536)));

/* The grace the next waits ask for, in seconds (the parent caps it). */
static double grace_s;

static void beat(uint32_t kind, uint32_t value)
{
    if (!beats.on)
        return;
    uint32_t word = WORKER_BEAT | kind;
    unsigned char b[8];
    for (int i = 0; i < 4; i++) {
        b[i] = (unsigned char)(word >> (8 * i));
        b[4 + i] = (unsigned char)(value >> (8 * i));
    }
    /* A parent that has gone reads nothing: the reply's send fails next and the worker exits. */
    while (send(WORKER_SOCKET_FD, b, sizeof(b), MSG_NOSIGNAL) < 0 && errno == EINTR)
        ;
}

static void device_busy(int on)
{
    double ms = grace_s > 0 ? grace_s * 1e3 : 0;
    beat(on ? BEAT_BUSY : BEAT_IDLE, on ? (uint32_t)(ms < 4e9 ? ms : 4e9) : 0);
}

void worker_beats_start(void)
{
    if (beats.on)
        return;
    beats.on = 1;
    if ((size_t)sysconf(_SC_PAGESIZE) <= sizeof(beats))
        mprotect(&beats, sizeof(beats), PROT_READ);
    temper_device_watch(device_busy);
}

void worker_grace(double seconds)
{
    grace_s = seconds;
}

void worker_candidate_runs(void)
{
    beat(BEAT_CANDIDATE, 0);
}

void worker_tell(json_t *msg)
{
    if (beats.on)
        worker_send(WORKER_SOCKET_FD, msg);
}

int worker_truth_out(int which)
{
    return beats.on && fcntl(which, F_GETFD) != -1 ? which : -1;
}

void worker_doing(struct worker_shared *s, int phase, const char *fmt, ...)
{
    if (!s)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->doing, sizeof(s->doing), fmt, ap);
    va_end(ap);
    beat(BEAT_PHASE, (uint32_t)phase);
}
