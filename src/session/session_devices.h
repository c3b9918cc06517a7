/* session_devices.h: the devices this machine offers, asked of a worker of its own, for front ends
 * that list devices without opening a session (`temper devices`, `temper serve` choosing what to
 * serve). A core function beside the session API; its declaration belongs in temper/session.h
 * once that header's typed request has landed (docs/internals.md). */
#ifndef TEMPER_SESSION_DEVICES_H
#define TEMPER_SESSION_DEVICES_H

#include <jansson.h>
#include <stddef.h>

/* Lists every device of every backend: starts a worker on the default device with the default
 * limits, asks it for its list ({"devices": [...], "unavailable": {...}, "sandbox": {...}}, as
 * temper_list_devices gives it) and stops it before returning. The caller decrefs *devices. On
 * failure (no worker, or no answer) returns the error and fills msg; *devices is left NULL. */
int temper_session_list_devices(json_t **devices, char *msg, size_t msg_size);

#endif
