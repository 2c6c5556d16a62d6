/*
 * evfile.c - TFRecord framing and an append-only record file (evfile.h).
 */
#include "summary/evfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <tfj/err.h>

/* The Castagnoli polynomial, bit-reversed (CRCs here are LSB first). */
#define CRC32C_POLY 0x82f63b78u
#define CRC_MASK_DELTA 0xa282ead8u

struct tfj_evfile {
	int fd;
	uint64_t records;
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

/* A record's header: the data's length and that length's masked CRC. */
static void put_head(uint8_t *h, size_t n)
{
	put_le64(h, (uint64_t)n);
	put_le32(h + 8, tfj_evfile_mask(tfj_evfile_crc32c(0, h, 8)));
}

static int check_size(size_t n)
{
	if (n > TFJ_EVFILE_MAX_DATA)
		return tfj_err_set(TFJ_ETOOBIG, "event record of %zu bytes (max %u)", n,
				   TFJ_EVFILE_MAX_DATA);
	return 0;
}

int tfj_evfile_frame(uint8_t *out, size_t cap, size_t *len, const void *data, size_t n)
{
	size_t total;
	int rc;

	if ((rc = check_size(n)))
		return rc;
	total = TFJ_EVFILE_HEADER + n + TFJ_EVFILE_FOOTER;
	if (total > cap)
		return tfj_err_set(TFJ_ETOOBIG, "event record: %zu bytes do not fit in %zu",
				   total, cap);
	put_head(out, n);
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
	uint8_t head[TFJ_EVFILE_HEADER], foot[TFJ_EVFILE_FOOTER];
	struct iovec iov[3];
	int rc, i = 0;

	if ((rc = check_size(n)))
		return rc;
	put_head(head, n);
	put_le32(foot, tfj_evfile_mask(tfj_evfile_crc32c(0, data, n)));
	iov[0] = (struct iovec){ head, sizeof(head) };
	iov[1] = (struct iovec){ (void *)data, n };
	iov[2] = (struct iovec){ foot, sizeof(foot) };
	/* Header, data and footer from where they are, in one writev(2) in the
	 * usual case; a short one is continued where it stopped. */
	while (i < 3) {
		ssize_t w = writev(f->fd, iov + i, 3 - i);
		size_t left;

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return tfj_err_set(TFJ_EIO, "event file write: %s",
					   w < 0 ? strerror(errno) : "no progress");
		for (left = (size_t)w; i < 3 && left >= iov[i].iov_len; i++)
			left -= iov[i].iov_len;
		if (i < 3) {
			iov[i].iov_base = (uint8_t *)iov[i].iov_base + left;
			iov[i].iov_len -= left;
		}
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
