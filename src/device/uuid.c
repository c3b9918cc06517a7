/* uuid.c: the one spelling of a device's UUID, shared by the backends, so that the same device
 * reads the same through CUDA and OpenCL. A file of its own so that the backends need nothing
 * from device.c, which calls them. */
#include <stdio.h>

#include "device/device.h"

void temper_device_format_uuid(const unsigned char bytes[16], char *out, size_t out_size)
{
    char text[40];
    size_t o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            text[o++] = '-';
        snprintf(text + o, sizeof(text) - o, "%02x", bytes[i]);
        o += 2;
    }
    snprintf(out, out_size, "%s", text);
}
