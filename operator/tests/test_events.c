/*
 * test_events.c - the event recorder against the in-process API server
 * (fakeapi.h): events arrive in order with the TFJob as involvedObject,
 * posting never waits for the API, a full queue drops and counts, long or
 * odd input is cut safely, and a failing API counts errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tfj/err.h>

#include "app/events.h"
#include "fakeapi.h"
#include "kube/kube.h"
#include "tfj_test.h"
#include "tfj_testutil.h"

static struct fake F;

static struct tfj_kube *client(double qps, int burst)
{
	struct tfj_kube_opts o = { 0 };

	o.qps = qps;
	o.burst = burst;
	return fake_client(&F, &o);
}

/* The stored event objects of job `name` in namespace ml, in creation order. */
static int events_of(const char *name, const cJSON **out, int max)
{
	int n = 0;

	pthread_mutex_lock(&F.mu);
	for (int i = 0; i < F.nobj && n < max; i++) {
		const cJSON *inv = cJSON_GetObjectItem(F.objs[i].obj, "involvedObject");
		const char *nm = cJSON_GetStringValue(cJSON_GetObjectItem(inv, "name"));

		if (F.objs[i].live && !strcmp(F.objs[i].res, "events") && nm && !strcmp(nm, name))
			out[n++] = F.objs[i].obj;
	}
	pthread_mutex_unlock(&F.mu);
	return n;
}

static const char *str(const cJSON *o, const char *a, const char *b)
{
	const cJSON *x = cJSON_GetObjectItem(o, a);

	return cJSON_GetStringValue(b ? cJSON_GetObjectItem(x, b) : x);
}

static void test_posted_in_order(void)
{
	struct tfj_kube *k = client(0, 1);
	struct tfj_events_opts o = { "host-1", 0 };
	struct tfj_events_ref ref = { "ml", "ordered", "uid-1" };
	struct tfj_events *e = NULL;
	const cJSON *ev[16];
	char reason[32];
	int i, n;

	TFJ_CHECK_INT(tfj_events_new(&e, k, &o), 0);
	for (i = 0; i < 10; i++) {
		snprintf(reason, sizeof(reason), "Reason%d", i);
		tfj_events_post(e, &ref, i % 2 ? "Warning" : "Normal", reason, "a message");
	}
	tfj_events_post(e, &ref, NULL, "Ignored", "no type: nothing");
	tfj_events_post(NULL, &ref, "Normal", "Ignored", "no recorder: nothing");
	TFJ_CHECK_INT(tfj_events_flush(e, 10000), 0);
	TFJ_CHECK_INT(tfj_events_count(e, "success"), 10);
	TFJ_CHECK_INT(tfj_events_count(e, "dropped"), 0);
	n = events_of("ordered", ev, 16);
	TFJ_CHECK_INT(n, 10);
	for (i = 0; i < n; i++) {
		snprintf(reason, sizeof(reason), "Reason%d", i);
		TFJ_CHECK(!strcmp(str(ev[i], "reason", NULL), reason));
		TFJ_CHECK(!strcmp(str(ev[i], "type", NULL), i % 2 ? "Warning" : "Normal"));
		TFJ_CHECK(!strcmp(str(ev[i], "involvedObject", "kind"), "TFJob"));
		TFJ_CHECK(!strcmp(str(ev[i], "involvedObject", "uid"), "uid-1"));
		TFJ_CHECK(!strcmp(str(ev[i], "reportingInstance", NULL), "host-1"));
		TFJ_CHECK(!strncmp(str(ev[i], "metadata", "name"), "ordered.", 8));
		/* Names are unique even for events queued within one clock tick. */
		if (i > 0)
			TFJ_CHECK(strcmp(str(ev[i], "metadata", "name"),
					 str(ev[i - 1], "metadata", "name")) != 0);
	}
	tfj_events_free(e);
	tfj_kube_free(k);
}

/*
 * With a budget of 5 posts a second, 40 events posted at once cannot wait
 * for it: post returns at once, the queue keeps 8, the rest is dropped and
 * counted, and what was kept is posted at the budget's pace.
 */
static void test_full_queue_drops(void)
{
	struct tfj_kube *k = client(5, 1);
	struct tfj_events_opts o = { NULL, 8 };
	struct tfj_events_ref ref = { "ml", "stormy", "uid-2" };
	struct tfj_events *e = NULL;
	struct tfj_buf m = TFJ_BUF_INIT(1 << 16);
	const cJSON *ev[64];
	double t0;
	uint64_t ok, dropped;
	int i;

	TFJ_CHECK_INT(tfj_events_new(&e, k, &o), 0);
	t0 = tfj_testutil_now_s();
	for (i = 0; i < 40; i++)
		tfj_events_post(e, &ref, "Normal", "Storm", "one of many");
	/* 40 posts through a 5/s budget would take 8 s; queuing takes no time. */
	TFJ_CHECK_LT(tfj_testutil_now_s() - t0, 1.0);
	TFJ_CHECK_INT(tfj_events_flush(e, 20000), 0);
	ok = tfj_events_count(e, "success");
	dropped = tfj_events_count(e, "dropped");
	/* The sender may have taken the first event off the queue before the rest came. */
	TFJ_CHECK(ok == 8 || ok == 9);
	TFJ_CHECK_INT(ok + dropped, 40);
	/* All alike: one Event that counts them. */
	TFJ_CHECK_INT(events_of("stormy", ev, 64), 1);
	TFJ_CHECK_EQ(cJSON_GetNumberValue(cJSON_GetObjectItem(ev[0], "count")), (double)ok);
	TFJ_CHECK_INT(tfj_events_metrics(e, &m), 0);
	TFJ_CHECK(strstr(tfj_buf_cstr(&m), "tfjob_operator_events_total{result=\"dropped\"} ") != NULL);
	TFJ_CHECK(strstr(tfj_buf_cstr(&m), "tfjob_operator_events_queued 0\n") != NULL);
	tfj_buf_free(&m);
	tfj_events_free(e);
	tfj_kube_free(k);
}

/*
 * The same event again and again is one Event whose count rises (a merge
 * PATCH each time), a different message is an Event of its own, and an
 * Event that expired (deleted) is posted anew.
 */
static void test_repeats_aggregated(void)
{
	struct tfj_kube *k = client(0, 1);
	struct tfj_events_ref ref = { "ml", "retrying", "uid-5" };
	struct tfj_events *e = NULL;
	const cJSON *ev[8];
	char path[256];
	int i, patches0;

	TFJ_CHECK_INT(tfj_events_new(&e, k, NULL), 0);
	patches0 = F.patches;
	for (i = 0; i < 5; i++)
		tfj_events_post(e, &ref, "Warning", "FailedCreatePod", "pods is forbidden");
	tfj_events_post(e, &ref, "Warning", "FailedCreatePod", "quota exceeded");
	TFJ_CHECK_INT(tfj_events_flush(e, 10000), 0);
	TFJ_CHECK_INT(events_of("retrying", ev, 8), 2);
	TFJ_CHECK_STR(str(ev[0], "message", NULL), "pods is forbidden");
	TFJ_CHECK_EQ(cJSON_GetNumberValue(cJSON_GetObjectItem(ev[0], "count")), 5.0);
	TFJ_CHECK(str(ev[0], "lastTimestamp", NULL) != NULL);
	TFJ_CHECK_EQ(cJSON_GetNumberValue(cJSON_GetObjectItem(ev[1], "count")), 1.0);
	TFJ_CHECK_INT(F.patches - patches0, 4);
	TFJ_CHECK_INT(tfj_events_count(e, "aggregated"), 4);
	TFJ_CHECK_INT(tfj_events_count(e, "success"), 6);
	/* The first Event expires: the next repeat starts a new one. */
	snprintf(path, sizeof(path), "/api/v1/namespaces/ml/events/%s", str(ev[0], "metadata", "name"));
	TFJ_CHECK_OK(tfj_kube_delete(k, path, NULL, NULL));
	tfj_events_post(e, &ref, "Warning", "FailedCreatePod", "pods is forbidden");
	TFJ_CHECK_INT(tfj_events_flush(e, 10000), 0);
	TFJ_CHECK_INT(events_of("retrying", ev, 8), 2);
	TFJ_CHECK_STR(str(ev[1], "message", NULL), "pods is forbidden");
	TFJ_CHECK_EQ(cJSON_GetNumberValue(cJSON_GetObjectItem(ev[1], "count")), 1.0);
	TFJ_CHECK_INT(tfj_events_count(e, "error"), 0);
	tfj_events_free(e);
	tfj_kube_free(k);
}

/*
 * An event its caller repeats while the cause lasts (planlost.h: a pod
 * being preempted, seen by every reconcile until it is gone) is one Event
 * of count 1; another message is an Event of its own.
 */
static void test_once_posted_once(void)
{
	struct tfj_kube *k = client(0, 1);
	struct tfj_events_ref ref = { "ml", "preempted", "uid-7" };
	struct tfj_events *e = NULL;
	const cJSON *ev[8];
	int i, patches0;

	TFJ_CHECK_INT(tfj_events_new(&e, k, NULL), 0);
	patches0 = F.patches;
	for (i = 0; i < 4; i++)
		tfj_events_post_once(e, &ref, "Warning", "Preempted", "pod p-0 (uid a) was preempted");
	tfj_events_post_once(e, &ref, "Warning", "Preempted", "pod p-0 (uid b) was preempted");
	TFJ_CHECK_INT(tfj_events_flush(e, 10000), 0);
	TFJ_CHECK_INT(events_of("preempted", ev, 8), 2);
	TFJ_CHECK_EQ(cJSON_GetNumberValue(cJSON_GetObjectItem(ev[0], "count")), 1.0);
	TFJ_CHECK_EQ(cJSON_GetNumberValue(cJSON_GetObjectItem(ev[1], "count")), 1.0);
	TFJ_CHECK_INT(F.patches - patches0, 0);
	TFJ_CHECK_INT(tfj_events_count(e, "success"), 2);
	tfj_events_free(e);
	tfj_kube_free(k);
}

/* A role without events/patch (403): each event is posted as before, none lost. */
static void test_patch_refused_posts(void)
{
	struct tfj_kube *k = client(0, 1);
	struct tfj_events_ref ref = { "ml", "norbac", "uid-6" };
	struct tfj_events *e = NULL;
	const cJSON *ev[8];

	TFJ_CHECK_INT(tfj_events_new(&e, k, NULL), 0);
	tfj_events_post(e, &ref, "Warning", "FailedCreatePod", "same");
	TFJ_CHECK_INT(tfj_events_flush(e, 10000), 0);
	fake_inject(&F, 1, 403, "/namespaces/ml/events/", "PATCH", NULL);
	tfj_events_post(e, &ref, "Warning", "FailedCreatePod", "same");
	tfj_events_post(e, &ref, "Warning", "FailedCreatePod", "same");
	TFJ_CHECK_INT(tfj_events_flush(e, 10000), 0);
	fake_inject(&F, 0, 0, NULL, NULL, NULL);
	TFJ_CHECK_INT(events_of("norbac", ev, 8), 3);
	TFJ_CHECK_INT(tfj_events_count(e, "success"), 3);
	TFJ_CHECK_INT(tfj_events_count(e, "error"), 0);
	tfj_events_free(e);
	tfj_kube_free(k);
}

/* A message over 1 KiB is cut at a character boundary; the API gets valid UTF-8. */
static void test_long_message_cut(void)
{
	struct tfj_kube *k = client(0, 1);
	struct tfj_events_ref ref = { "ml", "wordy", "uid-3" };
	struct tfj_events *e = NULL;
	const cJSON *ev[2];
	char *msg = malloc(3001);
	const char *got;
	size_t i, n;

	TFJ_CHECK(msg != NULL);
	if (!msg)
		return;
	/* 1000 three-byte characters (U+20AC): byte 1024 falls inside one. */
	for (i = 0; i < 1000; i++)
		memcpy(msg + 3 * i, "\xe2\x82\xac", 3);
	msg[3000] = '\0';
	TFJ_CHECK_INT(tfj_events_new(&e, k, NULL), 0);
	tfj_events_post(e, &ref, "Warning", "Wordy", msg);
	TFJ_CHECK_INT(tfj_events_flush(e, 10000), 0);
	TFJ_CHECK_INT(events_of("wordy", ev, 2), 1);
	got = str(ev[0], "message", NULL);
	TFJ_CHECK(got != NULL);
	n = got ? strlen(got) : 0;
	TFJ_CHECK_INT(n, 1023); /* 341 whole characters */
	TFJ_CHECK(got && memcmp(got, msg, n) == 0);
	TFJ_CHECK(!strcmp(str(ev[0], "reportingInstance", NULL), "tfjob-operator"));
	free(msg);
	tfj_events_free(e);
	tfj_kube_free(k);
}

/* A refused post is counted as an error, not retried, and the next one goes out. */
static void test_errors_counted(void)
{
	struct tfj_kube *k = client(0, 1);
	struct tfj_events_ref ref = { "ml", "refused", "uid-4" };
	struct tfj_events *e = NULL;

	fake_inject(&F, 1, 403, "/namespaces/ml/events", "POST", NULL);
	TFJ_CHECK_INT(tfj_events_new(&e, k, NULL), 0);
	tfj_events_post(e, &ref, "Normal", "First", "refused by the API");
	tfj_events_post(e, &ref, "Normal", "Second", "posted");
	TFJ_CHECK_INT(tfj_events_flush(e, 10000), 0);
	TFJ_CHECK_INT(tfj_events_count(e, "error"), 1);
	TFJ_CHECK_INT(tfj_events_count(e, "success"), 1);
	fake_inject(&F, 0, 0, NULL, NULL, NULL);
	/* Queued events do not outlive the recorder, and freeing does not wait for them. */
	tfj_events_free(e);
	TFJ_CHECK_INT(tfj_events_new(&e, NULL, NULL), TFJ_EINVAL);
	tfj_events_free(NULL);
	tfj_kube_free(k);
}

int main(void)
{
	int rc = fake_start(&F, "tok");

	if (fake_unavailable(&F, rc))
		return 77;
	TFJ_CHECK_INT(rc, 0);
	if (rc == 0) {
		TFJ_RUN(test_posted_in_order);
		TFJ_RUN(test_full_queue_drops);
		TFJ_RUN(test_long_message_cut);
		TFJ_RUN(test_repeats_aggregated);
		TFJ_RUN(test_once_posted_once);
		TFJ_RUN(test_patch_refused_posts);
		TFJ_RUN(test_errors_counted);
	}
	fake_stop(&F);
	return tfj_test_finish();
}
