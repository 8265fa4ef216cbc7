/* cudrv.h -- the few CUDA driver API calls aegis-gpuburn makes, declared
 * here so that it builds where cuda.h is not installed: the driver itself
 * (libcuda.so.1) is loaded at run time with dlopen.
 *
 * The types are spelt so that they are the very types of cuda.h (the same
 * struct tags, an unsigned 64-bit device pointer, CUresult's unsigned
 * underlying type): tests/gpu/cudrv_abi.c assigns every function of cuda.h
 * to these pointer types, by the exported names CUDRV_CALLS loads them by,
 * and fails to compile on any difference. Names are the exported ones: cuda.h renames cuMemAlloc to cuMemAlloc_v2 and so on
 * at compile time only, and cuCtxCreate's signature changed in CUDA 13, so
 * the job uses each device's primary context, as PyTorch does.
 */
#ifndef AEGIS_CUDRV_H
#define AEGIS_CUDRV_H

#include <stddef.h>

typedef unsigned int cudrv_result;       /* CUresult */
typedef int cudrv_device;                /* CUdevice */
typedef unsigned long long cudrv_ptr;    /* CUdeviceptr (64-bit) */
typedef struct CUctx_st *cudrv_context;  /* CUcontext */
typedef struct CUmod_st *cudrv_module;   /* CUmodule */
typedef struct CUfunc_st *cudrv_function;/* CUfunction */
typedef struct CUstream_st *cudrv_stream;/* CUstream */

#define CUDRV_SUCCESS 0u
#define CUDRV_ERROR_OUT_OF_MEMORY 2u
#define CUDRV_ERROR_NOT_INITIALIZED 3u
#define CUDRV_ERROR_NO_DEVICE 100u
#define CUDRV_ERROR_INVALID_DEVICE 101u
#define CUDRV_ERROR_INVALID_IMAGE 200u
#define CUDRV_ERROR_INVALID_CONTEXT 201u
#define CUDRV_ERROR_NOT_FOUND 500u
#define CUDRV_ATTRIBUTE_MULTIPROCESSOR_COUNT 16u /* cuDeviceGetAttribute */

/* One pointer per call, filled with dlsym by the names CUDRV_CALLS gives. */
typedef struct cudrv_api {
    cudrv_result (*get_error_name)(cudrv_result, const char **);
    cudrv_result (*get_error_string)(cudrv_result, const char **);
    cudrv_result (*init)(unsigned int);
    cudrv_result (*device_get_count)(int *);
    cudrv_result (*device_get)(cudrv_device *, int);
    cudrv_result (*device_get_name)(char *, int, cudrv_device);
    cudrv_result (*device_get_attribute)(int *, unsigned int, cudrv_device);
    cudrv_result (*primary_ctx_retain)(cudrv_context *, cudrv_device);
    cudrv_result (*primary_ctx_release)(cudrv_device);
    cudrv_result (*ctx_set_current)(cudrv_context);
    cudrv_result (*ctx_synchronize)(void);
    cudrv_result (*module_load_data)(cudrv_module *, const void *);
    cudrv_result (*module_unload)(cudrv_module);
    cudrv_result (*module_get_function)(cudrv_function *, cudrv_module,
                                        const char *);
    cudrv_result (*launch_kernel)(cudrv_function, unsigned int, unsigned int,
                                  unsigned int, unsigned int, unsigned int,
                                  unsigned int, unsigned int, cudrv_stream,
                                  void **, void **);
    cudrv_result (*mem_alloc)(cudrv_ptr *, size_t);
    cudrv_result (*mem_free)(cudrv_ptr);
    cudrv_result (*mem_get_info)(size_t *, size_t *);
} cudrv_api;

/* X(member, exported name) for every member of cudrv_api. */
#define CUDRV_CALLS(X)                                                       \
    X(get_error_name, cuGetErrorName)                                        \
    X(get_error_string, cuGetErrorString)                                    \
    X(init, cuInit)                                                          \
    X(device_get_count, cuDeviceGetCount)                                    \
    X(device_get, cuDeviceGet)                                               \
    X(device_get_name, cuDeviceGetName)                                      \
    X(device_get_attribute, cuDeviceGetAttribute)                            \
    X(primary_ctx_retain, cuDevicePrimaryCtxRetain)                          \
    X(primary_ctx_release, cuDevicePrimaryCtxRelease_v2)                     \
    X(ctx_set_current, cuCtxSetCurrent)                                      \
    X(ctx_synchronize, cuCtxSynchronize)                                     \
    X(module_load_data, cuModuleLoadData)                                    \
    X(module_unload, cuModuleUnload)                                         \
    X(module_get_function, cuModuleGetFunction)                              \
    X(launch_kernel, cuLaunchKernel)                                         \
    X(mem_alloc, cuMemAlloc_v2)                                              \
    X(mem_free, cuMemFree_v2)                                                \
    X(mem_get_info, cuMemGetInfo_v2)

#endif
