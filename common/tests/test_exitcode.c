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

/*
 * The whole table as users see it (docs/runtime-exit-codes.md, docs/agent.md):
 * the values are a contract with running pods and users' scripts.
 */
static const struct {
	int code;
	const char *name;
	int retryable;
} expected[] = {
	{ TFJ_EXIT_OK, "ok", 0 }, { TFJ_EXIT_INTERNAL, "internal", 0 },
	{ TFJ_EXIT_USAGE, "usage", 0 }, { TFJ_EXIT_DATA, "data", 0 },
	{ TFJ_EXIT_NUMERIC, "numeric", 0 }, { TFJ_EXIT_MISMATCH, "mismatch", 0 },
	{ TFJ_EXIT_CHECKPOINT, "checkpoint", 0 }, { TFJ_EXIT_DEVICE, "device", 0 },
	{ TFJ_EXIT_NOEXEC, "noexec", 0 }, { TFJ_EXIT_NOTFOUND, "notfound", 0 },
	{ TFJ_EXIT_UNAVAILABLE, "unavailable", 1 }, { TFJ_EXIT_IO, "io", 1 },
	{ TFJ_EXIT_NOMEM, "nomem", 1 }, { TFJ_EXIT_ABORTED, "aborted", 1 },
};
static const int expected_values[] = { 0, 1, 2, 3, 4, 5, 6, 7, 126, 127, 138, 140, 142, 144 };
#define N_EXPECTED (sizeof(expected) / sizeof(expected[0]))

static void test_table(void)
{
	size_t i, j;

	TFJ_CHECK_INT(N_CODES, N_EXPECTED);
	TFJ_CHECK_INT(sizeof(expected_values) / sizeof(expected_values[0]), N_EXPECTED);
	for (i = 0; i < N_EXPECTED && i < N_CODES; i++) {
		TFJ_CHECK_INT(expected[i].code, expected_values[i]);
		TFJ_CHECK_INT(all_codes[i], expected[i].code);
		TFJ_CHECK_STR(tfj_exitcode_name(expected[i].code), expected[i].name);
		/* Every code of the table sits on the side of the rule its class says. */
		TFJ_CHECK_INT(tfj_exitcode_retryable(expected[i].code), expected[i].retryable);
	}
	/* Distinct values and distinct names: a log line names one code. */
	for (i = 0; i < N_CODES; i++) {
		TFJ_CHECK(strcmp(tfj_exitcode_name(all_codes[i]), "unknown") != 0);
		for (j = 0; j < i; j++) {
			TFJ_CHECK(all_codes[i] != all_codes[j]);
			TFJ_CHECK(strcmp(tfj_exitcode_name(all_codes[i]),
					 tfj_exitcode_name(all_codes[j])) != 0);
		}
	}
	/* Signal deaths and foreign codes are not in the table. */
	TFJ_CHECK_STR(tfj_exitcode_name(137), "unknown");
	TFJ_CHECK_STR(tfj_exitcode_name(-1), "unknown");
	TFJ_CHECK_STR(tfj_exitcode_name(256), "unknown");
}

static void test_retryable_rule(void)
{
	int c;

	/* The range, checked over every exit status there is: killed by a
	 * signal (128 + N: 137 SIGKILL, 139 SIGSEGV, 143 SIGTERM) included. */
	for (c = 0; c <= 255; c++)
		TFJ_CHECK_INT(tfj_exitcode_retryable(c), c >= 128);
	TFJ_CHECK_INT(tfj_exitcode_retryable(-1), 0);
	TFJ_CHECK_INT(tfj_exitcode_retryable(256), 0);
	TFJ_CHECK_INT(TFJ_EXIT_RETRYABLE_MIN, 128);
	TFJ_CHECK_INT(TFJ_EXIT_RETRYABLE_MAX, 255);
}

static void test_from_err(void)
{
	static const int errs[] = {
#define X(sym, val, name, msg) sym,
		TFJ_ERR_TABLE(X)
#undef X
	};
	/* Each failure class and the exit code it ends in. */
	static const int map[][2] = {
		{ TFJ_OK, TFJ_EXIT_OK }, { TFJ_EINVAL, TFJ_EXIT_USAGE }, { TFJ_EPARSE, TFJ_EXIT_USAGE },
		{ TFJ_ETYPE, TFJ_EXIT_USAGE }, { TFJ_ERANGE, TFJ_EXIT_USAGE },
		{ TFJ_ETOOBIG, TFJ_EXIT_USAGE }, { TFJ_EUNSUPP, TFJ_EXIT_USAGE },
		{ TFJ_ENOTFOUND, TFJ_EXIT_DATA }, { TFJ_ENUMERIC, TFJ_EXIT_NUMERIC },
		{ TFJ_ECONFLICT, TFJ_EXIT_MISMATCH }, { TFJ_ESTATE, TFJ_EXIT_MISMATCH },
		{ TFJ_EDEVICE, TFJ_EXIT_DEVICE }, { TFJ_ETIMEOUT, TFJ_EXIT_UNAVAILABLE },
		{ TFJ_EUNAVAIL, TFJ_EXIT_UNAVAILABLE }, { TFJ_EIO, TFJ_EXIT_IO },
		{ TFJ_ENOMEM, TFJ_EXIT_NOMEM }, { TFJ_ECANCELED, TFJ_EXIT_ABORTED },
		{ TFJ_EINTERNAL, TFJ_EXIT_INTERNAL }, { TFJ_EAUTH, TFJ_EXIT_INTERNAL },
		{ -9999, TFJ_EXIT_INTERNAL },
	};
	size_t i, j;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		TFJ_CHECK_INT(tfj_exitcode_from_err(map[i][0]), map[i][1]);
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
	TFJ_RUN(test_table);
	TFJ_RUN(test_retryable_rule);
	TFJ_RUN(test_from_err);
	return tfj_test_finish();
}
