/*
 * test_summary.c - TensorBoard event files (src/summary): CRC32C against
 * the published vectors, TensorFlow's mask, the record framing byte by
 * byte, the Event encoding read back with protobuf-c (a 0.0 value still
 * present), the encoder's bounds, and the writer's file: its name, its
 * version record, whole records only, NULL writers and NaN values.
 * runtime/tests/tensorboard/ checks the same files with TensorBoard's own
 * reader.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/file.h>

#include "summary/evfile.h"
#include "summary/summary.h"
#include "tfj_tbevent.pb-c.h"
#include "tfj_test.h"
#include "tfj_testutil.h"

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* Whether `needle` (k bytes) occurs in p[0..n). */
static int has(const uint8_t *p, size_t n, const char *needle, size_t k)
{
	size_t i;

	for (i = 0; i + k <= n; i++)
		if (memcmp(p + i, needle, k) == 0)
			return 1;
	return 0;
}

/* RFC 3720, appendix B.4, and the customary "123456789" check value. */
static void test_crc32c_vectors(void)
{
	uint8_t buf[32];
	int i;

	TFJ_CHECK_INT(tfj_evfile_crc32c(0, "123456789", 9), 0xe3069283u);
	memset(buf, 0, sizeof(buf));
	TFJ_CHECK_INT(tfj_evfile_crc32c(0, buf, 32), 0x8a9136aau);
	memset(buf, 0xff, sizeof(buf));
	TFJ_CHECK_INT(tfj_evfile_crc32c(0, buf, 32), 0x62a8ab43u);
	for (i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	TFJ_CHECK_INT(tfj_evfile_crc32c(0, buf, 32), 0x46dd794eu);
	for (i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	TFJ_CHECK_INT(tfj_evfile_crc32c(0, buf, 32), 0x113fdb5cu);
	/* Continuing a CRC over a split buffer gives the CRC of the whole. */
	TFJ_CHECK_INT(tfj_evfile_crc32c(tfj_evfile_crc32c(0, buf, 13), buf + 13, 19), 0x113fdb5cu);
	TFJ_CHECK_INT(tfj_evfile_crc32c(0, "", 0), 0u);
}

/* TensorFlow's mask: rotate right by 15, add 0xa282ead8 (worked by hand). */
static void test_mask(void)
{
	TFJ_CHECK_INT(tfj_evfile_mask(0), 0xa282ead8u);
	TFJ_CHECK_INT(tfj_evfile_mask(0x12345678u), 0x4f730f40u);
}

static void test_frame_layout(void)
{
	uint8_t out[64];
	size_t len = 0;

	TFJ_CHECK_OK(tfj_evfile_frame(out, sizeof(out), &len, "hello", 5));
	TFJ_CHECK_INT(len, 8 + 4 + 5 + 4);
	TFJ_CHECK_INT(le64(out), 5);
	TFJ_CHECK_INT(le32(out + 8), tfj_evfile_mask(tfj_evfile_crc32c(0, out, 8)));
	TFJ_CHECK(memcmp(out + 12, "hello", 5) == 0);
	TFJ_CHECK_INT(le32(out + 17), tfj_evfile_mask(tfj_evfile_crc32c(0, "hello", 5)));
	/* An empty record is legal: header and footer only. */
	TFJ_CHECK_OK(tfj_evfile_frame(out, sizeof(out), &len, NULL, 0));
	TFJ_CHECK_INT(len, 16);
	TFJ_CHECK_INT(le32(out + 12), 0xa282ead8u);
	/* Bounds: the frame must fit, and the data must be under the cap. */
	TFJ_CHECK_INT(tfj_evfile_frame(out, 20, &len, "hello", 5), TFJ_ETOOBIG);
	TFJ_CHECK_INT(tfj_evfile_frame(out, sizeof(out), &len, out, TFJ_EVFILE_MAX_DATA + 1),
		      TFJ_ETOOBIG);
}

static void test_encode_event(void)
{
	static const struct tfj_summary_value v[] = {
		{ "loss", 0.25 }, { "accuracy", 0.0 }, { "global_step/sec", 1234.5 },
	};
	uint8_t out[512];
	size_t len = 0;
	Tfj__Tensorboard__Event *ev;

	TFJ_CHECK_OK(tfj_summary_encode(out, sizeof(out), &len, 1795850821.5, 4242, v, 3));
	ev = tfj__tensorboard__event__unpack(NULL, len, out);
	TFJ_CHECK_NOT_NULL(ev);
	if (!ev)
		return;
	TFJ_CHECK_EQ(ev->wall_time, 1795850821.5);
	TFJ_CHECK_INT(ev->step, 4242);
	TFJ_CHECK_INT(ev->what_case, TFJ__TENSORBOARD__EVENT__WHAT_SUMMARY);
	TFJ_CHECK_INT(ev->summary->n_value, 3);
	TFJ_CHECK_STR(ev->summary->value[0]->tag, "loss");
	TFJ_CHECK_EQ(ev->summary->value[0]->simple_value, 0.25f);
	TFJ_CHECK_STR(ev->summary->value[1]->tag, "accuracy");
	/* The 0.0 is on the wire (field 2, fixed32: 0x15 and four zero bytes). */
	TFJ_CHECK_INT(ev->summary->value[1]->value_case,
		      TFJ__TENSORBOARD__SUMMARY__VALUE__VALUE_SIMPLE_VALUE);
	TFJ_CHECK(has(out, len, "accuracy\x15\0\0\0\0", 13));
	TFJ_CHECK_EQ(ev->summary->value[2]->simple_value, 1234.5f);
	tfj__tensorboard__event__free_unpacked(ev, NULL);
	/* TensorFlow's field numbers: wall_time 1 (fixed64), step 2 (varint), summary 5. */
	TFJ_CHECK_INT(out[0], 0x09);
	TFJ_CHECK_INT(out[9], 0x10);
	TFJ_CHECK(memchr(out, 0x2a, len) != NULL);

	TFJ_CHECK_OK(tfj_summary_encode_version(out, sizeof(out), &len, 1.0));
	ev = tfj__tensorboard__event__unpack(NULL, len, out);
	TFJ_CHECK_NOT_NULL(ev);
	if (!ev)
		return;
	TFJ_CHECK_INT(ev->what_case, TFJ__TENSORBOARD__EVENT__WHAT_FILE_VERSION);
	TFJ_CHECK_STR(ev->file_version, "brain.Event:2");
	TFJ_CHECK(has(out, len, "\x1a\x0d" "brain.Event:2", 15));
	tfj__tensorboard__event__free_unpacked(ev, NULL);
}

static void test_encode_bounds(void)
{
	struct tfj_summary_value v[TFJ_SUMMARY_MAX_VALUES + 1];
	char longtag[TFJ_SUMMARY_MAX_TAG + 2];
	uint8_t out[4096];
	size_t len = 7, i;

	for (i = 0; i < TFJ_SUMMARY_MAX_VALUES + 1; i++) {
		v[i].tag = "t";
		v[i].value = 1;
	}
	TFJ_CHECK_INT(tfj_summary_encode(out, sizeof(out), &len, 0, 1, v, 0), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_summary_encode(out, sizeof(out), &len, 0, 1, v,
					 TFJ_SUMMARY_MAX_VALUES + 1), TFJ_EINVAL);
	TFJ_CHECK_OK(tfj_summary_encode(out, sizeof(out), &len, 0, 1, v, TFJ_SUMMARY_MAX_VALUES));
	TFJ_CHECK_INT(tfj_summary_encode(out, 8, &len, 0, 1, v, 1), TFJ_ETOOBIG);
	v[0].tag = "";
	TFJ_CHECK_INT(tfj_summary_encode(out, sizeof(out), &len, 0, 1, v, 1), TFJ_EINVAL);
	v[0].tag = NULL;
	TFJ_CHECK_INT(tfj_summary_encode(out, sizeof(out), &len, 0, 1, v, 1), TFJ_EINVAL);
	memset(longtag, 'x', sizeof(longtag) - 1);
	longtag[sizeof(longtag) - 1] = '\0';
	v[0].tag = longtag;
	TFJ_CHECK_INT(tfj_summary_encode(out, sizeof(out), &len, 0, 1, v, 1), TFJ_EINVAL);
	longtag[TFJ_SUMMARY_MAX_TAG] = '\0';
	TFJ_CHECK_OK(tfj_summary_encode(out, sizeof(out), &len, 0, 1, v, 1));
	/* NaN is "not known yet": left out, and all-NaN encodes nothing. */
	v[0].tag = "rate";
	v[0].value = NAN;
	TFJ_CHECK_OK(tfj_summary_encode(out, sizeof(out), &len, 0, 1, v, 1));
	TFJ_CHECK_INT(len, 0);
	TFJ_CHECK_OK(tfj_summary_encode(out, sizeof(out), &len, 0, 1, v, 2));
	TFJ_CHECK(len > 0 && !has(out, len, "rate", 4));
}

/*
 * Walks a file's records as TensorBoard does, checking both CRCs; returns
 * the number of whole records and sets *tail to the bytes after them.
 */
static size_t walk(const uint8_t *p, size_t n, size_t *tail, int64_t *last_step)
{
	size_t off = 0, count = 0;

	while (n - off >= 12) {
		uint64_t dl = le64(p + off);
		Tfj__Tensorboard__Event *ev;

		if (le32(p + off + 8) != tfj_evfile_mask(tfj_evfile_crc32c(0, p + off, 8)) ||
		    dl > n - off - 12 || n - off - 12 - dl < 4)
			break;
		if (le32(p + off + 12 + dl) !=
		    tfj_evfile_mask(tfj_evfile_crc32c(0, p + off + 12, (size_t)dl)))
			break;
		ev = tfj__tensorboard__event__unpack(NULL, (size_t)dl, p + off + 12);
		if (!ev)
			break;
		*last_step = ev->step;
		tfj__tensorboard__event__free_unpacked(ev, NULL);
		off += 12 + (size_t)dl + 4;
		count++;
	}
	*tail = n - off;
	return count;
}

static void test_writer_file(void)
{
	char dir[256], runs[300];
	struct tfj_summary *w = NULL, *w2 = NULL;
	char *data = NULL;
	size_t len = 0, tail = 99;
	int64_t last = -1, s;
	const char *path, *base;

	if (tfj_testutil_tmpdir(dir, sizeof(dir), "tfj-test-summary")) {
		TFJ_CHECK(0);
		return;
	}
	/* The run must be one path component under an existing logdir. */
	TFJ_CHECK_INT(tfj_summary_open(&w, dir, "../x"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_summary_open(&w, "", "train"), TFJ_EINVAL);
	snprintf(runs, sizeof(runs), "%s/missing", dir);
	TFJ_CHECK_INT(tfj_summary_open(&w, runs, "train"), TFJ_EIO);
	TFJ_CHECK_OK(tfj_summary_open(&w, dir, "train"));
	/* Two writers in the same second and process still get two files. */
	TFJ_CHECK_OK(tfj_summary_open(&w2, dir, "train"));
	TFJ_CHECK(w && w2 && strcmp(tfj_summary_path(w), tfj_summary_path(w2)) != 0);
	path = tfj_summary_path(w);
	base = strrchr(path, '/');
	TFJ_CHECK(base && strncmp(base, "/events.out.tfevents.", 21) == 0);
	/* The rate needs a previous point: NaN first, left out of the record. */
	TFJ_CHECK(isnan(tfj_summary_rate(w, 0)));
	for (s = 1; s <= 50; s++)
		TFJ_CHECK_OK(tfj_summary_scalars(w, s * 10, (const struct tfj_summary_value[]){
			{ "loss", 1.0 / (double)s }, { "global_step/sec", tfj_summary_rate(w, s * 10) } },
			2));
	/* A step that went back (a restart from a checkpoint) has no rate either. */
	TFJ_CHECK(isnan(tfj_summary_rate(w, 10)));
	TFJ_CHECK(tfj_summary_rate(w, 20) >= 0);
	/* Written before the call returned: no close needed to read it all. */
	TFJ_CHECK_OK(tfj_file_read(&data, &len, path, 1 << 20, TFJ_FILE_REGULAR));
	TFJ_CHECK_INT(walk((const uint8_t *)data, len, &tail, &last), 51);
	TFJ_CHECK_INT(tail, 0);
	TFJ_CHECK_INT(last, 500);
	/* A cut anywhere inside the last record leaves 50 whole records. */
	for (size_t cut = 1; data && cut < 40; cut += 3) {
		TFJ_CHECK_INT(walk((const uint8_t *)data, len - cut, &tail, &last), 50);
		TFJ_CHECK_INT(last, 490);
	}
	free(data);
	tfj_summary_free(w);
	tfj_summary_free(w2);
	tfj_testutil_rmtree(dir);
}

/* Without --logdir the writer is NULL and every call does nothing. */
static void test_null_writer(void)
{
	TFJ_CHECK_OK(tfj_summary_scalars(NULL, 1, (const struct tfj_summary_value[]){
		{ "loss", 1 } }, 1));
	TFJ_CHECK(isnan(tfj_summary_rate(NULL, 5)));
	TFJ_CHECK_STR(tfj_summary_path(NULL), "");
	tfj_summary_free(NULL);
	tfj_evfile_close(NULL);
}

int main(void)
{
	TFJ_RUN(test_crc32c_vectors);
	TFJ_RUN(test_mask);
	TFJ_RUN(test_frame_layout);
	TFJ_RUN(test_encode_event);
	TFJ_RUN(test_encode_bounds);
	TFJ_RUN(test_writer_file);
	TFJ_RUN(test_null_writer);
	return tfj_test_finish();
}
