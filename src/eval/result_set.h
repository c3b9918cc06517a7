/* result_set.h: setters for the code inside temper that completes or changes a result before writing
 * it once (the parent's evaluation, the session, the deep checks, the in-process judge). Not
 * installed: a library user reads results (include/temper/result.h); only temper writes them. */
#ifndef TEMPER_RESULT_SET_H
#define TEMPER_RESULT_SET_H

#include <jansson.h>
#include <stddef.h>

#include "temper/result.h"

/* Setters for code that completes or changes a result before writing it once (a result's JSON is
 * written only by temper_result_to_json; tests/result_writes_test.sh holds src/ to that). */
/* Replaces the string member *member with a copy of text (NULL: null), freeing what it held. Text
 * that is not valid UTF-8 leaves the member as it was, as a JSON write of it (json_string) that
 * failed always left the key. Returns 0, TEMPER_EINVALID for such text, or TEMPER_ENOMEM with the
 * member null. */
int temper_result_set_text(char **member, const char *text);
/* Replaces the JSON member *member with value, taking value's reference (NULL: null), and drops
 * what it held. */
void temper_result_set_value(json_t **member, json_t *value);
/* Sets r's field `name` from value, read strictly as temper_result_from_json reads that key (json
 * null: null), for a value held as JSON (the worker's device description as device_info); what the
 * member held is freed first. Returns 0, or an error with msg naming the path ("result
 * device_info.id: a string was expected") and the member null. */
int temper_result_set_json(struct temper_result *r, const char *name, json_t *value, char *msg, size_t msg_size);
/* Makes *r a result the calling program gives itself, no worker having made one (a cancel, a crash, a
 * timeout, a verdict reached before the device): verdict (NULL: null) and message, cancelled and
 * worker_restarted true where set, every other field null. A text that is not valid UTF-8, or out
 * of memory, leaves its member null. Caller frees r. */
void temper_result_own(struct temper_result *r, const char *verdict, const char *message, int cancelled,
                       int worker_restarted);

#endif
