/*
 * data.c - IDX loading (plain or gzip'd through zlib), the synthetic set,
 * shards and the seeded batch iterator.
 */
#include "data/data.h"

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

#define IDX_TYPE_UBYTE 0x08
#define LOAD_CLASSES 10
#define SYNTH_DIM 784
#define SYNTH_CLASSES 10
#define SYNTH_MAX_N 1000000u
#define READ_CHUNK (1u << 20)

/* splitmix64, the same generator the model uses, so seeds mean one thing. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* Unbiased value in [0, bound), bound >= 1. */
static uint64_t rng_below(uint64_t *s, uint64_t bound)
{
	uint64_t threshold = (0 - bound) % bound, r;

	do
		r = rng_next(s);
	while (r < threshold);
	return r % bound;
}

static double rng_unit(uint64_t *s)
{
	return ((double)(rng_next(s) >> 11) + 0.5) / 9007199254740992.0;
}

static double rng_normal(uint64_t *s)
{
	double r = sqrt(-2.0 * log(rng_unit(s)));

	return r * cos(6.283185307179586 * rng_unit(s));
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int tfj_idx_parse(struct tfj_idx *out, const uint8_t *buf, size_t len)
{
	size_t hdr, count = 1;
	unsigned i;

	if (!out || (!buf && len))
		return tfj_err_set(TFJ_EINVAL, "idx: NULL argument");
	memset(out, 0, sizeof(*out));
	if (len < 4)
		return tfj_err_set(TFJ_EPARSE, "idx: %zu bytes is shorter than the magic", len);
	if (buf[0] != 0 || buf[1] != 0)
		return tfj_err_set(TFJ_EPARSE, "idx: bad magic %02x%02x", buf[0], buf[1]);
	if (buf[2] != IDX_TYPE_UBYTE)
		return tfj_err_set(TFJ_EPARSE, "idx: element type 0x%02x is not unsigned byte",
				   buf[2]);
	if (buf[3] < 1 || buf[3] > 3)
		return tfj_err_set(TFJ_EPARSE, "idx: %u dimensions (1..3 supported)", buf[3]);
	out->ndims = buf[3];
	hdr = 4 + 4 * (size_t)out->ndims;
	if (len < hdr)
		return tfj_err_set(TFJ_EPARSE, "idx: truncated header");
	for (i = 0; i < out->ndims; i++) {
		uint32_t d = be32(buf + 4 + 4 * i);
		uint32_t cap = i == 0 ? TFJ_IDX_MAX_ITEMS : TFJ_IDX_MAX_SIDE;

		if (d == 0)
			return tfj_err_set(TFJ_EPARSE, "idx: dimension %u is zero", i);
		if (d > cap)
			return tfj_err_set(TFJ_ETOOBIG, "idx: dimension %u is %u (cap %u)", i, d, cap);
		out->dims[i] = d;
		/* Each factor is capped, but the product still needs a check. */
		if (count > TFJ_IDX_MAX_FILE / d)
			return tfj_err_set(TFJ_ETOOBIG, "idx: more than %u data bytes",
					   TFJ_IDX_MAX_FILE);
		count *= d;
	}
	if (len - hdr != count)
		return tfj_err_set(TFJ_EPARSE, "idx: header says %zu data bytes, file has %zu", count,
				   len - hdr);
	out->count = count;
	out->data = buf + hdr;
	return 0;
}

int tfj_idx_read_file(uint8_t **out, size_t *len, const char *path)
{
	struct stat st;
	gzFile gz = NULL;
	uint8_t *buf = NULL;
	size_t used = 0;
	int fd = -1, rc = 0;

	if (!out || !len || !path)
		return tfj_err_set(TFJ_EINVAL, "idx: NULL argument");
	*out = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return tfj_err_set(errno == ENOENT ? TFJ_ENOTFOUND : TFJ_EIO, "idx: open %s: %s",
				   path, strerror(errno));
	/* A FIFO or device would block or never end: regular files only. */
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		rc = tfj_err_set(TFJ_EINVAL, "idx: %s is not a regular file", path);
		goto out;
	}
	gz = gzdopen(fd, "rb"); /* reads plain files unchanged, too */
	if (!gz) {
		rc = tfj_err_set(TFJ_ENOMEM, "idx: gzdopen %s", path);
		goto out;
	}
	fd = -1; /* owned by gz now */
	/* Grow in chunks up to the cap + 1 byte, which proves the file is too big. */
	for (;;) {
		size_t want = READ_CHUNK;
		uint8_t *nb;
		int got;

		if (used + want > (size_t)TFJ_IDX_MAX_FILE + 1)
			want = (size_t)TFJ_IDX_MAX_FILE + 1 - used;
		if (want == 0) {
			rc = tfj_err_set(TFJ_ETOOBIG, "idx: %s exceeds %u bytes", path,
					 TFJ_IDX_MAX_FILE);
			goto out;
		}
		nb = realloc(buf, used + want);
		if (!nb) {
			rc = tfj_err_set(TFJ_ENOMEM, "idx: reading %s", path);
			goto out;
		}
		buf = nb;
		got = gzread(gz, buf + used, (unsigned)want);
		if (got < 0) {
			int zerr;
			const char *msg = gzerror(gz, &zerr);

			rc = tfj_err_set(TFJ_EPARSE, "idx: %s: %s", path, msg ? msg : "read error");
			goto out;
		}
		if (got == 0)
			break;
		used += (size_t)got;
	}
	if (used > TFJ_IDX_MAX_FILE) {
		rc = tfj_err_set(TFJ_ETOOBIG, "idx: %s exceeds %u bytes", path, TFJ_IDX_MAX_FILE);
		goto out;
	}
	*out = buf;
	*len = used;
	buf = NULL;
out:
	if (gz)
		gzclose(gz);
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
}

/* Reads dir/base, or dir/base.gz when the plain file does not exist. */
static int read_idx_named(uint8_t **out, size_t *len, const char *dir, const char *base)
{
	char path[4096];
	int rc;

	if (snprintf(path, sizeof(path), "%s/%s", dir, base) >= (int)sizeof(path))
		return tfj_err_set(TFJ_ERANGE, "data: path too long");
	rc = tfj_idx_read_file(out, len, path);
	if (rc != TFJ_ENOTFOUND)
		return rc;
	if (snprintf(path, sizeof(path), "%s/%s.gz", dir, base) >= (int)sizeof(path))
		return tfj_err_set(TFJ_ERANGE, "data: path too long");
	rc = tfj_idx_read_file(out, len, path);
	if (rc == TFJ_ENOTFOUND)
		return tfj_err_set(TFJ_ENOTFOUND, "data: neither %s/%s nor its .gz exists", dir,
				   base);
	return rc;
}

void tfj_data_free(struct tfj_dataset *ds)
{
	if (!ds)
		return;
	free(ds->x);
	free(ds->y);
	memset(ds, 0, sizeof(*ds));
}

/* Allocates x and y for n examples of dim floats (checked sizes). */
static int data_alloc(struct tfj_dataset *ds, size_t n, size_t dim, size_t classes)
{
	memset(ds, 0, sizeof(*ds));
	if (n == 0 || dim == 0 || n > SIZE_MAX / dim || n * dim > SIZE_MAX / sizeof(float))
		return tfj_err_set(TFJ_ERANGE, "data: %zu x %zu examples", n, dim);
	ds->x = malloc(n * dim * sizeof(float));
	ds->y = malloc(n);
	if (!ds->x || !ds->y) {
		tfj_data_free(ds);
		return tfj_err_set(TFJ_ENOMEM, "data: %zu x %zu examples", n, dim);
	}
	ds->n = n;
	ds->dim = dim;
	ds->classes = classes;
	return 0;
}

/* Puts the file name in front of the parser's detail (copied first: the
 * detail buffer is the destination, too). */
static void prefix_detail(int rc, const char *dir, const char *base)
{
	char detail[TFJ_ERR_DETAIL_MAX];

	snprintf(detail, sizeof(detail), "%s", tfj_err_detail());
	tfj_err_set(rc, "data: %s/%s: %s", dir, base, detail);
}

int tfj_data_load(struct tfj_dataset *out, const char *dir, int train)
{
	const char *img_name = train ? "train-images-idx3-ubyte" : "t10k-images-idx3-ubyte";
	const char *lbl_name = train ? "train-labels-idx1-ubyte" : "t10k-labels-idx1-ubyte";
	uint8_t *img_buf = NULL, *lbl_buf = NULL;
	size_t img_len = 0, lbl_len = 0, i, dim;
	struct tfj_idx img, lbl;
	int rc;

	if (!out)
		return tfj_err_set(TFJ_EINVAL, "data: out is NULL");
	memset(out, 0, sizeof(*out));
	if (!dir || !*dir) {
		dir = getenv("TFJOB_DATA_DIR");
		if (!dir || !*dir)
			dir = TFJ_DATA_DEFAULT_DIR;
	}
	if ((rc = read_idx_named(&img_buf, &img_len, dir, img_name)) < 0 ||
	    (rc = read_idx_named(&lbl_buf, &lbl_len, dir, lbl_name)) < 0)
		goto out;
	if ((rc = tfj_idx_parse(&img, img_buf, img_len)) < 0) {
		prefix_detail(rc, dir, img_name);
		goto out;
	}
	if ((rc = tfj_idx_parse(&lbl, lbl_buf, lbl_len)) < 0) {
		prefix_detail(rc, dir, lbl_name);
		goto out;
	}
	if (img.ndims != 3 || lbl.ndims != 1) {
		rc = tfj_err_set(TFJ_EPARSE, "data: expected 3-d images and 1-d labels, got %u and %u",
				 img.ndims, lbl.ndims);
		goto out;
	}
	if (img.dims[0] != lbl.dims[0]) {
		rc = tfj_err_set(TFJ_EPARSE, "data: %u images but %u labels", img.dims[0],
				 lbl.dims[0]);
		goto out;
	}
	dim = (size_t)img.dims[1] * img.dims[2];
	if ((rc = data_alloc(out, img.dims[0], dim, LOAD_CLASSES)) < 0)
		goto out;
	for (i = 0; i < out->n; i++) {
		if (lbl.data[i] >= LOAD_CLASSES) {
			rc = tfj_err_set(TFJ_EPARSE, "data: label %u of example %zu is not below %d",
					 lbl.data[i], i, LOAD_CLASSES);
			tfj_data_free(out);
			goto out;
		}
		out->y[i] = lbl.data[i];
	}
	for (i = 0; i < out->n * dim; i++)
		out->x[i] = (float)img.data[i] * (1.0f / 255.0f);
out:
	free(img_buf);
	free(lbl_buf);
	return rc;
}

int tfj_data_synthetic(struct tfj_dataset *out, size_t n, size_t dim, size_t classes,
		       uint64_t seed, int train)
{
	uint64_t proto_rng = seed ^ 0x73796e7468657469ull;
	uint64_t ex_rng = seed ^ (train ? 0x747261696e000001ull : 0x7465737400000002ull);
	float *protos = NULL;
	size_t i, j;
	int rc;

	if (!out)
		return tfj_err_set(TFJ_EINVAL, "data: out is NULL");
	memset(out, 0, sizeof(*out));
	if (n < 1 || n > SYNTH_MAX_N || dim < 1 || dim > 65536 || classes < 2 || classes > 256)
		return tfj_err_set(TFJ_ERANGE, "data: synthetic n=%zu dim=%zu classes=%zu out of range",
				   n, dim, classes);
	protos = malloc(classes * dim * sizeof(float));
	if (!protos)
		return tfj_err_set(TFJ_ENOMEM, "data: synthetic prototypes");
	/*
	 * Sparse prototypes (a quarter of the pixels lit) with noise of the same
	 * order: separable, but not trivially so for a linear model at small n.
	 */
	for (i = 0; i < classes * dim; i++)
		protos[i] = rng_unit(&proto_rng) < 0.25 ? (float)(0.5 + 0.5 * rng_unit(&proto_rng))
							 : 0.0f;
	rc = data_alloc(out, n, dim, classes);
	if (rc < 0)
		goto out;
	for (i = 0; i < n; i++) {
		size_t c = (size_t)rng_below(&ex_rng, classes);
		const float *p = protos + c * dim;
		float *x = out->x + i * dim;

		out->y[i] = (uint8_t)c;
		for (j = 0; j < dim; j++) {
			double v = p[j] + 0.35 * rng_normal(&ex_rng);

			x[j] = (float)(v < 0.0 ? 0.0 : v > 1.0 ? 1.0 : v);
		}
	}
out:
	free(protos);
	return rc;
}

int tfj_data_load_named(struct tfj_dataset *out, const char *name, const char *dir,
			int train, size_t n_synth, uint64_t seed)
{
	if (!out || !name)
		return tfj_err_set(TFJ_EINVAL, "data: NULL argument");
	if (strcmp(name, "fashion-mnist") == 0)
		return tfj_data_load(out, dir, train);
	if (strcmp(name, "mnist") == 0)
		return tfj_data_load(out, dir && *dir ? dir : TFJ_DATA_MNIST_DIR, train);
	if (strcmp(name, "synthetic") == 0)
		return tfj_data_synthetic(out, n_synth, SYNTH_DIM, SYNTH_CLASSES, seed, train);
	memset(out, 0, sizeof(*out));
	return tfj_err_set(TFJ_EINVAL,
			   "data: dataset must be fashion-mnist, mnist or synthetic, not '%.32s'",
			   name);
}

int tfj_data_shard(struct tfj_dataset *out, const struct tfj_dataset *in, size_t index,
		   size_t count)
{
	size_t n, i;
	int rc;

	if (!out || !in || !in->x || !in->y)
		return tfj_err_set(TFJ_EINVAL, "data: shard: NULL argument");
	memset(out, 0, sizeof(*out));
	if (count < 1 || index >= count)
		return tfj_err_set(TFJ_EINVAL, "data: shard %zu of %zu", index, count);
	n = index < in->n ? (in->n - index + count - 1) / count : 0;
	if (n == 0)
		return tfj_err_set(TFJ_ERANGE, "data: shard %zu of %zu of %zu examples is empty",
				   index, count, in->n);
	rc = data_alloc(out, n, in->dim, in->classes);
	if (rc < 0)
		return rc;
	for (i = 0; i < n; i++) {
		size_t src = index + i * count;

		memcpy(out->x + i * in->dim, in->x + src * in->dim, in->dim * sizeof(float));
		out->y[i] = in->y[src];
	}
	return 0;
}

void tfj_data_permutation(size_t *perm, size_t n, uint64_t seed, uint64_t epoch)
{
	/* Mix the epoch in through one generator step so nearby epochs diverge. */
	uint64_t s = seed ^ 0x73687566666c6521ull;
	size_t i;

	s ^= rng_next(&s) + epoch * 0xD1B54A32D192ED03ull;
	for (i = 0; i < n; i++)
		perm[i] = i;
	for (i = n; i > 1; i--) {
		size_t j = (size_t)rng_below(&s, i), t = perm[i - 1];

		perm[i - 1] = perm[j];
		perm[j] = t;
	}
}

void tfj_data_iter_free(struct tfj_data_iter *it)
{
	if (!it)
		return;
	free(it->perm);
	free(it->xb);
	free(it->yb);
	memset(it, 0, sizeof(*it));
}

int tfj_data_iter_init(struct tfj_data_iter *it, const struct tfj_dataset *ds, size_t batch,
		       uint64_t seed)
{
	if (!it || !ds || !ds->x || !ds->y || ds->n == 0)
		return tfj_err_set(TFJ_EINVAL, "data: iter: empty dataset");
	memset(it, 0, sizeof(*it));
	if (batch < 1 || batch > TFJ_DATA_MAX_BATCH)
		return tfj_err_set(TFJ_ERANGE, "data: batch %zu outside 1..%u", batch,
				   TFJ_DATA_MAX_BATCH);
	if (batch > ds->n)
		batch = ds->n;
	it->ds = ds;
	it->batch = batch;
	it->seed = seed;
	/* data_alloc() already proved n * dim floats fit; batch <= n. */
	it->perm = malloc(ds->n * sizeof(size_t));
	it->xb = malloc(batch * ds->dim * sizeof(float));
	it->yb = malloc(batch);
	if (!it->perm || !it->xb || !it->yb) {
		tfj_data_iter_free(it);
		return tfj_err_set(TFJ_ENOMEM, "data: iterator");
	}
	tfj_data_permutation(it->perm, ds->n, seed, 0);
	return 0;
}

int tfj_data_iter_seek(struct tfj_data_iter *it, uint64_t epoch, size_t pos)
{
	if (!it || !it->perm)
		return tfj_err_set(TFJ_EINVAL, "data: iter: not initialised");
	if (pos >= it->ds->n)
		return tfj_err_set(TFJ_ERANGE, "data: iter: position %zu of %zu", pos, it->ds->n);
	if (epoch != it->epoch)
		tfj_data_permutation(it->perm, it->ds->n, it->seed, epoch);
	it->epoch = epoch;
	it->pos = pos;
	return 0;
}

int tfj_data_iter_next(struct tfj_data_iter *it, const float **x, const uint8_t **y,
		       size_t *n)
{
	const struct tfj_dataset *ds;
	size_t rows, i;

	if (!it || !it->perm || !x || !y || !n)
		return tfj_err_set(TFJ_EINVAL, "data: iter: NULL argument");
	ds = it->ds;
	rows = ds->n - it->pos;
	if (rows > it->batch)
		rows = it->batch;
	for (i = 0; i < rows; i++) {
		size_t src = it->perm[it->pos + i];

		memcpy(it->xb + i * ds->dim, ds->x + src * ds->dim, ds->dim * sizeof(float));
		it->yb[i] = ds->y[src];
	}
	it->pos += rows;
	if (it->pos == ds->n) {
		it->epoch++;
		it->pos = 0;
		tfj_data_permutation(it->perm, ds->n, it->seed, it->epoch);
	}
	*x = it->xb;
	*y = it->yb;
	*n = rows;
	return 0;
}
