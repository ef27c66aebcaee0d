#ifndef HAPI_POSTGRES_SHIM_H
#define HAPI_POSTGRES_SHIM_H

#include <libpq-fe.h>

/* libpq prints server NOTICEs ("relation already exists, skipping") to stderr by default;
   a library must not write to its host's stderr. */
static void hapi_pq_ignore_notice(void *arg, const char *message) {
    (void)arg;
    (void)message;
}

static inline void hapi_pq_silence_notices(PGconn *conn) {
    PQsetNoticeProcessor(conn, hapi_pq_ignore_notice, (void *)0);
}

/* The diagnostic field codes are character macros; typed helpers import cleanly. */
static inline int hapi_pq_diag_sqlstate(void) { return PG_DIAG_SQLSTATE; }
static inline int hapi_pq_diag_message(void) { return PG_DIAG_MESSAGE_PRIMARY; }
static inline int hapi_pq_diag_constraint(void) { return PG_DIAG_CONSTRAINT_NAME; }

#endif
