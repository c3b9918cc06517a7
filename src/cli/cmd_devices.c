/* cmd_devices.c: `temper devices`: every device of every backend, queried in a worker. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "temper/eval.h"

static void help(FILE *out)
{
    fprintf(out, "usage: temper devices [--json]\n\n"
                 "Lists the CUDA and OpenCL devices temper can use, with their compute units, memory,\n"
                 "shared (local) memory and largest block, and below each the language its compiler takes,\n"
                 "its capabilities (offline_compile: compiles without the device; in_process: kernels run\n"
                 "inside temper's worker; expert: vendor-library baselines), its UUID and PCI bus id.\n"
                 "Devices are named cuda:N and opencl:N.\n\n"
                 "  --json   print one JSON object\n");
}

int cmd_devices(int argc, char **argv)
{
    static const struct option opts[] = {{"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int json = 0, c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'j')
            json = 1;
        else
            return cli_help_exit(help, c == 'h');
    }
    struct temper_worker *w;
    char msg[2048];
    int err = temper_worker_start(NULL, NULL, &w, msg, sizeof(msg));
    if (err)
        return cli_error(err, msg);
    json_t *r;
    err = temper_list_devices(w, &r, msg, sizeof(msg));
    temper_worker_stop(w);
    if (err)
        return cli_error(err, msg);
    json_t *list = json_object_get(r, "devices");
    if (json) {
        json_dumpf(r, stdout, JSON_INDENT(2));
        printf("\n");
    } else {
        printf("%-10s %-44s %-5s %5s %10s %9s %8s %6s\n", "device", "name", "class", "CUs", "memory", "shared",
               "L2/LLC", "block");
        size_t i;
        json_t *d;
        json_array_foreach(list, i, d)
        {
            if (json_object_get(d, "error")) {
                printf("%-10s error: %s\n", json_string_value(json_object_get(d, "id")),
                       json_string_value(json_object_get(d, "error")));
                continue;
            }
            printf("%-10s %-44.44s %-5s %5lld %8.1f G %7lld K %6.1f M %6lld\n",
                   json_string_value(json_object_get(d, "id")), json_string_value(json_object_get(d, "name")),
                   json_string_value(json_object_get(d, "class")),
                   (long long)json_integer_value(json_object_get(d, "compute_units")),
                   (double)json_integer_value(json_object_get(d, "global_mem_bytes")) / (1 << 30),
                   (long long)json_integer_value(json_object_get(d, "local_mem_optin_bytes")) / 1024,
                   (double)json_integer_value(json_object_get(d, "cache_bytes")) / (1 << 20),
                   (long long)json_integer_value(json_object_get(d, "max_work_group")));
            char caps[128] = "";
            size_t k;
            json_t *cap;
            json_array_foreach(json_object_get(d, "caps"), k, cap)
                snprintf(caps + strlen(caps), sizeof(caps) - strlen(caps), "%s%s", k ? "," : "",
                         json_string_value(cap));
            const char *uuid = json_string_value(json_object_get(d, "uuid"));
            const char *bus = json_string_value(json_object_get(d, "pci_bus_id"));
            printf("%-10s language %s, caps %s, uuid %s, pci %s\n", "",
                   json_string_value(json_object_get(d, "language")), caps[0] ? caps : "none",
                   uuid && *uuid ? uuid : "unknown", bus && *bus ? bus : "unknown");
        }
        const char *kind;
        json_t *why;
        json_object_foreach(json_object_get(r, "unavailable"), kind, why)
            printf("%-10s none: %s\n", kind, json_string_value(why));
        json_t *sb = json_object_get(r, "sandbox");
        if (sb) {
            int landlock = json_is_true(json_object_get(sb, "landlock"));
            const char *reason = json_string_value(json_object_get(sb, "reason"));
            printf("sandbox    workers: seccomp %s, Landlock %s, no_new_privs %s, limits %s%s%s\n",
                   json_is_true(json_object_get(sb, "seccomp")) ? "on" : "off", landlock ? "on" : "off",
                   json_is_true(json_object_get(sb, "no_new_privs")) ? "on" : "off",
                   json_is_true(json_object_get(sb, "rlimits")) ? "on" : "off", reason && *reason ? "; " : "",
                   reason ? reason : "");
        }
    }
    int n = (int)json_array_size(list);
    json_decref(r);
    return n ? CLI_OK : CLI_NODEVICE;
}
