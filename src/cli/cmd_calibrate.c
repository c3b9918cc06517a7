/* cmd_calibrate.c: `temper calibrate`: measures a device's ceilings once and stores them, so
 * every verdict can place a kernel on the roofline. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "util/util.h"

static void help(FILE *out)
{
    fprintf(out, "usage: temper calibrate [--device D] [--save FILE] [--json]\n\n"
                 "Measures the device's copy bandwidth (read + write bytes of a large device-to-device\n"
                 "copy), read bandwidth, FP32 FMA throughput and, on CUDA, bf16 tensor-core GEMM throughput\n"
                 "(through cuBLAS), and stores them in the store ($TEMPER_HOME/temper.db).\n"
                 "Evaluations use them as the roofline's ceilings. On a CPU device, calibration measures\n"
                 "how much of the machine other processes used meanwhile, measures again (up to three\n"
                 "times in all) when it was over a quarter, and warns if every try was disturbed.\n\n"
                 "  --device D   cuda, cuda:N, opencl or opencl:N (default: the first CUDA device, else OpenCL)\n"
                 "  --save FILE  also write the ceilings, with the device's identity, to FILE; a process run\n"
                 "               with TEMPER_CEILINGS=FILE takes them for that device instead of measuring\n"
                 "               it again (a test run calibrates once this way)\n"
                 "  --json       print one JSON object\n");
}

/* Writes {"device_key", "device", "ceilings"} to path, whole or not at all: what $TEMPER_CEILINGS
 * reads. */
static int save_ceilings(const char *path, json_t *info, json_t *ceil, char *msg, size_t msg_size)
{
    char key[1024];
    temper_store_device_key(info, key, sizeof(key));
    json_t *o = json_pack("{s:s, s:O, s:O}", "device_key", key, "device", info, "ceilings", ceil);
    char *text = o ? json_dumps(o, JSON_INDENT(2)) : NULL;
    json_decref(o);
    if (!text)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "cannot encode the ceilings");
    int err = temper_write_file_atomic(path, text, strlen(text), msg, msg_size);
    free(text);
    return err;
}

int cmd_calibrate(int argc, char **argv)
{
    static const struct option opts[] = {{"device", required_argument, 0, 'd'}, {"save", required_argument, 0, 's'},
                                         {"json", no_argument, 0, 'j'},     {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *device = NULL, *save = NULL;
    int json = 0, c;
    while ((c = getopt_long(argc, argv, "d:h", opts, NULL)) != -1) {
        if (c == 'd')
            device = optarg;
        else if (c == 's')
            save = optarg;
        else if (c == 'j')
            json = 1;
        else
            return cli_help_exit(help, c == 'h');
    }
    char msg[2048];
    struct temper_session *session = NULL;
    json_t *ceil = NULL;
    int err = cli_session_open(&session, device, NULL, NULL, 0, 0, msg, sizeof(msg));
    if (!err) {
        json_t *dev = temper_session_device_info(session);
        fprintf(stderr, "calibrating %s (%s)...\n", json_string_value(json_object_get(dev, "id")),
                json_string_value(json_object_get(dev, "name")));
        err = temper_session_ceilings(session, 1, &ceil, msg, sizeof(msg));
    }
    json_t *info = session ? json_incref(temper_session_device_info(session)) : NULL;
    temper_session_close(session);
    if (!err && save)
        err = save_ceilings(save, info, ceil, msg, sizeof(msg));
    if (err) {
        json_decref(info);
        json_decref(ceil);
        return cli_error(err, msg);
    }
    if (json) {
        json_object_set(ceil, "device", info);
        json_dumpf(ceil, stdout, JSON_INDENT(2));
        printf("\n");
    } else {
        printf("device     %s  %s\n", json_string_value(json_object_get(info, "id")),
               json_string_value(json_object_get(info, "name")));
        printf("copy       %.1f GB/s (read + write)\n", json_number_value(json_object_get(ceil, "copy_gbs")));
        printf("read       %.1f GB/s\n", json_number_value(json_object_get(ceil, "read_gbs")));
        printf("fp32 fma   %.1f GFLOP/s\n", json_number_value(json_object_get(ceil, "fma_gflops")));
        if (json_object_get(ceil, "tensor_bf16_gflops"))
            printf("bf16 gemm  %.1f GFLOP/s (tensor cores, through cuBLAS)\n",
                   json_number_value(json_object_get(ceil, "tensor_bf16_gflops")));
        char home[4096];
        printf("stored in  %s/temper.db\n", temper_home_dir(home, sizeof(home)));
        if (save)
            printf("saved to   %s (TEMPER_CEILINGS=%s takes them)\n", save, save);
    }
    json_decref(info);
    json_decref(ceil);
    return CLI_OK;
}
