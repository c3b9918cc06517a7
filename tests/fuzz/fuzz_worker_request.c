/* fuzz_worker_request.c: libFuzzer harness for the worker's request decoder: the input is what
 * arrives on the worker's pipe (a 4-byte little-endian length, then that many bytes of JSON),
 * decoded as the worker decodes it. decode_request() is the one place that names the decoder,
 * so that it can follow the decoder when that moves. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "eval/worker_impl.h"

/* Decodes one frame from the bytes data[0..size) as the worker would from its pipe; NULL when
 * the frame is short, too long or not JSON. The caller decrefs the request. */
static json_t *decode_request(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz-request", 0); /* a pipe would block past its capacity */
    if (fd < 0)
        abort();
    size_t done = 0;
    while (done < size) {
        ssize_t k = write(fd, data + done, size - done);
        if (k <= 0)
            abort();
        done += (size_t)k;
    }
    if (lseek(fd, 0, SEEK_SET) != 0)
        abort();
    json_t *req = worker_recv(fd);
    close(fd);
    return req;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *req = decode_request(data, size);
    if (!req)
        return 0;
    /* The fields an eval request carries, read as the worker reads them. */
    static const char *const strings[] = {"op", "task_dir", "path", "source", "extra_flags"};
    for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
        (void)json_string_value(json_object_get(req, strings[i]));
    json_t *knobs = json_object_get(req, "knobs");
    const char *key;
    json_t *value;
    json_object_foreach(knobs, key, value) (void)json_string_value(value);
    (void)json_integer_value(json_object_get(req, "seed"));
    (void)json_number_value(json_object_get(req, "time_budget_s"));
    json_decref(req);
    return 0;
}
