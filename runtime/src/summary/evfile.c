/*
 * evfile.c - TFRecord framing and an append-only record file (evfile.h).
 */
#include "summary/evfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tfj/err.h>

/* The Castagnoli polynomial, bit-reversed (CRCs here are LSB first). */
#define CRC32C_POLY 0x82f63b78u
#define CRC_MASK_DELTA 0xa282ead8u

struct tfj_evfile {
	int fd;
	uint64_t records;
	uint8_t buf[TFJ_EVFILE_HEADER + TFJ_EVFILE_MAX_DATA + TFJ_EVFILE_FOOTER];
};

/*
 * Bit at a time: records are a few hundred bytes, written every few
 * seconds, so a table would buy nothing worth its code.
 */
uint32_t tfj_evfile_crc32c(uint32_t crc, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i;
	int k;

	crc = ~crc;
	for (i = 0; i < n; i++) {
		crc ^= b[i];
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (CRC32C_POLY & (0u - (crc & 1u)));
	}
	return ~crc;
}

uint32_t tfj_evfile_mask(uint32_t crc)
{
	return ((crc >> 15) | (crc << 17)) + CRC_MASK_DELTA;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	int i;

	for (i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

int tfj_evfile_frame(uint8_t *out, size_t cap, size_t *len, const void *data, size_t n)
{
	size_t total;

	if (n > TFJ_EVFILE_MAX_DATA)
		return tfj_err_set(TFJ_ETOOBIG, "event record of %zu bytes (max %u)", n,
				   TFJ_EVFILE_MAX_DATA);
	total = TFJ_EVFILE_HEADER + n + TFJ_EVFILE_FOOTER;
	if (total > cap)
		return tfj_err_set(TFJ_ETOOBIG, "event record: %zu bytes do not fit in %zu",
				   total, cap);
	put_le64(out, (uint64_t)n);
	put_le32(out + 8, tfj_evfile_mask(tfj_evfile_crc32c(0, out, 8)));
	if (n)
		memcpy(out + TFJ_EVFILE_HEADER, data, n);
	put_le32(out + TFJ_EVFILE_HEADER + n, tfj_evfile_mask(tfj_evfile_crc32c(0, data, n)));
	*len = total;
	return 0;
}

int tfj_evfile_open(struct tfj_evfile **out, const char *path)
{
	struct tfj_evfile *f;

	*out = NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return tfj_err_set(TFJ_ENOMEM, "event file: out of memory");
	f->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
	if (f->fd < 0) {
		int e = errno;

		free(f);
		return tfj_err_set(e == EEXIST ? TFJ_EEXIST : TFJ_EIO, "cannot create %s: %s",
				   path, strerror(e));
	}
	*out = f;
	return 0;
}

int tfj_evfile_append(struct tfj_evfile *f, const void *data, size_t n)
{
	size_t len, off = 0;
	int rc;

	rc = tfj_evfile_frame(f->buf, sizeof(f->buf), &len, data, n);
	if (rc)
		return rc;
	/* One write(2) per record in the usual case; a short one is continued. */
	while (off < len) {
		ssize_t w = write(f->fd, f->buf + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return tfj_err_set(TFJ_EIO, "event file write: %s",
					   w < 0 ? strerror(errno) : "no progress");
		off += (size_t)w;
	}
	f->records++;
	return 0;
}

uint64_t tfj_evfile_records(const struct tfj_evfile *f)
{
	return f->records;
}

void tfj_evfile_close(struct tfj_evfile *f)
{
	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	free(f);
}
