/* HTTP/1.1: one request at a time per connection (keep-alive, no pipelined overlap).
 * Request bodies by Content-Length or chunked; responses by Content-Length, or chunked for
 * ENDLESS_BODY. The body is copied into the output queue only as it drains. */
#include "lb_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *reason_phrase(int status) {
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 410: return "Gone";
    case 413: return "Payload Too Large";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    default: return "Status";
    }
}

static int name_is(const hapi_lb_header *h, const char *name) {
    return h->name_len == strlen(name) && strncasecmp(h->name, name, h->name_len) == 0;
}

/* Whether a comma-separated header value lists token (case-insensitive). */
static int has_token(const char *v, size_t len, const char *token) {
    size_t tlen = strlen(token);
    for (size_t i = 0; i < len;) {
        while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ',')) i++;
        size_t start = i;
        while (i < len && v[i] != ',') i++;
        size_t end = i;
        while (end > start && (v[end - 1] == ' ' || v[end - 1] == '\t')) end--;
        if (end - start == tlen && strncasecmp(v + start, token, tlen) == 0) return 1;
    }
    return 0;
}

/* Decodes a chunked body in p[0, len). Returns 1 when complete (body length in *body_len, bytes
 * used in *consumed, data copied to out when given), 0 when more input is needed, -1 if malformed. */
static int dechunk(const uint8_t *p, size_t len, uint8_t *out, size_t *body_len, size_t *consumed) {
    size_t pos = 0, total = 0;
    for (;;) {
        const uint8_t *eol = memmem(p + pos, len - pos, "\r\n", 2);
        if (!eol) return len - pos > 1024 ? -1 : 0;
        size_t line_end = (size_t)(eol - p), size = 0, i = pos;
        for (; i < line_end && isxdigit(p[i]); i++) {
            size = size * 16 + (size_t)(isdigit(p[i]) ? p[i] - '0' : (tolower(p[i]) - 'a' + 10));
            if (size > HAPI_LB_MAX_BODY) return -1;
        }
        if (i == pos || (i < line_end && p[i] != ';' && p[i] != ' ' && p[i] != '\t')) return -1;
        pos = line_end + 2; /* chunk extensions are ignored */
        if (size == 0) {    /* last chunk: skip trailer fields up to the empty line */
            for (;;) {
                eol = memmem(p + pos, len - pos, "\r\n", 2);
                if (!eol) return len - pos > HAPI_LB_MAX_HEADER_BYTES ? -1 : 0;
                size_t line_len = (size_t)(eol - (p + pos));
                pos += line_len + 2;
                if (line_len == 0) {
                    *body_len = total;
                    *consumed = pos;
                    return 1;
                }
            }
        }
        if (len - pos < size + 2) return 0;
        if (p[pos + size] != '\r' || p[pos + size + 1] != '\n') return -1;
        if (out) memcpy(out + total, p + pos, size);
        total += size;
        if (total > HAPI_LB_MAX_BODY) return -1;
        pos += size + 2;
    }
}

/* Queues the status line and headers (or performs the non-answer action). */
static void apply(hapi_lb_conn *c) {
    hapi_lb_response *r = c->h1_resp;
    c->h1_applied = 1;
    switch (r->action) {
    case HAPI_LB_RESET_STREAM: /* no streams in HTTP/1.1: closing is the nearest equivalent */
    case HAPI_LB_GOAWAY:
    case HAPI_LB_DROP_CONNECTION: c->dead = 1; return;
    case HAPI_LB_NEVER_RESPOND: return;
    default: break;
    }
    int endless = r->action == HAPI_LB_ENDLESS_BODY && !c->h1_head;
    hapi_lb_buf *o = &c->out;
    int ok = hapi_lb_buf_appendf(o, "HTTP/1.1 %d %s\r\n", r->status, reason_phrase(r->status));
    for (size_t i = 0; i < r->headers.count; i++) {
        const hapi_lb_header *h = &r->headers.items[i];
        /* Framing is ours; header injection (CR/LF in a field) is refused. */
        if (name_is(h, "content-length") || name_is(h, "transfer-encoding") ||
            name_is(h, "connection") || h->name[0] == ':' ||
            strpbrk(h->name, "\r\n") || memchr(h->value, '\r', h->value_len) ||
            memchr(h->value, '\n', h->value_len))
            continue;
        ok = ok && hapi_lb_buf_append(o, h->name, h->name_len) && hapi_lb_buf_append(o, ": ", 2) &&
             hapi_lb_buf_append(o, h->value, h->value_len) && hapi_lb_buf_append(o, "\r\n", 2);
    }
    if (endless) ok = ok && hapi_lb_buf_appendf(o, "transfer-encoding: chunked\r\n");
    else ok = ok && hapi_lb_buf_appendf(o, "content-length: %zu\r\n", r->body_len);
    if (!c->h1_keepalive) ok = ok && hapi_lb_buf_appendf(o, "connection: close\r\n");
    ok = ok && hapi_lb_buf_append(o, "\r\n", 2);
    if (!ok) c->dead = 1;
    c->h1_sent = 0;
    c->h1_phase = 0;
    c->h1_limit = c->h1_head ? 0 : r->body_len;
    if (r->action == HAPI_LB_PARTIAL_THEN_DROP && r->partial_bytes < c->h1_limit)
        c->h1_limit = r->partial_bytes;
}

/* Parses one request from c->in and dispatches it. Returns 1 if one was dispatched. */
static int try_request(hapi_lb_conn *c) {
    /* Tolerate empty lines before a request line (RFC 9112, section 2.2). */
    while (hapi_lb_buf_size(&c->in) >= 2 && memcmp(hapi_lb_buf_bytes(&c->in), "\r\n", 2) == 0)
        hapi_lb_buf_consume(&c->in, 2);
    char *buf = (char *)hapi_lb_buf_bytes(&c->in);
    size_t len = hapi_lb_buf_size(&c->in);
    if (len == 0) return 0;
    char *end = memmem(buf, len, "\r\n\r\n", 4);
    if (!end || (size_t)(end - buf) + 4 > HAPI_LB_MAX_HEADER_BYTES) {
        if (end || len > HAPI_LB_MAX_HEADER_BYTES) c->dead = 1;
        return 0;
    }
    size_t head_len = (size_t)(end - buf) + 4;

    /* Request line: METHOD SP TARGET SP HTTP/1.x */
    char *eol = memmem(buf, head_len, "\r\n", 2);
    char *sp1 = memchr(buf, ' ', (size_t)(eol - buf));
    char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
    if (!sp2 || sp1 == buf || sp2 == sp1 + 1 || eol - sp2 - 1 != 8 ||
        (memcmp(sp2 + 1, "HTTP/1.1", 8) != 0 && memcmp(sp2 + 1, "HTTP/1.0", 8) != 0)) {
        c->dead = 1; /* not HTTP: nothing sensible to answer */
        return 0;
    }
    int http11 = sp2[8] == '1';

    /* Header lines; slots 0-2 are kept for the synthesized pseudo-headers. */
    size_t lines = 0;
    for (char *p = eol + 2; p < end + 2; p = (char *)memmem(p, (size_t)(end + 2 - p), "\r\n", 2) + 2)
        lines++;
    if (lines > HAPI_LB_MAX_HEADERS) {
        c->dead = 1;
        return 0;
    }
    hapi_lb_header *hdrs = malloc((lines + 3) * sizeof *hdrs);
    if (!hdrs) {
        c->dead = 1;
        return 0;
    }
    size_t n = 3, content_length = 0;
    int chunked = 0, has_length = 0, conn_close = 0, conn_keep = 0, expect = 0, bad = 0;
    const hapi_lb_header *host = NULL;
    for (char *line = eol + 2; line < end + 2 && !bad;) {
        char *line_end = memmem(line, (size_t)(end + 2 - line), "\r\n", 2);
        char *colon = memchr(line, ':', (size_t)(line_end - line));
        if (!colon || colon == line) {
            bad = 1;
            break;
        }
        for (char *q = line; q < colon; q++) {
            if (*q == ' ' || *q == '\t') bad = 1; /* whitespace before ':' is forbidden */
            *q = (char)tolower((unsigned char)*q);
        }
        char *v = colon + 1, *v_end = line_end;
        while (v < v_end && (*v == ' ' || *v == '\t')) v++;
        while (v_end > v && (v_end[-1] == ' ' || v_end[-1] == '\t')) v_end--;
        hapi_lb_header *h = &hdrs[n++];
        *h = (hapi_lb_header){line, (size_t)(colon - line), v, (size_t)(v_end - v)};
        if (name_is(h, "content-length")) {
            size_t value = 0;
            if (h->value_len == 0) bad = 1;
            for (size_t i = 0; i < h->value_len && !bad; i++) {
                if (!isdigit((unsigned char)v[i]) || value > HAPI_LB_MAX_BODY) bad = 1;
                value = value * 10 + (size_t)(v[i] - '0');
            }
            if ((has_length && value != content_length) || value > HAPI_LB_MAX_BODY) bad = 1;
            content_length = value;
            has_length = 1;
        } else if (name_is(h, "transfer-encoding")) {
            if (!has_token(v, h->value_len, "chunked")) bad = 1; /* no other coding is supported */
            chunked = 1;
        } else if (name_is(h, "connection")) {
            conn_close |= has_token(v, h->value_len, "close");
            conn_keep |= has_token(v, h->value_len, "keep-alive");
        } else if (name_is(h, "expect")) {
            expect = has_token(v, h->value_len, "100-continue");
        } else if (name_is(h, "host") && !host) {
            host = h;
        }
        line = line_end + 2;
    }
    if (bad || (chunked && has_length)) {
        free(hdrs);
        c->dead = 1;
        return 0;
    }

    /* The body: wait until it is all here. */
    const uint8_t *body = (const uint8_t *)buf + head_len;
    uint8_t *decoded = NULL;
    size_t body_len = content_length, consumed = content_length;
    if (chunked) {
        int rc = dechunk(body, len - head_len, NULL, &body_len, &consumed);
        if (rc == 1 && body_len > 0) {
            decoded = malloc(body_len);
            if (decoded) dechunk(body, len - head_len, decoded, &body_len, &consumed);
            else rc = -1;
        }
        if (rc < 0) c->dead = 1;
        if (rc <= 0) goto incomplete;
        body = decoded;
    } else if (len - head_len < content_length) {
        goto incomplete;
    }

    /* Pseudo-headers first: :method, :path, then :authority if there is a Host. */
    size_t first = host ? 0 : 1;
    hdrs[first] = (hapi_lb_header){":method", 7, buf, (size_t)(sp1 - buf)};
    hdrs[first + 1] = (hapi_lb_header){":path", 5, sp1 + 1, (size_t)(sp2 - sp1 - 1)};
    if (host) hdrs[2] = (hapi_lb_header){":authority", 10, host->value, host->value_len};
    hapi_lb_request req = {
        .connection_id = c->id,
        .stream_id = 0,
        .http_version = 1,
        .headers = hdrs + first,
        .header_count = n - first,
        .body = body_len ? body : NULL,
        .body_len = body_len,
    };
    c->h1_busy = 1;
    c->h1_applied = 0;
    c->h1_continue_sent = 0;
    c->h1_keepalive = http11 ? !conn_close : conn_keep;
    c->h1_head = sp1 - buf == 4 && memcmp(buf, "HEAD", 4) == 0;
    c->h1_resp = hapi_lb_call_handler(c, &req);
    free(hdrs);
    free(decoded);
    hapi_lb_buf_consume(&c->in, head_len + consumed); /* only now: req pointed into c->in */
    if (!c->h1_resp) {
        c->dead = 1;
        return 0;
    }
    if (c->h1_resp->delay_ms > 0 && hapi_lb_add_timer(c, 0, c->h1_resp->delay_ms)) return 1;
    apply(c);
    return 1;

incomplete:
    /* curl waits up to a second for this before sending a large body. */
    if (!c->dead && expect && !c->h1_continue_sent) {
        c->h1_continue_sent = 1;
        if (!hapi_lb_buf_appendf(&c->out, "HTTP/1.1 100 Continue\r\n\r\n")) c->dead = 1;
    }
    free(hdrs);
    free(decoded);
    return 0;
}

void hapi_lb_h1_process(hapi_lb_conn *c) {
    while (!c->dead && !c->h1_busy && try_request(c)) {
    }
}

void hapi_lb_h1_feed(hapi_lb_conn *c, const uint8_t *data, size_t len) {
    if (hapi_lb_buf_size(&c->in) + len > HAPI_LB_MAX_HEADER_BYTES + 2 * (size_t)HAPI_LB_MAX_BODY ||
        !hapi_lb_buf_append(&c->in, data, len)) {
        c->dead = 1;
        return;
    }
    hapi_lb_h1_process(c);
}

void hapi_lb_h1_fill(hapi_lb_conn *c) {
    while (!c->dead && c->h1_busy && c->h1_applied &&
           hapi_lb_buf_size(&c->out) < HAPI_LB_OUT_HIGH_WATER) {
        hapi_lb_response *r = c->h1_resp;
        if (r->action == HAPI_LB_NEVER_RESPOND) return;
        if (r->action == HAPI_LB_ENDLESS_BODY && !c->h1_head) {
            uint8_t chunk[16384];
            hapi_lb_response_fill_endless(r, chunk, sizeof chunk, &c->h1_phase);
            if (!hapi_lb_buf_appendf(&c->out, "%zx\r\n", sizeof chunk) ||
                !hapi_lb_buf_append(&c->out, chunk, sizeof chunk) ||
                !hapi_lb_buf_append(&c->out, "\r\n", 2))
                c->dead = 1;
            continue;
        }
        if (c->h1_sent < c->h1_limit) {
            size_t n = c->h1_limit - c->h1_sent;
            if (n > HAPI_LB_OUT_HIGH_WATER) n = HAPI_LB_OUT_HIGH_WATER;
            if (!hapi_lb_buf_append(&c->out, r->body + c->h1_sent, n)) c->dead = 1;
            c->h1_sent += n;
            continue;
        }
        /* The whole response is queued. */
        if (r->action == HAPI_LB_PARTIAL_THEN_DROP) {
            if (!c->close_stage) c->close_stage = 1;
            return;
        }
        hapi_lb_response_free(r);
        c->h1_resp = NULL;
        c->h1_busy = 0;
        if (!c->h1_keepalive) {
            if (!c->close_stage) c->close_stage = 1;
            return;
        }
        hapi_lb_h1_process(c); /* a request that arrived meanwhile */
    }
}

void hapi_lb_h1_timer_fired(hapi_lb_conn *c) {
    if (c->h1_resp && !c->h1_applied) apply(c);
}

void hapi_lb_h1_free(hapi_lb_conn *c) {
    hapi_lb_response_free(c->h1_resp);
    c->h1_resp = NULL;
}
