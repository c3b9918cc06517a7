/* test_device.c: unit tests of the device layer's wrappers (device.h) on a real OpenCL device
 * (PoCL here): the TEMPER_FAULT parser, injected faults counted per opened device, once per run
 * with TEMPER_FAULT_ONCE, the wrappers for building modules, and the device description
 * (language, capabilities, UUID formatting). Tests that need a device are skipped without one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "device/device.h"
#include "unit.h"

/* Opens the first OpenCL device, or skips the test where there is none. */
static void open_opencl(struct temper_device *dev)
{
    char msg[1024];
    if (temper_device_open("opencl", dev, msg, sizeof(msg))) {
        printf("SKIP: no OpenCL device: %s\n", msg);
        skip();
    }
}

static void test_fault_spec(void **state)
{
    (void)state;
    struct temper_faults f;
    char msg[512];
    unsetenv("TEMPER_FAULT_ONCE");
    unsetenv("TEMPER_FAULT");
    assert_int_equal(temper_faults_from_env(&f, msg, sizeof(msg)), 0);
    for (int k = 0; k < TEMPER_FAULT_KINDS; k++)
        assert_int_equal(f.at[k], 0);

    setenv("TEMPER_FAULT", "alloc:3,launch:12,hang:1", 1);
    setenv("TEMPER_FAULT_ONCE", "/tmp/x", 1);
    assert_int_equal(temper_faults_from_env(&f, msg, sizeof(msg)), 0);
    assert_int_equal(f.at[TEMPER_FAULT_ALLOC], 3);
    assert_int_equal(f.at[TEMPER_FAULT_LAUNCH], 12);
    assert_int_equal(f.at[TEMPER_FAULT_HANG], 1);
    assert_int_equal(f.at[TEMPER_FAULT_COMPILE], 0);
    assert_string_equal(f.once_path, "/tmp/x");
    unsetenv("TEMPER_FAULT_ONCE");

    static const char *const bad[] = {"alloc", "alloc:", "alloc:0", "alloc:-1", "alloc:x", "alloc:3x",
                                       "frob:1", "alloc:3;sync:1", "alloc:99999999999999999999999", ":1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("TEMPER_FAULT", bad[i], 1);
        msg[0] = 0;
        assert_int_equal(temper_faults_from_env(&f, msg, sizeof(msg)), TEMPER_EINVALID);
        char quoted[128];
        snprintf(quoted, sizeof(quoted), "TEMPER_FAULT='%s'", bad[i]);
        assert_contains(msg, quoted);
    }
    unsetenv("TEMPER_FAULT");
}

/* A malformed TEMPER_FAULT makes the open fail, naming it. */
static void test_open_refuses_bad_spec(void **state)
{
    (void)state;
    struct temper_device dev;
    char msg[1024];
    setenv("TEMPER_FAULT", "alloc:0", 1);
    int err = temper_device_open("opencl", &dev, msg, sizeof(msg));
    unsetenv("TEMPER_FAULT");
    if (err == TEMPER_ENODEVICE && !strstr(msg, "TEMPER_FAULT")) {
        printf("SKIP: no OpenCL device: %s\n", msg);
        skip();
    }
    assert_int_not_equal(err, 0);
    assert_contains(msg, "TEMPER_FAULT='alloc:0'");
}

/* The third allocation fails with a message naming the fault; the others succeed. */
static void test_alloc_fault_counts(void **state)
{
    (void)state;
    setenv("TEMPER_FAULT", "alloc:3", 1);
    struct temper_device dev;
    open_opencl(&dev);
    unsetenv("TEMPER_FAULT");
    struct temper_dbuf *b[4] = {NULL};
    char msg[512];
    for (int i = 0; i < 4; i++) {
        msg[0] = 0;
        int err = temper_dev_alloc(&dev, 4096, &b[i], msg, sizeof(msg));
        if (i == 2) {
            assert_int_equal(err, TEMPER_ENOMEM);
            assert_null(b[i]);
            assert_contains(msg, "injected fault (TEMPER_FAULT=alloc:3)");
        } else {
            assert_int_equal(err, 0);
            assert_non_null(b[i]);
        }
    }
    for (int i = 0; i < 4; i++)
        temper_dev_release(&dev, b[i]);
    temper_device_close(&dev);
}

/* With TEMPER_FAULT_ONCE a fault fires in the first device opened and not in the next (a worker
 * started again), until the file goes. */
static void test_fault_once(void **state)
{
    char once[4096];
    snprintf(once, sizeof(once), "%s/once", (const char *)*state);
    setenv("TEMPER_FAULT", "alloc:1", 1);
    setenv("TEMPER_FAULT_ONCE", once, 1);
    char msg[512];
    int want[3] = {TEMPER_ENOMEM, 0, TEMPER_ENOMEM};
    for (int round = 0; round < 3; round++) {
        if (round == 2)
            assert_int_equal(unlink(once), 0);
        struct temper_device dev;
        open_opencl(&dev);
        struct temper_dbuf *b = NULL;
        assert_int_equal(temper_dev_alloc(&dev, 64, &b, msg, sizeof(msg)), want[round]);
        assert_int_equal(access(once, F_OK), 0);
        temper_dev_release(&dev, b);
        temper_device_close(&dev);
    }
    unsetenv("TEMPER_FAULT");
    unsetenv("TEMPER_FAULT_ONCE");
}

static const char add_one_cl[] = "__kernel void add_one(__global float *y) { y[get_global_id(0)] += 1.0f; }\n";

/* compile:1 fails the first build, with the message in the log; the second builds, and its
 * kernel launches; launch:2 and sync:1 fail their calls. OpenCL has no offline compile. */
static void test_build_and_launch_faults(void **state)
{
    (void)state;
    setenv("TEMPER_FAULT", "compile:1,launch:2,sync:1", 1);
    struct temper_device dev;
    open_opencl(&dev);
    unsetenv("TEMPER_FAULT");
    char msg[1024];
    struct temper_buf log;
    temper_buf_init(&log, 64u << 10);
    struct temper_dmodule *mod = NULL;
    assert_int_equal(temper_dev_build(&dev, add_one_cl, "", &log, &mod, msg, sizeof(msg)), TEMPER_ECOMPILE);
    assert_null(mod);
    assert_contains(msg, "injected fault (TEMPER_FAULT=compile:1)");
    temper_buf_append(&log, "", 0);
    assert_contains(log.data, "injected fault (TEMPER_FAULT=compile:1)");
    assert_int_equal(temper_dev_build(&dev, add_one_cl, "", &log, &mod, msg, sizeof(msg)), 0);
    void *bin = NULL;
    size_t size = 0;
    assert_int_equal(temper_dev_compile(&dev, add_one_cl, "", &log, &bin, &size, msg, sizeof(msg)),
                     TEMPER_EUNSUPPORTED);
    struct temper_dkernel *k = NULL;
    assert_int_equal(temper_dev_kernel(&dev, mod, "add_one", &k, msg, sizeof(msg)), 0);
    struct temper_dbuf *y = NULL;
    assert_int_equal(temper_dev_alloc(&dev, 64 * sizeof(float), &y, msg, sizeof(msg)), 0);
    float zero = 0;
    assert_int_equal(temper_dev_fill(&dev, y, 0, 64 * sizeof(float), &zero, sizeof(zero), msg, sizeof(msg)), 0);
    struct temper_karg arg = {TEMPER_KARG_BUFFER, {.buf = y}};
    struct temper_launch_dims dims = {{4, 1, 1}, {16, 1, 1}, 0};
    assert_int_equal(temper_dev_launch(&dev, k, &dims, 1, &arg, msg, sizeof(msg)), 0);
    assert_int_equal(temper_dev_launch(&dev, k, &dims, 1, &arg, msg, sizeof(msg)), TEMPER_ELAUNCH);
    assert_contains(msg, "injected fault (TEMPER_FAULT=launch:2)");
    assert_int_equal(temper_dev_launch(&dev, k, &dims, 1, &arg, msg, sizeof(msg)), 0);
    assert_int_equal(temper_dev_sync(&dev, msg, sizeof(msg)), TEMPER_ELAUNCH);
    assert_contains(msg, "injected fault (TEMPER_FAULT=sync:1)");
    assert_int_equal(temper_dev_sync(&dev, msg, sizeof(msg)), 0);
    float host[64];
    assert_int_equal(temper_dev_read(&dev, y, 0, host, sizeof(host), msg, sizeof(msg)), 0);
    for (int i = 0; i < 64; i++)
        assert_true(host[i] == 2.0f); /* two launches ran; the injected one did not */
    temper_dev_release(&dev, y);
    temper_dev_module_free(&dev, mod);
    temper_buf_free(&log);
    temper_device_close(&dev);
}

static void test_info(void **state)
{
    (void)state;
    struct temper_device dev;
    open_opencl(&dev);
    assert_string_equal(dev.info.language, "opencl");
    assert_false(dev.info.caps & (TEMPER_DEVICE_CAP_OFFLINE_COMPILE | TEMPER_DEVICE_CAP_EXPERT));
    if (!dev.info.is_gpu) /* a CPU device (PoCL here) runs kernels in the calling process */
        assert_true(dev.info.caps & TEMPER_DEVICE_CAP_IN_PROCESS);
    assert_true(dev.info.uuid[0] == 0 || strlen(dev.info.uuid) == 36);
    temper_device_close(&dev);
    assert_string_equal(temper_device_cap_name(TEMPER_DEVICE_CAP_OFFLINE_COMPILE), "offline_compile");
    assert_string_equal(temper_device_cap_name(TEMPER_DEVICE_CAP_IN_PROCESS), "in_process");
    assert_string_equal(temper_device_cap_name(TEMPER_DEVICE_CAP_EXPERT), "expert");
    assert_null(temper_device_cap_name(0));
    assert_null(temper_device_cap_name(TEMPER_DEVICE_CAP_OFFLINE_COMPILE | TEMPER_DEVICE_CAP_EXPERT));
    const unsigned char bytes[16] = {0xb4, 0xf8, 0xd3, 0xa8, 0xab, 0xae, 0xaa, 0x33,
                                     0x14, 0x20, 0x12, 0x3a, 0x6a, 0x93, 0x81, 0xfc};
    char text[40];
    temper_device_format_uuid(bytes, text, sizeof(text));
    assert_string_equal(text, "b4f8d3a8-abae-aa33-1420-123a6a9381fc");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fault_spec),
        cmocka_unit_test(test_open_refuses_bad_spec),
        cmocka_unit_test(test_alloc_fault_counts),
        cmocka_unit_test_setup_teardown(test_fault_once, make_tmp, remove_tmp),
        cmocka_unit_test(test_build_and_launch_faults),
        cmocka_unit_test(test_info),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
