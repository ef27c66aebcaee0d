/*
 * hapi_loopback.h - a real HTTP/2 + TLS (and HTTP/1.1, h2c) server on 127.0.0.1,
 * used by tests and the demo to stand in for the push relay, APNs and FCM.
 *
 * One event-loop thread per server (poll(2) over non-blocking sockets), nghttp2's
 * server session for HTTP/2, OpenSSL 3 for TLS with a throwaway CA created at start.
 * Every symbol is prefixed hapi_lb_ / HAPI_LB_ so a hub can link other C libraries.
 */
#ifndef HAPI_LOOPBACK_H
#define HAPI_LOOPBACK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    /* ALPN offers "h2" then "http/1.1": HTTP/2 if h2 is negotiated, else HTTP/1.1 over TLS. */
    HAPI_LB_TLS = 0,
    /* h2c with prior knowledge if the client starts with the HTTP/2 preface, else HTTP/1.1. */
    HAPI_LB_CLEARTEXT = 1,
} hapi_lb_transport;

typedef struct {
    hapi_lb_transport transport;
    uint32_t max_concurrent_streams; /* SETTINGS_MAX_CONCURRENT_STREAMS; 0 = 1000 */
    int silent;                      /* accept TCP connections but never read or write */
    uint32_t initial_window_size;    /* SETTINGS_INITIAL_WINDOW_SIZE and connection window; 0 = 1 MiB */
    int http1_only;                  /* TLS: ALPN offers only http/1.1 (a server without HTTP/2) */
} hapi_lb_config;

typedef struct {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
} hapi_lb_header;

typedef struct {
    uint64_t connection_id; /* 1, 2, 3... per accepted connection */
    int32_t stream_id;      /* HTTP/2 stream id; 0 for HTTP/1.1 */
    int http_version;       /* 2 or 1 */
    /* In arrival order. HTTP/2: including pseudo-headers. HTTP/1.1: synthesized
     * :method, :path and :authority (from Host) first, then the headers, names lowercased. */
    const hapi_lb_header *headers;
    size_t header_count;
    const uint8_t *body;
    size_t body_len;
} hapi_lb_request;

typedef enum {
    HAPI_LB_RESPOND = 0,           /* status + headers + body */
    HAPI_LB_RESET_STREAM = 1,      /* RST_STREAM(error_code); HTTP/1.1: close the connection */
    HAPI_LB_GOAWAY = 2,            /* GOAWAY(last_stream_id = id - 2 or 0, error_code), close after flushing */
    HAPI_LB_DROP_CONNECTION = 3,   /* close the TCP connection at once, no frames */
    HAPI_LB_NEVER_RESPOND = 4,     /* keep the stream open forever */
    HAPI_LB_PARTIAL_THEN_DROP = 5, /* status, headers, first partial_bytes of the body, then close */
    HAPI_LB_ENDLESS_BODY = 6,      /* status, headers, then the body (or 'x') repeated forever */
    HAPI_LB_RESPOND_THEN_SILENT = 7, /* respond, then never read or write the connection again */
} hapi_lb_action;

/* Opaque and server-owned; valid only during the handler call. Defaults: RESPOND, 200, no body. */
typedef struct hapi_lb_response hapi_lb_response;
void hapi_lb_response_set_action(hapi_lb_response *r, hapi_lb_action a);
void hapi_lb_response_set_status(hapi_lb_response *r, int status);
/* Copies. Names are lowercased; HTTP/2 drops connection-specific headers. */
void hapi_lb_response_add_header(hapi_lb_response *r, const char *name, size_t name_len,
                                 const char *value, size_t value_len);
void hapi_lb_response_set_body(hapi_lb_response *r, const uint8_t *body, size_t len); /* copies */
/* Applies to every action: performed later by a timer on the loop, never by sleeping. */
void hapi_lb_response_set_delay_ms(hapi_lb_response *r, uint32_t ms);
/* RESET_STREAM defaults to REFUSED_STREAM (7), GOAWAY to NO_ERROR (0). */
void hapi_lb_response_set_error_code(hapi_lb_response *r, uint32_t code);
void hapi_lb_response_set_partial_bytes(hapi_lb_response *r, size_t n);

/* Called on the server's thread once per complete request; fills the response through the
 * setters before returning. The request memory is valid only during the call. Must not call
 * hapi_lb_stop. */
typedef void (*hapi_lb_handler)(void *context, const hapi_lb_request *request,
                                hapi_lb_response *response);

typedef struct hapi_lb_server hapi_lb_server;

/* Creates a throwaway CA and server certificate (EC P-256, SAN IP:127.0.0.1 and DNS:localhost),
 * writes the CA certificate (never a key) to a file in a fresh temporary directory, binds
 * 127.0.0.1 on an ephemeral port and starts the event-loop thread.
 * Returns NULL and writes a message into errbuf on failure. */
hapi_lb_server *hapi_lb_start(const hapi_lb_config *config, hapi_lb_handler handler, void *context,
                              char *errbuf, size_t errbuf_len);
uint16_t hapi_lb_port(const hapi_lb_server *s);
const char *hapi_lb_ca_path(const hapi_lb_server *s); /* NULL for CLEARTEXT */
/* Thread-safe counters. */
uint64_t hapi_lb_connections_accepted(const hapi_lb_server *s);
uint64_t hapi_lb_requests_handled(const hapi_lb_server *s);
uint64_t hapi_lb_open_connections(const hapi_lb_server *s);
/* Closes every connection and joins the thread; the counters stay readable until hapi_lb_stop.
 * Idempotent. Never call it from the handler (it waits for the handler's own thread). */
void hapi_lb_halt(hapi_lb_server *s);
/* hapi_lb_halt, then deletes the CA file and its directory and frees everything.
 * Call exactly once, never from the handler. */
void hapi_lb_stop(hapi_lb_server *s);

#ifdef __cplusplus
}
#endif

#endif
