/*
 * test_informer.c - LIST+WATCH cache against the local HTTPS server:
 * initial sync, watch events, label filtering and indexing, the relist
 * after a 410 (history compacted while the watch was cut), and the
 * transform hook on listed and watched objects, and a collection that is
 * not served (404, absent_ok: synced and empty, then its objects once it is). The cache on its own (index,
 * prune, ownership of copies) is tested without a server in test_objstore.c.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tfj/err.h>

#include "fakeapi.h"
#include "kube/informer.h"
#include "kube/kube.h"
#include "app/slim.h"
#include "tfj_test.h"

static struct fake F;
static struct tfj_kube *K;

static atomic_int adds, updates, deletes;

/*
 * Polls of 25 ms each before a wait gives up: 30 s, far above what any
 * wait takes, so a loaded machine (a sanitizer build beside the cluster
 * tests) slows the test down instead of failing it.
 */
#define WAIT_TRIES 1200

static void on_event(void *ud, enum tfj_informer_event ev, const cJSON *obj, const cJSON *old)
{
	if (ev == TFJ_INF_ADD)
		atomic_fetch_add(&adds, 1);
	else if (ev == TFJ_INF_UPDATE)
		atomic_fetch_add(&updates, 1);
	else
		atomic_fetch_add(&deletes, 1);
	if (ev == TFJ_INF_UPDATE && !old)
		tfj_test_fail(__FILE__, __LINE__, "UPDATE without the old object");
}

static void make_pod(const char *ns, const char *name, const char *job)
{
	char s[512];
	cJSON *p;
	if (job)
		snprintf(s, sizeof(s), "{\"metadata\":{\"name\":\"%s\",\"labels\":"
			 "{\"training.kubeflow.org/job-name\":\"%s\"}}}", name, job);
	else
		snprintf(s, sizeof(s), "{\"metadata\":{\"name\":\"%s\"}}", name);
	p = cJSON_Parse(s);
	snprintf(s, sizeof(s), "/api/v1/namespaces/%s/pods", ns);
	TFJ_CHECK_INT(tfj_kube_create(K, NULL, s, p), 0);
	cJSON_Delete(p);
}

static int wait_for(atomic_int *v, int want)
{
	for (int i = 0; i < WAIT_TRIES && atomic_load(v) < want; i++)
		usleep(25000);
	return atomic_load(v) >= want;
}

static void test_sync_watch_relist(void)
{
	struct tfj_informer_opts o = { 0 };
	struct tfj_informer *inf = NULL;
	struct tfj_informer_stats st;
	cJSON **list = NULL, *got;
	size_t n = 0;

	make_pod("a", "j1-worker-0", "j1");
	make_pod("a", "j1-worker-1", "j1");
	make_pod("b", "j1-worker-0", "j1");   /* same job name, other namespace */
	make_pod("a", "unrelated", NULL);      /* filtered out by the selector */

	o.name = "pods";
	o.path = "/api/v1/pods";
	o.label_selector = "training.kubeflow.org/job-name";
	o.index_label = "training.kubeflow.org/job-name";
	o.fn = on_event;
	o.watch_timeout_s = 2;  /* rollovers happen during the test */
	TFJ_CHECK_INT(tfj_informer_new(&inf, K, &o), 0);
	if (!inf)
		return;
	TFJ_CHECK_INT(tfj_informer_start(inf), 0);
	TFJ_CHECK_INT(tfj_informer_wait_synced(inf, 30000), 0);
	TFJ_CHECK_INT(atomic_load(&adds), 3);
	TFJ_CHECK_INT(tfj_informer_select(inf, &list, &n, "a", "j1"), 0);
	TFJ_CHECK_INT(n, 2);
	tfj_informer_free_list(list, n);
	TFJ_CHECK(tfj_informer_get(inf, "a", "unrelated") == NULL);

	/* Watch: add, modify, delete. */
	make_pod("a", "j1-ps-0", "j1");
	TFJ_CHECK(wait_for(&adds, 4));
	fake_put_status(&F, "pods", "a", "j1-ps-0", "{\"phase\":\"Running\"}");
	TFJ_CHECK(wait_for(&updates, 1));
	got = tfj_informer_get(inf, "a", "j1-ps-0");
	TFJ_CHECK(got && cJSON_GetObjectItem(got, "status") != NULL);
	cJSON_Delete(got);
	TFJ_CHECK_INT(tfj_kube_delete(K, "/api/v1/namespaces/a/pods/j1-worker-1", NULL, NULL), 0);
	TFJ_CHECK(wait_for(&deletes, 1));
	TFJ_CHECK_INT(tfj_informer_select(inf, &list, &n, "a", "j1"), 0);
	TFJ_CHECK_INT(n, 2);
	tfj_informer_free_list(list, n);

	/* Survives a normal watch rollover (timeoutSeconds=2..2.5). */
	sleep(3);
	make_pod("a", "j1-worker-9", "j1");
	TFJ_CHECK(wait_for(&adds, 5));

	/* History compacted and the watch cut; a pod vanishes meanwhile. The
	 * resumed watch gets 410, the informer relists and reports the delete. */
	fake_compact_and_cut(&F);
	TFJ_CHECK_INT(tfj_kube_delete(K, "/api/v1/namespaces/b/pods/j1-worker-0", NULL, NULL), 0);
	TFJ_CHECK(wait_for(&deletes, 2));
	for (int i = 0; i < WAIT_TRIES; i++) {
		tfj_informer_stats(inf, &st);
		if (st.relists >= 1 && st.lists >= 2)
			break;
		usleep(25000);
	}
	TFJ_CHECK_GE(st.relists, 1);
	TFJ_CHECK_GE(st.lists, 2);
	TFJ_CHECK_INT(st.size, 3);
	TFJ_CHECK(tfj_informer_get(inf, "b", "j1-worker-0") == NULL);
	/* Still watching after the relist. */
	make_pod("a", "j1-worker-10", "j1");
	TFJ_CHECK(wait_for(&adds, 6));
	TFJ_CHECK_INT(tfj_informer_list_all(inf, &list, &n), 0);
	TFJ_CHECK_INT(n, 4);
	tfj_informer_free_list(list, n);
	tfj_informer_free(inf);
}

/* A watch line over the cap is not a crash and not a stuck informer: it
 * relists, and the list (no line cap, only the body cap) brings the object. */
static void test_oversized_event_relists(void)
{
	struct tfj_informer_opts o = { 0 };
	struct tfj_informer *inf = NULL;
	struct tfj_informer_stats st;
	char big[6000], *body;
	cJSON *p, *got;

	o.name = "small-lines";
	o.path = "/api/v1/namespaces/huge/pods";
	o.max_line = 2048;
	TFJ_CHECK_INT(tfj_informer_new(&inf, K, &o), 0);
	if (!inf)
		return;
	TFJ_CHECK_INT(tfj_informer_start(inf), 0);
	TFJ_CHECK_INT(tfj_informer_wait_synced(inf, 30000), 0);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	body = malloc(sizeof(big) + 128);
	snprintf(body, sizeof(big) + 128, "{\"metadata\":{\"name\":\"fat\",\"annotations\":"
		 "{\"a\":\"%s\"}}}", big);
	p = cJSON_Parse(body);
	free(body);
	TFJ_CHECK_INT(tfj_kube_create(K, NULL, "/api/v1/namespaces/huge/pods", p), 0);
	cJSON_Delete(p);
	got = NULL;
	for (int i = 0; i < WAIT_TRIES && !got; i++) {
		got = tfj_informer_get(inf, "huge", "fat");
		if (!got)
			usleep(25000);
	}
	TFJ_CHECK(got != NULL);
	cJSON_Delete(got);
	tfj_informer_stats(inf, &st);
	TFJ_CHECK_GE(st.relists, 1);
	TFJ_CHECK_GE(st.lists, 2);
	tfj_informer_free(inf);
}

static void test_stop_while_down(void)
{
	/* An informer on a path the server refuses keeps retrying with
	 * backoff and still stops promptly. */
	struct tfj_informer_opts o = { 0 };
	struct tfj_informer *inf = NULL;
	struct tfj_informer_stats st;
	o.name = "broken";
	o.path = "/nope/v1/things";
	TFJ_CHECK_INT(tfj_informer_new(&inf, K, &o), 0);
	if (!inf)
		return;
	TFJ_CHECK_INT(tfj_informer_start(inf), 0);
	TFJ_CHECK_INT(tfj_informer_wait_synced(inf, 1500), TFJ_ETIMEOUT);
	tfj_informer_stats(inf, &st);
	TFJ_CHECK_GE(st.errors, 1);
	TFJ_CHECK_LE(st.errors, 3); /* backoff, not a storm */
	tfj_informer_free(inf);
}

static void make_fat_pod(const char *name)
{
	char s[512];
	cJSON *p;

	snprintf(s, sizeof(s), "{\"metadata\":{\"name\":\"%s\",\"labels\":"
		 "{\"training.kubeflow.org/job-name\":\"t\"},\"annotations\":{\"a\":\"b\"},"
		 "\"managedFields\":[{\"manager\":\"m\"}]},"
		 "\"spec\":{\"containers\":[{\"name\":\"tensorflow\",\"image\":\"i\"}]}}",
		 name);
	p = cJSON_Parse(s);
	TFJ_CHECK_INT(tfj_kube_create(K, NULL, "/api/v1/namespaces/tr/pods", p), 0);
	cJSON_Delete(p);
}

/* The cached copy of tr/name (once it has a status, if asked), or NULL after ~5 s. */
static cJSON *wait_get(struct tfj_informer *inf, const char *name, int with_status)
{
	for (int i = 0; i < WAIT_TRIES; i++) {
		cJSON *got = tfj_informer_get(inf, "tr", name);
		if (got && (!with_status || cJSON_GetObjectItem(got, "status")))
			return got;
		cJSON_Delete(got);
		usleep(25000);
	}
	return NULL;
}

static void check_slim(const cJSON *got)
{
	const cJSON *m = cJSON_GetObjectItem(got, "metadata");

	TFJ_CHECK(got != NULL);
	TFJ_CHECK(cJSON_GetObjectItem(got, "spec") == NULL);
	TFJ_CHECK(cJSON_GetObjectItem(m, "managedFields") == NULL);
	TFJ_CHECK(cJSON_GetObjectItem(m, "annotations") == NULL);
	TFJ_CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "labels"),
				      "training.kubeflow.org/job-name") != NULL);
	TFJ_CHECK(cJSON_GetObjectItem(m, "uid") != NULL);
}

static void test_transform(void)
{
	struct tfj_informer_opts o = { 0 };
	struct tfj_informer *inf = NULL;
	cJSON *got;

	make_fat_pod("listed");
	o.name = "pods";
	o.path = "/api/v1/namespaces/tr/pods";
	o.label_selector = "training.kubeflow.org/job-name";
	o.transform = tfj_slim_pod;
	TFJ_CHECK_INT(tfj_informer_new(&inf, K, &o), 0);
	if (!inf)
		return;
	TFJ_CHECK_INT(tfj_informer_start(inf), 0);
	TFJ_CHECK_INT(tfj_informer_wait_synced(inf, 30000), 0);
	/* From the LIST. */
	got = tfj_informer_get(inf, "tr", "listed");
	check_slim(got);
	cJSON_Delete(got);
	/* From ADDED and MODIFIED events. */
	make_fat_pod("watched");
	got = wait_get(inf, "watched", 0);
	check_slim(got);
	cJSON_Delete(got);
	fake_put_status(&F, "pods", "tr", "watched",
			"{\"phase\":\"Running\",\"podIP\":\"10.0.0.9\"}");
	got = wait_get(inf, "watched", 1);
	check_slim(got);
	TFJ_CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(got, "status"),
							       "phase")), "Running");
	TFJ_CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(got, "status"), "podIP") == NULL);
	cJSON_Delete(got);
	tfj_informer_free(inf);
}

/* ---- objects that cannot be decoded ---- */

static atomic_int rejects;
static char reject_key[128];

static void on_reject(void *ud, const struct tfj_informer_reject *r)
{
	if (r->key && atomic_fetch_add(&rejects, 1) == 0)
		snprintf(reject_key, sizeof(reject_key), "%s %s", r->key, r->reason);
}

/* A pod whose spec nests `depth` objects: valid for the API server. */
static void make_deep_pod(const char *ns, const char *name, int depth)
{
	size_t cap = (size_t)depth * 8 + 256, o = 0;
	char *b = malloc(cap), path[128];
	cJSON *p;

	o += (size_t)snprintf(b, cap, "{\"metadata\":{\"name\":\"%s\"},\"spec\":", name);
	for (int i = 0; i < depth; i++)
		o += (size_t)snprintf(b + o, cap - o, "{\"x\":");
	b[o++] = '1';
	for (int i = 0; i <= depth; i++)
		b[o++] = '}';
	b[o] = '\0';
	p = cJSON_Parse(b);
	free(b);
	TFJ_CHECK_NOT_NULL(p);
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", ns);
	TFJ_CHECK_INT(tfj_kube_create(K, NULL, path, p), 0);
	cJSON_Delete(p);
}

static cJSON *wait_named(struct tfj_informer *inf, const char *ns, const char *name)
{
	cJSON *got = NULL;
	for (int i = 0; i < WAIT_TRIES && !got; i++) {
		got = tfj_informer_get(inf, ns, name);
		if (!got)
			usleep(25000);
	}
	return got;
}

/*
 * A poison object in a LIST page and on the watch: skipped, counted, told
 * once per key; every other object of the page and the stream still
 * arrives, and the informer never relists for it.
 */
static void test_poison_objects(void)
{
	struct tfj_informer_opts o = { 0 };
	struct tfj_informer *inf = NULL;
	struct tfj_informer_stats st;
	cJSON *got;

	make_pod("poison", "good-1", NULL);
	make_deep_pod("poison", "deep-1", 100);
	make_pod("poison", "good-2", NULL);
	o.name = "poison";
	o.path = "/api/v1/namespaces/poison/pods";
	o.reject = on_reject;
	o.page_size = 2; /* the poison item shares a page with a good one */
	TFJ_CHECK_INT(tfj_informer_new(&inf, K, &o), 0);
	if (!inf)
		return;
	TFJ_CHECK_INT(tfj_informer_start(inf), 0);
	TFJ_CHECK_INT(tfj_informer_wait_synced(inf, 30000), 0);
	tfj_informer_stats(inf, &st);
	TFJ_CHECK_INT(st.size, 2);
	TFJ_CHECK_INT(st.rejected[TFJ_OBJDECODE_DEPTH], 1);
	TFJ_CHECK_INT(atomic_load(&rejects), 1);
	TFJ_CHECK_STR(reject_key, "poison/deep-1 depth");
	TFJ_CHECK_GE(tfj_informer_idle_ms(inf), 0);

	/* On the watch: the poison one skipped, the next one still cached. */
	make_deep_pod("poison", "deep-2", 100);
	make_pod("poison", "good-3", NULL);
	got = wait_named(inf, "poison", "good-3");
	TFJ_CHECK_NOT_NULL(got);
	cJSON_Delete(got);
	TFJ_CHECK_NULL(tfj_informer_get(inf, "poison", "deep-2"));
	/* Changed again: counted, not told again. */
	fake_put_status(&F, "pods", "poison", "deep-1", "{\"phase\":\"Running\"}");
	make_pod("poison", "good-4", NULL);
	got = wait_named(inf, "poison", "good-4");
	TFJ_CHECK_NOT_NULL(got);
	cJSON_Delete(got);
	tfj_informer_stats(inf, &st);
	TFJ_CHECK_INT(st.rejected[TFJ_OBJDECODE_DEPTH], 3);
	TFJ_CHECK_INT(atomic_load(&rejects), 2);
	TFJ_CHECK_INT(st.relists, 0);
	TFJ_CHECK_INT(st.size, 4);
	tfj_informer_free(inf);
}

static atomic_int absent_adds;

static void on_absent_event(void *ud, enum tfj_informer_event ev, const cJSON *obj,
			    const cJSON *old)
{
	if (ev == TFJ_INF_ADD)
		atomic_fetch_add(&absent_adds, 1);
}

/*
 * A LIST that answers 404 (a CRD not installed): without absent_ok the
 * informer never syncs; with it, it is synced, empty and absent, and lists
 * again until the collection is served.
 */
static void test_absent_collection(void)
{
	struct tfj_informer_opts o = { 0 };
	struct tfj_informer *inf = NULL, *strict = NULL;
	int i;

	make_pod("abs", "pg-0", NULL);
	o.name = "absent";
	o.path = "/api/v1/namespaces/abs/pods";
	o.fn = on_absent_event;
	o.watch_timeout_s = 2;
	o.absent_relist_ms = 300;
	/* Without absent_ok a 404 is an error like any other: not synced. */
	fake_inject(&F, 1000, 404, "/namespaces/abs/pods", "GET", NULL);
	TFJ_CHECK_OK(tfj_informer_new(&strict, K, &o));
	TFJ_CHECK_OK(tfj_informer_start(strict));
	TFJ_CHECK_INT(tfj_informer_wait_synced(strict, 1500), TFJ_ETIMEOUT);
	tfj_informer_free(strict);
	/* With it: synced at once, empty, absent. */
	fake_inject(&F, 3, 404, "/namespaces/abs/pods", "GET", NULL);
	o.absent_ok = 1;
	TFJ_CHECK_OK(tfj_informer_new(&inf, K, &o));
	if (!inf)
		goto out;
	TFJ_CHECK_OK(tfj_informer_start(inf));
	TFJ_CHECK_OK(tfj_informer_wait_synced(inf, 30000));
	TFJ_CHECK_INT(tfj_informer_absent(inf), 1);
	TFJ_CHECK(tfj_informer_get(inf, "abs", "pg-0") == NULL);
	TFJ_CHECK_INT(atomic_load(&absent_adds), 0);
	/* Served after a few relists (the injected 404s run out). */
	for (i = 0; i < WAIT_TRIES && atomic_load(&absent_adds) == 0; i++)
		usleep(25000);
	TFJ_CHECK_INT(atomic_load(&absent_adds), 1);
	TFJ_CHECK_INT(tfj_informer_absent(inf), 0);
out:
	fake_inject(&F, 0, 0, NULL, NULL, NULL);
	tfj_informer_free(inf);
}

int main(void)
{
	int rc = fake_start(&F, "tok");
	if (fake_unavailable(&F, rc))
		return 77;
	TFJ_CHECK_INT(rc, 0);
	K = fake_client(&F, NULL);
	if (rc == 0 && K) {
		TFJ_RUN(test_sync_watch_relist);
		TFJ_RUN(test_oversized_event_relists);
		TFJ_RUN(test_stop_while_down);
		TFJ_RUN(test_transform);
		TFJ_RUN(test_poison_objects);
		TFJ_RUN(test_absent_collection);
	}
	tfj_kube_free(K);
	fake_stop(&F);
	return tfj_test_finish();
}
