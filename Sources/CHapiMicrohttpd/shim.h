#ifndef HAPI_MICROHTTPD_SHIM_H
#define HAPI_MICROHTTPD_SHIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <microhttpd.h>

/* MHD_start_daemon, MHD_get_daemon_info and MHD_get_connection_info are variadic: Swift cannot
   call them. Typed wrappers for exactly the options the relay uses. */

/* How a daemon is started. Every limit is explicit: no libmicrohttpd default is relied on. */
typedef struct hapi_mhd_config {
    const struct sockaddr *address;   /* bind address (IPv4 or IPv6, port included) */
    bool ipv6;                        /* address is a sockaddr_in6 */
    bool allow_suspend;               /* MHD_ALLOW_SUSPEND_RESUME (answers given later) */
    unsigned int threads;             /* worker threads, each with its own epoll set; <= 1: one */
    unsigned int connection_limit;    /* MHD_OPTION_CONNECTION_LIMIT */
    unsigned int connection_timeout;  /* seconds of inactivity before a connection is closed */
    size_t memory_limit;              /* per-connection memory pool (request line, headers, buffers) */
    unsigned int per_ip_limit;        /* MHD_OPTION_PER_IP_CONNECTION_LIMIT; 0: none */
    MHD_NotifyConnectionCallback notify_connection; /* MHD_OPTION_NOTIFY_CONNECTION, or NULL */
    void *notify_connection_cls;
} hapi_mhd_config;

static inline struct MHD_Daemon *hapi_mhd_start(const hapi_mhd_config *config, MHD_AccessHandlerCallback handler,
                                                void *handler_cls, MHD_RequestCompletedCallback completed,
                                                void *completed_cls) {
#if defined(__linux__)
    unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC;
#else
    unsigned int flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ITC; /* epoll is Linux's only */
#endif
    if (config->ipv6) flags |= MHD_USE_IPv6;
    if (config->allow_suspend) flags |= MHD_ALLOW_SUSPEND_RESUME;
    uint16_t port = 0;
    if (config->ipv6) {
        port = ntohs(((const struct sockaddr_in6 *)config->address)->sin6_port);
    } else {
        port = ntohs(((const struct sockaddr_in *)config->address)->sin_port);
    }
    return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_SOCK_ADDR, config->address,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                            MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)(config->threads > 1 ? config->threads : 0),
                            MHD_OPTION_CONNECTION_LIMIT, config->connection_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, config->connection_timeout,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, config->memory_limit,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, config->per_ip_limit,
                            /* The last option: NULL ends the list early (no notifications). */
                            (config->notify_connection != NULL ? MHD_OPTION_NOTIFY_CONNECTION : MHD_OPTION_END),
                            config->notify_connection, config->notify_connection_cls,
                            MHD_OPTION_END);
}

/* The port actually bound (for port 0), or 0. */
static inline uint16_t hapi_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

/* The peer's address as text ("203.0.113.7", "2001:db8::1"; IPv4-mapped IPv6 as plain IPv4),
   written into out; returns false when there is none. */
static inline bool hapi_mhd_client_address(struct MHD_Connection *connection, char *out, size_t length) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL || length == 0) return false;
    const struct sockaddr *address = info->client_addr;
    if (address->sa_family == AF_INET) {
        return inet_ntop(AF_INET, &((const struct sockaddr_in *)address)->sin_addr, out, (socklen_t)length) != NULL;
    }
    if (address->sa_family == AF_INET6) {
        const struct in6_addr *v6 = &((const struct sockaddr_in6 *)address)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(v6)) return inet_ntop(AF_INET, &v6->s6_addr[12], out, (socklen_t)length) != NULL;
        return inet_ntop(AF_INET6, v6, out, (socklen_t)length) != NULL;
    }
    return false;
}

/* The connection's socket, or -1. */
static inline int hapi_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

/* CLOCK_MONOTONIC in milliseconds. */
static inline long long hapi_monotonic_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* Which connection event libmicrohttpd reports (its enum is not imported by name). */
static inline bool hapi_mhd_notify_started(enum MHD_ConnectionNotificationCode code) {
    return code == MHD_CONNECTION_NOTIFY_STARTED;
}
static inline bool hapi_mhd_notify_closed(enum MHD_ConnectionNotificationCode code) {
    return code == MHD_CONNECTION_NOTIFY_CLOSED;
}

/* The first value of a request header (case-insensitive name), or NULL. */
static inline const char *hapi_mhd_header(struct MHD_Connection *connection, const char *name) {
    return MHD_lookup_connection_value(connection, MHD_HEADER_KIND, name);
}

/* Queues a complete answer: the body is copied, so the caller's buffer may go at once. */
static inline enum MHD_Result hapi_mhd_respond(struct MHD_Connection *connection, unsigned int status,
                                               const void *body, size_t length, const char *content_type) {
    void *copy = malloc(length > 0 ? length : 1);
    if (copy == NULL) return MHD_NO;
    if (length > 0) memcpy(copy, body, length);
    struct MHD_Response *response = MHD_create_response_from_buffer_with_free_callback(length, copy, &free);
    if (response == NULL) {
        free(copy);
        return MHD_NO;
    }
    if (content_type != NULL) MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    enum MHD_Result result = MHD_queue_response(connection, status, response);
    MHD_destroy_response(response);
    return result;
}

#endif
