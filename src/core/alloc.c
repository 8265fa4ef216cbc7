/* alloc.c -- the core's allocator (alloc.h, core_set_allocator() in
 * core.h): the C library's, or a test's that fails on purpose. Memory is
 * always given back with free(): a test's allocator hands out the C
 * library's memory, or none. */
#include <stdlib.h>

#include "alloc.h"
#include "core.h"

static core_allocator core_alloc = {malloc, calloc, realloc};

void core_set_allocator(const core_allocator *a) {
    core_alloc = a ? *a : (core_allocator){malloc, calloc, realloc};
}

void *core_malloc(size_t size) { return core_alloc.malloc(size); }

void *core_calloc(size_t n, size_t size) { return core_alloc.calloc(n, size); }

void *core_realloc(void *p, size_t size) { return core_alloc.realloc(p, size); }
