/*
 * test_progrec.c - the progress record: the bytes the writer produces, and
 * writer and reader agreeing (what is written is what is read back).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tfj/err.h"
#include "tfj/json.h"
#include "tfj/progrec.h"
#include "tfj_test.h"

#define BIT(f) TFJ_PROGREC_BIT(TFJ_PROGREC_##f)

/* One field to write: an integer, a number or a boolean, under `key`. */
struct field {
	char kind;        /* 'i', 'n' or 'b' */
	const char *key;
	double v;         /* integers and booleans are cast */
};

static char line[TFJ_PROGREC_MAX + 64];
static struct tfj_progrec_writer w;

static void put_field(const struct field *f)
{
	if (f->kind == 'i')
		tfj_progrec_int(&w, f->key, (int64_t)f->v);
	else if (f->kind == 'b')
		tfj_progrec_bool(&w, f->key, (int)f->v);
	else
		tfj_progrec_num(&w, f->key, f->v);
}

/* Writes a record of the runtime's size into `line`; returns its length. */
static size_t write_record(const char *role, int index, const struct field *f, size_t n)
{
	size_t i;

	tfj_progrec_begin(&w, line, TFJ_PROGREC_MAX + 1, role, index);
	for (i = 0; i < n; i++)
		put_field(&f[i]);
	return tfj_progrec_end(&w);
}

/* Parses the line the writer made, without its newline. */
static int read_back(struct tfj_progrec *out, size_t len)
{
	TFJ_CHECK(len > 0 && line[len - 1] == '\n');
	TFJ_CHECK_INT(len, strlen(line));
	return tfj_progrec_parse(out, line, len > 0 ? len - 1 : 0);
}

/* The three records tfjob-runtime writes (trainer.c), byte for byte, and
 * what the agent reads from each. */
static void test_runtime_records_exact(void)
{
	static const struct field worker[] = {
		{ 'i', TFJ_PROGREC_KEY_STEP, 1200 }, { 'i', TFJ_PROGREC_KEY_LOCAL_STEP, 600 },
		{ 'n', TFJ_PROGREC_KEY_LOSS, NAN }, { 'n', TFJ_PROGREC_KEY_EXAMPLES_PER_SEC, 812.5 },
		{ 'i', TFJ_PROGREC_KEY_STALE, 0 }, { 'n', TFJ_PROGREC_KEY_PULL_MS, 1.5 },
		{ 'n', TFJ_PROGREC_KEY_COMPUTE_MS, 3.0 }, { 'n', TFJ_PROGREC_KEY_PUSH_MS, 1.25 },
		{ 'n', TFJ_PROGREC_KEY_TIME_S, 12.5 },
	};
	/* The runtime passes float accuracies: %.6g gives back their decimal. */
	static const struct field chief[] = {
		{ 'b', TFJ_PROGREC_KEY_FINAL, 1 }, { 'i', TFJ_PROGREC_KEY_STEP, 4688 },
		{ 'n', TFJ_PROGREC_KEY_TEST_ACCURACY, 0.8812f },
		{ 'n', TFJ_PROGREC_KEY_TEST_LOSS, 0.336f }, { 'n', TFJ_PROGREC_KEY_EXAMPLES, 300032 },
		{ 'n', TFJ_PROGREC_KEY_EXAMPLES_PER_SEC, 5000.25 },
		{ 'n', TFJ_PROGREC_KEY_TRAIN_S, 60.0 }, { 'n', TFJ_PROGREC_KEY_TIME_S, 1.0 / 3.0 },
	};
	static const struct field evaluator[] = {
		{ 'i', TFJ_PROGREC_KEY_STEP, 900 }, { 'n', TFJ_PROGREC_KEY_ACCURACY, 0.75 },
		{ 'n', TFJ_PROGREC_KEY_LOSS, INFINITY }, { 'b', TFJ_PROGREC_KEY_FINAL, 0 },
		{ 'n', TFJ_PROGREC_KEY_TIME_S, -INFINITY },
	};
	struct tfj_progrec r;
	size_t n;

	n = write_record("worker", 1, worker, sizeof(worker) / sizeof(worker[0]));
	TFJ_CHECK_STR(line, "TFJ_PROGRESS {\"role\":\"worker\",\"index\":1,\"step\":1200,"
		      "\"local_step\":600,\"loss\":null,\"examples_per_sec\":812.5,\"stale\":0,"
		      "\"pull_ms\":1.5,\"compute_ms\":3,\"push_ms\":1.25,\"time_s\":12.5}\n");
	TFJ_CHECK_INT(read_back(&r, n), 0);
	TFJ_CHECK_INT(r.have, BIT(STEP) | BIT(EPS));
	TFJ_CHECK_INT(r.step, 1200);
	TFJ_CHECK(r.examples_per_sec == 812.5);

	n = write_record("chief", 0, chief, sizeof(chief) / sizeof(chief[0]));
	TFJ_CHECK_STR(line, "TFJ_PROGRESS {\"role\":\"chief\",\"index\":0,\"final\":true,"
		      "\"step\":4688,\"test_accuracy\":0.8812,\"test_loss\":0.336,"
		      "\"examples\":300032,\"examples_per_sec\":5000.25,\"train_s\":60,"
		      "\"time_s\":0.333333}\n");
	TFJ_CHECK_INT(read_back(&r, n), 0);
	TFJ_CHECK_INT(r.have, BIT(STEP) | BIT(ACCURACY) | BIT(EPS));
	TFJ_CHECK_INT(r.step, 4688);
	TFJ_CHECK(r.accuracy == 0.8812);
	TFJ_CHECK(r.examples_per_sec == 5000.25);

	n = write_record("evaluator", 0, evaluator, sizeof(evaluator) / sizeof(evaluator[0]));
	TFJ_CHECK_STR(line, "TFJ_PROGRESS {\"role\":\"evaluator\",\"index\":0,\"step\":900,"
		      "\"accuracy\":0.75,\"loss\":null,\"final\":false,\"time_s\":null}\n");
	TFJ_CHECK_INT(read_back(&r, n), 0);
	TFJ_CHECK_INT(r.have, BIT(STEP) | BIT(ACCURACY));
	TFJ_CHECK(r.accuracy == 0.75);
}

/*
 * Every key the runtime writes (docs/runtime-protocol.md), each in its
 * type, in one record: the object holds exactly those keys in that order,
 * and the reader takes its four fields from them.
 */
static void test_runtime_key_set(void)
{
	static const struct field all[] = {
		{ 'b', TFJ_PROGREC_KEY_FINAL, 1 }, { 'i', TFJ_PROGREC_KEY_STEP, 7 },
		{ 'i', TFJ_PROGREC_KEY_LOCAL_STEP, 5 }, { 'n', TFJ_PROGREC_KEY_LOSS, 0.5 },
		{ 'n', TFJ_PROGREC_KEY_ACCURACY, 0.25 },
		{ 'n', TFJ_PROGREC_KEY_EXAMPLES_PER_SEC, 100 }, { 'i', TFJ_PROGREC_KEY_STALE, 2 },
		{ 'n', TFJ_PROGREC_KEY_PULL_MS, 1 }, { 'n', TFJ_PROGREC_KEY_COMPUTE_MS, 2 },
		{ 'n', TFJ_PROGREC_KEY_PUSH_MS, 3 }, { 'n', TFJ_PROGREC_KEY_TEST_ACCURACY, 0.875 },
		{ 'n', TFJ_PROGREC_KEY_TEST_LOSS, 0.125 }, { 'n', TFJ_PROGREC_KEY_EXAMPLES, 640 },
		{ 'n', TFJ_PROGREC_KEY_TRAIN_S, 6.5 }, { 'n', TFJ_PROGREC_KEY_TIME_S, 7.5 },
	};
	const size_t nall = sizeof(all) / sizeof(all[0]), plen = strlen(TFJ_PROGREC_PREFIX);
	struct tfj_progrec r;
	const cJSON *item;
	cJSON *doc = NULL;
	size_t n, i = 0;

	n = write_record("chief", 3, all, nall);
	TFJ_CHECK(n > plen + 1);
	TFJ_CHECK(strncmp(line, TFJ_PROGREC_PREFIX, plen) == 0);
	TFJ_CHECK_INT(tfj_json_parse(&doc, line + plen, n - plen - 1, TFJ_PROGREC_MAX), 0);
	cJSON_ArrayForEach(item, doc) {
		/* role and index first, then the fields as written. */
		const char *want = i == 0 ? TFJ_PROGREC_KEY_ROLE : i == 1 ? TFJ_PROGREC_KEY_INDEX
			: i - 2 < nall ? all[i - 2].key : "(none)";

		TFJ_CHECK_STR(item->string, want);
		i++;
	}
	TFJ_CHECK_INT(i, nall + 2);
	cJSON_Delete(doc);

	TFJ_CHECK_INT(read_back(&r, n), 0);
	TFJ_CHECK_INT(r.have, BIT(STEP) | BIT(LOSS) | BIT(ACCURACY) | BIT(EPS));
	TFJ_CHECK_INT(r.step, 7);
	TFJ_CHECK(r.loss == 0.5);
	/* "accuracy" wins over "test_accuracy" when a record has both. */
	TFJ_CHECK(r.accuracy == 0.25);
	TFJ_CHECK(r.examples_per_sec == 100);
	for (i = 0; i < TFJ_PROGREC_NFIELDS; i++)
		TFJ_CHECK(tfj_progrec_field_name((enum tfj_progrec_field)i) != NULL);
	TFJ_CHECK_STR(tfj_progrec_field_name(TFJ_PROGREC_STEP), TFJ_PROGREC_KEY_STEP);
	TFJ_CHECK_STR(tfj_progrec_field_name(TFJ_PROGREC_EPS), TFJ_PROGREC_KEY_EXAMPLES_PER_SEC);
	TFJ_CHECK(tfj_progrec_field_name(TFJ_PROGREC_NFIELDS) == NULL);
}

/* A value of at most six significant digits, which %.6g writes exactly;
 * one draw in eight is NaN or an infinity instead. */
static double draw_number(int *finite)
{
	static const double scale[] = { 1, 10, 100, 1000, 1e4, 1e5, 1e6 };
	static const double odd[] = { NAN, INFINITY, -INFINITY };
	uint64_t pick = tfj_test_below(8);
	double v = (double)tfj_test_below(1000000) / scale[tfj_test_below(7)];

	*finite = pick >= 3;
	if (pick < 3)
		return odd[pick];
	return pick == 3 ? -v : v;
}

/* Writes the reader's field f as key (finite or not); records what to expect. */
static void put_random(struct tfj_progrec *want, enum tfj_progrec_field f, const char *key,
		       double *dst)
{
	int finite;
	double v = draw_number(&finite);

	if (!tfj_test_below(2))
		return;
	tfj_progrec_num(&w, key, v);
	if (finite) {
		*dst = v;
		want->have |= TFJ_PROGREC_BIT(f);
	}
}

/*
 * Property: random records in the runtime's key set, each field present or
 * absent, numbers finite or not. What the reader returns is exactly what was
 * written: a field is present iff it was written finite, with the same value.
 */
static void test_round_trip_random(void)
{
	int iter, finite;

	for (iter = 0; iter < 2000; iter++) {
		struct tfj_progrec want, got;
		size_t n;
		int rc;

		memset(&want, 0, sizeof(want));
		tfj_progrec_begin(&w, line, TFJ_PROGREC_MAX + 1,
				  tfj_test_below(2) ? "worker" : "chief", (int)tfj_test_below(100));
		if (tfj_test_below(2))
			tfj_progrec_bool(&w, TFJ_PROGREC_KEY_FINAL, (int)tfj_test_below(2));
		if (tfj_test_below(2)) {
			want.step = (int64_t)(tfj_test_rand() >> 12);
			want.have |= BIT(STEP);
			tfj_progrec_int(&w, TFJ_PROGREC_KEY_STEP, want.step);
		}
		tfj_progrec_int(&w, TFJ_PROGREC_KEY_LOCAL_STEP, (int64_t)tfj_test_below(1000));
		put_random(&want, TFJ_PROGREC_LOSS, TFJ_PROGREC_KEY_LOSS, &want.loss);
		put_random(&want, TFJ_PROGREC_ACCURACY, tfj_test_below(2) ? TFJ_PROGREC_KEY_ACCURACY
			   : TFJ_PROGREC_KEY_TEST_ACCURACY, &want.accuracy);
		put_random(&want, TFJ_PROGREC_EPS, TFJ_PROGREC_KEY_EXAMPLES_PER_SEC,
			   &want.examples_per_sec);
		tfj_progrec_num(&w, TFJ_PROGREC_KEY_TIME_S, draw_number(&finite));
		n = tfj_progrec_end(&w);

		rc = read_back(&got, n);
		/* Nothing the reader knows is not a progress update. */
		TFJ_CHECK_INT(rc, want.have ? 0 : TFJ_EPARSE);
		TFJ_CHECK_INT(got.have, want.have);
		TFJ_CHECK_INT(got.step, want.step);
		TFJ_CHECK(got.loss == want.loss);
		TFJ_CHECK(got.accuracy == want.accuracy);
		TFJ_CHECK(got.examples_per_sec == want.examples_per_sec);
		if (got.have != want.have || got.step != want.step || got.loss != want.loss ||
		    got.accuracy != want.accuracy || got.examples_per_sec != want.examples_per_sec) {
			fprintf(stderr, "record: %s", line);
			break;
		}
	}
}

/* Numbers are written with %.6g: more digits are rounded, not kept. */
static void test_precision(void)
{
	static const struct field f[] = {
		{ 'n', TFJ_PROGREC_KEY_LOSS, 0.123456789 },
		{ 'n', TFJ_PROGREC_KEY_EXAMPLES_PER_SEC, 1234567.0 },
		{ 'i', TFJ_PROGREC_KEY_STEP, (double)TFJ_JSON_INT_MAX },
	};
	struct tfj_progrec r;

	TFJ_CHECK_INT(read_back(&r, write_record("worker", 0, f, 3)), 0);
	TFJ_CHECK(r.loss == 0.123457);
	TFJ_CHECK(r.examples_per_sec == 1.23457e6);
	TFJ_CHECK_INT(r.step, TFJ_JSON_INT_MAX);
}

/* The record never exceeds its cap and always stays one complete record. */
static void test_bounds(void)
{
	static const char too_long[] = "TFJ_PROGRESS {\"error\":\"record too long\"}\n";
	char key[TFJ_PROGREC_MAX], small[48];
	struct field f[4] = {
		{ 'i', TFJ_PROGREC_KEY_STEP, 5 }, { 'n', key, 1.0 }, { 'n', key, 1.0 },
		{ 'n', TFJ_PROGREC_KEY_LOSS, 2.0 },
	};
	struct tfj_progrec r;
	const char *at;
	size_t n, k;

	/* A field that does not fit is left out whole; later ones still go in. */
	memset(key, 'k', 600);
	key[600] = '\0';
	n = write_record("worker", 0, f, 4);
	TFJ_CHECK(n <= TFJ_PROGREC_MAX);
	at = strstr(line, key);
	TFJ_CHECK(at != NULL && strstr(at + 1, key) == NULL);
	TFJ_CHECK_INT(read_back(&r, n), 0);
	TFJ_CHECK_INT(r.have, BIT(STEP) | BIT(LOSS));
	TFJ_CHECK(r.loss == 2.0);

	/* A larger buffer does not raise the cap. When the fields leave one byte,
	 * too few for the closing "}\n", the record says so instead. */
	tfj_progrec_begin(&w, line, sizeof(line), "worker", 0);
	TFJ_CHECK_INT(w.max, TFJ_PROGREC_MAX);
	k = w.max - w.len - 1 - strlen(",\"\":null");
	TFJ_CHECK(k < sizeof(key));
	memset(key, 'k', k);
	key[k] = '\0';
	tfj_progrec_num(&w, key, NAN);
	TFJ_CHECK_INT(w.len, TFJ_PROGREC_MAX - 1);
	n = tfj_progrec_end(&w);
	TFJ_CHECK_STR(line, too_long);
	TFJ_CHECK_INT(read_back(&r, n), TFJ_EPARSE);
	/* One byte shorter and it fits exactly: TFJ_PROGREC_MAX bytes. */
	tfj_progrec_begin(&w, line, sizeof(line), "worker", 0);
	key[k - 1] = '\0';
	tfj_progrec_num(&w, key, NAN);
	TFJ_CHECK_INT(tfj_progrec_end(&w), TFJ_PROGREC_MAX);
	TFJ_CHECK_INT(strlen(line), TFJ_PROGREC_MAX);

	/* A role that does not fit gives the error record, never a headless line. */
	tfj_progrec_begin(&w, small, sizeof(small), key, 0);
	tfj_progrec_int(&w, TFJ_PROGREC_KEY_STEP, 1);
	TFJ_CHECK_INT(tfj_progrec_end(&w), strlen(too_long));
	TFJ_CHECK_STR(small, too_long);

	/* Too small for even that: an empty line is made, not a cut one. */
	tfj_progrec_begin(&w, small, 20, "worker", 0);
	TFJ_CHECK_INT(tfj_progrec_end(&w), 0);
	TFJ_CHECK_STR(small, "");
	tfj_progrec_begin(&w, small, 0, "worker", 0);
	TFJ_CHECK_INT(tfj_progrec_end(&w), 0);
}

static void test_reader(void)
{
	/* Lines and what the reader says: other trainers' spellings, null as
	 * absent, CR and blanks at the end; not a record against a bad one. */
	static const struct {
		const char *line;
		int rc;
		unsigned have;
		int64_t step;
	} cases[] = {
		{ "TFJ_PROGRESS {\"global_step\":9,\"examples_per_second\":2.5,"
		  "\"test_accuracy\":0.5,\"loss\":null}\r ", 0, BIT(STEP) | BIT(EPS) | BIT(ACCURACY), 9 },
		{ "TFJ_PROGRESS {\"global_step\":1,\"step\":2}", 0, BIT(STEP), 2 },
		{ "step 1", TFJ_ENOTFOUND, 0, 0 },
		{ "TFJ_PROGRESS", TFJ_ENOTFOUND, 0, 0 },
		{ "TFJ_PROGRESS {\"step\":true}", TFJ_ETYPE, 0, 0 },
		{ "TFJ_PROGRESS {\"loss\":1e999}", TFJ_ETYPE, 0, 0 },
		{ "TFJ_PROGRESS {\"step\":-1}", TFJ_ERANGE, 0, 0 },
		{ "TFJ_PROGRESS {\"time_s\":1}", TFJ_EPARSE, 0, 0 },
		/* The training length alone is a record; zero steps to run is not a length. */
		{ "TFJ_PROGRESS {\"max_steps\":500}", 0, BIT(TOTAL), 0 },
		{ "TFJ_PROGRESS {\"step\":3,\"total_steps\":50}", 0, BIT(STEP) | BIT(TOTAL), 3 },
		{ "TFJ_PROGRESS {\"step\":3,\"max_steps\":0}", TFJ_ERANGE, 0, 0 },
		{ "TFJ_PROGRESS {\"max_steps\":2.5}", TFJ_ETYPE, 0, 0 },
	};
	struct tfj_progrec r;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		TFJ_CHECK_INT(tfj_progrec_parse(&r, cases[i].line, strlen(cases[i].line)), cases[i].rc);
		TFJ_CHECK_INT(r.have, cases[i].have);
		TFJ_CHECK_INT(r.step, cases[i].step);
	}
	/* The first case's numbers. */
	TFJ_CHECK_INT(tfj_progrec_parse(&r, cases[0].line, strlen(cases[0].line)), 0);
	TFJ_CHECK(r.examples_per_sec == 2.5);
	TFJ_CHECK(r.accuracy == 0.5);
	/* max_steps wins over total_steps. */
	{
		static const char both[] = "TFJ_PROGRESS {\"total_steps\":9,\"max_steps\":8}";

		TFJ_CHECK_INT(tfj_progrec_parse(&r, both, sizeof(both) - 1), 0);
	}
	TFJ_CHECK_INT(r.total_steps, 8);
	TFJ_CHECK_STR(tfj_progrec_field_name(TFJ_PROGREC_TOTAL), TFJ_PROGREC_KEY_MAX_STEPS);
}

int main(void)
{
	TFJ_RUN(test_runtime_records_exact);
	TFJ_RUN(test_runtime_key_set);
	TFJ_RUN(test_round_trip_random);
	TFJ_RUN(test_precision);
	TFJ_RUN(test_bounds);
	TFJ_RUN(test_reader);
	return tfj_test_finish();
}
