/* Internal declarations shared by the loopback server's .c files. Not part of the API. */
#ifndef HAPI_LB_INTERNAL_H
#define HAPI_LB_INTERNAL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4, memmem */
#endif

#include "hapi_loopback.h"

#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>

#define HAPI_LB_HIDDEN __attribute__((visibility("hidden")))

/* Output is pulled from nghttp2 / the HTTP/1.1 body only while less than this is queued,
 * so a huge or endless body never sits in memory. */
#define HAPI_LB_OUT_HIGH_WATER (64 * 1024)
/* Per wake-up caps so one busy connection cannot starve the others. */
#define HAPI_LB_READ_BUDGET (1024 * 1024)
#define HAPI_LB_WRITE_BUDGET (4 * 1024 * 1024)
/* Limits against misbehaving clients: exceeding one closes the connection / resets the stream. */
#define HAPI_LB_MAX_HEADER_BYTES (64 * 1024)
#define HAPI_LB_MAX_HEADERS 256
#define HAPI_LB_MAX_BODY (64u * 1024 * 1024)
/* How long a gracefully closed connection waits for the client's EOF. */
#define HAPI_LB_LINGER_MS 1000

/* A byte queue: bytes live in data[off, len). */
typedef struct {
    uint8_t *data;
    size_t off, len, cap;
} hapi_lb_buf;

HAPI_LB_HIDDEN int hapi_lb_buf_append(hapi_lb_buf *b, const void *p, size_t n);
HAPI_LB_HIDDEN int hapi_lb_buf_appendf(hapi_lb_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
HAPI_LB_HIDDEN void hapi_lb_buf_consume(hapi_lb_buf *b, size_t n);
HAPI_LB_HIDDEN void hapi_lb_buf_free(hapi_lb_buf *b);
static inline size_t hapi_lb_buf_size(const hapi_lb_buf *b) { return b->len - b->off; }
static inline const uint8_t *hapi_lb_buf_bytes(const hapi_lb_buf *b) {
    return b->data ? b->data + b->off : NULL;
}

/* Owned copy of a header list. */
typedef struct {
    hapi_lb_header *items;
    size_t count, cap;
} hapi_lb_headers;

HAPI_LB_HIDDEN int hapi_lb_headers_add(hapi_lb_headers *h, const char *name, size_t name_len,
                                       const char *value, size_t value_len, int lowercase);
HAPI_LB_HIDDEN void hapi_lb_headers_free(hapi_lb_headers *h);

struct hapi_lb_response {
    hapi_lb_action action;
    int status;
    uint32_t delay_ms;
    uint32_t error_code;
    int error_code_set;
    size_t partial_bytes;
    hapi_lb_headers headers;
    uint8_t *body;
    size_t body_len;
    int oom; /* a setter failed to allocate: answer 500 instead */
};

HAPI_LB_HIDDEN hapi_lb_response *hapi_lb_response_new(void);
HAPI_LB_HIDDEN void hapi_lb_response_free(hapi_lb_response *r);
HAPI_LB_HIDDEN uint32_t hapi_lb_response_error_code(const hapi_lb_response *r);
/* Fills buf with the endless body pattern (the body repeated, or 'x'), continuing at *phase. */
HAPI_LB_HIDDEN void hapi_lb_response_fill_endless(const hapi_lb_response *r, uint8_t *buf, size_t n,
                                                  size_t *phase);

/* A response waiting for its delay; stream_id 0 is the HTTP/1.1 request in flight. */
typedef struct hapi_lb_timer {
    struct hapi_lb_timer *next;
    uint64_t due_ms;
    int32_t stream_id;
} hapi_lb_timer;

typedef enum {
    HAPI_LB_PROTO_HANDSHAKE, /* TLS handshake in progress */
    HAPI_LB_PROTO_SNIFF,     /* waiting for 24 bytes to tell the HTTP/2 preface from HTTP/1.1 */
    HAPI_LB_PROTO_H2,
    HAPI_LB_PROTO_H1,
} hapi_lb_proto;

typedef struct hapi_lb_stream hapi_lb_stream;

typedef struct hapi_lb_conn {
    hapi_lb_server *server;
    int fd;
    uint64_t id;
    SSL *ssl; /* NULL for cleartext */
    hapi_lb_proto proto;

    int dead;             /* close at the next safe point (never freed inside callbacks) */
    int close_stage;      /* 1: close requested; 2: the queue holding the last frames is filled */
    int want_pollout;     /* a write would block (or the write budget ran out) */
    int read_again;       /* the read budget ran out: come back without waiting */
    int read_wants_write; /* SSL_read / handshake needs the socket writable */
    int lingering;        /* graceful close: FIN sent, discarding input until EOF or timeout */
    int silence_after_flush; /* RESPOND_THEN_SILENT: go silent once the output is written */
    int silent;              /* a connection that hung: never read or written again */
    uint64_t linger_until;

    hapi_lb_buf in;  /* HTTP/1.1 and preface sniffing */
    hapi_lb_buf out; /* plaintext waiting for send() / SSL_write() */
    hapi_lb_timer *timers;

    /* HTTP/2 */
    nghttp2_session *h2;
    hapi_lb_stream *streams; /* every stream with user data, freed with the connection */
    int goaway_submitted;    /* GOAWAY action applied: streams above goaway_last are refused */
    int32_t goaway_last;

    /* HTTP/1.1: one request in flight at a time */
    hapi_lb_response *h1_resp;
    int h1_busy;      /* a request was dispatched and its response is not fully queued */
    int h1_applied;   /* the response started (status line queued or action done) */
    int h1_keepalive;
    int h1_head;
    int h1_continue_sent;
    size_t h1_sent, h1_limit, h1_phase;
} hapi_lb_conn;

struct hapi_lb_server {
    hapi_lb_config config;
    hapi_lb_handler handler;
    void *context;
    SSL_CTX *ssl_ctx;
    nghttp2_session_callbacks *h2_callbacks;
    int listen_fd, wake_fd;
    uint16_t port;
    char tmp_dir[256];
    char ca_path[300];
    pthread_t thread;
    atomic_int stopping;
    atomic_int halted;
    atomic_uint_least64_t accepted, handled, open;

    /* Loop-thread only. */
    uint64_t next_conn_id;
    hapi_lb_conn **conns;
    size_t nconns, conns_cap;
};

/* Event loop core (hapi_loopback.c). */
HAPI_LB_HIDDEN uint64_t hapi_lb_now_ms(void);
HAPI_LB_HIDDEN int hapi_lb_add_timer(hapi_lb_conn *c, int32_t stream_id, uint32_t delay_ms);
/* Calls the handler; returns the filled response (never NULL unless out of memory). */
HAPI_LB_HIDDEN hapi_lb_response *hapi_lb_call_handler(hapi_lb_conn *c, const hapi_lb_request *req);

/* HTTP/2 (lb_h2.c). */
HAPI_LB_HIDDEN nghttp2_session_callbacks *hapi_lb_h2_callbacks_new(void);
HAPI_LB_HIDDEN int hapi_lb_h2_start(hapi_lb_conn *c);
HAPI_LB_HIDDEN void hapi_lb_h2_feed(hapi_lb_conn *c, const uint8_t *data, size_t len);
HAPI_LB_HIDDEN void hapi_lb_h2_fill(hapi_lb_conn *c);
HAPI_LB_HIDDEN void hapi_lb_h2_timer_fired(hapi_lb_conn *c, int32_t stream_id);
HAPI_LB_HIDDEN int hapi_lb_h2_finished(hapi_lb_conn *c);
HAPI_LB_HIDDEN void hapi_lb_h2_free(hapi_lb_conn *c);

/* HTTP/1.1 (lb_h1.c). */
HAPI_LB_HIDDEN void hapi_lb_h1_feed(hapi_lb_conn *c, const uint8_t *data, size_t len);
HAPI_LB_HIDDEN void hapi_lb_h1_process(hapi_lb_conn *c);
HAPI_LB_HIDDEN void hapi_lb_h1_fill(hapi_lb_conn *c);
HAPI_LB_HIDDEN void hapi_lb_h1_timer_fired(hapi_lb_conn *c);
HAPI_LB_HIDDEN void hapi_lb_h1_free(hapi_lb_conn *c);

/* Certificates and TLS context (lb_tls.c). */
HAPI_LB_HIDDEN SSL_CTX *hapi_lb_tls_context_new(const char *ca_path, int http1_only, char *err, size_t errlen);

#endif
