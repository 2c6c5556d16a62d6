/*
 * evwriter.c - a summary writer that never stops by itself, for the
 * killed-writer test (tb-reader): it writes Event{step s, loss 1/s} for
 * s = 1, 2, ... into <logdir>/<run> until it is killed: the first
 * TFJ_EVWRITER_FAST as fast as it can, then one a millisecond, so that the
 * file the test reads stays small (TensorBoard reads it five times) however
 * late the kill comes; it stops by itself after TFJ_EVWRITER_MAX.
 * Usage: evwriter LOGDIR RUN
 */
#include <stdio.h>
#include <time.h>

#include <tfj/err.h>

#include "summary/summary.h"

#define TFJ_EVWRITER_FAST 1000
#define TFJ_EVWRITER_MAX 200000

int main(int argc, char **argv)
{
	struct tfj_summary *w = NULL;
	int64_t s;
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: evwriter LOGDIR RUN\n");
		return 2;
	}
	rc = tfj_summary_open(&w, argv[1], argv[2]);
	if (rc) {
		fprintf(stderr, "evwriter: %s\n", tfj_err_detail());
		return 1;
	}
	printf("%s\n", tfj_summary_path(w));
	fflush(stdout);
	for (s = 1; s <= TFJ_EVWRITER_MAX && rc == 0; s++) {
		const struct timespec ms = { 0, 1000000 };

		rc = tfj_summary_scalars(w, s, (const struct tfj_summary_value[]){
			{ "loss", 1.0 / (double)s } }, 1);
		if (s > TFJ_EVWRITER_FAST)
			nanosleep(&ms, NULL);
	}
	tfj_summary_free(w);
	return rc ? 1 : 0;
}
