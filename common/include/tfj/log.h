/*
 * log.h - leveled, structured logging.
 *
 * Every line is either `ts=... level=info comp=operator msg="..." k=v ...`
 * (the default) or one JSON object per line. Lines are written to stderr with
 * a single write(2) so lines from different threads never interleave.
 *
 * Secrets never reach the log: values whose key looks secret (token,
 * password, secret, authorization, ...) are replaced by "[REDACTED]", and
 * tfj_log_redact() scrubs credentials out of free text such as HTTP headers
 * before a caller logs it.
 */
#ifndef TFJ_LOG_H
#define TFJ_LOG_H

#include <stddef.h>

enum tfj_log_level {
	TFJ_LOG_DEBUG = 0,
	TFJ_LOG_INFO = 1,
	TFJ_LOG_WARN = 2,
	TFJ_LOG_ERROR = 3,
	TFJ_LOG_OFF = 4
};

enum tfj_log_format { TFJ_LOG_FMT_KV = 0, TFJ_LOG_FMT_JSON = 1 };

/* Maximum length of one emitted line; longer lines are truncated with "...". */
#define TFJ_LOG_LINE_MAX 4096

void tfj_log_set_level(enum tfj_log_level level);
enum tfj_log_level tfj_log_get_level(void);
void tfj_log_set_format(enum tfj_log_format fmt);
/* `component` must outlive all logging (normally a string literal). */
void tfj_log_set_component(const char *component);

/* Parses "debug|info|warn|error|off" into *out. */
int tfj_log_parse_level(enum tfj_log_level *out, const char *s);
/* Parses "kv|text|json" into *out. */
int tfj_log_parse_format(enum tfj_log_format *out, const char *s);

/*
 * Writes one line: `msg` plus key/value string pairs terminated by a NULL
 * key. A NULL value is written as an empty string. Values under a secret
 * key are redacted.
 */
void tfj_log_kv(enum tfj_log_level level, const char *msg, ...);

#define tfj_log_debug(msg, ...) tfj_log_kv(TFJ_LOG_DEBUG, msg, ##__VA_ARGS__, (const char *)0)
#define tfj_log_info(msg, ...)  tfj_log_kv(TFJ_LOG_INFO, msg, ##__VA_ARGS__, (const char *)0)
#define tfj_log_warn(msg, ...)  tfj_log_kv(TFJ_LOG_WARN, msg, ##__VA_ARGS__, (const char *)0)
#define tfj_log_error(msg, ...) tfj_log_kv(TFJ_LOG_ERROR, msg, ##__VA_ARGS__, (const char *)0)

/* 1 if a value stored under `key` must never be logged. */
int tfj_log_key_is_secret(const char *key);

/*
 * Copies `in` into `out` (size `outlen`, always NUL-terminated) with
 * credentials replaced by "[REDACTED]": the rest of an Authorization or
 * Proxy-Authorization header line, the word after "Bearer ", and values of
 * `token=`, `password=` style pairs. Returns the length written.
 */
size_t tfj_log_redact(char *out, size_t outlen, const char *in);

/*
 * Formats into the line sink for the rare free-text message; the result goes
 * through tfj_log_redact() before it is written.
 */
void tfj_log_fmt(enum tfj_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
