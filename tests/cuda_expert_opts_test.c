/* cuda_expert_opts_test.c: the CUDA experts' switches (TEMPER_EXPERT_PICK,
 * TEMPER_EXPERT_LT_WORKSPACE_KIB) as cuda_expert_opts_parse reads them: the defaults, each accepted
 * value, and a clear refusal of what is not understood. Needs no GPU: the experts themselves run
 * only on the GPU machine (bench/gpu.sh peers). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cuda_blas.h"

static void test_defaults(void **state)
{
    (void)state;
    struct cuda_expert_opts o;
    char msg[256];
    assert_int_equal(cuda_expert_opts_parse(NULL, NULL, &o, msg, sizeof msg), 0);
    assert_int_equal(o.pick, CUDA_PICK_FASTEST);
    assert_int_equal(o.lt_workspace_bytes, CUDA_CUBLASLT_WORKSPACE_BYTES);
    assert_int_equal(cuda_expert_opts_parse("", "", &o, msg, sizeof msg), 0);
    assert_int_equal(o.pick, CUDA_PICK_FASTEST);
    assert_int_equal(o.lt_workspace_bytes, 32u << 20);
}

static void test_values(void **state)
{
    (void)state;
    struct cuda_expert_opts o;
    char msg[256];
    assert_int_equal(cuda_expert_opts_parse("first", "1024", &o, msg, sizeof msg), 0);
    assert_int_equal(o.pick, CUDA_PICK_FIRST);
    assert_int_equal(o.lt_workspace_bytes, 1u << 20); /* PyTorch's cuBLASLt default before the unified workspace */
    assert_string_equal(cuda_expert_pick_name(o.pick), "first");
    assert_int_equal(cuda_expert_opts_parse("cublas", "0", &o, msg, sizeof msg), 0);
    assert_int_equal(o.pick, CUDA_PICK_CUBLAS);
    assert_int_equal(o.lt_workspace_bytes, 0);
    assert_string_equal(cuda_expert_pick_name(o.pick), "cublas");
    assert_int_equal(cuda_expert_opts_parse("fastest", "32768", &o, msg, sizeof msg), 0);
    assert_int_equal(o.pick, CUDA_PICK_FASTEST);
    assert_int_equal(o.lt_workspace_bytes, 32u << 20);
    assert_string_equal(cuda_expert_pick_name(o.pick), "fastest");
}

static void test_refusals(void **state)
{
    (void)state;
    struct cuda_expert_opts o;
    char msg[256];
    assert_int_equal(cuda_expert_opts_parse("top1", NULL, &o, msg, sizeof msg), TEMPER_EINVALID);
    assert_non_null(strstr(msg, "TEMPER_EXPERT_PICK='top1'"));
    assert_non_null(strstr(msg, "fastest (the default), first or cublas"));
    const char *bad[] = {"32769", "-1", "1k", " 8", "99999999999999999999999", "0x10"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        msg[0] = '\0';
        assert_int_equal(cuda_expert_opts_parse("first", bad[i], &o, msg, sizeof msg), TEMPER_EINVALID);
        assert_non_null(strstr(msg, "TEMPER_EXPERT_LT_WORKSPACE_KIB"));
        assert_non_null(strstr(msg, bad[i]));
        assert_non_null(strstr(msg, "from 0 to 32768"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
