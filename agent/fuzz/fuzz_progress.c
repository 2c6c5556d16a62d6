/*
 * fuzz_progress.c - libFuzzer target for the progress line parser: runtime
 * records, the regex matcher and the line framer (split at a point taken
 * from the input), plus the termination message encoder fed the same bytes
 * as the stderr tail it would carry.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "progress.h"
#include "progress_regex.h"
#include "progress_tf.h"
#include "termmsg.h"

static struct tfj_progress_regex re;
static int re_ready;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfj_progress_tracker t;
	struct tfj_progrec p;
	char tail[TFJ_PROGRESS_TAIL + 1];
	char *line;
	size_t split;

	if (!re_ready) {
		if (tfj_progress_regex_compile(&re, "step[ =](?<step>\\d+).*loss[ =:]+(?<loss>[-0-9.e]+)") != 0)
			abort();
		re_ready = 1;
	}
	/* One line as given. */
	tfj_progrec_parse(&p, (const char *)data, size);
	line = malloc(size + 1);
	if (!line)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	tfj_progress_regex_match(&p, &re, line);
	/* The built-in TensorFlow/Keras patterns, from no epoch and from one. */
	{
		struct tfj_progress_tf tf = { 0 };

		tfj_progress_tf_parse(&p, &tf, line);
		tf.epoch = 7;
		tf.epochs = 10;
		if (tfj_progress_tf_parse(&p, &tf, line) == 0 &&
		    (((p.have & TFJ_PROGREC_BIT(TFJ_PROGREC_STEP)) && p.step < 0) ||
		     ((p.have & TFJ_PROGREC_BIT(TFJ_PROGREC_TOTAL)) && p.total_steps < 1)))
			abort();
	}

	/* The framer, fed in two pieces on both streams with a small cap. */
	split = size ? data[0] % (size + 1) : 0;
	if (tfj_progress_tracker_init(&t, TFJ_PROGRESS_LINE_MIN, &re) == 0) {
		tfj_progress_tracker_feed(&t, TFJ_STREAM_STDOUT, (const char *)data, split);
		tfj_progress_tracker_feed(&t, TFJ_STREAM_STDOUT, (const char *)data + split, size - split);
		tfj_progress_tracker_feed(&t, TFJ_STREAM_STDERR, (const char *)data, size);
		tfj_progress_tracker_flush(&t);
		if ((t.state.have & TFJ_PROGREC_BIT(TFJ_PROGREC_STEP) && t.state.step < 0) ||
		    (t.state.have & TFJ_PROGREC_BIT(TFJ_PROGREC_TOTAL) && t.state.total_steps < 1))
			abort();
		tfj_progress_tracker_tail(&t, tail, sizeof(tail));
		{
			struct tfj_termmsg m = { "Error", 1, 0, 1, t.state.step, tail, 0, 0, 0, 0 };
			char out[TFJ_TERMMSG_MAX + 1];
			int n = tfj_termmsg_encode(out, sizeof(out), &m);
			if (n > (int)TFJ_TERMMSG_MAX || (n >= 0 && strlen(out) != (size_t)n))
				abort();
		}
		tfj_progress_tracker_free(&t);
	}
	free(line);
	return 0;
}
