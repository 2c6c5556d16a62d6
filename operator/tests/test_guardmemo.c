/*
 * test_guardmemo.c - the memo of TFJobs whose Secret and NetworkPolicy
 * exist (app/guardmemo.h): noted guards are known until the recheck period
 * ends, one by one; a deleted job is forgotten; the memo stays bounded and
 * forgets the least recently used job first.
 */
#include <stdio.h>

#include "app/guardmemo.h"
#include "tfj_test.h"

static void test_note_known_recheck(void)
{
	struct tfj_guardmemo *m = NULL;
	int64_t t = 1000000;

	TFJ_CHECK_OK(tfj_guardmemo_new(&m, 0, 60000));
	TFJ_CHECK_INT(tfj_guardmemo_known(m, "u1", t), 0);
	/* Only the Secret worked (the NetworkPolicy's create failed): the
	 * policy is tried again next time. */
	tfj_guardmemo_note(m, "u1", TFJ_GUARDMEMO_SECRET, t);
	TFJ_CHECK_INT(tfj_guardmemo_known(m, "u1", t + 1), TFJ_GUARDMEMO_SECRET);
	tfj_guardmemo_note(m, "u1", TFJ_GUARDMEMO_NETPOL, t + 30000);
	TFJ_CHECK_INT(tfj_guardmemo_known(m, "u1", t + 59999), TFJ_GUARDMEMO_ALL);
	/* Each guard's trust ends recheck_ms after it was noted. */
	TFJ_CHECK_INT(tfj_guardmemo_known(m, "u1", t + 60000), TFJ_GUARDMEMO_NETPOL);
	TFJ_CHECK_INT(tfj_guardmemo_known(m, "u1", t + 90000), 0);
	/* A new check renews the note. */
	tfj_guardmemo_note(m, "u1", TFJ_GUARDMEMO_ALL, t + 90000);
	TFJ_CHECK_INT(tfj_guardmemo_known(m, "u1", t + 100000), TFJ_GUARDMEMO_ALL);
	/* Other uids (a new job of the same name) know nothing. */
	TFJ_CHECK_INT(tfj_guardmemo_known(m, "u2", t + 100000), 0);
	tfj_guardmemo_free(m);
}

static void test_forget_and_nulls(void)
{
	struct tfj_guardmemo *m = NULL;

	TFJ_CHECK_OK(tfj_guardmemo_new(&m, 0, 0));
	tfj_guardmemo_note(m, "u1", TFJ_GUARDMEMO_ALL, 5);
	tfj_guardmemo_note(m, "u2", TFJ_GUARDMEMO_ALL, 5);
	TFJ_CHECK_EQ(tfj_guardmemo_size(m), 2);
	/* The default recheck period is minutes, not milliseconds. */
	TFJ_CHECK_INT(tfj_guardmemo_known(m, "u1", 5 + TFJ_GUARDMEMO_RECHECK_MS_DEFAULT - 1),
		      TFJ_GUARDMEMO_ALL);
	tfj_guardmemo_forget(m, "u1");
	TFJ_CHECK_INT(tfj_guardmemo_known(m, "u1", 6), 0);
	TFJ_CHECK_INT(tfj_guardmemo_known(m, "u2", 6), TFJ_GUARDMEMO_ALL);
	TFJ_CHECK_EQ(tfj_guardmemo_size(m), 1);
	tfj_guardmemo_forget(m, "never-seen");
	tfj_guardmemo_forget(m, NULL);
	/* No uid, no bits, no memo: nothing noted, nothing known. */
	tfj_guardmemo_note(m, "", TFJ_GUARDMEMO_ALL, 6);
	tfj_guardmemo_note(m, NULL, TFJ_GUARDMEMO_ALL, 6);
	tfj_guardmemo_note(m, "u3", 0, 6);
	tfj_guardmemo_note(m, "u4", 0x100, 6);
	TFJ_CHECK_EQ(tfj_guardmemo_size(m), 1);
	TFJ_CHECK_INT(tfj_guardmemo_known(m, NULL, 6), 0);
	TFJ_CHECK_INT(tfj_guardmemo_known(NULL, "u2", 6), 0);
	tfj_guardmemo_note(NULL, "u2", TFJ_GUARDMEMO_ALL, 6);
	tfj_guardmemo_forget(NULL, "u2");
	TFJ_CHECK_EQ(tfj_guardmemo_size(NULL), 0);
	tfj_guardmemo_free(m);
	tfj_guardmemo_free(NULL);
}

static void test_bounded_lru(void)
{
	struct tfj_guardmemo *m = NULL;
	char uid[32];

	TFJ_CHECK_OK(tfj_guardmemo_new(&m, 3, 0));
	tfj_guardmemo_note(m, "a", TFJ_GUARDMEMO_ALL, 1);
	tfj_guardmemo_note(m, "b", TFJ_GUARDMEMO_ALL, 1);
	tfj_guardmemo_note(m, "c", TFJ_GUARDMEMO_ALL, 1);
	/* "a" is used (a restart looked it up): "b" is now the oldest. */
	TFJ_CHECK_INT(tfj_guardmemo_known(m, "a", 2), TFJ_GUARDMEMO_ALL);
	tfj_guardmemo_note(m, "d", TFJ_GUARDMEMO_ALL, 2);
	TFJ_CHECK_EQ(tfj_guardmemo_size(m), 3);
	TFJ_CHECK_INT(tfj_guardmemo_known(m, "b", 2), 0);
	TFJ_CHECK_INT(tfj_guardmemo_known(m, "a", 2), TFJ_GUARDMEMO_ALL);
	TFJ_CHECK_INT(tfj_guardmemo_known(m, "c", 2), TFJ_GUARDMEMO_ALL);
	TFJ_CHECK_INT(tfj_guardmemo_known(m, "d", 2), TFJ_GUARDMEMO_ALL);
	/* Many jobs: never more than the bound. */
	for (int i = 0; i < 1000; i++) {
		snprintf(uid, sizeof(uid), "job-%d", i);
		tfj_guardmemo_note(m, uid, TFJ_GUARDMEMO_SECRET, 3);
	}
	TFJ_CHECK_EQ(tfj_guardmemo_size(m), 3);
	TFJ_CHECK_INT(tfj_guardmemo_known(m, "job-999", 3), TFJ_GUARDMEMO_SECRET);
	TFJ_CHECK_INT(tfj_guardmemo_known(m, "job-996", 3), 0);
	tfj_guardmemo_free(m);
}

int main(void)
{
	TFJ_RUN(test_note_known_recheck);
	TFJ_RUN(test_forget_and_nulls);
	TFJ_RUN(test_bounded_lru);
	return tfj_test_finish();
}
