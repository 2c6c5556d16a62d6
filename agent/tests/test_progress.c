/*
 * test_progress.c - runtime records, the progress regex and line framing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include "progress.h"
#include "progress_regex.h"
#include "tfj_test.h"

static int rec(struct tfj_progrec *p, const char *line)
{
	return tfj_progrec_parse(p, line, strlen(line));
}

static void test_record_fields(void)
{
	struct tfj_progrec p;

	TFJ_CHECK_INT(rec(&p, "TFJ_PROGRESS {\"step\":120,\"loss\":0.25,\"accuracy\":0.9,"
			  "\"examples_per_sec\":1500.5,\"task\":\"worker:0\"}"), 0);
	TFJ_CHECK_INT(p.have, TFJ_PROGREC_BIT(TFJ_PROGREC_STEP) | TFJ_PROGREC_BIT(TFJ_PROGREC_LOSS) |
		      TFJ_PROGREC_BIT(TFJ_PROGREC_ACCURACY) | TFJ_PROGREC_BIT(TFJ_PROGREC_EPS));
	TFJ_CHECK_INT(p.step, 120);
	TFJ_CHECK(p.loss == 0.25);
	TFJ_CHECK(p.accuracy == 0.9);
	TFJ_CHECK(p.examples_per_sec == 1500.5);
	/* Aliases, CR and trailing blanks. */
	TFJ_CHECK_INT(rec(&p, "TFJ_PROGRESS {\"global_step\":7}\r"), 0);
	TFJ_CHECK_INT(p.have, TFJ_PROGREC_BIT(TFJ_PROGREC_STEP));
	TFJ_CHECK_INT(p.step, 7);
	TFJ_CHECK_INT(rec(&p, "TFJ_PROGRESS {\"loss\":1e-3}  "), 0);
	TFJ_CHECK_INT(p.have, TFJ_PROGREC_BIT(TFJ_PROGREC_LOSS));
	/* Records exactly as tfjob-runtime writes them (runtime/src/worker/trainer.c):
	 * a NaN loss arrives as null and is simply absent. */
	TFJ_CHECK_INT(rec(&p, "TFJ_PROGRESS {\"role\":\"worker\",\"index\":1,\"step\":1200,"
			  "\"local_step\":600,\"loss\":null,\"examples_per_sec\":812.5,\"stale\":0,"
			  "\"pull_ms\":1.5,\"compute_ms\":3,\"push_ms\":1.25,\"time_s\":12.5}"), 0);
	TFJ_CHECK_INT(p.have, TFJ_PROGREC_BIT(TFJ_PROGREC_STEP) | TFJ_PROGREC_BIT(TFJ_PROGREC_EPS));
	TFJ_CHECK_INT(p.step, 1200);
	TFJ_CHECK_INT(rec(&p, "TFJ_PROGRESS {\"role\":\"chief\",\"index\":0,\"final\":true,"
			  "\"step\":5000,\"test_accuracy\":0.861,\"test_loss\":0.39}"), 0);
	TFJ_CHECK_INT(p.step, 5000);
	TFJ_CHECK(p.accuracy == 0.861);
	TFJ_CHECK_INT(p.have, TFJ_PROGREC_BIT(TFJ_PROGREC_STEP) | TFJ_PROGREC_BIT(TFJ_PROGREC_ACCURACY));
	/* The runtime's overflow record has no progress in it. */
	TFJ_CHECK_LT(rec(&p, "TFJ_PROGRESS {\"error\":\"record too long\"}"), 0);
}

static void test_record_rejects(void)
{
	struct tfj_progrec p;

	TFJ_CHECK_INT(rec(&p, "step 5 loss 1"), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(rec(&p, "TFJ_PROGRESS"), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(rec(&p, " TFJ_PROGRESS {\"step\":1}"), TFJ_ENOTFOUND);
	TFJ_CHECK_LT(rec(&p, "TFJ_PROGRESS {\"step\":1"), 0);
	TFJ_CHECK_LT(rec(&p, "TFJ_PROGRESS {\"step\":1} trailing"), 0);
	TFJ_CHECK_LT(rec(&p, "TFJ_PROGRESS [1,2]"), 0);
	TFJ_CHECK_LT(rec(&p, "TFJ_PROGRESS {}"), 0);
	TFJ_CHECK_LT(rec(&p, "TFJ_PROGRESS {\"other\":1}"), 0);
	TFJ_CHECK_LT(rec(&p, "TFJ_PROGRESS {\"step\":\"12\"}"), 0);
	TFJ_CHECK_LT(rec(&p, "TFJ_PROGRESS {\"step\":-1}"), 0);
	TFJ_CHECK_LT(rec(&p, "TFJ_PROGRESS {\"step\":1.5}"), 0);
	TFJ_CHECK_LT(rec(&p, "TFJ_PROGRESS {\"step\":1,\"loss\":\"nan\"}"), 0);
	TFJ_CHECK_LT(rec(&p, "TFJ_PROGRESS {\"step\":1e300}"), 0);
	TFJ_CHECK_INT(p.have, 0);
	/* An embedded NUL ends the JSON early: trailing garbage, rejected. */
	TFJ_CHECK_LT(tfj_progrec_parse(&p, "TFJ_PROGRESS {\"step\":1}\0x", 26), 0);
}

static void test_regex_named(void)
{
	struct tfj_progress_regex re;
	struct tfj_progrec p;

	TFJ_CHECK_INT(tfj_progress_regex_compile(&re, "step (?<step>\\d+) loss (?<loss>[0-9.]+)"), 0);
	TFJ_CHECK_INT(tfj_progress_regex_check(&re), 0);
	TFJ_CHECK_INT(re.group[TFJ_PROGREC_STEP], 1);
	TFJ_CHECK_INT(re.group[TFJ_PROGREC_LOSS], 2);
	TFJ_CHECK_INT(tfj_progress_regex_match(&p, &re, "Epoch 1: step 42 loss 0.125 ok"), 0);
	TFJ_CHECK_INT(p.step, 42);
	TFJ_CHECK(p.loss == 0.125);
	TFJ_CHECK_INT(p.have, TFJ_PROGREC_BIT(TFJ_PROGREC_STEP) | TFJ_PROGREC_BIT(TFJ_PROGREC_LOSS));
	TFJ_CHECK_INT(tfj_progress_regex_match(&p, &re, "step x loss 1"), TFJ_ENOTFOUND);
	/* The number matched by [0-9.]+ is not a number: that field is dropped. */
	TFJ_CHECK_INT(tfj_progress_regex_match(&p, &re, "step 3 loss 1.2.3"), 0);
	TFJ_CHECK_INT(p.have, TFJ_PROGREC_BIT(TFJ_PROGREC_STEP));
	tfj_progress_regex_free(&re);

	/* Groups inside brackets are not groups; escaped parens neither. */
	TFJ_CHECK_INT(tfj_progress_regex_compile(&re, "\\(([(]x)?acc=(?<accuracy>[[:digit:].]+)\\)"), 0);
	TFJ_CHECK_INT(re.group[TFJ_PROGREC_ACCURACY], 2);
	TFJ_CHECK_INT(tfj_progress_regex_match(&p, &re, "(acc=0.75)"), 0);
	TFJ_CHECK(p.accuracy == 0.75);
	tfj_progress_regex_free(&re);
}

static void test_regex_mapped_and_errors(void)
{
	struct tfj_progress_regex re;
	struct tfj_progrec p;

	TFJ_CHECK_INT(tfj_progress_regex_compile(&re, "it=([0-9]+)[[:space:]]+([0-9.]+) ex/s"), 0);
	TFJ_CHECK_LT(tfj_progress_regex_check(&re), 0); /* nothing mapped yet */
	TFJ_CHECK_INT(tfj_progress_regex_map_spec(&re, "step=1"), 0);
	TFJ_CHECK_INT(tfj_progress_regex_map_spec(&re, "examples_per_sec=2"), 0);
	TFJ_CHECK_LT(tfj_progress_regex_map_spec(&re, "loss=3"), 0);
	TFJ_CHECK_LT(tfj_progress_regex_map_spec(&re, "bogus=1"), 0);
	TFJ_CHECK_LT(tfj_progress_regex_map_spec(&re, "step"), 0);
	TFJ_CHECK_LT(tfj_progress_regex_map_spec(&re, "step=x"), 0);
	TFJ_CHECK_INT(tfj_progress_regex_check(&re), 0);
	TFJ_CHECK_INT(tfj_progress_regex_match(&p, &re, "it=9   300.5 ex/s"), 0);
	TFJ_CHECK_INT(p.step, 9);
	TFJ_CHECK(p.examples_per_sec == 300.5);
	tfj_progress_regex_free(&re);

	TFJ_CHECK_LT(tfj_progress_regex_compile(&re, ""), 0);
	TFJ_CHECK_LT(tfj_progress_regex_compile(&re, "(?<nope>1)"), 0);
	TFJ_CHECK_LT(tfj_progress_regex_compile(&re, "(?<step>1)(?<step>2)"), 0);
	TFJ_CHECK_LT(tfj_progress_regex_compile(&re, "(?:x)"), 0);
	TFJ_CHECK_LT(tfj_progress_regex_compile(&re, "(?<step"), 0);
	TFJ_CHECK_LT(tfj_progress_regex_compile(&re, "([0-9]"), 0);
	TFJ_CHECK_LT(tfj_progress_regex_compile(&re, "[abc"), 0);
	TFJ_CHECK_LT(tfj_progress_regex_compile(&re, "abc\\"), 0);
	{
		char big[TFJ_PROGRESS_REGEX_MAX + 2];
		memset(big, 'a', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		TFJ_CHECK_INT(tfj_progress_regex_compile(&re, big), TFJ_ETOOBIG);
	}
	/* Every \d of a maximal pattern still fits after translation. */
	{
		char big[TFJ_PROGRESS_REGEX_MAX + 1];
		size_t i;
		for (i = 0; i + 2 <= TFJ_PROGRESS_REGEX_MAX; i += 2)
			memcpy(big + i, "\\W", 2);
		big[i] = '\0';
		TFJ_CHECK_INT(tfj_progress_regex_compile(&re, big), 0);
		tfj_progress_regex_free(&re);
	}
	tfj_progress_regex_free(NULL);
}

static void test_tracker_framing(void)
{
	struct tfj_progress_tracker t;
	struct tfj_progress_regex re;
	const char *text = "hello\nTFJ_PROGRESS {\"step\":1,\"loss\":2}\nnoise\r\n"
			   "TFJ_PROGRESS {\"step\":2}\nTFJ_PROGRESS {broken\n";
	size_t i;

	TFJ_CHECK_INT(tfj_progress_regex_compile(&re, "step (?<step>\\d+)"), 0);
	TFJ_CHECK_INT(tfj_progress_tracker_init(&t, 256, &re), 0);
	/* Byte by byte: framing must not depend on how reads split the output. */
	for (i = 0; text[i]; i++)
		tfj_progress_tracker_feed(&t, TFJ_STREAM_STDOUT, text + i, 1);
	TFJ_CHECK_INT(t.state.step, 2);
	TFJ_CHECK(t.state.loss == 2.0);
	TFJ_CHECK_INT(t.state.records, 2);
	TFJ_CHECK_INT(t.bad_records, 1);
	TFJ_CHECK_INT(t.lines, 5);
	/* Records only count on stdout; the regex applies to stderr too. */
	TFJ_CHECK_INT(tfj_progress_tracker_feed(&t, TFJ_STREAM_STDERR,
						"TFJ_PROGRESS {\"step\":99}\n", 25), 0);
	TFJ_CHECK_INT(t.state.step, 2);
	TFJ_CHECK_INT(tfj_progress_tracker_feed(&t, TFJ_STREAM_STDERR, "step 5\n", 7), 1);
	TFJ_CHECK_INT(t.state.step, 5);
	/* A final line without newline is parsed at flush. */
	tfj_progress_tracker_feed(&t, TFJ_STREAM_STDOUT, "TFJ_PROGRESS {\"step\":6}", 23);
	TFJ_CHECK_INT(t.state.step, 5);
	TFJ_CHECK_INT(tfj_progress_tracker_flush(&t), 1);
	TFJ_CHECK_INT(t.state.step, 6);
	tfj_progress_tracker_free(&t);
	tfj_progress_regex_free(&re);
}

static void test_tracker_long_lines(void)
{
	struct tfj_progress_tracker t;
	char *big = malloc(5000);
	size_t n;

	TFJ_CHECK(big != NULL);
	if (!big)
		return;
	TFJ_CHECK_INT(tfj_progress_tracker_init(&t, 256, NULL), 0);
	/* A record longer than the cap is not parsed, even though it is valid. */
	n = (size_t)snprintf(big, 5000, "TFJ_PROGRESS {\"step\":77,\"pad\":\"%0400d\"}\n", 0);
	tfj_progress_tracker_feed(&t, TFJ_STREAM_STDOUT, big, n);
	TFJ_CHECK_INT(t.long_lines, 1);
	TFJ_CHECK_INT(t.state.records, 0);
	/* The next line is framed correctly again. */
	tfj_progress_tracker_feed(&t, TFJ_STREAM_STDOUT, "TFJ_PROGRESS {\"step\":3}\n", 24);
	TFJ_CHECK_INT(t.state.step, 3);
	/* Exactly at the cap is still parsed. */
	memset(big, ' ', 256);
	memcpy(big, "TFJ_PROGRESS {\"step\":4}", 23);
	big[256] = '\n';
	tfj_progress_tracker_feed(&t, TFJ_STREAM_STDOUT, big, 257);
	TFJ_CHECK_INT(t.state.step, 4);
	big[257] = '\n';
	memcpy(big, "TFJ_PROGRESS {\"step\":8}", 23);
	memset(big + 23, ' ', 234);
	big[257] = '\n';
	tfj_progress_tracker_feed(&t, TFJ_STREAM_STDOUT, big, 258);
	TFJ_CHECK_INT(t.state.step, 4);
	TFJ_CHECK_INT(t.long_lines, 2);
	/* Garbage with NULs and high bytes. */
	{
		unsigned char g[300];
		size_t i;
		for (i = 0; i < sizeof(g); i++)
			g[i] = (unsigned char)tfj_test_below(256);
		tfj_progress_tracker_feed(&t, TFJ_STREAM_STDOUT, (const char *)g, sizeof(g));
		tfj_progress_tracker_feed(&t, TFJ_STREAM_STDERR, (const char *)g, sizeof(g));
		tfj_progress_tracker_flush(&t);
	}
	tfj_progress_tracker_free(&t);
	TFJ_CHECK_LT(tfj_progress_tracker_init(&t, 10, NULL), 0);
	TFJ_CHECK_LT(tfj_progress_tracker_init(&t, TFJ_PROGRESS_LINE_MAX + 1, NULL), 0);
	tfj_progress_tracker_free(&t);
	tfj_progress_tracker_free(NULL);
	free(big);
}

static void test_tail(void)
{
	struct tfj_progress_tracker t;
	char out[TFJ_PROGRESS_TAIL + 1];
	char line[64];
	int i;

	TFJ_CHECK_INT(tfj_progress_tracker_init(&t, 1024, NULL), 0);
	tfj_progress_tracker_feed(&t, TFJ_STREAM_STDERR, "first\nsecond\n\n", 14);
	tfj_progress_tracker_tail(&t, out, sizeof(out));
	TFJ_CHECK_STR(out, "first\nsecond");
	for (i = 0; i < 200; i++) {
		int n = snprintf(line, sizeof(line), "error line %d\n", i);
		tfj_progress_tracker_feed(&t, TFJ_STREAM_STDERR, line, (size_t)n);
	}
	tfj_progress_tracker_tail(&t, out, sizeof(out));
	TFJ_CHECK_LE(strlen(out), TFJ_PROGRESS_TAIL);
	TFJ_CHECK(strncmp(out, "error line ", 11) == 0); /* starts at a line */
	TFJ_CHECK(strstr(out, "error line 199") != NULL);
	TFJ_CHECK(out[strlen(out) - 1] == '9');
	tfj_progress_tracker_tail(&t, out, 8);
	TFJ_CHECK_STR(out, "ine 199");
	tfj_progress_tracker_free(&t);
}

int main(void)
{
	TFJ_RUN(test_record_fields);
	TFJ_RUN(test_record_rejects);
	TFJ_RUN(test_regex_named);
	TFJ_RUN(test_regex_mapped_and_errors);
	TFJ_RUN(test_tracker_framing);
	TFJ_RUN(test_tracker_long_lines);
	TFJ_RUN(test_tail);
	return tfj_test_finish();
}
