/* fuzz_directives.c: libFuzzer harness for the candidate parser (the `@temper` directive lines
 * and the source around them, src/kernel/candidate.c). The input is a candidate's whole source,
 * parsed once as OpenCL and once as CUDA; a failure must come with a message. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "temper/kernel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const paths[] = {"fuzz.cl", "fuzz.cu"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        struct temper_candidate c;
        char msg[1024] = "";
        if (temper_candidate_parse(paths[i], (const char *)data, size, &c, msg, sizeof(msg)) == 0)
            temper_candidate_free(&c);
        else if (!msg[0])
            abort(); /* an error without a message: the user would not know what is wrong */
    }
    return 0;
}
