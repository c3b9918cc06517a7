/* session_devices.c: the devices this machine offers, from a worker started for the question. The
 * front ends ask here instead of starting a worker themselves. */
#include "temper/session.h"

#include "eval/eval_internal.h"

int temper_session_list_devices(json_t **devices, char *msg, size_t msg_size)
{
    struct temper_worker *w = NULL;
    *devices = NULL;
    int err = temper_worker_start(NULL, NULL, &w, msg, msg_size);
    if (!err)
        err = temper_list_devices(w, devices, msg, msg_size);
    temper_worker_stop(w);
    return err;
}
