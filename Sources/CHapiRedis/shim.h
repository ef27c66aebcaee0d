#ifndef HAPI_REDIS_SHIM_H
#define HAPI_REDIS_SHIM_H

/* hiredis 0.14 (Debian 12 libhiredis-dev). Its command calls are variadic (redisCommand) or
   return void *; these typed helpers are what Swift calls. Only the argv forms are used: every
   argument is passed with its length, never through a format string. */
#include <hiredis/hiredis.h>
#include <sys/time.h>

static inline struct timeval hapi_redis_timeval(long milliseconds) {
    struct timeval tv;
    tv.tv_sec = milliseconds / 1000;
    tv.tv_usec = (milliseconds % 1000) * 1000;
    return tv;
}

/* A blocking TCP connection; the connect itself is bounded by `connect_ms`. Returns NULL only
   when out of memory; otherwise check ->err. */
static inline redisContext *hapi_redis_connect(const char *host, int port, long connect_ms) {
    return redisConnectWithTimeout(host, port, hapi_redis_timeval(connect_ms));
}

/* Every later read and write waits at most `command_ms` (SO_RCVTIMEO / SO_SNDTIMEO). */
static inline int hapi_redis_set_timeout(redisContext *c, long command_ms) {
    return redisSetTimeout(c, hapi_redis_timeval(command_ms));
}

static inline int hapi_redis_append_argv(redisContext *c, int argc, const char **argv, const size_t *lengths) {
    return redisAppendCommandArgv(c, argc, argv, lengths);
}

/* redisGetReply's own loop (flush what is appended, then read until a reply is parsed), but
   refusing to buffer more than `limit` unparsed bytes: a misbehaving server cannot make the
   relay hold an endless reply. REDIS_OK with *reply set; REDIS_ERR with c->err set;
   HAPI_REDIS_TOO_LARGE when the limit was passed (the context is then unusable too). */
#define HAPI_REDIS_TOO_LARGE (-2)
static inline int hapi_redis_get_reply_bounded(redisContext *c, redisReply **reply, size_t limit) {
    void *raw = 0;
    *reply = 0;
    if (redisGetReplyFromReader(c, &raw) == REDIS_ERR) return REDIS_ERR;
    if (raw == 0) {
        int done = 0;
        do {
            if (redisBufferWrite(c, &done) == REDIS_ERR) return REDIS_ERR;
        } while (!done);
        do {
            if (c->reader->len - c->reader->pos > limit) return HAPI_REDIS_TOO_LARGE;
            if (redisBufferRead(c) == REDIS_ERR) return REDIS_ERR;
            if (redisGetReplyFromReader(c, &raw) == REDIS_ERR) return REDIS_ERR;
        } while (raw == 0);
    }
    *reply = (redisReply *)raw;
    return REDIS_OK;
}

static inline int hapi_redis_context_fd(const redisContext *c) { return c->fd; }
static inline int hapi_redis_context_error(const redisContext *c) { return c->err; }
static inline const char *hapi_redis_context_errstr(const redisContext *c) { return c->errstr; }

/* RESP encoding of one command into a malloc'd buffer (free with hapi_redis_free_command):
   for a connection hiredis does not own (TLS). Returns the length, or -1. */
static inline long long hapi_redis_format_argv(char **target, int argc, const char **argv, const size_t *lengths) {
    return (long long)redisFormatCommandArgv(target, argc, argv, lengths);
}

static inline void hapi_redis_free_command(char *command) { redisFreeCommand(command); }

/* hiredis's reply parser on bytes read elsewhere. */
static inline redisReader *hapi_redis_reader_create(void) { return redisReaderCreate(); }
static inline void hapi_redis_reader_free(redisReader *r) { redisReaderFree(r); }
static inline int hapi_redis_reader_feed(redisReader *r, const char *bytes, size_t length) {
    return redisReaderFeed(r, bytes, length);
}
/* REDIS_OK with *reply NULL when more bytes are needed; REDIS_ERR on a protocol error. */
static inline int hapi_redis_reader_get_reply(redisReader *r, redisReply **reply) {
    void *raw = 0;
    int rc = redisReaderGetReply(r, &raw);
    *reply = (redisReply *)raw;
    return rc;
}
static inline const char *hapi_redis_reader_errstr(const redisReader *r) { return r->errstr; }
/* Bytes fed but not yet parsed (bounds what a peer can make the reader buffer). */
static inline size_t hapi_redis_reader_buffered(const redisReader *r) { return r->len - r->pos; }

static inline void hapi_redis_free_reply(redisReply *reply) { freeReplyObject(reply); }

#endif
