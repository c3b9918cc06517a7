/* json.c: JSON helpers shared by the modules that read requests. */
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
