/* test_oom_check.c -- the sizes in the frameworks' OOM messages
 * (oom_numbers.h), and an OOM message checked against its GPUs' memory
 * (oom_check.h), on hand-worked cases: each verdict below follows from
 * the numbers in its comment. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "oom_check.h"
#include "oom_numbers.h"

/* PyTorch 2.1 on, as it prints it (one line). */
static const char torch_new[] =
    "Traceback (most recent call last):\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.95 GiB. "
    "GPU 0 has a total capacity of 14.57 GiB of which 1.58 GiB is free. "
    "Process 2493055 has 12.02 GiB memory in use. Including non-PyTorch "
    "memory, this process has 966.00 MiB memory in use.\n";

/* PyTorch up to 2.0, with a fraction set (its "allowed"). */
static const char torch_old[] =
    "RuntimeError: CUDA out of memory. Tried to allocate 36.00 MiB (GPU 0; "
    "7.93 GiB total capacity; 130.35 MiB already allocated; 47.06 MiB free; "
    "4.00 GiB allowed; 188.00 MiB reserved in total by PyTorch)\n";

static oom_numbers numbers(const char *text) {
    oom_numbers said;
    oom_numbers_find(text, strlen(text), &said);
    return said;
}

static void test_numbers_torch(void **state) {
    (void)state;
    oom_numbers said = numbers(torch_new);
    assert_float_equal(said.request_mib, 1.95 * 1024, 1e-9);
    assert_float_equal(said.total_mib, 14.57 * 1024, 1e-9);
    assert_float_equal(said.free_mib, 1.58 * 1024, 1e-9);
    said = numbers(torch_old);
    assert_float_equal(said.request_mib, 36, 1e-9);
    assert_float_equal(said.total_mib, 7.93 * 1024, 1e-9);
    assert_float_equal(said.free_mib, 47.06, 1e-9);
    /* bytes and KiB, as PyTorch writes sizes up to 1 MiB */
    said = numbers("CUDA out of memory. Tried to allocate 512.00 KiB. GPU 1 "
                   "has a total capacity of 1024 bytes of which 0 bytes is "
                   "free.");
    assert_float_equal(said.request_mib, 0.5, 1e-9);
    assert_float_equal(said.total_mib, 1024.0 / 1048576, 1e-12);
    assert_float_equal(said.free_mib, 0, 1e-12);
}

/* XLA and TensorFlow state the request only; the last one counts. */
static void test_numbers_xla_tf(void **state) {
    (void)state;
    oom_numbers said = numbers(
        "RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
        "33762398024 bytes.\n");
    assert_float_equal(said.request_mib, 33762398024.0 / 1048576, 1e-6);
    assert_true(said.free_mib < 0 && said.total_mib < 0);
    said = numbers("W bfc_allocator.cc:479] Allocator (GPU_0_bfc) ran out of "
                   "memory trying to allocate 1.25GiB (rounded to 1342177280)"
                   "\nW ... trying to allocate 3.00GiB with freed_by_count=0"
                   "\nResourceExhaustedError: OOM when allocating tensor\n");
    assert_float_equal(said.request_mib, 3 * 1024, 1e-9);
    /* no number with a unit: nothing said */
    said = numbers("RuntimeError: CUDA error: out of memory\nGPU 0 has 3 of "
                   "them, 12 free; allocate 7 now\n");
    assert_true(said.request_mib < 0 && said.free_mib < 0 &&
                said.total_mib < 0);
}

static oom_verdict check(const char *text, const oom_gpu_mem *gpus, int n,
                         char *why) {
    return oom_check(text, strlen(text), gpus, n, why, 400);
}

static const char bare[] = "torch.OutOfMemoryError: CUDA out of memory.\n";

/* A message with no numbers: the GPU's last sample decides. */
static void test_check_sample(void **state) {
    (void)state;
    char why[400];
    /* 30,000 of 40,960 MiB free (73%): room */
    oom_gpu_mem roomy = {0, 10960, 40960};
    assert_int_equal(check(bare, &roomy, 1, why), OOM_CONTRADICTED);
    assert_string_equal(why, "stderr says out of GPU memory (\"CUDA out of "
                        "memory\"), but GPU 0 had 30,000 of 40,960 MiB free "
                        "at its last sample: not retried as an OOM");
    /* 4,960 free (12%): under the 30% margin, confirmed */
    oom_gpu_mem full = {2, 36000, 40960};
    assert_int_equal(check(bare, &full, 1, why), OOM_CONFIRMED);
    assert_string_equal(why, "GPU 2 had 4,960 of 40,960 MiB free");
    /* 12,288 free is exactly 30%: room; 1 MiB less is not */
    oom_gpu_mem edge = {0, 28672, 40960};
    assert_int_equal(check(bare, &edge, 1, why), OOM_CONTRADICTED);
    edge.used_mib += 1;
    assert_int_equal(check(bare, &edge, 1, why), OOM_CONFIRMED);
}

/* No sample (no NVML, or the job ended before one showed it): the
 * message is trusted; no message: nothing to check. */
static void test_check_unsampled(void **state) {
    (void)state;
    char why[400];
    assert_int_equal(check(bare, NULL, 0, why), OOM_TRUSTED);
    oom_gpu_mem roomy = {0, 0, 40960};
    assert_int_equal(check("exit 1: some error\n", &roomy, 1, why),
                     OOM_NOT_SAID);
    /* the words in a help text are no message either */
    assert_int_equal(check("  --retry   retry on CUDA out of memory\n",
                           &roomy, 1, why), OOM_NOT_SAID);
}

/* PyTorch's own numbers, taken as it failed, outweigh a sample. */
static void test_check_own_numbers(void **state) {
    (void)state;
    char why[400];
    oom_gpu_mem roomy = {0, 1000, 40960};
    /* 1.95 GiB asked, 1.58 GiB free: an OOM whatever the sample said */
    assert_int_equal(check(torch_new, &roomy, 1, why), OOM_CONFIRMED);
    assert_string_equal(why, "the message's own numbers: 1,618 MiB free as "
                        "it failed");
    /* ... and with no sample */
    assert_int_equal(check(torch_new, NULL, 0, why), OOM_CONFIRMED);
    /* 36 MiB asked, 47.06 free of 8,120 (0.6%): no room either */
    assert_int_equal(check(torch_old, &roomy, 1, why), OOM_CONFIRMED);
    /* 20 MiB asked with 30 GiB free (its own limit, or a printed text):
     * the sample decides, and it had room */
    static const char capped[] =
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 "
        "MiB. GPU 0 has a total capacity of 40.00 GiB of which 30.00 GiB is "
        "free. 8.00 GiB allowed; Of the allocated memory ...\n";
    assert_int_equal(check(capped, &roomy, 1, why), OOM_CONTRADICTED);
    assert_string_equal(why, "stderr says out of GPU memory (\"CUDA out of "
                        "memory\", asking for 20 MiB), but GPU 0 had 39,960 "
                        "of 40,960 MiB free at its last sample: not retried "
                        "as an OOM");
    assert_int_equal(check(capped, NULL, 0, why), OOM_TRUSTED);
}

/* A request larger than a GPU's free memory at its sample confirms,
 * however much that was (XLA asking for 33.76 GB with 30,000 MiB free). */
static void test_check_request(void **state) {
    (void)state;
    char why[400];
    static const char xla[] =
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of "
        "memory while trying to allocate 33762398024 bytes.\n";
    oom_gpu_mem roomy = {0, 10960, 40960};
    assert_int_equal(check(xla, &roomy, 1, why), OOM_CONFIRMED);
    roomy.used_mib = 0; /* 40,960 free: 32,198.33 MiB fit */
    assert_int_equal(check(xla, &roomy, 1, why), OOM_CONTRADICTED);
    assert_non_null(strstr(why, "asking for 32,198 MiB"));
}

/* Several GPUs: any one near full confirms; all with room contradict,
 * and the reason names the fullest. */
static void test_check_multi_gpu(void **state) {
    (void)state;
    char why[400];
    oom_gpu_mem gpus[3] = {{0, 1000, 40960}, {1, 15960, 40960},
                           {3, 2000, 81920}};
    assert_int_equal(check(bare, gpus, 3, why), OOM_CONTRADICTED);
    assert_string_equal(why, "stderr says out of GPU memory (\"CUDA out of "
                        "memory\"), but its 3 GPUs had room at their last "
                        "samples (the fullest: GPU 1 had 25,000 of 40,960 MiB "
                        "free): not retried as an OOM");
    gpus[2].used_mib = 80000; /* 1,920 of 81,920 free on GPU 3 */
    assert_int_equal(check(bare, gpus, 3, why), OOM_CONFIRMED);
    assert_string_equal(why, "GPU 3 had 1,920 of 81,920 MiB free");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numbers_torch),
        cmocka_unit_test(test_numbers_xla_tf),
        cmocka_unit_test(test_check_sample),
        cmocka_unit_test(test_check_unsampled),
        cmocka_unit_test(test_check_own_numbers),
        cmocka_unit_test(test_check_request),
        cmocka_unit_test(test_check_multi_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
