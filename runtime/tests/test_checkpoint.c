/*
 * test_checkpoint.c - round trip, rejection of every corrupted or truncated
 * variant of a valid file, and (with ckptdir.h) latest lookup and pruning
 * of the files a save writes.
 */
#include <dirent.h>
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
#include <tfj_test.h>
#include <tfj_testutil.h>

#include "data/checkpoint.h"
#include "data/ckptdir.h"
#include "compute/optim.h"

static char dir[256];

static float wv[6] = { 0.5f, -1.25f, 3.0f, 1e-30f, -0.0f, 123456.0f };
static float ws[12];
static float bv[3] = { 0.1f, 0.2f, 0.3f };

static void fill(struct tfj_ckpt *ck, struct tfj_ckpt_var *vars, int64_t step)
{
	size_t i;

	for (i = 0; i < 12; i++)
		ws[i] = (float)i * 0.5f;
	memset(vars, 0, 2 * sizeof(*vars));
	snprintf(vars[0].name, sizeof(vars[0].name), "dense_0/kernel");
	vars[0].rank = 2;
	vars[0].shape[0] = 2;
	vars[0].shape[1] = 3;
	vars[0].count = 6;
	vars[0].value = wv;
	vars[0].state_count = 12;
	vars[0].state = ws;
	snprintf(vars[1].name, sizeof(vars[1].name), "dense_0/bias");
	vars[1].rank = 1;
	vars[1].shape[0] = 3;
	vars[1].count = 3;
	vars[1].value = bv;
	ck->global_step = step;
	ck->optim_kind = TFJ_OPTIM_ADAM;
	ck->optim_steps = step + 5;
	ck->n_vars = 2;
	ck->vars = vars;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	char *buf = NULL;

	if (tfj_file_read(&buf, len, path, 1 << 20, 0) != 0)
		*len = 0;
	return (uint8_t *)buf;
}

static void test_round_trip(void)
{
	struct tfj_ckpt ck, back;
	struct tfj_ckpt_var vars[2];
	char path[512];

	fill(&ck, vars, 1200);
	TFJ_CHECK_INT(tfj_ckpt_save(dir, "model", &ck, path, sizeof(path)), 0);
	TFJ_CHECK(strstr(path, "/model-1200.tfjc") != NULL);
	TFJ_CHECK_INT(tfj_ckpt_load(&back, path), 0);
	TFJ_CHECK_INT(back.global_step, 1200);
	TFJ_CHECK_INT(back.optim_kind, TFJ_OPTIM_ADAM);
	TFJ_CHECK_INT(back.optim_steps, 1205);
	TFJ_CHECK_INT(back.n_vars, 2);
	TFJ_CHECK_STR(back.vars[0].name, "dense_0/kernel");
	TFJ_CHECK_INT(back.vars[0].rank, 2);
	TFJ_CHECK_INT(back.vars[0].shape[1], 3);
	TFJ_CHECK_INT(back.vars[0].count, 6);
	TFJ_CHECK_INT(back.vars[0].state_count, 12);
	TFJ_CHECK(memcmp(back.vars[0].value, wv, sizeof(wv)) == 0);
	TFJ_CHECK(memcmp(back.vars[0].state, ws, sizeof(ws)) == 0);
	TFJ_CHECK(signbit(back.vars[0].value[4])); /* -0.0 bit-exact */
	TFJ_CHECK(back.vars[1].state == NULL && back.vars[1].state_count == 0);
	TFJ_CHECK(memcmp(back.vars[1].value, bv, sizeof(bv)) == 0);
	TFJ_CHECK_INT(tfj_ckpt_find(&back, "dense_0/bias"), 1);
	TFJ_CHECK_INT(tfj_ckpt_find(&back, "x"), -1);
	tfj_ckpt_free(&back);
	tfj_ckpt_free(&back);
	/* No temporary is left behind. */
	{
		DIR *d = opendir(dir);
		struct dirent *e;
		int tmps = 0;

		while (d && (e = readdir(d)) != NULL)
			tmps += strstr(e->d_name, ".tmp.") != NULL;
		if (d)
			closedir(d);
		TFJ_CHECK_INT(tmps, 0);
	}
	/* Scalars (rank 0) and an empty checkpoint are valid, too. */
	memset(vars, 0, sizeof(vars));
	snprintf(vars[0].name, sizeof(vars[0].name), "lr");
	vars[0].count = 1;
	vars[0].value = bv;
	ck.n_vars = 1;
	ck.global_step = 0;
	TFJ_CHECK_INT(tfj_ckpt_save(dir, "scalar", &ck, path, sizeof(path)), 0);
	TFJ_CHECK_INT(tfj_ckpt_load(&back, path), 0);
	TFJ_CHECK_INT(back.vars[0].count, 1);
	TFJ_CHECK(back.vars[0].value[0] == bv[0]);
	tfj_ckpt_free(&back);
	ck.n_vars = 0;
	TFJ_CHECK_INT(tfj_ckpt_save(dir, "empty", &ck, path, sizeof(path)), 0);
	TFJ_CHECK_INT(tfj_ckpt_load(&back, path), 0);
	TFJ_CHECK_INT(back.n_vars, 0);
	tfj_ckpt_free(&back);
	unlink(path);
}

/* Version 1 files (no optim_steps in the header) are still read. */
static void test_version1(void)
{
	struct tfj_ckpt ck, back;
	struct tfj_ckpt_var vars[2];
	char path[512];
	uint8_t *buf;
	size_t len;
	uint32_t crc;

	fill(&ck, vars, 9);
	TFJ_CHECK_INT(tfj_ckpt_save(dir, "v1", &ck, path, sizeof(path)), 0);
	buf = slurp(path, &len);
	TFJ_CHECK_NOT_NULL(buf);
	TFJ_CHECK_GT(len, 40);
	if (!buf)
		return;
	TFJ_CHECK_INT(buf[8], 2);
	/* Drop the 8 bytes of optim_steps (offset 24), say version 1, fix the checksum. */
	memmove(buf + 24, buf + 32, len - 32);
	len -= 8;
	buf[8] = 1;
	crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), buf, (uInt)(len - 4));
	buf[len - 4] = (uint8_t)crc;
	buf[len - 3] = (uint8_t)(crc >> 8);
	buf[len - 2] = (uint8_t)(crc >> 16);
	buf[len - 1] = (uint8_t)(crc >> 24);
	TFJ_CHECK_INT(tfj_ckpt_parse(&back, buf, len), 0);
	TFJ_CHECK_INT(back.global_step, 9);
	TFJ_CHECK_INT(back.optim_steps, 0);
	TFJ_CHECK_INT(back.vars[0].state_count, 12);
	tfj_ckpt_free(&back);
	buf[8] = 3;
	TFJ_CHECK_INT(tfj_ckpt_parse(&back, buf, len), TFJ_EPARSE);
	free(buf);
	unlink(path);
}

static void test_save_refusals(void)
{
	struct tfj_ckpt ck;
	struct tfj_ckpt_var vars[2];
	char small[8];

	fill(&ck, vars, 1);
	TFJ_CHECK_INT(tfj_ckpt_save(dir, "../evil", &ck, NULL, 0), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_ckpt_save(dir, ".hidden", &ck, NULL, 0), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_ckpt_save(dir, "", &ck, NULL, 0), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_ckpt_save(dir, "model", &ck, small, sizeof(small)), TFJ_ERANGE);
	vars[0].count = 5; /* disagrees with the shape */
	TFJ_CHECK_INT(tfj_ckpt_save(dir, "model", &ck, NULL, 0), TFJ_EINVAL);
	vars[0].count = 6;
	snprintf(vars[1].name, sizeof(vars[1].name), "dense_0/kernel");
	TFJ_CHECK_INT(tfj_ckpt_save(dir, "model", &ck, NULL, 0), TFJ_EINVAL); /* duplicate */
	snprintf(vars[1].name, sizeof(vars[1].name), "bad name");
	TFJ_CHECK_INT(tfj_ckpt_save(dir, "model", &ck, NULL, 0), TFJ_EINVAL);
	snprintf(vars[1].name, sizeof(vars[1].name), "dense_0/bias");
	bv[1] = NAN;
	TFJ_CHECK_INT(tfj_ckpt_save(dir, "model", &ck, NULL, 0), TFJ_ENUMERIC);
	bv[1] = 0.2f;
	ck.global_step = -1;
	TFJ_CHECK_INT(tfj_ckpt_save(dir, "model", &ck, NULL, 0), TFJ_EINVAL);
	ck.global_step = 1;
	TFJ_CHECK_INT(tfj_ckpt_save("/nonexistent-dir", "model", &ck, NULL, 0), TFJ_EIO);
}

/* Every single-byte change and every truncation of a valid file is refused. */
static void test_corruption(void)
{
	struct tfj_ckpt ck, back;
	struct tfj_ckpt_var vars[2];
	char path[512];
	uint8_t *buf;
	size_t len, i, accepted = 0;

	fill(&ck, vars, 77);
	TFJ_CHECK_INT(tfj_ckpt_save(dir, "corrupt", &ck, path, sizeof(path)), 0);
	buf = slurp(path, &len);
	TFJ_CHECK_NOT_NULL(buf);
	TFJ_CHECK_GT(len, 100);
	if (!buf)
		return;
	TFJ_CHECK_INT(tfj_ckpt_parse(&back, buf, len), 0);
	tfj_ckpt_free(&back);
	for (i = 0; i < len; i++) {
		uint8_t keep = buf[i];

		buf[i] ^= (uint8_t)(1u << (i % 8));
		if (tfj_ckpt_parse(&back, buf, len) == 0) {
			accepted++;
			tfj_ckpt_free(&back);
		}
		TFJ_CHECK(back.vars == NULL && back.n_vars == 0);
		buf[i] = keep;
	}
	TFJ_CHECK_INT(accepted, 0);
	for (i = 0; i < len; i++) {
		if (tfj_ckpt_parse(&back, buf, i) == 0) {
			accepted++;
			tfj_ckpt_free(&back);
		}
	}
	TFJ_CHECK_INT(accepted, 0);
	/* Through the file API, too, with the error kind and a detail. */
	{
		FILE *f = fopen(path, "r+b");

		TFJ_CHECK(f != NULL);
		if (f) {
			fseek(f, 40, SEEK_SET);
			fputc(buf[40] ^ 0xff, f);
			fclose(f);
		}
		TFJ_CHECK_INT(tfj_ckpt_load(&back, path), TFJ_EPARSE);
		TFJ_CHECK(strstr(tfj_err_detail(), "checksum") != NULL);
	}
	TFJ_CHECK_INT(tfj_ckpt_load(&back, "/dev/null"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_ckpt_load(&back, dir), TFJ_EINVAL);
	free(buf);
	unlink(path);
}

static void touch(const char *name)
{
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0)
		close(fd);
}

static void test_latest_and_prune(void)
{
	struct tfj_ckpt ck;
	struct tfj_ckpt_var vars[2];
	char path[512];
	int64_t step = -1;
	int64_t steps[4] = { 5, 100, 20, 99 };
	size_t i;

	TFJ_CHECK_INT(tfj_ckptdir_latest(path, sizeof(path), &step, dir, "run"), TFJ_ENOTFOUND);
	fill(&ck, vars, 0);
	for (i = 0; i < 4; i++) {
		ck.global_step = steps[i];
		TFJ_CHECK_INT(tfj_ckpt_save(dir, "run", &ck, NULL, 0), 0);
	}
	/* Distractors: temp files, other prefixes, odd spellings. */
	touch(".run-500.tfjc.tmp.123");
	touch("run-600.tfjc.partial");
	touch("run-0700.tfjc");
	touch("run-x.tfjc");
	touch("runner-900.tfjc");
	touch("run-99999999999999999999.tfjc");
	ck.global_step = 1000;
	TFJ_CHECK_INT(tfj_ckpt_save(dir, "other", &ck, NULL, 0), 0);
	TFJ_CHECK_INT(tfj_ckptdir_latest(path, sizeof(path), &step, dir, "run"), 0);
	TFJ_CHECK_INT(step, 100);
	TFJ_CHECK(strstr(path, "/run-100.tfjc") != NULL);
	TFJ_CHECK_INT(tfj_ckptdir_prune(dir, "run", 2), 0);
	TFJ_CHECK_INT(tfj_ckptdir_latest(path, sizeof(path), &step, dir, "run"), 0);
	TFJ_CHECK_INT(step, 100);
	snprintf(path, sizeof(path), "%s/run-99.tfjc", dir);
	TFJ_CHECK_INT(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/run-20.tfjc", dir);
	TFJ_CHECK(access(path, F_OK) != 0);
	snprintf(path, sizeof(path), "%s/other-1000.tfjc", dir);
	TFJ_CHECK_INT(access(path, F_OK), 0);
	TFJ_CHECK_INT(tfj_ckptdir_prune(dir, "run", 0), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_ckptdir_latest(path, 8, &step, dir, "run"), TFJ_ERANGE);
	TFJ_CHECK_INT(tfj_ckptdir_latest(path, sizeof(path), &step, "/nonexistent-dir", "run"),
		      TFJ_ENOTFOUND);
}

int main(void)
{
	if (tfj_testutil_tmpdir(dir, sizeof(dir), "tfj-test-ckpt")) {
		perror("mkdtemp");
		return 1;
	}
	TFJ_RUN(test_round_trip);
	TFJ_RUN(test_version1);
	TFJ_RUN(test_save_refusals);
	TFJ_RUN(test_corruption);
	TFJ_RUN(test_latest_and_prune);
	tfj_testutil_rmtree(dir);
	return tfj_test_finish();
}
