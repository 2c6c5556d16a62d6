/*
 * test_replabel.c - the leader's label on its own pod (app/replabel.h): the
 * merge patch, and against the fake API server the order (cleared before
 * ready, set once leading), no request while the label is as wanted, and
 * the backoff after a failed PATCH.
 */
#include "fakeapi.h"
#include "app/replabel.h"

static struct fake F;

static void test_patch(void)
{
	char b[128], small[16];

	TFJ_CHECK_OK(tfj_replabel_patch(b, sizeof(b), 1));
	TFJ_CHECK_STR(b, "{\"metadata\":{\"labels\":{\"tfjob.kubeflow.org/report-leader\":\"true\"}}}");
	TFJ_CHECK_OK(tfj_replabel_patch(b, sizeof(b), 0));
	/* null removes the label, and removing an absent label is no error. */
	TFJ_CHECK_STR(b, "{\"metadata\":{\"labels\":{\"tfjob.kubeflow.org/report-leader\":null}}}");
	TFJ_CHECK_INT(tfj_replabel_patch(small, sizeof(small), 1), TFJ_ETOOBIG);
}

static void test_off_without_pod(void)
{
	struct tfj_replabel l;

	TFJ_CHECK_OK(tfj_replabel_init(&l, NULL, "ns", "p"));
	TFJ_CHECK_INT(tfj_replabel_settled(&l), 1);
	TFJ_CHECK_OK(tfj_replabel_sync(&l, 1, 0));
}

static const char *label_of(const char *pod)
{
	struct fake_obj *o;
	const char *v;

	pthread_mutex_lock(&F.mu);
	o = fake_find(&F, "pods", "op", pod);
	v = o ? cJSON_GetStringValue(cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(o->obj, "metadata"), "labels"),
		TFJ_REPLABEL_KEY)) : NULL;
	pthread_mutex_unlock(&F.mu);
	return v;
}

static void test_sync(void)
{
	struct tfj_kube *k = fake_client(&F, NULL);
	struct tfj_replabel l;
	cJSON *pod;
	int patches;

	if (!k)
		return;
	TFJ_CHECK_OK(tfj_replabel_init(&l, k, "op", "op-0"));
	TFJ_CHECK_INT(tfj_replabel_settled(&l), 0);
	/* The pod is not there (yet): the PATCH fails, not settled, and the next
	 * try waits out the backoff without a request. */
	TFJ_CHECK_INT(tfj_replabel_sync(&l, 0, 1000), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(tfj_replabel_settled(&l), 0);
	patches = F.patches;
	TFJ_CHECK_INT(tfj_replabel_sync(&l, 0, 1000 + TFJ_REPLABEL_BACKOFF_MIN_MS - 1),
		      TFJ_EUNAVAIL);
	TFJ_CHECK_EQ(F.patches, patches);

	pod = cJSON_Parse("{\"metadata\":{\"name\":\"op-0\",\"labels\":{"
			  "\"tfjob.kubeflow.org/report-leader\":\"true\"}}}");
	TFJ_CHECK_OK(tfj_kube_create(k, NULL, "/api/v1/namespaces/op/pods", pod));
	cJSON_Delete(pod);
	/* A standby clears what a predecessor in this pod left, then is ready. */
	TFJ_CHECK_OK(tfj_replabel_sync(&l, 0, 1000 + TFJ_REPLABEL_BACKOFF_MIN_MS));
	TFJ_CHECK_INT(tfj_replabel_settled(&l), 1);
	TFJ_CHECK(label_of("op-0") == NULL);
	patches = F.patches;
	TFJ_CHECK_OK(tfj_replabel_sync(&l, 0, 5000));
	TFJ_CHECK_EQ(F.patches, patches);
	/* Leading: labelled once. */
	TFJ_CHECK_OK(tfj_replabel_sync(&l, 1, 6000));
	TFJ_CHECK(label_of("op-0") && !strcmp(label_of("op-0"), "true"));
	TFJ_CHECK_OK(tfj_replabel_sync(&l, 1, 7000));
	TFJ_CHECK_EQ(F.patches, patches + 1);
	tfj_kube_free(k);
}

int main(void)
{
	int rc;

	TFJ_RUN(test_patch);
	TFJ_RUN(test_off_without_pod);
	rc = fake_start(&F, "test-token");
	if (fake_unavailable(&F, rc)) {
		tfj_test_finish();
		return 77;
	}
	TFJ_CHECK_INT(rc, 0);
	if (rc == 0)
		TFJ_RUN(test_sync);
	fake_stop(&F);
	return tfj_test_finish();
}
