/*
 * log.c - structured logging with redaction.
 *
 * A line is assembled in a fixed stack buffer and written with one write(2),
 * so concurrent threads never interleave partial lines and logging never
 * allocates.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "tfj/err.h"
#include "tfj/log.h"

static atomic_int log_level = TFJ_LOG_INFO;
static atomic_int log_format = TFJ_LOG_FMT_KV;
static const char *_Atomic log_component = "tfjob";

static const char *const level_names[] = { "debug", "info", "warn", "error", "off" };

#define REDACTED "[REDACTED]"

void tfj_log_set_level(enum tfj_log_level level) { atomic_store(&log_level, (int)level); }
enum tfj_log_level tfj_log_get_level(void) { return (enum tfj_log_level)atomic_load(&log_level); }
void tfj_log_set_format(enum tfj_log_format fmt) { atomic_store(&log_format, (int)fmt); }
void tfj_log_set_component(const char *c) { atomic_store(&log_component, c ? c : "tfjob"); }

int tfj_log_parse_level(enum tfj_log_level *out, const char *s)
{
	for (int i = 0; i <= TFJ_LOG_OFF; i++) {
		if (s && strcasecmp(s, level_names[i]) == 0) {
			*out = (enum tfj_log_level)i;
			return 0;
		}
	}
	if (s && strcasecmp(s, "warning") == 0) {
		*out = TFJ_LOG_WARN;
		return 0;
	}
	return tfj_err_set(TFJ_EINVAL, "unknown log level '%s' (debug, info, warn, error, off)",
			   s ? s : "");
}

int tfj_log_parse_format(enum tfj_log_format *out, const char *s)
{
	if (s && (strcasecmp(s, "kv") == 0 || strcasecmp(s, "text") == 0)) {
		*out = TFJ_LOG_FMT_KV;
		return 0;
	}
	if (s && strcasecmp(s, "json") == 0) {
		*out = TFJ_LOG_FMT_JSON;
		return 0;
	}
	return tfj_err_set(TFJ_EINVAL, "unknown log format '%s' (kv, json)", s ? s : "");
}

int tfj_log_key_is_secret(const char *key)
{
	static const char *const words[] = { "token", "password", "passwd", "secret",
					     "authorization", "credential", "apikey",
					     "api_key", "cookie", "private" };
	char low[64];
	size_t n, i;

	if (!key)
		return 0;
	n = strlen(key);
	if (n >= sizeof(low))
		n = sizeof(low) - 1;
	for (i = 0; i < n; i++)
		low[i] = (char)tolower((unsigned char)key[i]);
	low[n] = '\0';
	/* A path to a secret is not the secret; operators need to see it. */
	if ((n >= 4 && strcmp(low + n - 4, "file") == 0) ||
	    (n >= 4 && strcmp(low + n - 4, "path") == 0))
		return 0;
	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strstr(low, words[i]))
			return 1;
	return 0;
}

/* --- a tiny bounded writer ------------------------------------------------ */

struct line {
	char *p;
	size_t len, cap; /* cap excludes room reserved for "...\n" */
	int full;
};

static void put(struct line *l, const char *s, size_t n)
{
	if (l->full)
		return;
	if (n > l->cap - l->len) {
		n = l->cap - l->len;
		l->full = 1;
	}
	memcpy(l->p + l->len, s, n);
	l->len += n;
}

static void puts_(struct line *l, const char *s) { put(l, s, strlen(s)); }

static void putc_(struct line *l, char c) { put(l, &c, 1); }

static void put_escaped(struct line *l, const char *s, int json)
{
	char hex[8];

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '"': puts_(l, "\\\""); break;
		case '\\': puts_(l, "\\\\"); break;
		case '\n': puts_(l, "\\n"); break;
		case '\r': puts_(l, "\\r"); break;
		case '\t': puts_(l, "\\t"); break;
		default:
			if (c < 0x20 || c == 0x7f) {
				(void)snprintf(hex, sizeof(hex), json ? "\\u%04x" : "\\x%02x", c);
				puts_(l, hex);
			} else {
				putc_(l, (char)c);
			}
		}
	}
}

static int needs_quotes(const char *s)
{
	if (!*s)
		return 1;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f)
			return 1;
	}
	return 0;
}

static void put_kv(struct line *l, int json, const char *k, const char *v, int first)
{
	if (json) {
		if (!first)
			putc_(l, ',');
		putc_(l, '"');
		put_escaped(l, k, 1);
		puts_(l, "\":\"");
		put_escaped(l, v, 1);
		putc_(l, '"');
		return;
	}
	if (!first)
		putc_(l, ' ');
	puts_(l, k);
	putc_(l, '=');
	if (needs_quotes(v)) {
		putc_(l, '"');
		put_escaped(l, v, 0);
		putc_(l, '"');
	} else {
		puts_(l, v);
	}
}

static void emit(enum tfj_log_level level, const char *msg, va_list ap)
{
	char storage[TFJ_LOG_LINE_MAX];
	struct line l = { storage, 0, sizeof(storage) - 5, 0 };
	int json = atomic_load(&log_format) == TFJ_LOG_FMT_JSON;
	char ts[64], frac[24];
	struct timespec now;
	struct tm tm;
	const char *k, *v;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	(void)snprintf(frac, sizeof(frac), ".%03ldZ", now.tv_nsec / 1000000L);
	strncat(ts, frac, sizeof(ts) - strlen(ts) - 1);

	if (json)
		putc_(&l, '{');
	put_kv(&l, json, "ts", ts, 1);
	put_kv(&l, json, "level", level_names[level], 0);
	put_kv(&l, json, "comp", atomic_load(&log_component), 0);
	put_kv(&l, json, "msg", msg ? msg : "", 0);
	while ((k = va_arg(ap, const char *)) != NULL) {
		v = va_arg(ap, const char *);
		put_kv(&l, json, k, tfj_log_key_is_secret(k) ? REDACTED : (v ? v : ""), 0);
	}
	if (json)
		putc_(&l, '}');
	if (l.full) {
		memcpy(l.p + l.len, "...", 3);
		l.len += 3;
	}
	l.p[l.len++] = '\n';
	/* One write per line; a short write to stderr is not worth retrying. */
	if (write(STDERR_FILENO, l.p, l.len) < 0)
		return;
}

void tfj_log_kv(enum tfj_log_level level, const char *msg, ...)
{
	va_list ap;

	if ((int)level < atomic_load(&log_level) || level >= TFJ_LOG_OFF)
		return;
	va_start(ap, msg);
	emit(level, msg, ap);
	va_end(ap);
}

static void emit_msg(enum tfj_log_level level, const char *msg, ...)
{
	va_list ap;

	va_start(ap, msg);
	emit(level, msg, ap);
	va_end(ap);
}

void tfj_log_fmt(enum tfj_log_level level, const char *fmt, ...)
{
	char raw[TFJ_LOG_LINE_MAX], clean[TFJ_LOG_LINE_MAX];
	va_list ap;

	if ((int)level < atomic_load(&log_level) || level >= TFJ_LOG_OFF)
		return;
	va_start(ap, fmt);
	(void)vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	tfj_log_redact(clean, sizeof(clean), raw);
	emit_msg(level, clean, (const char *)NULL);
}

/* --- redaction of free text ---------------------------------------------- */

static int starts_with_ci(const char *s, const char *prefix)
{
	return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

static int is_ident(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.';
}

size_t tfj_log_redact(char *out, size_t outlen, const char *in)
{
	struct line l;
	const char *s = in;

	if (!outlen)
		return 0;
	l.p = out;
	l.len = 0;
	l.cap = outlen - 1;
	l.full = 0;
	while (*s) {
		if (starts_with_ci(s, "authorization:") || starts_with_ci(s, "proxy-authorization:")) {
			/* Keep the header name, drop everything up to the end of line. */
			const char *colon = strchr(s, ':');
			put(&l, s, (size_t)(colon - s) + 1);
			putc_(&l, ' ');
			puts_(&l, REDACTED);
			s = colon + 1;
			while (*s && *s != '\r' && *s != '\n')
				s++;
			continue;
		}
		if (starts_with_ci(s, "bearer ") && (s == in || !is_ident(s[-1]))) {
			put(&l, s, 7);
			s += 7;
			while (*s == ' ')
				s++;
			puts_(&l, REDACTED);
			while (*s && !isspace((unsigned char)*s) && *s != '"' && *s != ',')
				s++;
			continue;
		}
		if (is_ident(*s) && (s == in || !is_ident(s[-1]))) {
			/* An identifier: if it names a secret and a value follows, hide it. */
			const char *e = s, *v;
			char key[64];
			size_t kn;
			int quoted = 0;

			while (is_ident(*e))
				e++;
			kn = (size_t)(e - s);
			v = e;
			if (*v == '"')
				v++;
			while (*v == ' ')
				v++;
			if ((*v == '=' || *v == ':') && kn < sizeof(key)) {
				memcpy(key, s, kn);
				key[kn] = '\0';
				if (tfj_log_key_is_secret(key)) {
					v++;
					while (*v == ' ')
						v++;
					if (*v == '"') {
						quoted = 1;
						v++;
					}
					put(&l, s, (size_t)(v - s));
					puts_(&l, REDACTED);
					while (*v && (quoted ? *v != '"'
						     : !isspace((unsigned char)*v) && *v != '&' &&
							       *v != ',' && *v != ';' && *v != '"'))
						v++;
					s = v;
					continue;
				}
			}
			put(&l, s, kn);
			s = e;
			continue;
		}
		putc_(&l, *s++);
	}
	out[l.len] = '\0';
	return l.len;
}
