/*
 * test_nsinformer.c - informers over a list of watched namespaces: the
 * list is checked and sorted in key order; against the fake API server
 * with every cluster-wide LIST/WATCH refused (403, as for an operator
 * holding only Roles), the set syncs through the namespaced paths, routes
 * reads by namespace, leaves unwatched namespaces out, and adds up its
 * statistics and dumps as one cache would.
 */
#include <string.h>

#include "fakeapi.h"
#include "kube/nsinformer.h"
#include "tfj_test.h"

static struct fake F;
static struct tfj_kube *K;

static void test_parse(void)
{
	char names[TFJ_NSINFORMER_MAX][64], big[70 * 4 * 3];
	size_t n = 99;
	int i;

	TFJ_CHECK_OK(tfj_nsinformer_parse(names, &n, ""));
	TFJ_CHECK_EQ(n, (size_t)0);
	TFJ_CHECK_OK(tfj_nsinformer_parse(names, &n, NULL));
	TFJ_CHECK_EQ(n, (size_t)0);
	TFJ_CHECK_OK(tfj_nsinformer_parse(names, &n, "team-b, a,a-b ,team-b"));
	TFJ_CHECK_EQ(n, (size_t)3);
	/* Key order: "a-b/x" < "a/x" ('-' sorts before '/'). */
	TFJ_CHECK_STR(names[0], "a-b");
	TFJ_CHECK_STR(names[1], "a");
	TFJ_CHECK_STR(names[2], "team-b");
	TFJ_CHECK_INT(tfj_nsinformer_parse(names, &n, "a,,b"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_nsinformer_parse(names, &n, "Team"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_nsinformer_parse(names, &n, "a_b"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_nsinformer_parse(names, &n, "-a"), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_nsinformer_parse(names, &n,
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), TFJ_EINVAL);
	big[0] = '\0';
	for (i = 0; i < TFJ_NSINFORMER_MAX + 1; i++)
		snprintf(big + strlen(big), sizeof(big) - strlen(big), "%sn%d", i ? "," : "", i);
	TFJ_CHECK_INT(tfj_nsinformer_parse(names, &n, big), TFJ_EINVAL);
}

static void make_pod(const char *ns, const char *name)
{
	char s[512];
	cJSON *p;

	snprintf(s, sizeof(s), "{\"metadata\":{\"name\":\"%s\",\"labels\":"
		 "{\"training.kubeflow.org/job-name\":\"j\"}}}", name);
	p = cJSON_Parse(s);
	snprintf(s, sizeof(s), "/api/v1/namespaces/%s/pods", ns);
	TFJ_CHECK_OK(tfj_kube_create(K, NULL, s, p));
	cJSON_Delete(p);
}

static void test_watched_namespaces(void)
{
	struct tfj_informer_opts io;
	struct tfj_nsinformer *s = NULL;
	struct tfj_informer_stats st;
	struct tfj_buf d;
	cJSON **list = NULL, *o;
	size_t n = 0;

	make_pod("b", "pb");
	make_pod("a", "pa");
	make_pod("c", "pc");
	/* Only Roles: every cluster-wide pods request is forbidden. */
	fake_inject(&F, 1000000, 403, "/api/v1/pods", NULL, NULL);
	memset(&io, 0, sizeof(io));
	io.label_selector = "training.kubeflow.org/job-name";
	io.index_label = "training.kubeflow.org/job-name";
	TFJ_CHECK_OK(tfj_nsinformer_new(&s, K, &io, "/api/v1", "pods", "b,a"));
	if (!s)
		return;
	TFJ_CHECK_OK(tfj_nsinformer_start(s));
	TFJ_CHECK_OK(tfj_nsinformer_wait_synced(s, 10000));
	TFJ_CHECK_INT(tfj_nsinformer_synced(s), 1);
	TFJ_CHECK_STR(tfj_nsinformer_name(s), "pods");
	o = tfj_nsinformer_get(s, "a", "pa");
	TFJ_CHECK_NOT_NULL(o);
	cJSON_Delete(o);
	o = tfj_nsinformer_get(s, "b", "pb");
	TFJ_CHECK_NOT_NULL(o);
	cJSON_Delete(o);
	/* Not watched: absent, even though it exists. */
	TFJ_CHECK_NULL(tfj_nsinformer_get(s, "c", "pc"));
	TFJ_CHECK_OK(tfj_nsinformer_select(s, &list, &n, "a", "j"));
	TFJ_CHECK_EQ(n, (size_t)1);
	tfj_informer_free_list(list, n);
	TFJ_CHECK_OK(tfj_nsinformer_select(s, &list, &n, "c", "j"));
	TFJ_CHECK_EQ(n, (size_t)0);
	tfj_informer_free_list(list, n);
	tfj_nsinformer_stats(s, &st);
	TFJ_CHECK_EQ(st.size, (size_t)2);
	TFJ_CHECK_EQ(st.lists, (uint64_t)2);
	TFJ_CHECK_GE(tfj_nsinformer_idle_ms(s), (int64_t)0);
	tfj_buf_init(&d, 1 << 16);
	TFJ_CHECK_OK(tfj_nsinformer_dump(s, &d));
	TFJ_CHECK(!strncmp(tfj_buf_cstr(&d), "a/pa ", 5));
	TFJ_CHECK(strstr(tfj_buf_cstr(&d), "\nb/pb ") != NULL);
	TFJ_CHECK(strstr(tfj_buf_cstr(&d), "c/pc") == NULL);
	tfj_buf_free(&d);
	/* The refusals were never hit: nothing asked for the cluster-wide path. */
	pthread_mutex_lock(&F.mu);
	TFJ_CHECK_EQ(F.fail_n, 1000000);
	pthread_mutex_unlock(&F.mu);
	tfj_nsinformer_free(s);
	fake_inject(&F, 0, 0, NULL, NULL, NULL);
	/* No list: one informer for every namespace, on the cluster-wide path. */
	TFJ_CHECK_OK(tfj_nsinformer_new(&s, K, &io, "/api/v1", "pods", ""));
	TFJ_CHECK_OK(tfj_nsinformer_start(s));
	TFJ_CHECK_OK(tfj_nsinformer_wait_synced(s, 10000));
	o = tfj_nsinformer_get(s, "c", "pc");
	TFJ_CHECK_NOT_NULL(o);
	cJSON_Delete(o);
	tfj_nsinformer_stats(s, &st);
	TFJ_CHECK_EQ(st.size, (size_t)3);
	tfj_nsinformer_free(s);
}

int main(void)
{
	int rc;

	TFJ_RUN(test_parse);
	rc = fake_start(&F, "tok");
	if (fake_unavailable(&F, rc))
		return tfj_test_finish();
	TFJ_CHECK_INT(rc, 0);
	K = fake_client(&F, NULL);
	if (rc == 0 && K)
		TFJ_RUN(test_watched_namespaces);
	tfj_kube_free(K);
	fake_stop(&F);
	return tfj_test_finish();
}
