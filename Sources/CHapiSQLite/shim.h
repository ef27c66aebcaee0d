#ifndef HAPI_SQLITE_SHIM_H
#define HAPI_SQLITE_SHIM_H

#include <sqlite3.h>

/* SQLITE_TRANSIENT is a macro casting -1 to a destructor pointer; it does not import. */
static inline sqlite3_destructor_type hapi_sqlite_transient(void) { return SQLITE_TRANSIENT; }

#endif
