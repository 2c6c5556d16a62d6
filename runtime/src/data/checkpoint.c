/*
 * checkpoint.c - atomic checkpoint files with a strict, bounded reader.
 * See checkpoint.h for the format.
 */
#include "data/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <tfj/err.h>
#include <tfj/file.h>

#include "compute/optim.h"

#define MAGIC "TFJCKPT1"
#define MAGIC_LEN 8
#define VERSION 2u
#define HEADER_LEN_V1 (MAGIC_LEN + 4 + 4 + 8 + 4)
#define HEADER_LEN (HEADER_LEN_V1 + 8)
#define VAR_MIN_LEN (4 + 1 + 4 + 8) /* name_len, 1-byte name, rank, state_count */
#define WBUF_LEN (64u << 10)

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_BIG_ENDIAN 1
#else
#define HOST_BIG_ENDIAN 0
#endif

/* --- names ---------------------------------------------------------------- */

static int name_char_ok(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || ch == '.' || ch == '/' || ch == '-';
}

static int var_name_ok(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len >= TFJ_CKPT_NAME_MAX)
		return 0;
	for (i = 0; i < len; i++)
		if (!name_char_ok(s[i]))
			return 0;
	return 1;
}

int tfj_ckpt_prefix_ok(const char *p)
{
	size_t i, len = p ? strlen(p) : 0;

	if (len == 0 || len >= TFJ_CKPT_PREFIX_MAX || p[0] == '.')
		return 0;
	for (i = 0; i < len; i++)
		if (p[i] == '/' || !name_char_ok(p[i]))
			return 0;
	return 1;
}

/* --- writer --------------------------------------------------------------- */

struct writer {
	int fd;
	uLong crc;
	size_t len;
	int rc;
	uint8_t buf[WBUF_LEN];
};

static void w_flush(struct writer *w)
{
	size_t off = 0;

	while (w->rc == 0 && off < w->len) {
		ssize_t n = write(w->fd, w->buf + off, w->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			w->rc = tfj_err_set(TFJ_EIO, "checkpoint: write: %s",
					    n < 0 ? strerror(errno) : "short write");
		else
			off += (size_t)n;
	}
	w->len = 0;
}

static void w_bytes(struct writer *w, const void *p, size_t n)
{
	const uint8_t *src = p;

	while (n && w->rc == 0) {
		size_t k = WBUF_LEN - w->len;

		if (k > n)
			k = n;
		memcpy(w->buf + w->len, src, k);
		/* The checksum covers exactly the bytes written, in order. */
		w->crc = crc32(w->crc, src, (uInt)k);
		w->len += k;
		src += k;
		n -= k;
		if (w->len == WBUF_LEN)
			w_flush(w);
	}
}

static void w_u32(struct writer *w, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };

	w_bytes(w, b, 4);
}

static void w_u64(struct writer *w, uint64_t v)
{
	w_u32(w, (uint32_t)v);
	w_u32(w, (uint32_t)(v >> 32));
}

static void w_floats(struct writer *w, const float *f, size_t n)
{
	size_t i;

	if (!HOST_BIG_ENDIAN) {
		w_bytes(w, f, n * sizeof(float));
		return;
	}
	for (i = 0; i < n; i++) {
		uint32_t u;

		memcpy(&u, &f[i], 4);
		w_u32(w, u);
	}
}

/* Checks one var for saving and returns its size in the file via *bytes. */
static int check_var(const struct tfj_ckpt *ck, size_t idx, uint64_t *bytes)
{
	const struct tfj_ckpt_var *v = &ck->vars[idx];
	size_t nlen = strnlen(v->name, TFJ_CKPT_NAME_MAX), count = 1, i;

	if (!var_name_ok(v->name, nlen))
		return tfj_err_set(TFJ_EINVAL, "checkpoint: var %zu: bad name", idx);
	if (v->rank > TFJ_CKPT_MAX_RANK)
		return tfj_err_set(TFJ_EINVAL, "checkpoint: %s: rank %u", v->name, v->rank);
	for (i = 0; i < v->rank; i++) {
		if (v->shape[i] == 0 || v->shape[i] > TFJ_CKPT_MAX_BYTES / 4 / count)
			return tfj_err_set(TFJ_ERANGE, "checkpoint: %s: bad shape", v->name);
		count *= (size_t)v->shape[i];
	}
	if (count != v->count)
		return tfj_err_set(TFJ_EINVAL, "checkpoint: %s: count %zu does not match the shape",
				   v->name, v->count);
	if (!v->value || (v->state_count && !v->state))
		return tfj_err_set(TFJ_EINVAL, "checkpoint: %s: NULL data", v->name);
	if (v->state_count > TFJ_CKPT_MAX_BYTES / 4)
		return tfj_err_set(TFJ_ERANGE, "checkpoint: %s: state too large", v->name);
	for (i = 0; i < count; i++)
		if (!isfinite(v->value[i]))
			return tfj_err_set(TFJ_ENUMERIC, "checkpoint: %s[%zu] is not finite", v->name, i);
	for (i = 0; i < v->state_count; i++)
		if (!isfinite(v->state[i]))
			return tfj_err_set(TFJ_ENUMERIC, "checkpoint: %s state[%zu] is not finite",
					   v->name, i);
	for (i = 0; i < idx; i++)
		if (strcmp(ck->vars[i].name, v->name) == 0)
			return tfj_err_set(TFJ_EINVAL, "checkpoint: duplicate var %s", v->name);
	*bytes = 4 + nlen + 4 + 8ull * v->rank + 8 + 4ull * count + 4ull * v->state_count;
	return 0;
}

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return tfj_err_set(TFJ_EIO, "checkpoint: open %s: %s", dir, strerror(errno));
	if (fsync(fd) != 0)
		rc = tfj_err_set(TFJ_EIO, "checkpoint: fsync %s: %s", dir, strerror(errno));
	close(fd);
	return rc;
}

/* The file's bytes, header to CRC, through w (w->rc says whether they all went). */
static void write_all(struct writer *w, const struct tfj_ckpt *ck)
{
	uint32_t crc;
	size_t i;

	w->crc = crc32(0L, Z_NULL, 0);
	w_bytes(w, MAGIC, MAGIC_LEN);
	w_u32(w, VERSION);
	w_u32(w, ck->optim_kind);
	w_u64(w, (uint64_t)ck->global_step);
	w_u64(w, (uint64_t)ck->optim_steps);
	w_u32(w, (uint32_t)ck->n_vars);
	for (i = 0; i < ck->n_vars; i++) {
		const struct tfj_ckpt_var *v = &ck->vars[i];
		size_t nlen = strlen(v->name), d;

		w_u32(w, (uint32_t)nlen);
		w_bytes(w, v->name, nlen);
		w_u32(w, v->rank);
		for (d = 0; d < v->rank; d++)
			w_u64(w, v->shape[d]);
		w_u64(w, v->state_count);
		w_floats(w, v->value, v->count);
		if (v->state_count)
			w_floats(w, v->state, v->state_count);
	}
	crc = (uint32_t)w->crc;
	w_u32(w, crc);
	w_flush(w);
}

int tfj_ckpt_save(const char *dir, const char *prefix, const struct tfj_ckpt *ck,
		  char *path_out, size_t path_cap)
{
	struct writer *w = NULL;
	char path[4096], tmp[4096];
	uint64_t total = HEADER_LEN + 4;
	size_t i;
	int rc = 0, fd = -1, tmp_made = 0;

	if (!dir || !ck || (ck->n_vars && !ck->vars))
		return tfj_err_set(TFJ_EINVAL, "checkpoint: NULL argument");
	if (!tfj_ckpt_prefix_ok(prefix))
		return tfj_err_set(TFJ_EINVAL, "checkpoint: bad prefix");
	if (ck->global_step < 0 || ck->optim_steps < 0 || ck->optim_kind > TFJ_OPTIM_ADAM)
		return tfj_err_set(TFJ_EINVAL, "checkpoint: bad step or optimizer kind");
	if (ck->n_vars > TFJ_CKPT_MAX_VARS)
		return tfj_err_set(TFJ_ETOOBIG, "checkpoint: %zu vars (cap %d)", ck->n_vars,
				   TFJ_CKPT_MAX_VARS);
	for (i = 0; i < ck->n_vars; i++) {
		uint64_t b = 0;

		if ((rc = check_var(ck, i, &b)) < 0)
			return rc;
		total += b;
		if (total > TFJ_CKPT_MAX_BYTES)
			return tfj_err_set(TFJ_ETOOBIG, "checkpoint: larger than %llu bytes",
					   (unsigned long long)TFJ_CKPT_MAX_BYTES);
	}
	if (snprintf(path, sizeof(path), "%s/%s-%lld%s", dir, prefix, (long long)ck->global_step,
		     TFJ_CKPT_SUFFIX) >= (int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s-%lld%s.tmp.%ld", dir, prefix,
		     (long long)ck->global_step, TFJ_CKPT_SUFFIX, (long)getpid()) >= (int)sizeof(tmp))
		return tfj_err_set(TFJ_ERANGE, "checkpoint: path too long");
	if (path_out && strlen(path) >= path_cap)
		return tfj_err_set(TFJ_ERANGE, "checkpoint: path buffer too small");
	w = calloc(1, sizeof(*w));
	if (!w)
		return tfj_err_set(TFJ_ENOMEM, "checkpoint: writer");
	/* O_NOFOLLOW: a planted symlink must not redirect the write. */
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd < 0) {
		rc = tfj_err_set(TFJ_EIO, "checkpoint: create %s: %s", tmp, strerror(errno));
		goto out;
	}
	tmp_made = 1;
	w->fd = fd;
	write_all(w, ck);
	if ((rc = w->rc) < 0)
		goto out;
	/* Data on disk before the rename makes it visible. */
	if (fsync(fd) != 0) {
		rc = tfj_err_set(TFJ_EIO, "checkpoint: fsync %s: %s", tmp, strerror(errno));
		goto out;
	}
	if (close(fd) != 0) {
		fd = -1;
		rc = tfj_err_set(TFJ_EIO, "checkpoint: close %s: %s", tmp, strerror(errno));
		goto out;
	}
	fd = -1;
	if (rename(tmp, path) != 0) {
		rc = tfj_err_set(TFJ_EIO, "checkpoint: rename to %s: %s", path, strerror(errno));
		goto out;
	}
	tmp_made = 0;
	rc = fsync_dir(dir);
	if (rc == 0 && path_out)
		snprintf(path_out, path_cap, "%s", path);
out:
	if (fd >= 0)
		close(fd);
	if (tmp_made)
		unlink(tmp);
	free(w);
	return rc;
}

/* --- reader --------------------------------------------------------------- */

struct reader {
	const uint8_t *p;
	size_t left;
};

static int r_bytes(struct reader *r, void *out, size_t n)
{
	if (n > r->left)
		return tfj_err_set(TFJ_EPARSE, "checkpoint: truncated");
	memcpy(out, r->p, n);
	r->p += n;
	r->left -= n;
	return 0;
}

static int r_u32(struct reader *r, uint32_t *v)
{
	uint8_t b[4] = { 0 };
	int rc = r_bytes(r, b, 4);

	if (rc == 0)
		*v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
		     (uint32_t)b[3] << 24;
	return rc;
}

static int r_u64(struct reader *r, uint64_t *v)
{
	uint32_t lo = 0, hi = 0;
	int rc;

	if ((rc = r_u32(r, &lo)) < 0 || (rc = r_u32(r, &hi)) < 0)
		return rc;
	*v = (uint64_t)hi << 32 | lo;
	return 0;
}

/* Reads n finite floats into a fresh array (n already checked against left). */
static int r_floats(struct reader *r, float **out, size_t n, const char *name)
{
	float *f;
	size_t i;

	*out = NULL;
	if (n == 0)
		return 0;
	if (n > r->left / 4)
		return tfj_err_set(TFJ_EPARSE, "checkpoint: %s: truncated data", name);
	f = malloc(n * sizeof(float));
	if (!f)
		return tfj_err_set(TFJ_ENOMEM, "checkpoint: %s: %zu floats", name, n);
	for (i = 0; i < n; i++) {
		uint32_t u = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 |
			     (uint32_t)r->p[2] << 16 | (uint32_t)r->p[3] << 24;

		memcpy(&f[i], &u, 4);
		r->p += 4;
		if (!isfinite(f[i])) {
			free(f);
			return tfj_err_set(TFJ_EPARSE, "checkpoint: %s[%zu] is not finite", name, i);
		}
	}
	r->left -= 4 * n;
	*out = f;
	return 0;
}

static int parse_var(struct reader *r, struct tfj_ckpt *ck, size_t idx)
{
	struct tfj_ckpt_var *v = &ck->vars[idx];
	uint32_t nlen = 0;
	uint64_t st;
	size_t count = 1, i;
	int rc;

	if ((rc = r_u32(r, &nlen)) < 0)
		return rc;
	if (nlen == 0 || nlen >= TFJ_CKPT_NAME_MAX)
		return tfj_err_set(TFJ_EPARSE, "checkpoint: var %zu: name length %u", idx, nlen);
	if ((rc = r_bytes(r, v->name, nlen)) < 0)
		return rc;
	v->name[nlen] = '\0';
	if (!var_name_ok(v->name, nlen))
		return tfj_err_set(TFJ_EPARSE, "checkpoint: var %zu: bad name", idx);
	for (i = 0; i < idx; i++)
		if (strcmp(ck->vars[i].name, v->name) == 0)
			return tfj_err_set(TFJ_EPARSE, "checkpoint: duplicate var %s", v->name);
	if ((rc = r_u32(r, &v->rank)) < 0)
		return rc;
	if (v->rank > TFJ_CKPT_MAX_RANK)
		return tfj_err_set(TFJ_EPARSE, "checkpoint: %s: rank %u", v->name, v->rank);
	for (i = 0; i < v->rank; i++) {
		if ((rc = r_u64(r, &v->shape[i])) < 0)
			return rc;
		/* The data must fit in what is left, which bounds every product. */
		if (v->shape[i] == 0 || v->shape[i] > r->left / 4 / count)
			return tfj_err_set(TFJ_EPARSE, "checkpoint: %s: bad shape", v->name);
		count *= (size_t)v->shape[i];
	}
	v->count = count;
	if ((rc = r_u64(r, &st)) < 0)
		return rc;
	if (st > r->left / 4)
		return tfj_err_set(TFJ_EPARSE, "checkpoint: %s: bad state size", v->name);
	v->state_count = (size_t)st;
	if ((rc = r_floats(r, &v->value, count, v->name)) < 0)
		return rc;
	return r_floats(r, &v->state, v->state_count, v->name);
}

void tfj_ckpt_free(struct tfj_ckpt *ck)
{
	size_t i;

	if (!ck)
		return;
	for (i = 0; ck->vars && i < ck->n_vars; i++) {
		free(ck->vars[i].value);
		free(ck->vars[i].state);
	}
	free(ck->vars);
	memset(ck, 0, sizeof(*ck));
}

int tfj_ckpt_parse(struct tfj_ckpt *out, const uint8_t *buf, size_t len)
{
	struct reader r;
	uint8_t magic[MAGIC_LEN];
	uint32_t version, kind, nvars = 0, crc_file;
	uint64_t step, ostep = 0;
	size_t i;
	int rc;

	if (!out || (!buf && len))
		return tfj_err_set(TFJ_EINVAL, "checkpoint: NULL argument");
	memset(out, 0, sizeof(*out));
	if (len > TFJ_CKPT_MAX_BYTES)
		return tfj_err_set(TFJ_ETOOBIG, "checkpoint: %zu bytes", len);
	if (len < HEADER_LEN_V1 + 4)
		return tfj_err_set(TFJ_EPARSE, "checkpoint: %zu bytes is too short", len);
	/* Checksum first: nothing below runs on bytes that were damaged. */
	crc_file = (uint32_t)buf[len - 4] | (uint32_t)buf[len - 3] << 8 |
		   (uint32_t)buf[len - 2] << 16 | (uint32_t)buf[len - 1] << 24;
	if ((uint32_t)crc32(crc32(0L, Z_NULL, 0), buf, (uInt)(len - 4)) != crc_file)
		return tfj_err_set(TFJ_EPARSE, "checkpoint: checksum mismatch");
	r.p = buf;
	r.left = len - 4;
	if ((rc = r_bytes(&r, magic, MAGIC_LEN)) < 0)
		return rc;
	if (memcmp(magic, MAGIC, MAGIC_LEN) != 0)
		return tfj_err_set(TFJ_EPARSE, "checkpoint: bad magic");
	if ((rc = r_u32(&r, &version)) < 0 || (rc = r_u32(&r, &kind)) < 0 ||
	    (rc = r_u64(&r, &step)) < 0)
		return rc;
	if (version != 1 && version != VERSION)
		return tfj_err_set(TFJ_EPARSE, "checkpoint: version %u (want 1 or %u)", version,
				   VERSION);
	if (version >= 2 && (rc = r_u64(&r, &ostep)) < 0)
		return rc;
	if ((rc = r_u32(&r, &nvars)) < 0)
		return rc;
	if (ostep > INT64_MAX)
		return tfj_err_set(TFJ_EPARSE, "checkpoint: negative optimizer step");
	if (kind > TFJ_OPTIM_ADAM)
		return tfj_err_set(TFJ_EPARSE, "checkpoint: optimizer kind %u", kind);
	if (step > INT64_MAX)
		return tfj_err_set(TFJ_EPARSE, "checkpoint: negative global step");
	if (nvars > TFJ_CKPT_MAX_VARS || (size_t)nvars > r.left / VAR_MIN_LEN)
		return tfj_err_set(TFJ_EPARSE, "checkpoint: %u vars do not fit", nvars);
	out->global_step = (int64_t)step;
	out->optim_kind = kind;
	out->optim_steps = (int64_t)ostep;
	if (nvars) {
		out->vars = calloc(nvars, sizeof(*out->vars));
		if (!out->vars)
			return tfj_err_set(TFJ_ENOMEM, "checkpoint: vars");
	}
	out->n_vars = nvars;
	for (i = 0; i < nvars; i++)
		if ((rc = parse_var(&r, out, i)) < 0)
			goto fail;
	if (r.left != 0) {
		rc = tfj_err_set(TFJ_EPARSE, "checkpoint: %zu trailing bytes", r.left);
		goto fail;
	}
	return 0;
fail:
	tfj_ckpt_free(out);
	return rc;
}

int tfj_ckpt_load(struct tfj_ckpt *out, const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if (!out || !path)
		return tfj_err_set(TFJ_EINVAL, "checkpoint: NULL argument");
	memset(out, 0, sizeof(*out));
	/* Regular files only: a FIFO or device would block or never end. */
	rc = tfj_file_read(&buf, &len, path, TFJ_CKPT_MAX_BYTES, TFJ_FILE_REGULAR);
	if (rc)
		return tfj_err_set(rc, "checkpoint: %s", tfj_err_detail());
	rc = tfj_ckpt_parse(out, (const uint8_t *)buf, len);
	free(buf);
	return rc;
}

int tfj_ckpt_find(const struct tfj_ckpt *ck, const char *name)
{
	size_t i;

	for (i = 0; ck && name && i < ck->n_vars; i++)
		if (strcmp(ck->vars[i].name, name) == 0)
			return (int)i;
	return -1;
}
