/*
 * test_data.c - IDX parsing (valid and malformed), file reading plain and
 * gzip'd with size caps, dataset loading, synthetic determinism, shards,
 * and the seeded shuffle of the batch iterator.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <tfj/err.h>
#include <tfj_test.h>
#include <tfj_testutil.h>

#include "data/data.h"

static char tmpdir[256];

/* Builds an IDX image: header for dims[0..nd) then count bytes of value. */
static size_t make_idx(uint8_t *buf, size_t cap, unsigned nd, const uint32_t *dims,
		       uint8_t fill)
{
	size_t count = 1, i, off = 4;

	buf[0] = 0;
	buf[1] = 0;
	buf[2] = 0x08;
	buf[3] = (uint8_t)nd;
	for (i = 0; i < nd; i++) {
		buf[off++] = (uint8_t)(dims[i] >> 24);
		buf[off++] = (uint8_t)(dims[i] >> 16);
		buf[off++] = (uint8_t)(dims[i] >> 8);
		buf[off++] = (uint8_t)dims[i];
		count *= dims[i];
	}
	if (off + count > cap)
		return 0;
	for (i = 0; i < count; i++)
		buf[off + i] = (uint8_t)(fill + i);
	return off + count;
}

static void write_file(const char *name, const void *data, size_t n, int gz)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	if (gz) {
		gzFile f = gzopen(path, "wb");

		TFJ_CHECK(f != NULL);
		if (!f)
			return;
		TFJ_CHECK(gzwrite(f, data, (unsigned)n) == (int)n);
		gzclose(f);
	} else {
		FILE *f = fopen(path, "wb");

		TFJ_CHECK(f != NULL);
		if (!f)
			return;
		TFJ_CHECK(fwrite(data, 1, n, f) == n);
		fclose(f);
	}
}

static void remove_file(const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	unlink(path);
}

static void test_idx_parse(void)
{
	uint8_t buf[4096];
	uint32_t d3[3] = { 3, 4, 5 }, d1[1] = { 7 };
	struct tfj_idx idx;
	size_t n;

	n = make_idx(buf, sizeof(buf), 3, d3, 10);
	TFJ_CHECK_INT(tfj_idx_parse(&idx, buf, n), 0);
	TFJ_CHECK_INT(idx.ndims, 3);
	TFJ_CHECK_INT(idx.dims[2], 5);
	TFJ_CHECK_INT(idx.count, 60);
	TFJ_CHECK(idx.data == buf + 16);
	TFJ_CHECK_INT(idx.data[59], (uint8_t)(10 + 59));
	n = make_idx(buf, sizeof(buf), 1, d1, 0);
	TFJ_CHECK_INT(tfj_idx_parse(&idx, buf, n), 0);
	TFJ_CHECK_INT(idx.count, 7);

	/* Malformed: every header field and the size relation. */
	TFJ_CHECK_INT(tfj_idx_parse(&idx, buf, 0), TFJ_EPARSE);
	TFJ_CHECK_INT(tfj_idx_parse(&idx, buf, 3), TFJ_EPARSE);
	TFJ_CHECK_INT(tfj_idx_parse(&idx, buf, n - 1), TFJ_EPARSE);   /* truncated */
	TFJ_CHECK_INT(tfj_idx_parse(&idx, buf, n + 1), TFJ_EPARSE);   /* trailing */
	TFJ_CHECK_INT(tfj_idx_parse(&idx, buf, 6), TFJ_EPARSE);       /* short header */
	buf[0] = 1;
	TFJ_CHECK_INT(tfj_idx_parse(&idx, buf, n), TFJ_EPARSE);
	buf[0] = 0;
	buf[2] = 0x0D; /* float elements */
	TFJ_CHECK_INT(tfj_idx_parse(&idx, buf, n), TFJ_EPARSE);
	buf[2] = 0x08;
	buf[3] = 0;
	TFJ_CHECK_INT(tfj_idx_parse(&idx, buf, n), TFJ_EPARSE);
	buf[3] = 4;
	TFJ_CHECK_INT(tfj_idx_parse(&idx, buf, n), TFJ_EPARSE);
	buf[3] = 1;
	buf[7] = 0; /* dims[0] = 0 */
	TFJ_CHECK_INT(tfj_idx_parse(&idx, buf, n), TFJ_EPARSE);
	/* Oversized dimensions are refused before any size arithmetic matters. */
	buf[4] = 0xff;
	buf[5] = 0xff;
	buf[6] = 0xff;
	buf[7] = 0xff;
	TFJ_CHECK_INT(tfj_idx_parse(&idx, buf, n), TFJ_ETOOBIG);
	{
		uint32_t big[3] = { 1000000, 1024, 1024 };

		n = make_idx(buf, sizeof(buf), 3, big, 0); /* header only: cap too small */
		TFJ_CHECK_INT(n, 0);
		TFJ_CHECK_INT(tfj_idx_parse(&idx, buf, 16), TFJ_ETOOBIG);
		big[1] = 1025;
		make_idx(buf, 16, 3, big, 0);
		TFJ_CHECK_INT(tfj_idx_parse(&idx, buf, 16), TFJ_ETOOBIG);
	}
}

static void test_idx_files(void)
{
	uint8_t buf[4096], *out = NULL;
	uint32_t d3[3] = { 2, 3, 3 };
	size_t n = make_idx(buf, sizeof(buf), 3, d3, 1), len = 0;
	char path[512];
	struct tfj_idx idx;

	write_file("plain", buf, n, 0);
	write_file("packed.gz", buf, n, 1);
	snprintf(path, sizeof(path), "%s/plain", tmpdir);
	TFJ_CHECK_INT(tfj_idx_read_file(&out, &len, path), 0);
	TFJ_CHECK_INT(len, n);
	TFJ_CHECK(out && memcmp(out, buf, n) == 0);
	free(out);
	snprintf(path, sizeof(path), "%s/packed.gz", tmpdir);
	TFJ_CHECK_INT(tfj_idx_read_file(&out, &len, path), 0);
	TFJ_CHECK_INT(len, n);
	TFJ_CHECK(out && memcmp(out, buf, n) == 0);
	TFJ_CHECK_INT(tfj_idx_parse(&idx, out, len), 0);
	free(out);
	snprintf(path, sizeof(path), "%s/missing", tmpdir);
	TFJ_CHECK_INT(tfj_idx_read_file(&out, &len, path), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(tfj_idx_read_file(&out, &len, tmpdir), TFJ_EINVAL); /* a directory */
	TFJ_CHECK_INT(tfj_idx_read_file(&out, &len, "/dev/zero"), TFJ_EINVAL);
	/* A corrupt gzip stream is an error, not a short file. */
	{
		FILE *f;
		long sz;
		uint8_t raw[8192];

		snprintf(path, sizeof(path), "%s/packed.gz", tmpdir);
		f = fopen(path, "rb");
		TFJ_CHECK(f != NULL);
		if (f) {
			sz = (long)fread(raw, 1, sizeof(raw), f);
			fclose(f);
			raw[sz / 2] ^= 0x55;
			raw[sz / 2 + 1] ^= 0x55;
			write_file("bad.gz", raw, (size_t)sz, 0);
			snprintf(path, sizeof(path), "%s/bad.gz", tmpdir);
			TFJ_CHECK_LT(tfj_idx_read_file(&out, &len, path), 0);
		}
	}
	/* A gzip bomb stops at the cap instead of inflating without bound. */
	{
		size_t big = (size_t)TFJ_IDX_MAX_FILE + 4096;
		uint8_t *zeros = calloc(1, big);

		TFJ_CHECK(zeros != NULL);
		if (zeros) {
			write_file("bomb.gz", zeros, big, 1);
			free(zeros);
			snprintf(path, sizeof(path), "%s/bomb.gz", tmpdir);
			TFJ_CHECK_INT(tfj_idx_read_file(&out, &len, path), TFJ_ETOOBIG);
			remove_file("bomb.gz");
		}
	}
	remove_file("plain");
	remove_file("packed.gz");
	remove_file("bad.gz");
}

/* Writes a tiny IDX dataset with n examples of side x side pixels. */
static void write_set(const char *split, uint32_t n, uint32_t side, uint32_t nlabels,
		      uint8_t max_label, int gz)
{
	static uint8_t buf[1 << 16];
	uint32_t d3[3] = { n, side, side }, d1[1] = { nlabels };
	char name[128];
	size_t len, i;

	len = make_idx(buf, sizeof(buf), 3, d3, 0);
	snprintf(name, sizeof(name), "%s-images-idx3-ubyte%s", split, gz ? ".gz" : "");
	write_file(name, buf, len, gz);
	len = make_idx(buf, sizeof(buf), 1, d1, 0);
	for (i = 0; i < nlabels; i++)
		buf[8 + i] = (uint8_t)(i % ((size_t)max_label + 1));
	snprintf(name, sizeof(name), "%s-labels-idx1-ubyte%s", split, gz ? ".gz" : "");
	write_file(name, buf, len, gz);
}

static void clean_set(void)
{
	remove_file("train-images-idx3-ubyte");
	remove_file("train-labels-idx1-ubyte");
	remove_file("t10k-images-idx3-ubyte.gz");
	remove_file("t10k-labels-idx1-ubyte.gz");
}

static void test_load_small(void)
{
	struct tfj_dataset ds;

	write_set("train", 20, 4, 20, 9, 0);
	write_set("t10k", 8, 4, 8, 9, 1);
	TFJ_CHECK_INT(tfj_data_load(&ds, tmpdir, 1), 0);
	TFJ_CHECK_INT(ds.n, 20);
	TFJ_CHECK_INT(ds.dim, 16);
	TFJ_CHECK_INT(ds.classes, 10);
	TFJ_CHECK(ds.x[17] == 17.0f / 255.0f);
	TFJ_CHECK_INT(ds.y[13], 3);
	tfj_data_free(&ds);
	tfj_data_free(&ds); /* twice is fine */
	TFJ_CHECK_INT(tfj_data_load(&ds, tmpdir, 0), 0);
	TFJ_CHECK_INT(ds.n, 8);
	tfj_data_free(&ds);
	/* Count mismatch and a label out of range. */
	write_set("train", 20, 4, 19, 9, 0);
	TFJ_CHECK_INT(tfj_data_load(&ds, tmpdir, 1), TFJ_EPARSE);
	TFJ_CHECK(ds.x == NULL && ds.n == 0);
	write_set("train", 20, 4, 20, 10, 0);
	TFJ_CHECK_INT(tfj_data_load(&ds, tmpdir, 1), TFJ_EPARSE);
	TFJ_CHECK(strstr(tfj_err_detail(), "label") != NULL);
	/* Images and labels swapped: wrong dimensionality. */
	{
		char a[512], b[512], t[512];

		write_set("train", 20, 4, 20, 9, 0);
		snprintf(a, sizeof(a), "%s/train-images-idx3-ubyte", tmpdir);
		snprintf(b, sizeof(b), "%s/train-labels-idx1-ubyte", tmpdir);
		snprintf(t, sizeof(t), "%s/swap", tmpdir);
		TFJ_CHECK_INT(rename(a, t) == 0 ? rename(b, a) : -1, 0);
		TFJ_CHECK_INT(rename(t, b), 0);
		TFJ_CHECK_INT(tfj_data_load(&ds, tmpdir, 1), TFJ_EPARSE);
	}
	clean_set();
	TFJ_CHECK_INT(tfj_data_load(&ds, tmpdir, 1), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(tfj_data_load_named(&ds, "cifar", NULL, 1, 0, 0), TFJ_EINVAL);
}

static void test_load_real(void)
{
	struct tfj_dataset tr, te;
	size_t i, counts[10] = { 0 };
	int rc = tfj_data_load(&tr, TFJ_DATA_DEFAULT_DIR, 1);

	if (rc == TFJ_ENOTFOUND) {
		printf("  (dataset-fashion-mnist not installed: %s)\n", tfj_err_detail());
		return;
	}
	TFJ_CHECK_INT(rc, 0);
	TFJ_CHECK_INT(tr.n, 60000);
	TFJ_CHECK_INT(tr.dim, 784);
	for (i = 0; i < tr.n; i++)
		counts[tr.y[i]]++;
	/* Fashion-MNIST is balanced: 6000 per class. */
	for (i = 0; i < 10; i++)
		TFJ_CHECK_INT(counts[i], 6000);
	for (i = 0; i < tr.n * tr.dim; i += 997) {
		TFJ_CHECK_GE(tr.x[i], 0.0f);
		TFJ_CHECK_LE(tr.x[i], 1.0f);
	}
	TFJ_CHECK_INT(tfj_data_load_named(&te, "fashion-mnist", NULL, 0, 0, 0), 0);
	TFJ_CHECK_INT(te.n, 10000);
	tfj_data_free(&tr);
	tfj_data_free(&te);
}

static void test_synthetic(void)
{
	struct tfj_dataset a, b, c;

	TFJ_CHECK_INT(tfj_data_synthetic(&a, 500, 30, 4, 9, 1), 0);
	TFJ_CHECK_INT(tfj_data_synthetic(&b, 500, 30, 4, 9, 1), 0);
	TFJ_CHECK_INT(tfj_data_synthetic(&c, 500, 30, 4, 9, 0), 0);
	TFJ_CHECK(memcmp(a.x, b.x, 500 * 30 * sizeof(float)) == 0);
	TFJ_CHECK(memcmp(a.y, b.y, 500) == 0);
	TFJ_CHECK(memcmp(a.x, c.x, 500 * 30 * sizeof(float)) != 0);
	tfj_data_free(&b);
	TFJ_CHECK_INT(tfj_data_synthetic(&b, 500, 30, 4, 10, 1), 0);
	TFJ_CHECK(memcmp(a.x, b.x, 500 * 30 * sizeof(float)) != 0);
	tfj_data_free(&c);
	TFJ_CHECK_INT(tfj_data_synthetic(&c, 0, 30, 4, 9, 0), TFJ_ERANGE);
	TFJ_CHECK_INT(tfj_data_synthetic(&c, 10, 30, 1, 9, 0), TFJ_ERANGE);
	tfj_data_free(&a);
	tfj_data_free(&b);
	TFJ_CHECK_INT(tfj_data_load_named(&a, "synthetic", NULL, 1, 100, 3), 0);
	TFJ_CHECK_INT(a.dim, 784);
	TFJ_CHECK_INT(a.classes, 10);
	tfj_data_free(&a);
}

static void test_shards(void)
{
	struct tfj_dataset all, sh[3];
	size_t seen[103] = { 0 }, k, i, total = 0;

	TFJ_CHECK_INT(tfj_data_synthetic(&all, 103, 5, 3, 1, 1), 0);
	for (k = 0; k < 3; k++) {
		TFJ_CHECK_INT(tfj_data_shard(&sh[k], &all, k, 3), 0);
		total += sh[k].n;
		TFJ_CHECK(sh[k].n == 34 || sh[k].n == 35);
		for (i = 0; i < sh[k].n; i++) {
			size_t src = k + 3 * i;

			seen[src]++;
			TFJ_CHECK(memcmp(sh[k].x + i * 5, all.x + src * 5, 5 * sizeof(float)) == 0);
			TFJ_CHECK_INT(sh[k].y[i], all.y[src]);
		}
	}
	TFJ_CHECK_INT(total, 103);
	for (i = 0; i < 103; i++)
		TFJ_CHECK_INT(seen[i], 1);
	for (k = 0; k < 3; k++)
		tfj_data_free(&sh[k]);
	TFJ_CHECK_INT(tfj_data_shard(&sh[0], &all, 3, 3), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_data_shard(&sh[0], &all, 0, 0), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_data_shard(&sh[0], &all, 103, 104), TFJ_ERANGE);
	tfj_data_free(&all);
}

static void test_permutation(void)
{
	size_t a[1000], b[1000], mark[1000], i, same = 0;

	tfj_data_permutation(a, 1000, 5, 0);
	tfj_data_permutation(b, 1000, 5, 0);
	TFJ_CHECK(memcmp(a, b, sizeof(a)) == 0);
	memset(mark, 0, sizeof(mark));
	for (i = 0; i < 1000; i++)
		mark[a[i]]++;
	for (i = 0; i < 1000; i++)
		TFJ_CHECK_INT(mark[i], 1);
	tfj_data_permutation(b, 1000, 5, 1);
	for (i = 0; i < 1000; i++)
		same += a[i] == b[i];
	TFJ_CHECK_LT(same, 20); /* different epochs: essentially independent orders */
	tfj_data_permutation(b, 1000, 6, 0);
	same = 0;
	for (i = 0; i < 1000; i++)
		same += a[i] == b[i];
	TFJ_CHECK_LT(same, 20);
}

static void test_iterator(void)
{
	struct tfj_dataset ds;
	struct tfj_data_iter it, it2;
	const float *x, *x2;
	const uint8_t *y, *y2;
	size_t n, n2, seen[50], i, got = 0, batches = 0;
	float first_e1[4 * 3];

	TFJ_CHECK_INT(tfj_data_synthetic(&ds, 50, 3, 2, 4, 1), 0);
	/* Tag each example by its index so we can see which ones come back. */
	for (i = 0; i < 50; i++)
		ds.x[i * 3] = (float)i;
	TFJ_CHECK_INT(tfj_data_iter_init(&it, &ds, 16, 77), 0);
	memset(seen, 0, sizeof(seen));
	while (it.epoch == 0) {
		TFJ_CHECK_INT(tfj_data_iter_next(&it, &x, &y, &n), 0);
		for (i = 0; i < n; i++)
			seen[(size_t)x[i * 3]]++;
		got += n;
		batches++;
	}
	TFJ_CHECK_INT(got, 50);
	TFJ_CHECK_INT(batches, 4); /* 16 + 16 + 16 + 2 */
	for (i = 0; i < 50; i++)
		TFJ_CHECK_INT(seen[i], 1);
	TFJ_CHECK_INT(tfj_data_iter_next(&it, &x, &y, &n), 0);
	memcpy(first_e1, x, sizeof(first_e1));
	/* A second iterator seeked to epoch 1 replays the same batch. */
	TFJ_CHECK_INT(tfj_data_iter_init(&it2, &ds, 16, 77), 0);
	TFJ_CHECK_INT(tfj_data_iter_seek(&it2, 1, 0), 0);
	TFJ_CHECK_INT(tfj_data_iter_next(&it2, &x2, &y2, &n2), 0);
	TFJ_CHECK_INT(n2, 16);
	TFJ_CHECK(memcmp(first_e1, x2, sizeof(first_e1)) == 0);
	TFJ_CHECK_INT(tfj_data_iter_seek(&it2, 0, 50), TFJ_ERANGE);
	tfj_data_iter_free(&it2);
	/* A different seed shuffles differently. */
	TFJ_CHECK_INT(tfj_data_iter_init(&it2, &ds, 16, 78), 0);
	TFJ_CHECK_INT(tfj_data_iter_seek(&it2, 1, 0), 0);
	TFJ_CHECK_INT(tfj_data_iter_next(&it2, &x2, &y2, &n2), 0);
	TFJ_CHECK(memcmp(first_e1, x2, sizeof(first_e1)) != 0);
	tfj_data_iter_free(&it2);
	tfj_data_iter_free(&it);
	TFJ_CHECK_INT(tfj_data_iter_init(&it, &ds, 0, 1), TFJ_ERANGE);
	tfj_data_free(&ds);
}

int main(void)
{
	if (tfj_testutil_tmpdir(tmpdir, sizeof(tmpdir), "tfj-test-data")) {
		perror("mkdtemp");
		return 1;
	}
	TFJ_RUN(test_idx_parse);
	TFJ_RUN(test_idx_files);
	TFJ_RUN(test_load_small);
	TFJ_RUN(test_load_real);
	TFJ_RUN(test_synthetic);
	TFJ_RUN(test_shards);
	TFJ_RUN(test_permutation);
	TFJ_RUN(test_iterator);
	tfj_testutil_rmtree(tmpdir);
	return tfj_test_finish();
}
