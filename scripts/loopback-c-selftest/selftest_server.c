/* Standalone driver for the loopback server: serves an echo handler with fault-injection paths
 * until SIGINT/SIGTERM; GET /stats answers "accepted handled open", then prints the counters and stops (ASan checks for leaks at exit).
 *   selftest_server tls|clear [silent]
 * Prints "PORT <n>" and "CA <path>" on stdout once listening. */
#define _POSIX_C_SOURCE 200809L
#include "hapi_loopback.h"

#include <pthread.h>

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Atomic(hapi_lb_server *) server;
static uint8_t *big_body;
static const size_t big_len = 8u * 1024 * 1024;

static void add(hapi_lb_response *r, const char *name, const char *value) {
    hapi_lb_response_add_header(r, name, strlen(name), value, strlen(value));
}

static int starts(const char *path, size_t len, const char *prefix) {
    size_t n = strlen(prefix);
    return len >= n && memcmp(path, prefix, n) == 0;
}

static void handler(void *context, const hapi_lb_request *req, hapi_lb_response *r) {
    (void)context;
    const char *path = "", *method = "";
    size_t path_len = 0, method_len = 0;
    for (size_t i = 0; i < req->header_count; i++) {
        const hapi_lb_header *h = &req->headers[i];
        if (h->name_len == 5 && memcmp(h->name, ":path", 5) == 0) path = h->value, path_len = h->value_len;
        if (h->name_len == 7 && memcmp(h->name, ":method", 7) == 0) method = h->value, method_len = h->value_len;
    }
    char buf[64];
    snprintf(buf, sizeof buf, "%d", (int)req->stream_id);
    add(r, "x-stream-id", buf);
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)req->connection_id);
    add(r, "x-connection-id", buf);
    snprintf(buf, sizeof buf, "%d", req->http_version);
    add(r, "x-http-version", buf);
    hapi_lb_response_add_header(r, "X-Method", 8, method, method_len);
    hapi_lb_response_add_header(r, "x-path", 6, path, path_len);
    snprintf(buf, sizeof buf, "%zu", req->header_count);
    add(r, "x-header-count", buf);

    if (starts(path, path_len, "/reset")) {
        hapi_lb_response_set_action(r, HAPI_LB_RESET_STREAM);
    } else if (starts(path, path_len, "/goaway")) {
        hapi_lb_response_set_action(r, HAPI_LB_GOAWAY);
        hapi_lb_response_set_error_code(r, 0);
    } else if (starts(path, path_len, "/drop")) {
        hapi_lb_response_set_action(r, HAPI_LB_DROP_CONNECTION);
    } else if (starts(path, path_len, "/slow")) {
        hapi_lb_response_set_delay_ms(r, 300);
        hapi_lb_response_set_body(r, (const uint8_t *)"slow\n", 5);
    } else if (starts(path, path_len, "/never")) {
        hapi_lb_response_set_action(r, HAPI_LB_NEVER_RESPOND);
    } else if (starts(path, path_len, "/partial")) {
        uint8_t body[1000];
        memset(body, 'p', sizeof body);
        hapi_lb_response_set_body(r, body, sizeof body);
        hapi_lb_response_set_partial_bytes(r, 100);
        hapi_lb_response_set_action(r, HAPI_LB_PARTIAL_THEN_DROP);
    } else if (starts(path, path_len, "/endless")) {
        hapi_lb_response_set_action(r, HAPI_LB_ENDLESS_BODY);
        hapi_lb_response_set_body(r, (const uint8_t *)"0123456789abcdef", 16);
    } else if (starts(path, path_len, "/big")) {
        hapi_lb_response_set_body(r, big_body, big_len);
    } else if (starts(path, path_len, "/stats")) {
        hapi_lb_server *s = atomic_load(&server);
        snprintf(buf, sizeof buf, "%llu %llu %llu",
                 (unsigned long long)hapi_lb_connections_accepted(s),
                 (unsigned long long)hapi_lb_requests_handled(s),
                 (unsigned long long)hapi_lb_open_connections(s));
        hapi_lb_response_set_body(r, (const uint8_t *)buf, strlen(buf));
    } else if (starts(path, path_len, "/status/")) {
        hapi_lb_response_set_status(r, atoi(path + 8));
    } else if (req->body_len > 0) {
        add(r, "content-type", "application/octet-stream");
        hapi_lb_response_set_body(r, req->body, req->body_len);
    } else { /* no body: echo the path so responses can be matched to requests */
        hapi_lb_response_set_body(r, (const uint8_t *)path, path_len);
    }
}

int main(int argc, char **argv) {
    hapi_lb_config config = {0};
    config.transport = argc > 1 && strcmp(argv[1], "clear") == 0 ? HAPI_LB_CLEARTEXT : HAPI_LB_TLS;
    config.silent = argc > 2 && strcmp(argv[2], "silent") == 0;
    big_body = malloc(big_len);
    if (!big_body) return 1;
    for (size_t i = 0; i < big_len; i++) big_body[i] = (uint8_t)('a' + i % 26);

    /* Block the stop signals before the loop thread exists so only sigwait sees them. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    char err[256];
    hapi_lb_server *s = hapi_lb_start(&config, handler, NULL, err, sizeof err);
    if (!s) {
        fprintf(stderr, "start failed: %s\n", err);
        return 1;
    }
    atomic_store(&server, s);
    printf("PORT %u\nCA %s\n", hapi_lb_port(s), hapi_lb_ca_path(s) ? hapi_lb_ca_path(s) : "-");
    fflush(stdout);
    int sig = 0;
    sigwait(&set, &sig);
    printf("accepted=%llu handled=%llu open=%llu\n",
           (unsigned long long)hapi_lb_connections_accepted(s),
           (unsigned long long)hapi_lb_requests_handled(s),
           (unsigned long long)hapi_lb_open_connections(s));
    hapi_lb_stop(s);
    free(big_body);
    printf("stopped\n");
    return 0;
}
