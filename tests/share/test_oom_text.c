/* test_oom_text.c -- the frameworks' OOM messages are found where they
 * put them; the same words in a help text, a usage text or a sentence
 * are not an OOM (oom_text.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "oom_text.h"

static const char *find(const char *text) {
    return oom_text_find(text, strlen(text));
}

/* Each framework's own line, as it prints it. */
static void test_frameworks(void **state) {
    (void)state;
    static const char *const lines[] = {
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 "
        "GiB. GPU 0 has a total capacity of 39.39 GiB",
        "RuntimeError: CUDA error: out of memory\n",
        "RuntimeError: out of memory",
        "CUDA out of memory",
        "cudaErrorMemoryAllocation: out of memory",
        "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling "
        "`cublasCreate(handle)`",
        "RuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED",
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: "
        "failed to allocate memory",
        "2024-05-01 10:00:00.1: W tensorflow/core/common_runtime/bfc_"
        "allocator.cc:479] OOM when allocating tensor with shape[64,3,224]",
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of "
        "memory while trying to allocate 123456 bytes.",
    };
    for (size_t i = 0; i < sizeof(lines) / sizeof(*lines); i++)
        if (!find(lines[i])) fail_msg("not an OOM: %s", lines[i]);
}

/* The words where no framework puts them: not an OOM. */
static void test_not_oom(void **state) {
    (void)state;
    static const char *const texts[] = {
        "  --retry    retry when CUDA out of memory is raised\n",
        "usage: train.py [-h] [--batch N]\n"
        "train.py: error: CUDA out of memory handling needs --batch\n",
        "Usage: tool [OPTIONS]\n  RESOURCE_EXHAUSTED: raised when ...\n",
        "this job never runs out of memory\n",
        "bash: fork: Cannot allocate memory\n",
        "Segmentation fault\n",
        "",
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(*texts); i++)
        if (find(texts[i])) fail_msg("an OOM: %s", texts[i]);
}

/* Only the n bytes given are read; a NUL ends a line. */
static void test_bounds(void **state) {
    (void)state;
    static const char text[] = "junk\0RuntimeError: CUDA out of memory. x";
    assert_non_null(oom_text_find(text, sizeof(text) - 1));
    assert_null(oom_text_find(text, 10));
    assert_string_equal(oom_text_find(text, sizeof(text) - 1),
                        "CUDA out of memory");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frameworks),
        cmocka_unit_test(test_not_oom),
        cmocka_unit_test(test_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
