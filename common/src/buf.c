/*
 * buf.c - bounded growable buffers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfj/buf.h"
#include "tfj/err.h"

void tfj_buf_init(struct tfj_buf *b, size_t max)
{
	b->ptr = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

int tfj_buf_reserve(struct tfj_buf *b, size_t extra)
{
	size_t need, ncap;
	char *p;

	if (extra > b->max || b->len > b->max - extra)
		return tfj_err_set(TFJ_ETOOBIG, "buffer limit of %zu bytes exceeded", b->max);
	need = b->len + extra;
	if (b->ptr && need <= b->cap)
		return 0;
	/* Grow geometrically, but never past the maximum. */
	ncap = b->cap ? b->cap : 64;
	while (ncap < need)
		ncap = (ncap > b->max / 2) ? b->max : ncap * 2;
	if (ncap > b->max)
		ncap = b->max;
	p = realloc(b->ptr, ncap + 1);
	if (!p)
		return tfj_err_set(TFJ_ENOMEM, "buffer of %zu bytes", ncap + 1);
	b->ptr = p;
	b->cap = ncap;
	b->ptr[b->len] = '\0';
	return 0;
}

int tfj_buf_append(struct tfj_buf *b, const void *data, size_t n)
{
	int rc = tfj_buf_reserve(b, n);

	if (rc)
		return rc;
	if (n)
		memcpy(b->ptr + b->len, data, n);
	b->len += n;
	b->ptr[b->len] = '\0';
	return 0;
}

int tfj_buf_puts(struct tfj_buf *b, const char *s)
{
	return tfj_buf_append(b, s, strlen(s));
}

int tfj_buf_putc(struct tfj_buf *b, char c)
{
	return tfj_buf_append(b, &c, 1);
}

int tfj_buf_vprintf(struct tfj_buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n, rc;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return tfj_err_set(TFJ_EINVAL, "bad format string");
	rc = tfj_buf_reserve(b, (size_t)n);
	if (rc)
		return rc;
	(void)vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int tfj_buf_printf(struct tfj_buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = tfj_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

void tfj_buf_consume(struct tfj_buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
	} else {
		memmove(b->ptr, b->ptr + n, b->len - n);
		b->len -= n;
	}
	if (b->ptr)
		b->ptr[b->len] = '\0';
}

void tfj_buf_clear(struct tfj_buf *b)
{
	b->len = 0;
	if (b->ptr)
		b->ptr[0] = '\0';
}

char *tfj_buf_detach(struct tfj_buf *b)
{
	char *p = b->ptr;

	if (!p)
		p = calloc(1, 1);
	b->ptr = NULL;
	b->len = 0;
	b->cap = 0;
	return p;
}

void tfj_buf_free(struct tfj_buf *b)
{
	if (!b)
		return;
	free(b->ptr);
	b->ptr = NULL;
	b->len = 0;
	b->cap = 0;
}

const char *tfj_buf_cstr(const struct tfj_buf *b)
{
	return b->ptr ? b->ptr : "";
}
