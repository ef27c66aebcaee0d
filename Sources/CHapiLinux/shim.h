#ifndef HAPI_LINUX_SHIM_H
#define HAPI_LINUX_SHIM_H

/* epoll and eventfd for the HTTP/2 engine's event loop. `struct epoll_event` is packed on
   x86-64, so Swift never touches it: these helpers take and return plain values. */

#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

enum {
    HAPI_EPOLL_IN = EPOLLIN,
    HAPI_EPOLL_OUT = EPOLLOUT,
    HAPI_EPOLL_ERR = EPOLLERR,
    HAPI_EPOLL_HUP = EPOLLHUP,
};

static inline int hapi_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }
static inline int hapi_eventfd_create(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

static inline int hapi_epoll_set(int epfd, int fd, uint32_t events, uint64_t token, int add) {
    struct epoll_event event;
    event.events = events;
    event.data.u64 = token;
    return epoll_ctl(epfd, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &event);
}

static inline int hapi_epoll_remove(int epfd, int fd) { return epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL); }

/* Waits like epoll_wait; writes each ready descriptor's token and events into the arrays. */
static inline int hapi_epoll_wait(int epfd, uint64_t *tokens, uint32_t *events, int max, int timeout_ms) {
    struct epoll_event ready[256];
    if (max > 256) max = 256;
    int n = epoll_wait(epfd, ready, max, timeout_ms);
    for (int i = 0; i < n; i++) {
        tokens[i] = ready[i].data.u64;
        events[i] = ready[i].events;
    }
    return n;
}

/* glibc declares pthread_setname_np only under _GNU_SOURCE, which this header must not
   define (the Swift Glibc module is built without it). */
extern int pthread_setname_np(pthread_t thread, const char *name);

/* Names the calling thread (at most 15 bytes), so `top -H`, perf and debuggers tell ours apart. */
static inline void hapi_name_this_thread(const char *name) { pthread_setname_np(pthread_self(), name); }

/* Like pthread_setname_np: glibc declares it only under _GNU_SOURCE. */
extern int pthread_getattr_np(pthread_t thread, pthread_attr_t *attributes);

/* The calling thread's stack size in bytes (0 if unknown): tests check a thread got the one asked. */
static inline size_t hapi_this_thread_stack_size(void) {
    pthread_attr_t attributes;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attributes) != 0) return 0;
    pthread_attr_getstacksize(&attributes, &size);
    pthread_attr_destroy(&attributes);
    return size;
}

/* For our own executables only, never the library: one malloc arena for every thread. */
static inline int hapi_use_one_malloc_arena(void) { return mallopt(M_ARENA_MAX, 1); }

/* A spin-wait hint to the CPU (x86 `pause`, ARM `yield`), for a thread polling briefly before it sleeps. */
static inline void hapi_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#endif
