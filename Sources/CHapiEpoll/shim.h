#ifndef HAPI_EPOLL_SHIM_H
#define HAPI_EPOLL_SHIM_H

/* Linux only: epoll and eventfd for PushPlatform's epoll backend (SelectorEpoll.swift), the one
   Swift file that imports this module. `struct epoll_event` is packed on x86-64, so Swift never
   touches it: these helpers take and return plain values. */

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

#endif
