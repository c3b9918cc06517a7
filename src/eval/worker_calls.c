/* worker_calls.c: the parent's plain requests to a worker, those that evaluate nothing: the
 * device's description, its ceilings (measured again on a busy CPU device) and the list of
 * devices it can open. */
#include <string.h>

#include "temper/error.h"
#include "temper/eval.h"
#include "temper/result.h"
#include "worker_impl.h"

/* Sends a request built by the caller; an "error" reply becomes a failure with its message. */
static int call_checked(struct temper_worker *w, json_t *req, json_t **reply, char *msg, size_t msg_size)
{
    int err = temper_worker_call(w, req, reply, msg, msg_size);
    if (err)
        return err;
    json_t *e = json_object_get(*reply, "error");
    if (e) {
        json_t *code = json_object_get(*reply, "code");
        err = temper_fail(msg, msg_size, code ? (int)json_integer_value(code) : TEMPER_EDEVICE, "%s",
                          json_string_value(e));
        json_decref(*reply);
        *reply = NULL;
        return err ? err : TEMPER_EDEVICE;
    }
    return 0;
}

int temper_worker_device_info(struct temper_worker *w, json_t **info, char *msg, size_t msg_size)
{
    json_t *req = json_pack("{s:s}", "op", "info");
    int err = call_checked(w, req, info, msg, msg_size);
    json_decref(req);
    if (!err && !json_object_get(*info, "id")) {
        err = temper_fail(msg, msg_size, TEMPER_ENODEVICE, "the worker could not open the device: %s",
                          json_string_value(json_object_get(*info, "message")));
        json_decref(*info);
        *info = NULL;
    }
    return err;
}

/* One calibration run. */
static int calibrate_once(struct temper_worker *w, json_t **ceilings, char *msg, size_t msg_size)
{
    json_t *req = json_pack("{s:s}", "op", "calibrate");
    int err = call_checked(w, req, ceilings, msg, msg_size);
    json_decref(req);
    if (!err && !json_object_get(*ceilings, "copy_gbs")) {
        err = temper_fail(msg, msg_size, TEMPER_EDEVICE, "calibration failed: %s",
                          json_string_value(json_object_get(*ceilings, "message")));
        json_decref(*ceilings);
        *ceilings = NULL;
    }
    return err;
}

/* Keeps in a the better of a's and b's measure of each ceiling: a rate the higher, a time the
 * lower; other_cpu_share the lower (the quieter of the two runs). */
static void ceilings_best(json_t *a, json_t *b)
{
    const char *key;
    json_t *v;
    json_object_foreach(b, key, v)
    {
        json_t *old = json_object_get(a, key);
        if (!json_is_number(v) || !json_is_number(old))
            continue;
        size_t n = strlen(key);
        int lower = (n > 3 && !strcmp(key + n - 3, "_ms")) || !strcmp(key, "other_cpu_share");
        double x = json_number_value(old), y = json_number_value(v);
        if (lower ? y < x : y > x)
            json_object_set_new(a, key, json_real(y));
    }
}

int temper_calibrate(struct temper_worker *w, json_t **ceilings, char *msg, size_t msg_size)
{
    int err = calibrate_once(w, ceilings, msg, msg_size);
    /* On a CPU device other processes take cores from the kernels being measured: when they used
     * more than a quarter of the machine, measure once more and keep the better of each ceiling;
     * the share stays in the result, so the caller can say the ceilings were measured on a busy
     * machine. */
    for (int tries = 1; !err && tries < 3 &&
                        json_number_value(json_object_get(*ceilings, "other_cpu_share")) > TEMPER_CALIBRATE_BUSY_SHARE;
         tries++) {
        json_t *again = NULL;
        char why[512];
        if (calibrate_once(w, &again, why, sizeof(why)))
            break; /* the first measure stands */
        ceilings_best(*ceilings, again);
        json_decref(again);
    }
    return err;
}

int temper_list_devices(struct temper_worker *w, json_t **devices, char *msg, size_t msg_size)
{
    json_t *req = json_pack("{s:s}", "op", "devices");
    int err = call_checked(w, req, devices, msg, msg_size);
    json_decref(req);
    return err;
}
