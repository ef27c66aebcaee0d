#ifndef HAPI_PLATFORM_SHIM_H
#define HAPI_PLATFORM_SHIM_H

/* PushPlatform's C side, for every system: calls Swift cannot reach through the C library's own
   module (declared only under _GNU_SOURCE, which this header must not define: the Swift Glibc
   module is built without it), each with a fallback where the system lacks it. Darwin's own
   calls are made from PushPlatform/Platform+Darwin.swift instead; epoll and eventfd are in
   CHapiEpoll, Linux's alone. */

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

/* A spin-wait hint to the CPU (x86 `pause`, ARM `yield`), for a thread polling briefly before it sleeps. */
static inline void hapi_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Raises the soft RLIMIT_NOFILE to the hard one; returns the soft limit now in force (-1 if
   unknown). */
static inline long long hapi_raise_descriptor_limit(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
    if (limit.rlim_cur < limit.rlim_max) {
        struct rlimit raised = limit;
        raised.rlim_cur = limit.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
    }
    return limit.rlim_cur == RLIM_INFINITY ? (long long)1 << 20 : (long long)limit.rlim_cur;
}

/* The soft RLIMIT_NOFILE (-1 if unknown). */
static inline long long hapi_descriptor_limit(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
    return limit.rlim_cur == RLIM_INFINITY ? (long long)1 << 20 : (long long)limit.rlim_cur;
}

#if defined(__linux__)

/* Whether hapi_tcp_bytes_received answers on this system. */
#define HAPI_COUNTS_TCP_BYTES 1

extern int pthread_setname_np(pthread_t thread, const char *name);
extern int pthread_getname_np(pthread_t thread, char *name, size_t length);
extern int pthread_getattr_np(pthread_t thread, pthread_attr_t *attributes);

/* Names the calling thread (at most 15 bytes), so `top -H`, perf and debuggers tell ours apart. */
static inline void hapi_name_this_thread(const char *name) { pthread_setname_np(pthread_self(), name); }

/* The calling thread's name into `name` (empty if unknown). */
static inline void hapi_this_thread_name(char *name, size_t length) {
    if (length == 0) return;
    if (pthread_getname_np(pthread_self(), name, length) != 0) name[0] = 0;
}

/* The calling thread's stack size in bytes (0 if unknown): tests check a thread got the one asked. */
static inline size_t hapi_this_thread_stack_size(void) {
    pthread_attr_t attributes;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attributes) != 0) return 0;
    pthread_attr_getstacksize(&attributes, &size);
    pthread_attr_destroy(&attributes);
    return size;
}

/* Bytes the kernel has received on a TCP socket (tcpi_bytes_received of TCP_INFO, Linux 4.1+),
   or -1. Lets the relay's guard see that a connection has begun a request before libmicrohttpd
   has a whole request line to report. glibc's struct tcp_info stops before this field; the
   kernel's layout is append-only ABI, where it sits at byte 128 (linux/tcp.h cannot be included
   beside netinet/tcp.h). */
static inline long long hapi_tcp_bytes_received(int fd) {
    unsigned char info[256];
    socklen_t length = sizeof(info);
    memset(info, 0, sizeof(info));
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, info, &length) != 0 || length < 136) return -1;
    uint64_t received;
    memcpy(&received, info + 128, sizeof(received));
    return (long long)(received & 0x7fffffffffffffffULL);
}

#else

#define HAPI_COUNTS_TCP_BYTES 0

/* Neither Linux nor Darwin (whose calls Platform+Darwin.swift makes): no portable call names a
   thread, reads its stack size or counts a socket's bytes, so these say "unknown". */
static inline void hapi_name_this_thread(const char *name) { (void)name; }
static inline void hapi_this_thread_name(char *name, size_t length) { if (length > 0) name[0] = 0; }
static inline size_t hapi_this_thread_stack_size(void) { return 0; }
static inline long long hapi_tcp_bytes_received(int fd) { (void)fd; return -1; }

#endif

#endif
