/*
 * test_exitcode.c - the exit-code table, the retryable rule and the mapping
 * from error classes, which the runtime, the agent and the operator share.
 */
#include <string.h>

#include "tfj/err.h"
#include "tfj/exitcode.h"
#include "tfj_test.h"

static const int all_codes[] = {
#define X(sym, val, name) sym,
	TFJ_EXIT_TABLE(X)
#undef X
};
#define N_CODES (sizeof(all_codes) / sizeof(all_codes[0]))

/* The values are a contract with running pods and users' scripts. */
static void test_values_are_stable(void)
{
	TFJ_CHECK_INT(TFJ_EXIT_OK, 0);
	TFJ_CHECK_INT(TFJ_EXIT_INTERNAL, 1);
	TFJ_CHECK_INT(TFJ_EXIT_USAGE, 2);
	TFJ_CHECK_INT(TFJ_EXIT_DATA, 3);
	TFJ_CHECK_INT(TFJ_EXIT_NUMERIC, 4);
	TFJ_CHECK_INT(TFJ_EXIT_MISMATCH, 5);
	TFJ_CHECK_INT(TFJ_EXIT_CHECKPOINT, 6);
	TFJ_CHECK_INT(TFJ_EXIT_DEVICE, 7);
	TFJ_CHECK_INT(TFJ_EXIT_NOEXEC, 126);
	TFJ_CHECK_INT(TFJ_EXIT_NOTFOUND, 127);
	TFJ_CHECK_INT(TFJ_EXIT_UNAVAILABLE, 138);
	TFJ_CHECK_INT(TFJ_EXIT_IO, 140);
	TFJ_CHECK_INT(TFJ_EXIT_NOMEM, 142);
	TFJ_CHECK_INT(TFJ_EXIT_ABORTED, 144);
	TFJ_CHECK_INT(N_CODES, 14);
}

static void test_names(void)
{
	size_t i, j;

	TFJ_CHECK_STR(tfj_exitcode_name(TFJ_EXIT_OK), "ok");
	TFJ_CHECK_STR(tfj_exitcode_name(TFJ_EXIT_USAGE), "usage");
	TFJ_CHECK_STR(tfj_exitcode_name(TFJ_EXIT_CHECKPOINT), "checkpoint");
	TFJ_CHECK_STR(tfj_exitcode_name(TFJ_EXIT_NOEXEC), "noexec");
	TFJ_CHECK_STR(tfj_exitcode_name(TFJ_EXIT_NOTFOUND), "notfound");
	TFJ_CHECK_STR(tfj_exitcode_name(TFJ_EXIT_UNAVAILABLE), "unavailable");
	TFJ_CHECK_STR(tfj_exitcode_name(TFJ_EXIT_ABORTED), "aborted");
	/* Signal deaths and foreign codes are not in the table. */
	TFJ_CHECK_STR(tfj_exitcode_name(137), "unknown");
	TFJ_CHECK_STR(tfj_exitcode_name(-1), "unknown");
	TFJ_CHECK_STR(tfj_exitcode_name(256), "unknown");
	/* Distinct values and distinct names: a log line names one code. */
	for (i = 0; i < N_CODES; i++) {
		TFJ_CHECK(strcmp(tfj_exitcode_name(all_codes[i]), "unknown") != 0);
		for (j = 0; j < i; j++) {
			TFJ_CHECK(all_codes[i] != all_codes[j]);
			TFJ_CHECK(strcmp(tfj_exitcode_name(all_codes[i]),
					 tfj_exitcode_name(all_codes[j])) != 0);
		}
	}
}

static void test_retryable_rule(void)
{
	int c;

	/* The range, checked exhaustively over every exit status there is. */
	for (c = 0; c <= 255; c++)
		TFJ_CHECK_INT(tfj_exitcode_retryable(c), c >= 128);
	TFJ_CHECK_INT(tfj_exitcode_retryable(-1), 0);
	TFJ_CHECK_INT(tfj_exitcode_retryable(256), 0);
	/* Every code of the table sits on the side of the rule its class says. */
	TFJ_CHECK_INT(tfj_exitcode_retryable(TFJ_EXIT_OK), 0);
	TFJ_CHECK_INT(tfj_exitcode_retryable(TFJ_EXIT_USAGE), 0);
	TFJ_CHECK_INT(tfj_exitcode_retryable(TFJ_EXIT_DATA), 0);
	TFJ_CHECK_INT(tfj_exitcode_retryable(TFJ_EXIT_NUMERIC), 0);
	TFJ_CHECK_INT(tfj_exitcode_retryable(TFJ_EXIT_MISMATCH), 0);
	TFJ_CHECK_INT(tfj_exitcode_retryable(TFJ_EXIT_CHECKPOINT), 0);
	TFJ_CHECK_INT(tfj_exitcode_retryable(TFJ_EXIT_DEVICE), 0);
	TFJ_CHECK_INT(tfj_exitcode_retryable(TFJ_EXIT_NOEXEC), 0);
	TFJ_CHECK_INT(tfj_exitcode_retryable(TFJ_EXIT_NOTFOUND), 0);
	TFJ_CHECK_INT(tfj_exitcode_retryable(TFJ_EXIT_UNAVAILABLE), 1);
	TFJ_CHECK_INT(tfj_exitcode_retryable(TFJ_EXIT_IO), 1);
	TFJ_CHECK_INT(tfj_exitcode_retryable(TFJ_EXIT_NOMEM), 1);
	TFJ_CHECK_INT(tfj_exitcode_retryable(TFJ_EXIT_ABORTED), 1);
	/* Killed by a signal (128 + N): SIGKILL, SIGSEGV, SIGTERM. */
	TFJ_CHECK_INT(tfj_exitcode_retryable(137), 1);
	TFJ_CHECK_INT(tfj_exitcode_retryable(139), 1);
	TFJ_CHECK_INT(tfj_exitcode_retryable(143), 1);
}

static void test_from_err(void)
{
	static const int errs[] = {
#define X(sym, val, name, msg) sym,
		TFJ_ERR_TABLE(X)
#undef X
	};
	size_t i, j;

	TFJ_CHECK_INT(tfj_exitcode_from_err(TFJ_OK), TFJ_EXIT_OK);
	TFJ_CHECK_INT(tfj_exitcode_from_err(TFJ_EINVAL), TFJ_EXIT_USAGE);
	TFJ_CHECK_INT(tfj_exitcode_from_err(TFJ_EPARSE), TFJ_EXIT_USAGE);
	TFJ_CHECK_INT(tfj_exitcode_from_err(TFJ_ETYPE), TFJ_EXIT_USAGE);
	TFJ_CHECK_INT(tfj_exitcode_from_err(TFJ_ERANGE), TFJ_EXIT_USAGE);
	TFJ_CHECK_INT(tfj_exitcode_from_err(TFJ_ETOOBIG), TFJ_EXIT_USAGE);
	TFJ_CHECK_INT(tfj_exitcode_from_err(TFJ_EUNSUPP), TFJ_EXIT_USAGE);
	TFJ_CHECK_INT(tfj_exitcode_from_err(TFJ_ENOTFOUND), TFJ_EXIT_DATA);
	TFJ_CHECK_INT(tfj_exitcode_from_err(TFJ_ENUMERIC), TFJ_EXIT_NUMERIC);
	TFJ_CHECK_INT(tfj_exitcode_from_err(TFJ_ECONFLICT), TFJ_EXIT_MISMATCH);
	TFJ_CHECK_INT(tfj_exitcode_from_err(TFJ_ESTATE), TFJ_EXIT_MISMATCH);
	TFJ_CHECK_INT(tfj_exitcode_from_err(TFJ_EDEVICE), TFJ_EXIT_DEVICE);
	TFJ_CHECK_INT(tfj_exitcode_from_err(TFJ_ETIMEOUT), TFJ_EXIT_UNAVAILABLE);
	TFJ_CHECK_INT(tfj_exitcode_from_err(TFJ_EUNAVAIL), TFJ_EXIT_UNAVAILABLE);
	TFJ_CHECK_INT(tfj_exitcode_from_err(TFJ_EIO), TFJ_EXIT_IO);
	TFJ_CHECK_INT(tfj_exitcode_from_err(TFJ_ENOMEM), TFJ_EXIT_NOMEM);
	TFJ_CHECK_INT(tfj_exitcode_from_err(TFJ_ECANCELED), TFJ_EXIT_ABORTED);
	TFJ_CHECK_INT(tfj_exitcode_from_err(TFJ_EINTERNAL), TFJ_EXIT_INTERNAL);
	TFJ_CHECK_INT(tfj_exitcode_from_err(TFJ_EAUTH), TFJ_EXIT_INTERNAL);
	TFJ_CHECK_INT(tfj_exitcode_from_err(-9999), TFJ_EXIT_INTERNAL);
	/* Every error maps to a code of the table, never to the shell's 126/127. */
	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		int code = tfj_exitcode_from_err(errs[i]), found = 0;

		for (j = 0; j < N_CODES; j++)
			found |= all_codes[j] == code;
		TFJ_CHECK(found);
		TFJ_CHECK(code != TFJ_EXIT_NOEXEC && code != TFJ_EXIT_NOTFOUND);
		TFJ_CHECK_INT(code == TFJ_EXIT_OK, errs[i] == TFJ_OK);
	}
}

int main(void)
{
	TFJ_RUN(test_values_are_stable);
	TFJ_RUN(test_names);
	TFJ_RUN(test_retryable_rule);
	TFJ_RUN(test_from_err);
	return tfj_test_finish();
}
