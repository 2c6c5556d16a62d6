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

#define ALL_BITS (TFJ_PROGREC_BIT(TFJ_PROGREC_STEP) | TFJ_PROGREC_BIT(TFJ_PROGREC_LOSS) | \
		  TFJ_PROGREC_BIT(TFJ_PROGREC_ACCURACY) | TFJ_PROGREC_BIT(TFJ_PROGREC_EPS))

/* Parses the line the writer made, without its newline. */
static int parse_line(struct tfj_progrec *out, const char *line, size_t len)
{
	TFJ_CHECK(len > 0 && line[len - 1] == '\n');
	return tfj_progrec_parse(out, line, len > 0 ? len - 1 : 0);
}

/* The three records tfjob-runtime writes (trainer.c), byte for byte. */
static void test_runtime_records_exact(void)
{
	char line[TFJ_PROGREC_MAX + 1];
	struct tfj_progrec_writer w;
	struct tfj_progrec r;
	size_t n;

	tfj_progrec_begin(&w, line, sizeof(line), "worker", 1);
	tfj_progrec_int(&w, TFJ_PROGREC_KEY_STEP, 1200);
	tfj_progrec_int(&w, TFJ_PROGREC_KEY_LOCAL_STEP, 600);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_LOSS, NAN);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_EXAMPLES_PER_SEC, 812.5);
	tfj_progrec_int(&w, TFJ_PROGREC_KEY_STALE, 0);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_PULL_MS, 1.5);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_COMPUTE_MS, 3.0);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_PUSH_MS, 1.25);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_TIME_S, 12.5);
	n = tfj_progrec_end(&w);
	TFJ_CHECK_STR(line, "TFJ_PROGRESS {\"role\":\"worker\",\"index\":1,\"step\":1200,"
		      "\"local_step\":600,\"loss\":null,\"examples_per_sec\":812.5,\"stale\":0,"
		      "\"pull_ms\":1.5,\"compute_ms\":3,\"push_ms\":1.25,\"time_s\":12.5}\n");
	TFJ_CHECK_INT(n, strlen(line));
	TFJ_CHECK_INT(parse_line(&r, line, n), 0);
	TFJ_CHECK_INT(r.have, TFJ_PROGREC_BIT(TFJ_PROGREC_STEP) | TFJ_PROGREC_BIT(TFJ_PROGREC_EPS));
	TFJ_CHECK_INT(r.step, 1200);
	TFJ_CHECK(r.examples_per_sec == 812.5);

	tfj_progrec_begin(&w, line, sizeof(line), "chief", 0);
	tfj_progrec_bool(&w, TFJ_PROGREC_KEY_FINAL, 1);
	tfj_progrec_int(&w, TFJ_PROGREC_KEY_STEP, 4688);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_TEST_ACCURACY, 0.8812f);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_TEST_LOSS, 0.336f);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_EXAMPLES, 300032.0);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_EXAMPLES_PER_SEC, 5000.25);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_TRAIN_S, 60.0);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_TIME_S, 1.0 / 3.0);
	n = tfj_progrec_end(&w);
	TFJ_CHECK_STR(line, "TFJ_PROGRESS {\"role\":\"chief\",\"index\":0,\"final\":true,"
		      "\"step\":4688,\"test_accuracy\":0.8812,\"test_loss\":0.336,"
		      "\"examples\":300032,\"examples_per_sec\":5000.25,\"train_s\":60,"
		      "\"time_s\":0.333333}\n");
	TFJ_CHECK_INT(parse_line(&r, line, n), 0);
	TFJ_CHECK_INT(r.have, TFJ_PROGREC_BIT(TFJ_PROGREC_STEP) |
		      TFJ_PROGREC_BIT(TFJ_PROGREC_ACCURACY) | TFJ_PROGREC_BIT(TFJ_PROGREC_EPS));
	TFJ_CHECK_INT(r.step, 4688);
	/* test_accuracy is the accuracy the agent reports, at %.6g precision. */
	TFJ_CHECK(r.accuracy == 0.8812);

	tfj_progrec_begin(&w, line, sizeof(line), "evaluator", 0);
	tfj_progrec_int(&w, TFJ_PROGREC_KEY_STEP, 900);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_ACCURACY, 0.75);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_LOSS, INFINITY);
	tfj_progrec_bool(&w, TFJ_PROGREC_KEY_FINAL, 0);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_TIME_S, -INFINITY);
	n = tfj_progrec_end(&w);
	TFJ_CHECK_STR(line, "TFJ_PROGRESS {\"role\":\"evaluator\",\"index\":0,\"step\":900,"
		      "\"accuracy\":0.75,\"loss\":null,\"final\":false,\"time_s\":null}\n");
	TFJ_CHECK_INT(parse_line(&r, line, n), 0);
	TFJ_CHECK_INT(r.have, TFJ_PROGREC_BIT(TFJ_PROGREC_STEP) |
		      TFJ_PROGREC_BIT(TFJ_PROGREC_ACCURACY));
	TFJ_CHECK(r.accuracy == 0.75);
}

/* Every key the runtime writes, in one record: the object holds exactly
 * those keys, and the reader takes its four fields from them. */
static void test_runtime_key_set(void)
{
	static const char *const keys[] = {
		TFJ_PROGREC_KEY_ROLE, TFJ_PROGREC_KEY_INDEX, TFJ_PROGREC_KEY_FINAL,
		TFJ_PROGREC_KEY_STEP, TFJ_PROGREC_KEY_LOCAL_STEP, TFJ_PROGREC_KEY_LOSS,
		TFJ_PROGREC_KEY_ACCURACY, TFJ_PROGREC_KEY_EXAMPLES_PER_SEC, TFJ_PROGREC_KEY_STALE,
		TFJ_PROGREC_KEY_PULL_MS, TFJ_PROGREC_KEY_COMPUTE_MS, TFJ_PROGREC_KEY_PUSH_MS,
		TFJ_PROGREC_KEY_TEST_ACCURACY, TFJ_PROGREC_KEY_TEST_LOSS, TFJ_PROGREC_KEY_EXAMPLES,
		TFJ_PROGREC_KEY_TRAIN_S, TFJ_PROGREC_KEY_TIME_S
	};
	const size_t plen = strlen(TFJ_PROGREC_PREFIX);
	char line[TFJ_PROGREC_MAX + 1];
	struct tfj_progrec_writer w;
	struct tfj_progrec r;
	const cJSON *item;
	cJSON *doc = NULL;
	size_t n, i = 0;

	tfj_progrec_begin(&w, line, sizeof(line), "chief", 3);
	tfj_progrec_bool(&w, TFJ_PROGREC_KEY_FINAL, 1);
	tfj_progrec_int(&w, TFJ_PROGREC_KEY_STEP, 7);
	tfj_progrec_int(&w, TFJ_PROGREC_KEY_LOCAL_STEP, 5);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_LOSS, 0.5);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_ACCURACY, 0.25);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_EXAMPLES_PER_SEC, 100);
	tfj_progrec_int(&w, TFJ_PROGREC_KEY_STALE, 2);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_PULL_MS, 1);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_COMPUTE_MS, 2);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_PUSH_MS, 3);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_TEST_ACCURACY, 0.875);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_TEST_LOSS, 0.125);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_EXAMPLES, 640);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_TRAIN_S, 6.5);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_TIME_S, 7.5);
	n = tfj_progrec_end(&w);
	TFJ_CHECK(n > plen + 1);
	TFJ_CHECK(strncmp(line, TFJ_PROGREC_PREFIX, plen) == 0);
	TFJ_CHECK_INT(tfj_json_parse(&doc, line + plen, n - plen - 1, TFJ_PROGREC_MAX), 0);
	cJSON_ArrayForEach(item, doc) {
		TFJ_CHECK(i < sizeof(keys) / sizeof(keys[0]));
		if (i < sizeof(keys) / sizeof(keys[0]))
			TFJ_CHECK_STR(item->string, keys[i]);
		i++;
	}
	TFJ_CHECK_INT(i, sizeof(keys) / sizeof(keys[0]));
	cJSON_Delete(doc);

	TFJ_CHECK_INT(parse_line(&r, line, n), 0);
	TFJ_CHECK_INT(r.have, ALL_BITS);
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

/* A value of at most six significant digits, which %.6g writes exactly. */
static double six_digit_value(void)
{
	static const double scale[] = { 1, 10, 100, 1000, 1e4, 1e5, 1e6 };
	double v = (double)tfj_test_below(1000000) / scale[tfj_test_below(7)];

	return tfj_test_below(4) == 0 ? -v : v;
}

static double maybe_non_finite(int *finite)
{
	switch (tfj_test_below(8)) {
	case 0:
		*finite = 0;
		return NAN;
	case 1:
		*finite = 0;
		return INFINITY;
	case 2:
		*finite = 0;
		return -INFINITY;
	default:
		*finite = 1;
		return six_digit_value();
	}
}

/*
 * Property: random records in the runtime's key set, each field present or
 * absent, numbers finite or not. What the reader returns is exactly what was
 * written: a field is present iff it was written finite, with the same value.
 */
static void test_round_trip_random(void)
{
	char line[TFJ_PROGREC_MAX + 1];
	int iter;

	for (iter = 0; iter < 2000; iter++) {
		struct tfj_progrec_writer w;
		struct tfj_progrec want, got;
		int fin, acc_key = (int)tfj_test_below(2);
		double v;
		size_t n;
		int rc;

		memset(&want, 0, sizeof(want));
		tfj_progrec_begin(&w, line, sizeof(line), tfj_test_below(2) ? "worker" : "chief",
				  (int)tfj_test_below(100));
		if (tfj_test_below(2))
			tfj_progrec_bool(&w, TFJ_PROGREC_KEY_FINAL, (int)tfj_test_below(2));
		if (tfj_test_below(2)) {
			want.step = (int64_t)(tfj_test_rand() >> 12);
			want.have |= TFJ_PROGREC_BIT(TFJ_PROGREC_STEP);
			tfj_progrec_int(&w, TFJ_PROGREC_KEY_STEP, want.step);
		}
		tfj_progrec_int(&w, TFJ_PROGREC_KEY_LOCAL_STEP, (int64_t)tfj_test_below(1000));
		if (tfj_test_below(2)) {
			v = maybe_non_finite(&fin);
			tfj_progrec_num(&w, TFJ_PROGREC_KEY_LOSS, v);
			if (fin) {
				want.loss = v;
				want.have |= TFJ_PROGREC_BIT(TFJ_PROGREC_LOSS);
			}
		}
		if (tfj_test_below(2)) {
			v = maybe_non_finite(&fin);
			tfj_progrec_num(&w, acc_key ? TFJ_PROGREC_KEY_ACCURACY
					: TFJ_PROGREC_KEY_TEST_ACCURACY, v);
			if (fin) {
				want.accuracy = v;
				want.have |= TFJ_PROGREC_BIT(TFJ_PROGREC_ACCURACY);
			}
		}
		if (tfj_test_below(2)) {
			v = maybe_non_finite(&fin);
			tfj_progrec_num(&w, TFJ_PROGREC_KEY_EXAMPLES_PER_SEC, v);
			if (fin) {
				want.examples_per_sec = v;
				want.have |= TFJ_PROGREC_BIT(TFJ_PROGREC_EPS);
			}
		}
		v = maybe_non_finite(&fin);
		tfj_progrec_num(&w, TFJ_PROGREC_KEY_TIME_S, v);
		n = tfj_progrec_end(&w);
		TFJ_CHECK_INT(n, strlen(line));

		rc = parse_line(&got, line, n);
		if (want.have == 0) {
			/* Nothing the reader knows: not a progress update. */
			TFJ_CHECK_INT(rc, TFJ_EPARSE);
			TFJ_CHECK_INT(got.have, 0);
			continue;
		}
		TFJ_CHECK_INT(rc, 0);
		TFJ_CHECK_INT(got.have, want.have);
		TFJ_CHECK_INT(got.step, want.step);
		TFJ_CHECK(got.loss == want.loss);
		TFJ_CHECK(got.accuracy == want.accuracy);
		TFJ_CHECK(got.examples_per_sec == want.examples_per_sec);
		if (rc != 0 || got.have != want.have || got.loss != want.loss ||
		    got.accuracy != want.accuracy || got.examples_per_sec != want.examples_per_sec) {
			fprintf(stderr, "record: %s", line);
			break;
		}
	}
}

/* Numbers are written with %.6g: more digits are rounded, not kept. */
static void test_precision(void)
{
	char line[TFJ_PROGREC_MAX + 1];
	struct tfj_progrec_writer w;
	struct tfj_progrec r;
	size_t n;

	tfj_progrec_begin(&w, line, sizeof(line), "worker", 0);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_LOSS, 0.123456789);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_EXAMPLES_PER_SEC, 1234567.0);
	tfj_progrec_int(&w, TFJ_PROGREC_KEY_STEP, TFJ_JSON_INT_MAX);
	n = tfj_progrec_end(&w);
	TFJ_CHECK_INT(parse_line(&r, line, n), 0);
	TFJ_CHECK(r.loss == 0.123457);
	TFJ_CHECK(r.examples_per_sec == 1.23457e6);
	TFJ_CHECK_INT(r.step, TFJ_JSON_INT_MAX);
}

/* The record never exceeds its cap and always stays one complete record. */
static void test_bounds(void)
{
	char line[TFJ_PROGREC_MAX + 64], key[TFJ_PROGREC_MAX], small[48];
	struct tfj_progrec_writer w;
	struct tfj_progrec r;
	const char *at;
	size_t n, k;

	/* A field that does not fit is left out whole; later ones still go in. */
	memset(key, 'k', 600);
	key[600] = '\0';
	tfj_progrec_begin(&w, line, TFJ_PROGREC_MAX + 1, "worker", 0);
	tfj_progrec_int(&w, TFJ_PROGREC_KEY_STEP, 5);
	tfj_progrec_num(&w, key, 1.0);
	tfj_progrec_num(&w, key, 1.0);
	tfj_progrec_num(&w, TFJ_PROGREC_KEY_LOSS, 2.0);
	n = tfj_progrec_end(&w);
	TFJ_CHECK(n <= TFJ_PROGREC_MAX);
	at = strstr(line, key);
	TFJ_CHECK(at != NULL && strstr(at + 1, key) == NULL);
	TFJ_CHECK_INT(parse_line(&r, line, n), 0);
	TFJ_CHECK_INT(r.have, TFJ_PROGREC_BIT(TFJ_PROGREC_STEP) | TFJ_PROGREC_BIT(TFJ_PROGREC_LOSS));
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
	TFJ_CHECK_STR(line, "TFJ_PROGRESS {\"error\":\"record too long\"}\n");
	TFJ_CHECK_INT(n, strlen(line));
	TFJ_CHECK_INT(parse_line(&r, line, n), TFJ_EPARSE);
	/* One byte shorter and it fits exactly: TFJ_PROGREC_MAX bytes. */
	tfj_progrec_begin(&w, line, sizeof(line), "worker", 0);
	key[k - 1] = '\0';
	tfj_progrec_num(&w, key, NAN);
	TFJ_CHECK_INT(tfj_progrec_end(&w), TFJ_PROGREC_MAX);
	TFJ_CHECK_INT(strlen(line), TFJ_PROGREC_MAX);

	/* A role that does not fit gives the error record, never a headless line. */
	tfj_progrec_begin(&w, small, sizeof(small), key, 0);
	tfj_progrec_int(&w, TFJ_PROGREC_KEY_STEP, 1);
	n = tfj_progrec_end(&w);
	TFJ_CHECK_STR(small, "TFJ_PROGRESS {\"error\":\"record too long\"}\n");
	TFJ_CHECK_INT(n, strlen(small));

	/* Too small for even that: an empty line is made, not a cut one. */
	tfj_progrec_begin(&w, small, 20, "worker", 0);
	TFJ_CHECK_INT(tfj_progrec_end(&w), 0);
	TFJ_CHECK_STR(small, "");
	tfj_progrec_begin(&w, small, 0, "worker", 0);
	TFJ_CHECK_INT(tfj_progrec_end(&w), 0);
}

static int parse_str(struct tfj_progrec *r, const char *s)
{
	return tfj_progrec_parse(r, s, strlen(s));
}

static void test_reader(void)
{
	struct tfj_progrec r;

	/* Other trainers' spellings, null as absent, CR and blanks at the end. */
	TFJ_CHECK_INT(parse_str(&r, "TFJ_PROGRESS {\"global_step\":9,\"examples_per_second\":2.5,"
				"\"test_accuracy\":0.5,\"loss\":null}\r "), 0);
	TFJ_CHECK_INT(r.have, TFJ_PROGREC_BIT(TFJ_PROGREC_STEP) |
		      TFJ_PROGREC_BIT(TFJ_PROGREC_EPS) | TFJ_PROGREC_BIT(TFJ_PROGREC_ACCURACY));
	TFJ_CHECK_INT(r.step, 9);
	TFJ_CHECK(r.examples_per_sec == 2.5);
	TFJ_CHECK(r.accuracy == 0.5);
	/* The canonical key wins over its alias. */
	TFJ_CHECK_INT(parse_str(&r, "TFJ_PROGRESS {\"global_step\":1,\"step\":2}"), 0);
	TFJ_CHECK_INT(r.step, 2);
	/* Not a record at all, against a malformed one. */
	TFJ_CHECK_INT(parse_str(&r, "step 1"), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(parse_str(&r, "TFJ_PROGRESS"), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(parse_str(&r, "TFJ_PROGRESS {\"step\":true}"), TFJ_ETYPE);
	TFJ_CHECK_INT(parse_str(&r, "TFJ_PROGRESS {\"loss\":1e999}"), TFJ_ETYPE);
	TFJ_CHECK_INT(parse_str(&r, "TFJ_PROGRESS {\"step\":-1}"), TFJ_ERANGE);
	TFJ_CHECK_INT(parse_str(&r, "TFJ_PROGRESS {\"time_s\":1}"), TFJ_EPARSE);
	TFJ_CHECK_INT(r.have, 0);
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
