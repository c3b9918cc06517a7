/* session.c: what eval, tune and calibrate all begin with: the store, a worker for the device,
 * the device's description, and its measured ceilings (measured once, the first time they are
 * needed, and stored). */
#include <stdio.h>

#include "cli.h"

int cli_session_open(struct cli_session *s, const char *device, const struct temper_limits *limits,
                     int want_ceilings, char *msg, size_t msg_size)
{
    s->store = NULL;
    s->worker = NULL;
    s->info = NULL;
    s->ceilings = NULL;
    int err = temper_store_open(NULL, &s->store, msg, msg_size);
    if (!err)
        err = temper_worker_start(device, limits, &s->worker, msg, msg_size);
    if (!err && want_ceilings)
        err = cli_session_ceilings(s, 0, msg, msg_size);
    return err;
}

int cli_session_ceilings(struct cli_session *s, int measure_again, char *msg, size_t msg_size)
{
    int err = s->info ? 0 : temper_worker_device_info(s->worker, &s->info, msg, msg_size);
    if (err)
        return err;
    if (!measure_again && (s->ceilings || (s->ceilings = temper_store_calibration(s->store, s->info))))
        return 0;
    if (!measure_again)
        fprintf(stderr, "temper: %s has no measured ceilings yet: calibrating it once...\n",
                json_string_value(json_object_get(s->info, "id")));
    json_decref(s->ceilings);
    s->ceilings = NULL;
    err = temper_calibrate(s->worker, &s->ceilings, msg, msg_size);
    if (!err)
        err = temper_store_put_calibration(s->store, s->info, s->ceilings, msg, msg_size);
    return err;
}

void cli_session_close(struct cli_session *s)
{
    temper_worker_stop(s->worker);
    temper_store_close(s->store);
    json_decref(s->info);
    json_decref(s->ceilings);
    s->worker = NULL;
    s->store = NULL;
    s->info = s->ceilings = NULL;
}
