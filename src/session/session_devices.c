/* session_devices.c: the devices this machine offers, from a worker started for the question. The
 * front ends ask here instead of starting a worker themselves. */
#include <limits.h>

#include "temper/session.h"

#include "eval/eval_internal.h"
#include "eval/triton_build.h"

int temper_session_list_devices(json_t **devices, char *msg, size_t msg_size)
{
    struct temper_worker *w = NULL;
    *devices = NULL;
    int err = temper_worker_start(NULL, NULL, &w, msg, msg_size);
    if (!err)
        err = temper_list_devices(w, devices, msg, msg_size);
    temper_worker_stop(w);
    /* Which Triton compiles Triton candidates (TEMPER_PYTHON), asked of a compile process. */
    char version[PATH_MAX + 64], why[2048];
    if (!err && *devices)
        json_object_set_new(*devices, "triton", triton_probe(version, sizeof(version), why, sizeof(why))
                                                    ? json_pack("{s:s}", "error", why)
                                                    : json_pack("{s:s}", "version", version));
    return err;
}
