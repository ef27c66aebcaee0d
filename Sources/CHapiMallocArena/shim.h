#ifndef HAPI_MALLOC_ARENA_SHIM_H
#define HAPI_MALLOC_ARENA_SHIM_H

/* glibc only, and for our own executables only (the `hapi-push` CLI), never a library: a
   process embedding us keeps its allocator's policy. Imported behind `#if os(Linux)`. */

#include <malloc.h>

/* One malloc arena for every thread of the process. */
static inline int hapi_use_one_malloc_arena(void) { return mallopt(M_ARENA_MAX, 1); }

#endif
