/* alloc.h -- where the files of src/core take memory from: the allocator
 * core_set_allocator() chose (core.h), so that a test can make any one
 * allocation fail. Private to src/core. */
#ifndef AEGIS_CORE_ALLOC_H
#define AEGIS_CORE_ALLOC_H

#include <stddef.h>

void *core_malloc(size_t size);
void *core_calloc(size_t n, size_t size);
void *core_realloc(void *p, size_t size);

#endif
