/* worker_impl.h: what the parent and the worker process share: the page in which the worker says
 * what it is doing (so the parent can kill a hung launch and say where it hung), and the framing
 * of messages on the pipes. */
#ifndef TEMPER_WORKER_IMPL_H
#define TEMPER_WORKER_IMPL_H

#include <jansson.h>
#include <stdint.h>

/* Phases the worker reports. */
enum worker_phase {
    WORKER_IDLE,
    WORKER_OPENING,   /* opening the device */
    WORKER_BUILDING,  /* compiling a kernel */
    WORKER_RUNNING,   /* running checks or timing */
};

/* Shared between the parent and one worker (an anonymous shared mapping made before fork). */
struct worker_shared {
    volatile uint64_t busy_since_ns; /* when the device began work that may hang, 0 when idle */
    volatile uint64_t phase_since_ns; /* when the current phase began */
    volatile int phase;              /* enum worker_phase */
    char doing[512];                 /* a sentence: what the worker is doing now */
};

/* Sets the phase and the sentence (the worker side). */
void worker_doing(struct worker_shared *s, int phase, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Writes a message: a 4-byte length, then the JSON text. */
int worker_send(int fd, json_t *msg);
/* Reads a message; returns NULL at end of file or on a malformed frame. Caller decrefs. */
json_t *worker_recv(int fd);

/* The worker's request handlers (pipeline.c). */
struct worker_state;
json_t *worker_handle(struct worker_state *ws, json_t *request, int *fatal);
struct worker_state *worker_state_new(const char *device_spec, struct worker_shared *shared);

/* Sources of the calibration kernels. */
extern const char worker_calibrate_cl[];
extern const char worker_calibrate_cu[];

#endif
