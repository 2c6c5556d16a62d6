/*
 * buf.h - growable byte buffers with a hard maximum.
 *
 * Every buffer is created with a maximum size. Appending past it fails with
 * TFJ_ETOOBIG and leaves the contents as they were: input that is too large
 * is an error, never a reason to keep reallocating. The contents are always
 * NUL-terminated (the terminator does not count towards len or max).
 *
 * Ownership: the buffer owns `ptr`; tfj_buf_detach() hands it to the caller.
 */
#ifndef TFJ_BUF_H
#define TFJ_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct tfj_buf {
	char *ptr;   /* NULL until the first append; then NUL-terminated */
	size_t len;  /* bytes in use */
	size_t cap;  /* bytes allocated, excluding the terminator */
	size_t max;  /* hard limit on len */
};

#define TFJ_BUF_INIT(maxbytes) { NULL, 0, 0, (maxbytes) }

void tfj_buf_init(struct tfj_buf *b, size_t max);
int tfj_buf_append(struct tfj_buf *b, const void *data, size_t n);
int tfj_buf_puts(struct tfj_buf *b, const char *s);
int tfj_buf_putc(struct tfj_buf *b, char c);
int tfj_buf_printf(struct tfj_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int tfj_buf_vprintf(struct tfj_buf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* Ensures room for `extra` more bytes without changing len. */
int tfj_buf_reserve(struct tfj_buf *b, size_t extra);
/* Drops the first n bytes (n <= len), keeping the rest. */
void tfj_buf_consume(struct tfj_buf *b, size_t n);
void tfj_buf_clear(struct tfj_buf *b);
/* Returns the contents ("" if empty) and leaves the buffer empty; caller frees. */
char *tfj_buf_detach(struct tfj_buf *b);
/* Frees the contents; accepts NULL. */
void tfj_buf_free(struct tfj_buf *b);
/* The contents as a C string, "" when empty. Owned by the buffer. */
const char *tfj_buf_cstr(const struct tfj_buf *b);

#endif
