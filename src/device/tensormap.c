/* tensormap.c: TMA's rules for a tensor map (those cuTensorMapEncodeTiled enforces), checked
 * before a launch so that a candidate's map that cannot be encoded is refused with the rule it
 * breaks and the shape, on any backend that takes tensor maps. */
#include <stdint.h>

#include "device/device.h"
#include "temper/error.h"

int temper_tensormap_check(const struct temper_tensormap *m, char *msg, size_t msg_size)
{
    size_t es = temper_dtype_size(m->dtype);
    if (m->rank < 1 || m->rank > TEMPER_TENSORMAP_MAX_RANK)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "a tensor map has 1 to %d dimensions, not %d",
                           TEMPER_TENSORMAP_MAX_RANK, m->rank);
    for (int d = 0; d < m->rank; d++) {
        if (m->dims[d] < 1 || m->dims[d] > (1ull << 32))
            return temper_fail(msg, msg_size, TEMPER_EINVALID,
                               "dimension %d (innermost first) has %llu elements; TMA needs 1 to 2^32", d,
                               (unsigned long long)m->dims[d]);
        if (m->box[d] < 1 || m->box[d] > 256)
            return temper_fail(msg, msg_size, TEMPER_EINVALID, "box size %d is %u; TMA needs 1 to 256", d,
                               m->box[d]);
        if (d && (m->strides[d] % 16 || m->strides[d] >= (1ull << 40)))
            return temper_fail(msg, msg_size, TEMPER_EINVALID,
                               "dimension %d's stride is %llu bytes; TMA needs a multiple of 16 below 2^40", d,
                               (unsigned long long)m->strides[d]);
    }
    uint64_t inner = (uint64_t)m->box[0] * es;
    if (inner % 16)
        return temper_fail(msg, msg_size, TEMPER_EINVALID,
                           "the box's inner size is %llu bytes (%u elements of %zu); TMA needs a multiple of 16",
                           (unsigned long long)inner, m->box[0], es);
    if (m->swizzle != 0 && m->swizzle != 32 && m->swizzle != 64 && m->swizzle != 128)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "swizzle %d: TMA swizzles 0 (none), 32, 64 or 128 bytes",
                           m->swizzle);
    if (m->swizzle && inner > (uint64_t)m->swizzle)
        return temper_fail(msg, msg_size, TEMPER_EINVALID,
                           "the box's inner size is %llu bytes, over the %d-byte swizzle span",
                           (unsigned long long)inner, m->swizzle);
    return 0;
}
