/*
 * err.h - error codes shared by every component.
 *
 * Functions that can fail return 0 on success or one of the negative codes
 * below. The code says what kind of failure it was; the human detail (which
 * key, which file, which value) is kept in a thread-local buffer set with
 * tfj_err_set() and read with tfj_err_detail(). The detail is owned by the
 * library and stays valid until the next tfj_err_set() on the same thread.
 */
#ifndef TFJ_ERR_H
#define TFJ_ERR_H

#include <stddef.h>

/*
 * One X-macro table: symbol, value, name, message. The value is written out
 * so codes stay stable across releases (they appear in logs and exit paths).
 */
#define TFJ_ERR_TABLE(X)                                                      \
	X(TFJ_OK,          0,   "ok",          "success")                          \
	X(TFJ_ENOMEM,     -1,   "nomem",       "out of memory")                    \
	X(TFJ_EINVAL,     -2,   "inval",       "invalid argument")                 \
	X(TFJ_EPARSE,     -3,   "parse",       "malformed input")                  \
	X(TFJ_ETYPE,      -4,   "type",        "wrong type")                       \
	X(TFJ_ENOTFOUND,  -5,   "notfound",    "not found")                        \
	X(TFJ_ERANGE,     -6,   "range",       "value out of range")               \
	X(TFJ_ETOOBIG,    -7,   "toobig",      "input exceeds its limit")          \
	X(TFJ_EIO,        -8,   "io",          "input/output error")               \
	X(TFJ_EEXIST,     -9,   "exist",       "already exists")                   \
	X(TFJ_ECONFLICT,  -10,  "conflict",    "conflict")                         \
	X(TFJ_ETIMEOUT,   -11,  "timeout",     "timed out")                        \
	X(TFJ_EUNAVAIL,   -12,  "unavail",     "peer or service unavailable")      \
	X(TFJ_EAUTH,      -13,  "auth",        "authentication failed")            \
	X(TFJ_EFORBIDDEN, -14,  "forbidden",   "permission denied")                \
	X(TFJ_EGONE,      -15,  "gone",        "resource version too old")         \
	X(TFJ_ECANCELED,  -16,  "canceled",    "operation canceled")               \
	X(TFJ_ESTATE,     -17,  "state",       "invalid state")                    \
	X(TFJ_EUNSUPP,    -18,  "unsupported", "not supported")                    \
	X(TFJ_EDEVICE,    -19,  "device",      "compute device error")             \
	X(TFJ_ENUMERIC,   -20,  "numeric",     "numeric failure (NaN or Inf)")     \
	X(TFJ_EINTERNAL,  -21,  "internal",    "internal error")

enum tfj_err {
#define TFJ_ERR_ENUM(sym, val, name, msg) sym = (val),
	TFJ_ERR_TABLE(TFJ_ERR_ENUM)
#undef TFJ_ERR_ENUM
};

/* Short stable name of a code ("parse"); "unknown" for codes not in the table. */
const char *tfj_err_name(int code);

/* One-line message for a code ("malformed input"). Never NULL. */
const char *tfj_err_str(int code);

/*
 * Records a detail for the current thread and returns `code`, so callers can
 * write `return tfj_err_set(TFJ_EPARSE, "key %s: not a string", key);`.
 * The detail is truncated to TFJ_ERR_DETAIL_MAX - 1 bytes.
 */
#define TFJ_ERR_DETAIL_MAX 512
int tfj_err_set(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The last detail set on this thread ("" if none). Owned by the library. */
const char *tfj_err_detail(void);

/* Forgets the current thread's detail. */
void tfj_err_clear(void);

#endif
