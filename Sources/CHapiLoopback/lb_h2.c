/* HTTP/2 over nghttp2's server session: requests are collected per stream, dispatched on
 * END_STREAM, and answered by submitting frames that conn_flush pulls with mem_send. */
#include "lb_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hapi_lb_stream {
    hapi_lb_stream *prev, *next; /* the connection's list, so nothing leaks at close */
    int32_t id;
    hapi_lb_headers headers;
    hapi_lb_buf body;
    int dispatched, applied, head;
    hapi_lb_response *resp;
    size_t sent, phase; /* body bytes handed to nghttp2; endless pattern position */
};

static hapi_lb_stream *stream_get(hapi_lb_conn *c, int32_t id) {
    return nghttp2_session_get_stream_user_data(c->h2, id);
}

static void stream_free(hapi_lb_conn *c, hapi_lb_stream *st) {
    if (st->prev) st->prev->next = st->next;
    else c->streams = st->next;
    if (st->next) st->next->prev = st->prev;
    hapi_lb_headers_free(&st->headers);
    hapi_lb_buf_free(&st->body);
    hapi_lb_response_free(st->resp);
    free(st);
}

/* The data provider: the body, the first partial_bytes of it, or the pattern forever.
 * nghttp2 calls it only when flow control allows. */
static ssize_t read_body(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                         uint32_t *data_flags, nghttp2_data_source *source, void *user_data) {
    (void)session;
    (void)stream_id;
    hapi_lb_conn *c = user_data;
    hapi_lb_stream *st = source->ptr;
    hapi_lb_response *r = st->resp;
    if (r->action == HAPI_LB_ENDLESS_BODY) {
        hapi_lb_response_fill_endless(r, buf, length, &st->phase);
        return (ssize_t)length;
    }
    size_t limit = r->body_len;
    int partial = r->action == HAPI_LB_PARTIAL_THEN_DROP;
    if (partial && r->partial_bytes < limit) limit = r->partial_bytes;
    if (partial && st->sent >= limit) {
        /* Never resumed: the connection closes once what is queued is written. */
        if (!c->close_stage) c->close_stage = 1;
        return NGHTTP2_ERR_DEFERRED;
    }
    size_t n = limit - st->sent < length ? limit - st->sent : length;
    if (n) memcpy(buf, r->body + st->sent, n);
    st->sent += n;
    if (!partial && st->sent == limit) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static int is_connection_specific(const hapi_lb_header *h) {
    static const char *const names[] = {"connection", "keep-alive", "proxy-connection",
                                        "transfer-encoding", "upgrade", "te"};
    if (h->name_len == 0 || h->name[0] == ':') return 1;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(h->name, names[i]) == 0) return 1;
    return 0;
}

static void submit_response(hapi_lb_conn *c, hapi_lb_stream *st) {
    hapi_lb_response *r = st->resp;
    nghttp2_nv *nva = calloc(r->headers.count + 1, sizeof *nva);
    if (!nva) {
        nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
        return;
    }
    char status[8];
    snprintf(status, sizeof status, "%d", r->status);
    nva[0] = (nghttp2_nv){(uint8_t *)":status", (uint8_t *)status, 7, strlen(status),
                          NGHTTP2_NV_FLAG_NONE};
    size_t n = 1;
    for (size_t i = 0; i < r->headers.count; i++) {
        const hapi_lb_header *h = &r->headers.items[i];
        if (is_connection_specific(h)) continue; /* forbidden in HTTP/2 */
        nva[n++] = (nghttp2_nv){(uint8_t *)h->name, (uint8_t *)h->value, h->name_len,
                                h->value_len, NGHTTP2_NV_FLAG_NONE};
    }
    nghttp2_data_provider body = {.source.ptr = st, .read_callback = read_body};
    int has_body = !st->head && (r->action != HAPI_LB_RESPOND || r->body_len > 0);
    if (nghttp2_submit_response(c->h2, st->id, nva, n, has_body ? &body : NULL) != 0)
        nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
    free(nva); /* nghttp2 copied the header fields */
}

static void apply(hapi_lb_conn *c, hapi_lb_stream *st) {
    hapi_lb_response *r = st->resp;
    st->applied = 1;
    switch (r->action) {
    case HAPI_LB_RESET_STREAM:
        nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, st->id, hapi_lb_response_error_code(r));
        break;
    case HAPI_LB_GOAWAY:
        /* Streams above last_stream_id (this one included) are refused: clients may retry them. */
        if (!c->goaway_submitted || st->id - 2 < c->goaway_last) {
            c->goaway_last = st->id > 2 ? st->id - 2 : 0;
            c->goaway_submitted = 1;
            nghttp2_submit_goaway(c->h2, NGHTTP2_FLAG_NONE, c->goaway_last,
                                  hapi_lb_response_error_code(r), NULL, 0);
        }
        /* As a real server does, streams at or below last_stream_id are still answered; the
         * connection closes once nghttp2 has nothing left to read or write. */
        break;
    case HAPI_LB_DROP_CONNECTION: c->dead = 1; break;
    case HAPI_LB_NEVER_RESPOND: break;
    case HAPI_LB_RESPOND_THEN_SILENT:
        submit_response(c, st);
        c->silence_after_flush = 1;
        break;
    default: submit_response(c, st); break;
    }
}

static void dispatch(hapi_lb_conn *c, hapi_lb_stream *st) {
    st->dispatched = 1;
    /* Requests that arrived in the same read as a GOAWAY action are refused by it: the handler
     * must not see them (nghttp2 closes them once the GOAWAY is sent). */
    if (c->goaway_submitted && st->id > c->goaway_last) return;
    for (size_t i = 0; i < st->headers.count; i++) {
        const hapi_lb_header *h = &st->headers.items[i];
        if (strcmp(h->name, ":method") == 0 && strcmp(h->value, "HEAD") == 0) st->head = 1;
    }
    hapi_lb_request req = {
        .connection_id = c->id,
        .stream_id = st->id,
        .http_version = 2,
        .headers = st->headers.items,
        .header_count = st->headers.count,
        .body = hapi_lb_buf_bytes(&st->body),
        .body_len = hapi_lb_buf_size(&st->body),
    };
    st->resp = hapi_lb_call_handler(c, &req);
    /* The request is no longer needed: keep 1,000 idle streams cheap. */
    hapi_lb_headers_free(&st->headers);
    hapi_lb_buf_free(&st->body);
    if (!st->resp) {
        nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
        return;
    }
    if (st->resp->delay_ms > 0 && hapi_lb_add_timer(c, st->id, st->resp->delay_ms)) return;
    apply(c, st);
}

/* ---------- nghttp2 callbacks (user_data is the connection) ---------- */

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user_data) {
    hapi_lb_conn *c = user_data;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    hapi_lb_stream *st = calloc(1, sizeof *st);
    if (!st) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* resets just this stream */
    st->id = frame->hd.stream_id;
    st->next = c->streams;
    if (c->streams) c->streams->prev = st;
    c->streams = st;
    nghttp2_session_set_stream_user_data(session, st->id, st);
    return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user_data) {
    (void)session;
    (void)flags;
    hapi_lb_conn *c = user_data;
    if (c->dead) return NGHTTP2_ERR_CALLBACK_FAILURE;
    hapi_lb_stream *st = stream_get(c, frame->hd.stream_id);
    if (!st || st->dispatched) return 0;
    if (st->headers.count >= HAPI_LB_MAX_HEADERS ||
        !hapi_lb_headers_add(&st->headers, (const char *)name, namelen, (const char *)value,
                             valuelen, 0))
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    return 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id,
                         const uint8_t *data, size_t len, void *user_data) {
    (void)flags;
    hapi_lb_conn *c = user_data;
    if (c->dead) return NGHTTP2_ERR_CALLBACK_FAILURE;
    hapi_lb_stream *st = stream_get(c, stream_id);
    if (!st || st->dispatched) return 0;
    if (hapi_lb_buf_size(&st->body) + len > HAPI_LB_MAX_BODY ||
        !hapi_lb_buf_append(&st->body, data, len)) {
        st->dispatched = 1; /* never call the handler with a truncated body */
        nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_ENHANCE_YOUR_CALM);
    }
    return 0;
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data) {
    (void)session;
    hapi_lb_conn *c = user_data;
    if (c->dead) return NGHTTP2_ERR_CALLBACK_FAILURE;
    if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
        hapi_lb_stream *st = stream_get(c, frame->hd.stream_id);
        if (st && !st->dispatched) dispatch(c, st);
    }
    /* DROP_CONNECTION: stop nghttp2 from parsing (and dispatching) anything further. */
    return c->dead ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                           void *user_data) {
    (void)session;
    (void)error_code;
    hapi_lb_conn *c = user_data;
    hapi_lb_stream *st = stream_get(c, stream_id);
    if (st) stream_free(c, st); /* a pending timer for it finds no stream and does nothing */
    return 0;
}

nghttp2_session_callbacks *hapi_lb_h2_callbacks_new(void) {
    nghttp2_session_callbacks *cbs = NULL;
    if (nghttp2_session_callbacks_new(&cbs) != 0) return NULL;
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
    return cbs;
}

/* ---------- used by the connection ---------- */

int hapi_lb_h2_start(hapi_lb_conn *c) {
    c->proto = HAPI_LB_PROTO_H2;
    /* libcurl 7.88 resets every stream whose response has no content-length; nghttp2's
     * rapid-reset guard would then GOAWAY a busy test connection after ~1,000 requests. The
     * loopback server is a test peer, not an internet-facing one: lift the limit. */
    nghttp2_option *option = NULL;
    if (nghttp2_option_new(&option) != 0) return 0;
    nghttp2_option_set_stream_reset_rate_limit(option, UINT64_MAX / 2, UINT64_MAX / 2);
    int rv = nghttp2_session_server_new2(&c->h2, c->server->h2_callbacks, c, option);
    nghttp2_option_del(option);
    if (rv != 0) return 0;
    uint32_t window = c->server->config.initial_window_size ? c->server->config.initial_window_size : 1u << 20;
    nghttp2_settings_entry settings[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, c->server->config.max_concurrent_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, window},
    };
    if (nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, settings, 2) != 0) return 0;
    /* A large connection window so many streams can upload at once (unless a test asked for a
     * small one: then the connection window stays at the protocol's 65,535 bytes). */
    if (!c->server->config.initial_window_size)
        nghttp2_session_set_local_window_size(c->h2, NGHTTP2_FLAG_NONE, 0, 16 << 20);
    return 1;
}

void hapi_lb_h2_feed(hapi_lb_conn *c, const uint8_t *data, size_t len) {
    /* Fatal errors (bad preface, flooding, a callback failure) end this connection only;
     * protocol errors make nghttp2 queue a GOAWAY and stop wanting to read. */
    if (nghttp2_session_mem_recv(c->h2, data, len) < 0) c->dead = 1;
}

void hapi_lb_h2_fill(hapi_lb_conn *c) {
    while (hapi_lb_buf_size(&c->out) < HAPI_LB_OUT_HIGH_WATER) {
        const uint8_t *data = NULL;
        ssize_t n = nghttp2_session_mem_send(c->h2, &data);
        if (n == 0) return;
        if (n < 0 || !hapi_lb_buf_append(&c->out, data, (size_t)n)) {
            c->dead = 1;
            return;
        }
    }
}

void hapi_lb_h2_timer_fired(hapi_lb_conn *c, int32_t stream_id) {
    hapi_lb_stream *st = stream_get(c, stream_id);
    if (st && st->resp && !st->applied) apply(c, st);
}

int hapi_lb_h2_finished(hapi_lb_conn *c) {
    return hapi_lb_buf_size(&c->out) == 0 && !nghttp2_session_want_read(c->h2) &&
           !nghttp2_session_want_write(c->h2);
}

void hapi_lb_h2_free(hapi_lb_conn *c) {
    nghttp2_session_del(c->h2); /* calls no callbacks: free our streams ourselves */
    c->h2 = NULL;
    while (c->streams) stream_free(c, c->streams);
}
