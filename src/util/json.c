/* json.c: JSON helpers shared by the modules that read requests: integers in JSON's sense, known keys. */
#include <string.h>

#include "util/util.h"

int temper_json_int64(const json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 1;
    }
    double d = json_real_value(v);
    if (!json_is_real(v) || d != (double)(int64_t)d || d < -9.2e18 || d > 9.2e18)
        return 0;
    *out = (int64_t)d;
    return 1;
}

int temper_json_keys_known(json_t *obj, const char *const *known, const char **bad)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v)
    {
        int ok = 0;
        for (const char *const *p = known; *p && !ok; p++)
            ok = !strcmp(*p, k);
        if (!ok) {
            *bad = k;
            return 0;
        }
    }
    return 1;
}
