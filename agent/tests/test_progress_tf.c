/*
 * test_progress_tf.c - the built-in TensorFlow/Keras patterns, on output
 * recorded from the real tensorflow-cpu 2.21 image (scripts/build-tf-image;
 * agent/tests/fixtures/tensorflow, recorded with e2e/tfimage's programs and
 * a model.fit run) fed through the tracker in random chunks, and on single
 * lines for the edge cases.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/file.h>

#include "progress.h"
#include "progress_tf.h"
#include "tfj_test.h"

/* The fixture directory beside this source file. */
static void fixture_path(char *buf, size_t n, const char *name)
{
	const char *slash = strrchr(__FILE__, '/');
	int dirlen = slash ? (int)(slash - __FILE__) : 1;

	snprintf(buf, n, "%.*s/fixtures/tensorflow/%s", dirlen, slash ? __FILE__ : ".", name);
}

struct run {
	struct tfj_progress_state st;
	uint64_t changes;
	int step_went_back;
};

/* Feeds a recorded file in random chunks (1..64 bytes) on one stream. */
static struct run feed_fixture(const char *name, enum tfj_progress_stream s)
{
	struct tfj_progress_tracker t;
	struct run r;
	char path[512];
	char *data = NULL;
	size_t len = 0, off = 0;
	int64_t last = -1;

	memset(&r, 0, sizeof(r));
	fixture_path(path, sizeof(path), name);
	TFJ_CHECK_OK(tfj_file_read(&data, &len, path, 1 << 20, TFJ_FILE_REGULAR));
	TFJ_CHECK_OK(tfj_progress_tracker_init(&t, TFJ_PROGRESS_LINE_DEFAULT, NULL));
	while (data && off < len) {
		size_t n = 1 + tfj_test_below(64);

		if (n > len - off)
			n = len - off;
		if (tfj_progress_tracker_feed(&t, s, data + off, n)) {
			r.changes++;
			if (t.state.step < last)
				r.step_went_back = 1;
			last = t.state.step;
		}
		off += n;
	}
	tfj_progress_tracker_flush(&t);
	r.st = t.state;
	tfj_progress_tracker_free(&t);
	free(data);
	return r;
}

static int has(const struct tfj_progress_state *st, enum tfj_progrec_field f)
{
	return (st->have & TFJ_PROGREC_BIT(f)) != 0;
}

/* MultiWorkerMirroredStrategy worker 0: Keras 3 Progbar ('\r', ANSI), then the final record. */
static void test_recorded_mwms_progbar(void)
{
	struct run r = feed_fixture("mwms-worker0.stdout", TFJ_STREAM_STDOUT);

	/* 2 epochs x 6 redraws (steps 1,5,9,13,17,20 of 20) + the TFJ_PROGRESS record. */
	TFJ_CHECK_INT(r.st.records, 13);
	TFJ_CHECK_INT(r.step_went_back, 0);
	TFJ_CHECK_INT(r.st.step, 40);
	/* Epoch 1/2 and a 20-step bar: 40 steps in all. */
	TFJ_CHECK(has(&r.st, TFJ_PROGREC_TOTAL));
	TFJ_CHECK_INT(r.st.total_steps, 40);
	TFJ_CHECK_NEAR(r.st.loss, 1.0993, 1e-9);
	/* The final record's test accuracy is the last word. */
	TFJ_CHECK_NEAR(r.st.accuracy, 0.6305, 1e-9);
	/* Its stderr (absl and tf.data warnings) holds no progress. */
	r = feed_fixture("mwms-worker0.stderr", TFJ_STREAM_STDERR);
	TFJ_CHECK_INT(r.st.records, 0);
}

/* ParameterServerStrategy chief: tf logger "loss = X, step = N (T sec)" on stderr. */
static void test_recorded_ps_chief(void)
{
	struct run r = feed_fixture("ps-chief.stderr", TFJ_STREAM_STDERR);

	/* 10 log points, each line printed twice by TF's two handlers. */
	TFJ_CHECK_INT(r.st.records, 20);
	TFJ_CHECK_INT(r.step_went_back, 0);
	TFJ_CHECK_INT(r.st.step, 200);
	TFJ_CHECK_NEAR(r.st.loss, 0.7576, 1e-9);
	TFJ_CHECK(!has(&r.st, TFJ_PROGREC_ACCURACY));
	/* Estimator lines never say the training length: no total, not a guess. */
	TFJ_CHECK(!has(&r.st, TFJ_PROGREC_TOTAL));
	r = feed_fixture("ps-chief.stdout", TFJ_STREAM_STDOUT);
	TFJ_CHECK_INT(r.st.records, 1);
	TFJ_CHECK_NEAR(r.st.accuracy, 0.7131, 1e-9);
	/* A ps/worker task's log has nothing. */
	r = feed_fixture("ps-worker.log", TFJ_STREAM_STDERR);
	TFJ_CHECK_INT(r.st.records, 0);
}

/* model.fit, verbose 1 and 2, with validation: val_ items never count. */
static void test_recorded_keras_fit(void)
{
	struct run r = feed_fixture("keras-fit-verbose1.stdout", TFJ_STREAM_STDOUT);

	TFJ_CHECK_INT(r.st.records, 4);
	TFJ_CHECK_INT(r.step_went_back, 0);
	TFJ_CHECK_INT(r.st.step, 36); /* epoch 2, 18/18 */
	TFJ_CHECK_INT(r.st.total_steps, 36);
	TFJ_CHECK_NEAR(r.st.loss, 1.9998, 1e-9);
	TFJ_CHECK_NEAR(r.st.accuracy, 0.29, 1e-9);
	r = feed_fixture("keras-fit-verbose2.stdout", TFJ_STREAM_STDOUT);
	TFJ_CHECK_INT(r.st.records, 2);
	TFJ_CHECK_INT(r.st.step, 36);
	TFJ_CHECK_INT(r.st.total_steps, 36);
	TFJ_CHECK_NEAR(r.st.loss, 2.0735, 1e-9);
	TFJ_CHECK_NEAR(r.st.accuracy, 0.2456, 1e-9);
}

static int parse(struct tfj_progrec *out, struct tfj_progress_tf *st, const char *line)
{
	return tfj_progress_tf_parse(out, st, line);
}

static void test_lines(void)
{
	struct tfj_progress_tf st = { 0 };
	struct tfj_progrec r;

	/* Keras 2's bar, no epoch seen yet: the step is the step within the epoch. */
	TFJ_CHECK_INT(parse(&r, &st, "469/469 [==============================] - 3s 6ms/step - "
			    "loss: 0.5012 - acc: 0.8231"), 0);
	TFJ_CHECK_INT(r.step, 469);
	TFJ_CHECK_NEAR(r.loss, 0.5012, 1e-12);
	TFJ_CHECK_NEAR(r.accuracy, 0.8231, 1e-12);
	/* Epoch 3 of 5, step 10 of 100: global step 210. */
	TFJ_CHECK_INT(parse(&r, &st, "Epoch 3/5"), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(st.epoch, 3);
	TFJ_CHECK_INT(parse(&r, &st, " 10/100 - 1s - loss: 1e-3"), 0);
	TFJ_CHECK_INT(r.step, 210);
	TFJ_CHECK(!(r.have & TFJ_PROGREC_BIT(TFJ_PROGREC_ACCURACY)));
	/* Estimator evaluation. */
	TFJ_CHECK_INT(parse(&r, &st, "INFO:tensorflow:Saving dict for global step 600: "
			    "accuracy = 0.85, global_step = 600, loss = 0.41"), 0);
	TFJ_CHECK_INT(r.step, 600);
	TFJ_CHECK_NEAR(r.accuracy, 0.85, 1e-12);
	TFJ_CHECK_NEAR(r.loss, 0.41, 1e-12);
	/* Not progress: no items, no numbers, junk numbers, bad shapes. */
	TFJ_CHECK_INT(parse(&r, &st, "Epoch 9/5"), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(st.epoch, 3);
	TFJ_CHECK_INT(parse(&r, &st, "12/10 - loss: 0.5"), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(parse(&r, &st, "3/4 of the data loaded"), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(parse(&r, &st, "10/100 - val_loss: 0.5 - val_accuracy: 0.5"), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(parse(&r, &st, "INFO:tensorflow:loss = nan, step = 7"), 0);
	TFJ_CHECK_INT(r.step, 7);
	TFJ_CHECK(!(r.have & TFJ_PROGREC_BIT(TFJ_PROGREC_LOSS)));
	TFJ_CHECK_INT(parse(&r, &st, "loss = 0.5x, step = -3"), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(parse(&r, &st, "accuracy = 7"), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(parse(&r, &st, "the loss = function"), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(parse(&r, &st, "step = 99999999999999999999, loss = 1"), 0);
	TFJ_CHECK(!(r.have & TFJ_PROGREC_BIT(TFJ_PROGREC_STEP)));
	TFJ_CHECK_INT(parse(&r, &st, ""), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(parse(&r, &st, "\x1b[1m\x1b"), TFJ_ENOTFOUND);
}

/* The training length: Keras' Epoch E/N x the epoch's T. */
static void test_totals(void)
{
	struct tfj_progress_tf st = { 0 };
	struct tfj_progrec r;

	/* A bar before any Epoch line (a bare Progbar): a step, no total. */
	TFJ_CHECK_INT(parse(&r, &st, "412/500 [====>...] - ETA: 3s - loss: 0.1234 - accuracy: 0.9"), 0);
	TFJ_CHECK_INT(r.step, 412);
	TFJ_CHECK(!(r.have & TFJ_PROGREC_BIT(TFJ_PROGREC_TOTAL)));
	TFJ_CHECK_INT(parse(&r, &st, "Epoch 3/10"), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(parse(&r, &st, "412/500 [====>...] - ETA: 3s - loss: 0.1234 - accuracy: 0.9"), 0);
	TFJ_CHECK_INT(r.step, 1412);
	TFJ_CHECK(r.have & TFJ_PROGREC_BIT(TFJ_PROGREC_TOTAL));
	TFJ_CHECK_INT(r.total_steps, 5000);
	/* model.evaluate's bar after fit: its own T, so no total (its step is not fit's). */
	TFJ_CHECK_INT(parse(&r, &st, "313/313 - 1s - 2ms/step - accuracy: 0.87 - loss: 0.36"), 0);
	TFJ_CHECK(!(r.have & TFJ_PROGREC_BIT(TFJ_PROGREC_TOTAL)));
	/* The next Epoch line starts over: its first bar fixes T again. */
	TFJ_CHECK_INT(parse(&r, &st, "Epoch 4/10"), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(parse(&r, &st, "1/500 - loss: 0.2"), 0);
	TFJ_CHECK_INT(r.total_steps, 5000);
	TFJ_CHECK_INT(r.step, 1501);
	/* A huge epoch count that would overflow gives no total. */
	TFJ_CHECK_INT(parse(&r, &st, "Epoch 1/1000000000"), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(parse(&r, &st, "1/1000000000 - loss: 0.2"), 0);
	TFJ_CHECK(!(r.have & TFJ_PROGREC_BIT(TFJ_PROGREC_TOTAL)));
	/* tfjob-runtime's records carry their own max_steps: its log lines give nothing. */
	TFJ_CHECK_INT(parse(&r, &st, "ts=2026-11-28T07:00:00.123Z level=info comp=runtime "
			    "msg=\"worker:0: replica 0 of 2, 30000 examples, async, coordinator, "
			    "max_steps 4688\""), TFJ_ENOTFOUND);
}

/* Named metrics: every numeric item of the line but the step, bounded. */
static void test_named_metrics(void)
{
	struct tfj_progress_tf st = { 0 };
	struct tfj_progrec r;
	char line[1024];
	size_t len = 0;
	int i;

	TFJ_CHECK_INT(parse(&r, &st, "412/500 [====>...] - ETA: 3s - loss: 0.1234 - accuracy: 0.9 - "
			    "mae: 0.31 - val_loss: 0.6"), 0);
	TFJ_CHECK_INT(st.named.n, 4);
	TFJ_CHECK_STR(st.named.m[0].name, "loss");
	TFJ_CHECK_STR(st.named.m[2].name, "mae");
	TFJ_CHECK_NEAR(st.named.m[2].value, 0.31, 1e-12);
	TFJ_CHECK_STR(st.named.m[3].name, "val_loss");
	/* Estimator items: the step is STEP, not a named metric. */
	TFJ_CHECK_INT(parse(&r, &st, "INFO:tensorflow:loss = 0.43, step = 200 (0.25 sec)"), 0);
	TFJ_CHECK_INT(st.named.n, 1);
	TFJ_CHECK_STR(st.named.m[0].name, "loss");
	/* A line that is not progress leaves none. */
	TFJ_CHECK_INT(parse(&r, &st, "3/4 of the data loaded"), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(st.named.n, 0);
	/* At most 16 per line; a 64-character name is skipped. */
	len = (size_t)snprintf(line, sizeof(line), "1/9 - loss: 1 - %064d: 2", 0);
	for (i = 0; i < 20 && len < sizeof(line) - 16; i++)
		len += (size_t)snprintf(line + len, sizeof(line) - len, " - m%d: %d", i, i);
	TFJ_CHECK_INT(parse(&r, &st, line), 0);
	TFJ_CHECK_INT(st.named.n, TFJ_PROGREC_METRICS_MAX);
	TFJ_CHECK_STR(st.named.m[1].name, "m0");
}

/*
 * A terminal's Keras output (bars redrawn with '\r', ANSI colours) split at
 * every byte between two reads comes out the same: the framer joins lines.
 */
static void test_split_reads(void)
{
	static const char out[] = "Epoch 1/2\n\r\x1b[1m 5/20\x1b[0m \x1b[32m\xe2\x94\x81\x1b[0m "
				  "15ms/step - accuracy: 0.2969 - loss: 2.1612\r\x1b[1m20/20\x1b[0m "
				  "- 1s - accuracy: 0.5703 - loss: 1.6045\r\nEpoch 2/2\n 7/20 - "
				  "loss: 1.5";
	size_t cut, n = sizeof(out) - 1;

	for (cut = 0; cut <= n; cut++) {
		struct tfj_progress_tracker t;

		TFJ_CHECK_OK(tfj_progress_tracker_init(&t, TFJ_PROGRESS_LINE_DEFAULT, NULL));
		tfj_progress_tracker_feed(&t, TFJ_STREAM_STDOUT, out, cut);
		tfj_progress_tracker_feed(&t, TFJ_STREAM_STDOUT, out + cut, n - cut);
		tfj_progress_tracker_flush(&t);
		TFJ_CHECK_INT(t.state.records, 3);
		TFJ_CHECK_INT(t.state.step, 27);
		TFJ_CHECK_INT(t.state.total_steps, 40);
		TFJ_CHECK_NEAR(t.state.loss, 1.5, 1e-12);
		tfj_progress_tracker_free(&t);
	}
}

/* Random bytes and mutated real lines never crash and never fail. */
static void test_garbage(void)
{
	static const char *const seeds[] = {
		"\r\x1b[1m 5/20\x1b[0m \x1b[32m\xe2\x94\x81\x1b[0m 15ms/step - accuracy: 0.2969 - loss: 2.1612",
		"INFO:tensorflow:loss = 0.7576, step = 200 (0.108 sec)", "Epoch 1/2",
		"ts=x level=info comp=runtime msg=\"w, max_steps 4688\"",
	};
	struct tfj_progress_tf st = { 0 };
	struct tfj_progrec r;
	char line[256];
	int i, k;

	for (i = 0; i < 2000; i++) {
		const char *s = seeds[i % 4];
		size_t n = strlen(s);

		memcpy(line, s, n + 1);
		for (k = 0; k < 4; k++)
			line[tfj_test_below(n)] = (char)(1 + tfj_test_below(255));
		TFJ_CHECK(parse(&r, &st, line) == 0 || parse(&r, &st, line) == TFJ_ENOTFOUND);
	}
}

int main(void)
{
	TFJ_RUN(test_recorded_mwms_progbar);
	TFJ_RUN(test_recorded_ps_chief);
	TFJ_RUN(test_recorded_keras_fit);
	TFJ_RUN(test_lines);
	TFJ_RUN(test_totals);
	TFJ_RUN(test_named_metrics);
	TFJ_RUN(test_split_reads);
	TFJ_RUN(test_garbage);
	return tfj_test_finish();
}
