/*
 * test_guardmemo.c - the memo of TFJobs whose ps Secret exists, by name
 * (app/guardmemo.h): a noted Secret is known until the recheck period
 * ends, its name is given however old the note is (a record to retry), a
 * new note replaces the name; a deleted job is forgotten; the memo stays
 * bounded and forgets the least recently used job first.
 */
#include <stdio.h>
#include <string.h>

#include "app/guardmemo.h"
#include "tfj_test.h"

/* tfj_guardmemo_secret of uid at t: 1/0, and the name into name. */
static int secret(struct tfj_guardmemo *m, char name[TFJ_GUARDMEMO_NAME_MAX], const char *uid,
		  int64_t t)
{
	return tfj_guardmemo_secret(m, name, TFJ_GUARDMEMO_NAME_MAX, uid, t);
}

static void test_note_known_recheck(void)
{
	struct tfj_guardmemo *m = NULL;
	char name[TFJ_GUARDMEMO_NAME_MAX] = "junk";
	int64_t t = 1000000;

	TFJ_CHECK_OK(tfj_guardmemo_new(&m, 0, 60000));
	TFJ_CHECK_INT(secret(m, name, "u1", t), 0);
	TFJ_CHECK_STR(name, "");
	tfj_guardmemo_note(m, "u1", "job-ps-abcde", t);
	TFJ_CHECK_INT(secret(m, name, "u1", t + 59999), 1);
	TFJ_CHECK_STR(name, "job-ps-abcde");
	/* The trust ends recheck_ms after the note; the name stays, for a
	 * status write to retry with. */
	TFJ_CHECK_INT(secret(m, name, "u1", t + 60000), 0);
	TFJ_CHECK_STR(name, "job-ps-abcde");
	/* A new check renews the note; a new name replaces the old. */
	tfj_guardmemo_note(m, "u1", "job-ps-fghij", t + 90000);
	TFJ_CHECK_INT(secret(m, name, "u1", t + 100000), 1);
	TFJ_CHECK_STR(name, "job-ps-fghij");
	/* Other uids (a new job of the same name) know nothing. */
	TFJ_CHECK_INT(secret(m, name, "u2", t + 100000), 0);
	TFJ_CHECK_STR(name, "");
	/* A buffer too small for the name gets nothing, not a cut name. */
	TFJ_CHECK_INT(tfj_guardmemo_secret(m, name, 5, "u1", t + 100000), 0);
	TFJ_CHECK_STR(name, "");
	tfj_guardmemo_free(m);
}

static void test_forget_and_nulls(void)
{
	struct tfj_guardmemo *m = NULL;
	char name[TFJ_GUARDMEMO_NAME_MAX], big[TFJ_GUARDMEMO_NAME_MAX + 1];

	TFJ_CHECK_OK(tfj_guardmemo_new(&m, 0, 0));
	tfj_guardmemo_note(m, "u1", "a-ps-1", 5);
	tfj_guardmemo_note(m, "u2", "b-ps-2", 5);
	TFJ_CHECK_EQ(tfj_guardmemo_size(m), 2);
	/* The default recheck period is minutes, not milliseconds. */
	TFJ_CHECK_INT(secret(m, name, "u1", 5 + TFJ_GUARDMEMO_RECHECK_MS_DEFAULT - 1), 1);
	tfj_guardmemo_forget(m, "u1");
	TFJ_CHECK_INT(secret(m, name, "u1", 6), 0);
	TFJ_CHECK_STR(name, "");
	TFJ_CHECK_INT(secret(m, name, "u2", 6), 1);
	TFJ_CHECK_EQ(tfj_guardmemo_size(m), 1);
	tfj_guardmemo_forget(m, "never-seen");
	tfj_guardmemo_forget(m, NULL);
	/* No uid, no name, a name too long, no memo: nothing noted or known. */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	tfj_guardmemo_note(m, "", "c-ps-3", 6);
	tfj_guardmemo_note(m, NULL, "c-ps-3", 6);
	tfj_guardmemo_note(m, "u3", NULL, 6);
	tfj_guardmemo_note(m, "u4", "", 6);
	tfj_guardmemo_note(m, "u5", big, 6);
	TFJ_CHECK_EQ(tfj_guardmemo_size(m), 1);
	TFJ_CHECK_INT(secret(m, name, NULL, 6), 0);
	TFJ_CHECK_INT(secret(NULL, name, "u2", 6), 0);
	TFJ_CHECK_STR(name, "");
	tfj_guardmemo_note(NULL, "u2", "b-ps-2", 6);
	tfj_guardmemo_forget(NULL, "u2");
	TFJ_CHECK_EQ(tfj_guardmemo_size(NULL), 0);
	tfj_guardmemo_free(m);
	tfj_guardmemo_free(NULL);
}

static void test_bounded_lru(void)
{
	struct tfj_guardmemo *m = NULL;
	char uid[32], name[TFJ_GUARDMEMO_NAME_MAX];

	TFJ_CHECK_OK(tfj_guardmemo_new(&m, 3, 0));
	tfj_guardmemo_note(m, "a", "a-ps-1", 1);
	tfj_guardmemo_note(m, "b", "b-ps-1", 1);
	tfj_guardmemo_note(m, "c", "c-ps-1", 1);
	/* "a" is used (a restart looked it up): "b" is now the oldest. */
	TFJ_CHECK_INT(secret(m, name, "a", 2), 1);
	tfj_guardmemo_note(m, "d", "d-ps-1", 2);
	TFJ_CHECK_EQ(tfj_guardmemo_size(m), 3);
	TFJ_CHECK_INT(secret(m, name, "b", 2), 0);
	TFJ_CHECK_INT(secret(m, name, "a", 2), 1);
	TFJ_CHECK_INT(secret(m, name, "c", 2), 1);
	TFJ_CHECK_INT(secret(m, name, "d", 2), 1);
	/* Many jobs: never more than the bound. */
	for (int i = 0; i < 1000; i++) {
		snprintf(uid, sizeof(uid), "job-%d", i);
		tfj_guardmemo_note(m, uid, "x-ps-1", 3);
	}
	TFJ_CHECK_EQ(tfj_guardmemo_size(m), 3);
	TFJ_CHECK_INT(secret(m, name, "job-999", 3), 1);
	TFJ_CHECK_INT(secret(m, name, "job-996", 3), 0);
	tfj_guardmemo_free(m);
}

int main(void)
{
	TFJ_RUN(test_note_known_recheck);
	TFJ_RUN(test_forget_and_nulls);
	TFJ_RUN(test_bounded_lru);
	return tfj_test_finish();
}
