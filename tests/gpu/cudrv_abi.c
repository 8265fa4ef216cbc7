/* cudrv_abi.c -- compiled, never run: checks that the driver API as
 * src/testgpu/cudrv.h declares it is the API of the cuda.h found at build
 * time. Each function of cuda.h initialises the cudrv_api member it
 * stands for; a different parameter or return type is an incompatible
 * pointer, an error (-Werror=incompatible-pointer-types). */
#include <cuda.h>

#include "cudrv.h"

_Static_assert(sizeof(cudrv_result) == sizeof(CUresult), "CUresult");
_Static_assert(sizeof(cudrv_ptr) == sizeof(CUdeviceptr), "CUdeviceptr");
_Static_assert(CUDRV_ERROR_OUT_OF_MEMORY == CUDA_ERROR_OUT_OF_MEMORY, "OOM");
_Static_assert(CUDRV_ERROR_NO_DEVICE == CUDA_ERROR_NO_DEVICE, "no device");
_Static_assert(CUDRV_ERROR_INVALID_DEVICE == CUDA_ERROR_INVALID_DEVICE, "dev");
_Static_assert(CUDRV_ERROR_NOT_INITIALIZED == CUDA_ERROR_NOT_INITIALIZED,
               "not initialized");
_Static_assert(CUDRV_ERROR_INVALID_IMAGE == CUDA_ERROR_INVALID_IMAGE, "image");
_Static_assert(CUDRV_ERROR_INVALID_CONTEXT == CUDA_ERROR_INVALID_CONTEXT,
               "context");
_Static_assert(CUDRV_ERROR_NOT_FOUND == CUDA_ERROR_NOT_FOUND, "not found");
_Static_assert(CUDRV_ATTRIBUTE_MULTIPROCESSOR_COUNT ==
               CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "SM count");

/* Each exported name CUDRV_CALLS loads initialises its member. The
 * unversioned names are macros of cuda.h (cuMemAlloc -> cuMemAlloc_v2):
 * spelling the exported ones checks that they are still declared. */
#define CUDRV_CHECK(member, symbol) .member = symbol,
const cudrv_api cudrv_abi_check = {CUDRV_CALLS(CUDRV_CHECK)};
