/*
 * test_expect.c - expectations: pending writes block planning until seen.
 */
#include <unistd.h>

#include "kube/expect.h"
#include "tfj_test.h"

static void test_create_delete_cycle(void)
{
	struct tfj_expect *e;

	TFJ_CHECK_INT(tfj_expect_new(&e, 0), 0);
	TFJ_CHECK(tfj_expect_satisfied(e, "ns/j"));
	tfj_expect_create(e, "ns/j", "pod", "j-worker-0");
	tfj_expect_create(e, "ns/j", "pod", "j-worker-1");
	tfj_expect_create(e, "ns/j", "service", "j-worker-0");
	TFJ_CHECK_INT(tfj_expect_pending(e, "ns/j"), 3);
	TFJ_CHECK(tfj_expect_satisfied(e, "ns/other"));
	tfj_expect_observe_create(e, "ns/j", "pod", "j-worker-0");
	tfj_expect_observe_create(e, "ns/j", "pod", "j-worker-0"); /* duplicate event */
	TFJ_CHECK_INT(tfj_expect_pending(e, "ns/j"), 2);
	/* A delete observation does not satisfy a create. */
	tfj_expect_observe_delete(e, "ns/j", "pod", "j-worker-1");
	TFJ_CHECK_INT(tfj_expect_pending(e, "ns/j"), 2);
	tfj_expect_cancel_create(e, "ns/j", "pod", "j-worker-1");  /* the POST failed */
	tfj_expect_observe_create(e, "ns/j", "service", "j-worker-0");
	TFJ_CHECK(tfj_expect_satisfied(e, "ns/j"));
	tfj_expect_delete(e, "ns/j", "pod", "j-worker-0");
	TFJ_CHECK(!tfj_expect_satisfied(e, "ns/j"));
	tfj_expect_observe_delete(e, "ns/j", "pod", "j-worker-0");
	TFJ_CHECK(tfj_expect_satisfied(e, "ns/j"));
	tfj_expect_delete(e, "ns/j", "pod", "x");
	tfj_expect_forget(e, "ns/j");
	TFJ_CHECK(tfj_expect_satisfied(e, "ns/j"));
	tfj_expect_free(e);
}

static void test_status_rv(void)
{
	struct tfj_expect *e;

	TFJ_CHECK_INT(tfj_expect_new(&e, 0), 0);
	tfj_expect_status(e, "ns/j", "1005");
	TFJ_CHECK(!tfj_expect_satisfied(e, "ns/j"));
	tfj_expect_observe_job(e, "ns/j", "1004");   /* the cache is still behind */
	TFJ_CHECK(!tfj_expect_satisfied(e, "ns/j"));
	tfj_expect_observe_job(e, "ns/j", "1010");   /* someone wrote after us: caught up */
	TFJ_CHECK(tfj_expect_satisfied(e, "ns/j"));
	tfj_expect_status(e, "ns/j", "abc");         /* opaque version: equality only */
	tfj_expect_observe_job(e, "ns/j", "abd");
	TFJ_CHECK(!tfj_expect_satisfied(e, "ns/j"));
	tfj_expect_observe_job(e, "ns/j", "abc");
	TFJ_CHECK(tfj_expect_satisfied(e, "ns/j"));
	/* The watch event can beat the write's response: nothing to wait for. */
	tfj_expect_observe_job(e, "ns/k", "2000");
	tfj_expect_status(e, "ns/k", "2000");
	TFJ_CHECK(tfj_expect_satisfied(e, "ns/k"));
	tfj_expect_status(e, "ns/k", "2001");
	TFJ_CHECK(!tfj_expect_satisfied(e, "ns/k"));
	tfj_expect_free(e);
}

static void test_rv_compare(void)
{
	TFJ_CHECK(tfj_expect_rv_reached("10", "9"));
	TFJ_CHECK(!tfj_expect_rv_reached("9", "10"));
	TFJ_CHECK(tfj_expect_rv_reached("10", "10"));
	TFJ_CHECK(tfj_expect_rv_reached("0010", "10"));
	TFJ_CHECK(!tfj_expect_rv_reached("", "1"));
	TFJ_CHECK(!tfj_expect_rv_reached("1a", "1"));
	TFJ_CHECK(tfj_expect_rv_reached("123456789012345678901234567890",
					"99999999999999999999"));
}

static void test_expiry(void)
{
	struct tfj_expect *e;

	TFJ_CHECK_INT(tfj_expect_new(&e, 50), 0);  /* 50 ms TTL */
	tfj_expect_create(e, "ns/j", "pod", "lost-event");
	tfj_expect_status(e, "ns/j", "7");
	TFJ_CHECK(!tfj_expect_satisfied(e, "ns/j"));
	usleep(80000);
	/* A lost watch event delays the job, never wedges it. */
	TFJ_CHECK(tfj_expect_satisfied(e, "ns/j"));
	tfj_expect_free(e);
}

int main(void)
{
	TFJ_RUN(test_create_delete_cycle);
	TFJ_RUN(test_status_rv);
	TFJ_RUN(test_rv_compare);
	TFJ_RUN(test_expiry);
	return tfj_test_finish();
}
