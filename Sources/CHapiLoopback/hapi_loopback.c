#define _GNU_SOURCE
/* Server lifecycle, the poll(2) event loop, connections, the TLS/TCP transport and the
 * response object. HTTP/2 lives in lb_h2.c, HTTP/1.1 in lb_h1.c, certificates in lb_tls.c. */
#include "lb_internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---------- small containers ---------- */

int hapi_lb_buf_append(hapi_lb_buf *b, const void *p, size_t n) {
    if (n == 0) return 1;
    if (b->len + n > b->cap && b->off > 0) { /* reclaim consumed space first */
        memmove(b->data, b->data + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        uint8_t *data = realloc(b->data, cap);
        if (!data) return 0;
        b->data = data;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 1;
}

int hapi_lb_buf_appendf(hapi_lb_buf *b, const char *fmt, ...) {
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return 0;
    if ((size_t)n < sizeof small) return hapi_lb_buf_append(b, small, (size_t)n);
    char *big = malloc((size_t)n + 1);
    if (!big) return 0;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    int ok = hapi_lb_buf_append(b, big, (size_t)n);
    free(big);
    return ok;
}

void hapi_lb_buf_consume(hapi_lb_buf *b, size_t n) {
    b->off += n;
    if (b->off >= b->len) b->off = b->len = 0;
}

void hapi_lb_buf_free(hapi_lb_buf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

int hapi_lb_headers_add(hapi_lb_headers *h, const char *name, size_t name_len, const char *value,
                        size_t value_len, int lowercase) {
    if (h->count == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 8;
        hapi_lb_header *items = realloc(h->items, cap * sizeof *items);
        if (!items) return 0;
        h->items = items;
        h->cap = cap;
    }
    /* One allocation holds "name\0value\0". */
    char *mem = malloc(name_len + value_len + 2);
    if (!mem) return 0;
    for (size_t i = 0; i < name_len; i++)
        mem[i] = lowercase ? (char)tolower((unsigned char)name[i]) : name[i];
    mem[name_len] = 0;
    if (value_len) memcpy(mem + name_len + 1, value, value_len);
    mem[name_len + 1 + value_len] = 0;
    h->items[h->count++] = (hapi_lb_header){mem, name_len, mem + name_len + 1, value_len};
    return 1;
}

void hapi_lb_headers_free(hapi_lb_headers *h) {
    for (size_t i = 0; i < h->count; i++) free((void *)h->items[i].name);
    free(h->items);
    memset(h, 0, sizeof *h);
}

/* ---------- the response object ---------- */

hapi_lb_response *hapi_lb_response_new(void) {
    hapi_lb_response *r = calloc(1, sizeof *r);
    if (r) r->status = 200;
    return r;
}

void hapi_lb_response_free(hapi_lb_response *r) {
    if (!r) return;
    hapi_lb_headers_free(&r->headers);
    free(r->body);
    free(r);
}

void hapi_lb_response_set_action(hapi_lb_response *r, hapi_lb_action a) {
    if (r && a >= HAPI_LB_RESPOND && a <= HAPI_LB_RESPOND_THEN_SILENT) r->action = a;
}

void hapi_lb_response_set_status(hapi_lb_response *r, int status) {
    if (r && status >= 100 && status <= 999) r->status = status;
}

void hapi_lb_response_add_header(hapi_lb_response *r, const char *name, size_t name_len,
                                 const char *value, size_t value_len) {
    if (!r || !name || name_len == 0 || (!value && value_len)) return;
    if (!hapi_lb_headers_add(&r->headers, name, name_len, value ? value : "", value_len, 1))
        r->oom = 1;
}

void hapi_lb_response_set_body(hapi_lb_response *r, const uint8_t *body, size_t len) {
    if (!r || (!body && len)) return;
    free(r->body);
    r->body = NULL;
    r->body_len = 0;
    if (len == 0) return;
    r->body = malloc(len);
    if (!r->body) {
        r->oom = 1;
        return;
    }
    memcpy(r->body, body, len);
    r->body_len = len;
}

void hapi_lb_response_set_delay_ms(hapi_lb_response *r, uint32_t ms) {
    if (r) r->delay_ms = ms;
}

void hapi_lb_response_set_error_code(hapi_lb_response *r, uint32_t code) {
    if (!r) return;
    r->error_code = code;
    r->error_code_set = 1;
}

void hapi_lb_response_set_partial_bytes(hapi_lb_response *r, size_t n) {
    if (r) r->partial_bytes = n;
}

uint32_t hapi_lb_response_error_code(const hapi_lb_response *r) {
    if (r->error_code_set) return r->error_code;
    return r->action == HAPI_LB_RESET_STREAM ? NGHTTP2_REFUSED_STREAM : NGHTTP2_NO_ERROR;
}

void hapi_lb_response_fill_endless(const hapi_lb_response *r, uint8_t *buf, size_t n,
                                   size_t *phase) {
    if (r->body_len == 0) {
        memset(buf, 'x', n);
        return;
    }
    for (size_t done = 0; done < n;) {
        size_t chunk = r->body_len - *phase;
        if (chunk > n - done) chunk = n - done;
        memcpy(buf + done, r->body + *phase, chunk);
        done += chunk;
        *phase = (*phase + chunk) % r->body_len;
    }
}

/* ---------- helpers for the protocol modules ---------- */

uint64_t hapi_lb_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int hapi_lb_add_timer(hapi_lb_conn *c, int32_t stream_id, uint32_t delay_ms) {
    hapi_lb_timer *t = malloc(sizeof *t);
    if (!t) return 0;
    t->due_ms = hapi_lb_now_ms() + delay_ms;
    t->stream_id = stream_id;
    t->next = c->timers;
    c->timers = t;
    return 1;
}

hapi_lb_response *hapi_lb_call_handler(hapi_lb_conn *c, const hapi_lb_request *req) {
    hapi_lb_response *r = hapi_lb_response_new();
    if (!r) return NULL;
    c->server->handler(c->server->context, req, r);
    atomic_fetch_add(&c->server->handled, 1);
    if (r->oom) { /* a setter could not copy: a half-built answer would mislead the test */
        hapi_lb_response_free(r);
        r = hapi_lb_response_new();
        if (r) r->status = 500;
    }
    return r;
}

/* ---------- transport: plain TCP or TLS, non-blocking ---------- */

enum { IO_BLOCKED = -1, IO_ERROR = -2 };

/* > 0 bytes read, 0 orderly EOF, IO_BLOCKED, IO_ERROR. */
static ssize_t transport_read(hapi_lb_conn *c, uint8_t *buf, size_t len) {
    if (!c->ssl) {
        for (;;) {
            ssize_t n = recv(c->fd, buf, len, 0);
            if (n >= 0) return n;
            if (errno == EINTR) continue;
            return (errno == EAGAIN || errno == EWOULDBLOCK) ? IO_BLOCKED : IO_ERROR;
        }
    }
    ERR_clear_error();
    int n = SSL_read(c->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
    if (n > 0) return n;
    switch (SSL_get_error(c->ssl, n)) {
    case SSL_ERROR_WANT_READ: return IO_BLOCKED;
    case SSL_ERROR_WANT_WRITE: c->read_wants_write = 1; return IO_BLOCKED;
    case SSL_ERROR_ZERO_RETURN: return 0;
    default: ERR_clear_error(); return IO_ERROR;
    }
}

/* > 0 bytes written, IO_BLOCKED, IO_ERROR. */
static ssize_t transport_write(hapi_lb_conn *c, const uint8_t *buf, size_t len) {
    if (!c->ssl) {
        for (;;) {
            ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);
            if (n >= 0) return n;
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                c->want_pollout = 1;
                return IO_BLOCKED;
            }
            return IO_ERROR;
        }
    }
    ERR_clear_error();
    int n = SSL_write(c->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
    if (n > 0) return n;
    switch (SSL_get_error(c->ssl, n)) {
    case SSL_ERROR_WANT_WRITE: c->want_pollout = 1; return IO_BLOCKED;
    case SSL_ERROR_WANT_READ: return IO_BLOCKED; /* POLLIN is always watched */
    default: ERR_clear_error(); return IO_ERROR;
    }
}

/* ---------- connections ---------- */

static void conn_free(hapi_lb_conn *c) {
    hapi_lb_h2_free(c);
    hapi_lb_h1_free(c);
    while (c->timers) {
        hapi_lb_timer *t = c->timers;
        c->timers = t->next;
        free(t);
    }
    SSL_free(c->ssl);
    close(c->fd);
    hapi_lb_buf_free(&c->in);
    hapi_lb_buf_free(&c->out);
    atomic_fetch_sub(&c->server->open, 1);
    free(c);
}

/* Pull more output from the protocol while little is queued. */
static void conn_fill(hapi_lb_conn *c) {
    if (c->proto == HAPI_LB_PROTO_H2) hapi_lb_h2_fill(c);
    else if (c->proto == HAPI_LB_PROTO_H1) hapi_lb_h1_fill(c);
    /* Everything that must go out before closing is now either queued or already sent. */
    if (c->close_stage == 1) c->close_stage = 2;
}

/* Close after everything was written, without losing it: a plain close() with unread input
 * makes the kernel send RST, and the client may then never see our last frames (GOAWAY, the
 * end of a response). So: close_notify, FIN, then discard input until EOF or a timeout. */
static void conn_linger(hapi_lb_conn *c) {
    if (c->lingering) return;
    if (c->ssl) {
        ERR_clear_error();
        SSL_shutdown(c->ssl); /* best effort close_notify */
        ERR_clear_error();
    }
    shutdown(c->fd, SHUT_WR);
    c->lingering = 1;
    c->want_pollout = c->read_again = c->read_wants_write = 0;
    c->linger_until = hapi_lb_now_ms() + HAPI_LB_LINGER_MS;
}

static void conn_drain(hapi_lb_conn *c) {
    uint8_t scratch[16384];
    for (;;) {
        ssize_t n = recv(c->fd, scratch, sizeof scratch, 0);
        if (n > 0) continue;
        if (n < 0 && errno == EINTR) continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) c->dead = 1;
        return;
    }
}

/* Write queued output until the socket would block, the budget runs out or nothing is left. */
static void conn_flush(hapi_lb_conn *c) {
    size_t budget = HAPI_LB_WRITE_BUDGET;
    c->want_pollout = 0;
    while (!c->dead) {
        if (hapi_lb_buf_size(&c->out) == 0) {
            if (c->close_stage == 2) {
                conn_linger(c);
                return;
            }
            conn_fill(c);
            if (c->dead) return;
            if (hapi_lb_buf_size(&c->out) == 0) break;
        }
        if (budget == 0) {
            c->want_pollout = 1; /* POLLOUT fires at once on a writable socket: fair resume */
            return;
        }
        size_t len = hapi_lb_buf_size(&c->out);
        if (len > budget) len = budget;
        ssize_t n = transport_write(c, hapi_lb_buf_bytes(&c->out), len);
        if (n == IO_BLOCKED) return;
        if (n < 0) {
            c->dead = 1;
            return;
        }
        hapi_lb_buf_consume(&c->out, (size_t)n);
        budget -= (size_t)n;
        if (c->silence_after_flush && hapi_lb_buf_size(&c->out) == 0) {
            c->silent = 1; /* the response is out; from now on the peer hears nothing */
            return;
        }
    }
    if ((c->close_stage == 2 && hapi_lb_buf_size(&c->out) == 0) ||
        (c->proto == HAPI_LB_PROTO_H2 && hapi_lb_h2_finished(c)))
        conn_linger(c);
}

static const char h2_preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"; /* 24 bytes + NUL */
#define H2_PREFACE_LEN (sizeof h2_preface - 1)

/* Bytes before the protocol is known: the HTTP/2 preface means h2 with prior knowledge. */
static void conn_sniff(hapi_lb_conn *c, const uint8_t *data, size_t len) {
    if (!hapi_lb_buf_append(&c->in, data, len)) {
        c->dead = 1;
        return;
    }
    size_t have = hapi_lb_buf_size(&c->in);
    size_t cmp = have < H2_PREFACE_LEN ? have : H2_PREFACE_LEN;
    if (memcmp(hapi_lb_buf_bytes(&c->in), h2_preface, cmp) != 0) {
        c->proto = HAPI_LB_PROTO_H1;
        hapi_lb_h1_process(c);
    } else if (have >= H2_PREFACE_LEN) {
        if (!hapi_lb_h2_start(c)) {
            c->dead = 1;
            return;
        }
        hapi_lb_buf in = c->in; /* hand the buffered bytes (preface included) to nghttp2 */
        memset(&c->in, 0, sizeof c->in);
        hapi_lb_h2_feed(c, hapi_lb_buf_bytes(&in), hapi_lb_buf_size(&in));
        hapi_lb_buf_free(&in);
    }
}

static void conn_feed(hapi_lb_conn *c, const uint8_t *data, size_t len) {
    switch (c->proto) {
    case HAPI_LB_PROTO_SNIFF: conn_sniff(c, data, len); break;
    case HAPI_LB_PROTO_H2: hapi_lb_h2_feed(c, data, len); break;
    case HAPI_LB_PROTO_H1: hapi_lb_h1_feed(c, data, len); break;
    case HAPI_LB_PROTO_HANDSHAKE: break;
    }
}

static void conn_read(hapi_lb_conn *c) {
    uint8_t buf[16384];
    size_t total = 0;
    c->read_again = 0;
    c->read_wants_write = 0;
    while (!c->dead) {
        if (total >= HAPI_LB_READ_BUDGET) {
            c->read_again = 1; /* TLS may hold decrypted bytes poll() cannot see */
            return;
        }
        ssize_t n = transport_read(c, buf, sizeof buf);
        if (n == IO_BLOCKED) return;
        if (n <= 0) { /* EOF or error: the client is gone, pending output is moot */
            c->dead = 1;
            return;
        }
        conn_feed(c, buf, (size_t)n);
        total += (size_t)n;
    }
}

static void conn_handshake(hapi_lb_conn *c) {
    ERR_clear_error();
    int rv = SSL_do_handshake(c->ssl);
    c->read_wants_write = 0;
    if (rv != 1) {
        switch (SSL_get_error(c->ssl, rv)) {
        case SSL_ERROR_WANT_READ: return;
        case SSL_ERROR_WANT_WRITE: c->read_wants_write = 1; return;
        default: /* e.g. the client does not trust our CA: just drop it */
            ERR_clear_error();
            c->dead = 1;
            return;
        }
    }
    const unsigned char *alpn = NULL;
    unsigned int alpn_len = 0;
    SSL_get0_alpn_selected(c->ssl, &alpn, &alpn_len);
    if (alpn_len == 2 && memcmp(alpn, "h2", 2) == 0) {
        c->proto = HAPI_LB_PROTO_H2;
        if (!hapi_lb_h2_start(c)) c->dead = 1;
    } else if (alpn_len > 0) {
        c->proto = HAPI_LB_PROTO_H1;
    } else {
        c->proto = HAPI_LB_PROTO_SNIFF; /* no ALPN: the first bytes tell */
    }
}

static short conn_events(const hapi_lb_conn *c) {
    if (c->server->config.silent || c->silent) return 0; /* POLLHUP/POLLERR still arrive */
    if (c->lingering) return POLLIN;
    short ev = POLLIN;
    if (c->want_pollout || c->read_wants_write) ev |= POLLOUT;
    return ev;
}

static void conn_on_io(hapi_lb_conn *c, short revents) {
    if (c->server->config.silent || c->silent) {
        if (revents & (POLLHUP | POLLERR | POLLNVAL)) c->dead = 1;
        return;
    }
    if (revents & (POLLERR | POLLNVAL)) {
        c->dead = 1;
        return;
    }
    if (c->lingering) {
        conn_drain(c);
        return;
    }
    int readable = (revents & (POLLIN | POLLHUP)) || c->read_again ||
                   ((revents & POLLOUT) && c->read_wants_write);
    if (c->proto == HAPI_LB_PROTO_HANDSHAKE) {
        if (!readable) return;
        conn_handshake(c);
        if (c->dead || c->proto == HAPI_LB_PROTO_HANDSHAKE) return;
        readable = 1; /* application data may already sit in OpenSSL's buffers */
    }
    if (readable) conn_read(c);
    if (!c->dead) conn_flush(c);
}

/* ---------- the server ---------- */

static int conns_reserve(hapi_lb_server *s) {
    if (s->nconns < s->conns_cap) return 1;
    size_t cap = s->conns_cap ? s->conns_cap * 2 : 16;
    hapi_lb_conn **conns = realloc(s->conns, cap * sizeof *conns);
    if (!conns) return 0;
    s->conns = conns;
    s->conns_cap = cap;
    return 1;
}

static void accept_all(hapi_lb_server *s) {
    for (;;) {
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return; /* EAGAIN, or EMFILE and friends: try again on the next wake-up */
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        hapi_lb_conn *c = calloc(1, sizeof *c);
        if (!c || !conns_reserve(s)) {
            free(c);
            close(fd);
            continue;
        }
        c->server = s;
        c->fd = fd;
        c->id = ++s->next_conn_id;
        c->proto = HAPI_LB_PROTO_SNIFF;
        if (s->ssl_ctx) {
            c->ssl = SSL_new(s->ssl_ctx);
            if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) {
                SSL_free(c->ssl);
                free(c);
                close(fd);
                ERR_clear_error();
                continue;
            }
            SSL_set_accept_state(c->ssl);
            c->proto = HAPI_LB_PROTO_HANDSHAKE;
        }
        s->conns[s->nconns++] = c;
        atomic_fetch_add(&s->accepted, 1);
        atomic_fetch_add(&s->open, 1);
    }
}

/* Fire due timers; returns the poll timeout until the next one (-1: none). */
static int run_timers(hapi_lb_server *s) {
    uint64_t now = hapi_lb_now_ms();
    uint64_t next = UINT64_MAX;
    for (size_t i = 0; i < s->nconns; i++) {
        hapi_lb_conn *c = s->conns[i];
        int fired = 0;
        if (c->lingering) { /* its timers are moot; only the linger deadline counts */
            if (c->linger_until <= now) c->dead = 1;
            else if (c->linger_until < next) next = c->linger_until;
            continue;
        }
        for (hapi_lb_timer **p = &c->timers; *p && !c->dead;) {
            hapi_lb_timer *t = *p;
            if (t->due_ms > now) {
                if (t->due_ms < next) next = t->due_ms;
                p = &t->next;
                continue;
            }
            *p = t->next;
            int32_t sid = t->stream_id;
            free(t);
            if (c->proto == HAPI_LB_PROTO_H2) hapi_lb_h2_timer_fired(c, sid);
            else hapi_lb_h1_timer_fired(c);
            fired = 1;
        }
        if (fired && !c->dead) conn_flush(c);
        if (c->read_again) next = now;
    }
    if (next == UINT64_MAX) return -1;
    uint64_t wait = next > now ? next - now : 0;
    return wait > 60000 ? 60000 : (int)wait;
}

static void reap_dead(hapi_lb_server *s) {
    for (size_t i = 0; i < s->nconns;) {
        if (s->conns[i]->dead) {
            conn_free(s->conns[i]);
            s->conns[i] = s->conns[--s->nconns];
        } else {
            i++;
        }
    }
}

static void *loop_main(void *arg) {
    pthread_setname_np(pthread_self(), "hapi-loopback");
    hapi_lb_server *s = arg;
    /* OpenSSL writes with write(2): a peer that vanished must give EPIPE, not kill the process. */
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &block, NULL);

    struct pollfd *pfds = NULL;
    hapi_lb_conn **polled = NULL;
    size_t cap = 0;
    while (!atomic_load(&s->stopping)) {
        int timeout = run_timers(s);
        reap_dead(s);
        size_t n = 2 + s->nconns;
        if (n > cap) {
            size_t ncap = n * 2;
            struct pollfd *p = realloc(pfds, ncap * sizeof *p);
            if (p) pfds = p;
            hapi_lb_conn **q = realloc(polled, ncap * sizeof *q);
            if (q) polled = q;
            if (!p || !q) { /* cannot watch everyone: wait briefly and retry */
                poll(NULL, 0, 10);
                continue;
            }
            cap = ncap;
        }
        pfds[0] = (struct pollfd){.fd = s->wake_fd, .events = POLLIN};
        pfds[1] = (struct pollfd){.fd = s->listen_fd, .events = POLLIN};
        for (size_t i = 0; i < s->nconns; i++) {
            polled[i + 2] = s->conns[i];
            pfds[i + 2] = (struct pollfd){.fd = s->conns[i]->fd, .events = conn_events(s->conns[i])};
        }
        if (poll(pfds, (nfds_t)n, timeout) < 0) {
            if (errno == EINTR) continue;
            poll(NULL, 0, 10);
            continue;
        }
        if (pfds[0].revents) break; /* only hapi_lb_halt writes the eventfd */
        for (size_t i = 2; i < n; i++) {
            hapi_lb_conn *c = polled[i];
            if (!c->dead && (pfds[i].revents || c->read_again)) conn_on_io(c, pfds[i].revents);
        }
        reap_dead(s);
        if (pfds[1].revents & POLLIN) accept_all(s);
    }
    for (size_t i = 0; i < s->nconns; i++) conn_free(s->conns[i]);
    s->nconns = 0;
    free(pfds);
    free(polled);
    return NULL;
}

static void server_free(hapi_lb_server *s) {
    if (s->listen_fd >= 0) close(s->listen_fd);
    if (s->wake_fd >= 0) close(s->wake_fd);
    if (s->ca_path[0]) unlink(s->ca_path);
    if (s->tmp_dir[0]) rmdir(s->tmp_dir);
    SSL_CTX_free(s->ssl_ctx);
    if (s->h2_callbacks) nghttp2_session_callbacks_del(s->h2_callbacks);
    free(s->conns);
    free(s);
}

hapi_lb_server *hapi_lb_start(const hapi_lb_config *config, hapi_lb_handler handler, void *context,
                              char *errbuf, size_t errbuf_len) {
    char scratch[1];
    if (!errbuf || errbuf_len == 0) {
        errbuf = scratch;
        errbuf_len = sizeof scratch;
    }
    errbuf[0] = 0;
    if (!config || !handler) {
        snprintf(errbuf, errbuf_len, "config and handler are required");
        return NULL;
    }
    hapi_lb_server *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(errbuf, errbuf_len, "out of memory");
        return NULL;
    }
    s->config = *config;
    if (s->config.max_concurrent_streams == 0) s->config.max_concurrent_streams = 1000;
    s->handler = handler;
    s->context = context;
    s->listen_fd = s->wake_fd = -1;

    s->h2_callbacks = hapi_lb_h2_callbacks_new();
    if (!s->h2_callbacks) {
        snprintf(errbuf, errbuf_len, "out of memory");
        goto fail;
    }
    if (config->transport == HAPI_LB_TLS) {
        const char *tmp = getenv("TMPDIR");
        if (!tmp || !*tmp || strlen(tmp) > 200) tmp = "/tmp";
        snprintf(s->tmp_dir, sizeof s->tmp_dir, "%s/hapi-loopback-XXXXXX", tmp);
        if (!mkdtemp(s->tmp_dir)) {
            snprintf(errbuf, errbuf_len, "mkdtemp(%s) failed: %s", s->tmp_dir, strerror(errno));
            s->tmp_dir[0] = 0;
            goto fail;
        }
        snprintf(s->ca_path, sizeof s->ca_path, "%s/ca.pem", s->tmp_dir);
        s->ssl_ctx = hapi_lb_tls_context_new(s->ca_path, s->config.http1_only, errbuf, errbuf_len);
        if (!s->ssl_ctx) goto fail;
    } else if (config->transport != HAPI_LB_CLEARTEXT) {
        snprintf(errbuf, errbuf_len, "unknown transport %d", (int)config->transport);
        goto fail;
    }

    s->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t addr_len = sizeof addr;
    if (s->listen_fd < 0 || bind(s->listen_fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        listen(s->listen_fd, SOMAXCONN) != 0 ||
        getsockname(s->listen_fd, (struct sockaddr *)&addr, &addr_len) != 0) {
        snprintf(errbuf, errbuf_len, "cannot listen on 127.0.0.1: %s", strerror(errno));
        goto fail;
    }
    s->port = ntohs(addr.sin_port);
    s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (s->wake_fd < 0) {
        snprintf(errbuf, errbuf_len, "eventfd failed: %s", strerror(errno));
        goto fail;
    }
    int rv = pthread_create(&s->thread, NULL, loop_main, s);
    if (rv != 0) {
        snprintf(errbuf, errbuf_len, "pthread_create failed: %s", strerror(rv));
        goto fail;
    }
    return s;
fail:
    server_free(s);
    return NULL;
}

uint16_t hapi_lb_port(const hapi_lb_server *s) { return s ? s->port : 0; }

const char *hapi_lb_ca_path(const hapi_lb_server *s) {
    return s && s->ca_path[0] ? s->ca_path : NULL;
}

uint64_t hapi_lb_connections_accepted(const hapi_lb_server *s) {
    return s ? atomic_load(&s->accepted) : 0;
}

uint64_t hapi_lb_requests_handled(const hapi_lb_server *s) {
    return s ? atomic_load(&s->handled) : 0;
}

uint64_t hapi_lb_open_connections(const hapi_lb_server *s) {
    return s ? atomic_load(&s->open) : 0;
}

void hapi_lb_halt(hapi_lb_server *s) {
    if (!s || atomic_exchange(&s->halted, 1)) return;
    atomic_store(&s->stopping, 1);
    uint64_t one = 1;
    while (write(s->wake_fd, &one, sizeof one) < 0 && errno == EINTR) {
    }
    pthread_join(s->thread, NULL); /* the loop closes every connection on its way out */
}

void hapi_lb_stop(hapi_lb_server *s) {
    if (!s) return;
    hapi_lb_halt(s);
    server_free(s);
}
