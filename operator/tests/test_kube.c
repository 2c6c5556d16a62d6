/*
 * test_kube.c - the API client against a local HTTPS server (fakeapi.h):
 * TLS verification, status mapping, token rotation, body caps, counters,
 * streaming, Retry-After on 429/503; plus the pure helpers.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tfj/clock.h>
#include <tfj/err.h>

#include "fakeapi.h"
#include "kube/leader.h"
#include "kube/kube.h"
#include "tfj_test.h"
#include "tfj_testutil.h"

static struct fake F;

static void test_map_status(void)
{
	TFJ_CHECK_INT(tfj_kube_map_status(200, NULL), 0);
	TFJ_CHECK_INT(tfj_kube_map_status(201, NULL), 0);
	TFJ_CHECK_INT(tfj_kube_map_status(404, "NotFound"), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(tfj_kube_map_status(409, "AlreadyExists"), TFJ_EEXIST);
	TFJ_CHECK_INT(tfj_kube_map_status(409, "Conflict"), TFJ_ECONFLICT);
	TFJ_CHECK_INT(tfj_kube_map_status(409, NULL), TFJ_ECONFLICT);
	TFJ_CHECK_INT(tfj_kube_map_status(410, "Expired"), TFJ_EGONE);
	TFJ_CHECK_INT(tfj_kube_map_status(401, NULL), TFJ_EAUTH);
	TFJ_CHECK_INT(tfj_kube_map_status(403, NULL), TFJ_EFORBIDDEN);
	TFJ_CHECK_INT(tfj_kube_map_status(422, NULL), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_kube_map_status(429, NULL), TFJ_EUNAVAIL);
	TFJ_CHECK_INT(tfj_kube_map_status(503, NULL), TFJ_EUNAVAIL);
	TFJ_CHECK_INT(tfj_kube_map_status(504, NULL), TFJ_ETIMEOUT);
	TFJ_CHECK_INT(tfj_kube_map_status(0, NULL), TFJ_EUNAVAIL);
}

static void test_escape(void)
{
	char out[64];
	TFJ_CHECK_INT(tfj_kube_escape(out, sizeof(out), "training.kubeflow.org/job-name=a b"), 0);
	TFJ_CHECK_STR(out, "training.kubeflow.org%2Fjob-name%3Da%20b");
	TFJ_CHECK_INT(tfj_kube_escape(out, 5, "abcd"), 0);
	TFJ_CHECK_INT(tfj_kube_escape(out, 4, "abcd"), TFJ_ETOOBIG);
	TFJ_CHECK_INT(tfj_kube_escape(out, 5, "ab/"), TFJ_ETOOBIG);
}

static struct tfj_kube *client(int wrong_ca, size_t max_body)
{
	struct tfj_kubeconfig kc;
	struct tfj_kube_opts o = { 0, 1, 5000, max_body, 60, NULL };
	struct tfj_kube *k = NULL;
	fake_kubeconfig(&F, &kc, wrong_ca);
	TFJ_CHECK_INT(tfj_kube_new(&k, &kc, &o), 0);
	tfj_kubeconfig_free(&kc);
	return k;
}

static cJSON *pod(const char *name)
{
	char s[256];
	snprintf(s, sizeof(s), "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
		 "\"labels\":{\"training.kubeflow.org/job-name\":\"j\"}}}", name);
	return cJSON_Parse(s);
}

static void test_tls_verified(void)
{
	struct tfj_kube *k = client(1, 0);
	cJSON *out = NULL;
	if (!k)
		return;
	TFJ_CHECK_INT(tfj_kube_get(k, &out, "/api/v1/namespaces/t/pods/x"), TFJ_EAUTH);
	TFJ_CHECK(strstr(tfj_err_detail(), "TLS") != NULL);
	TFJ_CHECK(out == NULL);
	TFJ_CHECK_INT(tfj_kube_count(k, TFJ_KUBE_GET, 0), 1);
	tfj_kube_free(k);
}

static void test_crud_and_errors(void)
{
	struct tfj_kube *k = client(0, 0);
	cJSON *p = pod("p1"), *out = NULL;
	const char *uid;
	char uidbuf[64];

	if (!k)
		return;
	TFJ_CHECK_INT(tfj_kube_get(k, &out, "/api/v1/namespaces/t/pods/p1"), TFJ_ENOTFOUND);
	TFJ_CHECK(strstr(tfj_err_detail(), "404") != NULL);
	TFJ_CHECK_INT(tfj_kube_create(k, &out, "/api/v1/namespaces/t/pods", p), 0);
	uid = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(out, "metadata"), "uid"));
	TFJ_CHECK(uid != NULL);
	snprintf(uidbuf, sizeof(uidbuf), "%s", uid ? uid : "");
	cJSON_Delete(out);
	out = NULL;
	TFJ_CHECK_INT(tfj_kube_create(k, NULL, "/api/v1/namespaces/t/pods", p), TFJ_EEXIST);
	TFJ_CHECK(strstr(tfj_err_detail(), "AlreadyExists") != NULL);

	/* PUT with a stale resourceVersion conflicts. */
	cJSON_AddItemToObject(cJSON_GetObjectItem(p, "metadata"), "resourceVersion",
			      cJSON_CreateString("999999"));
	TFJ_CHECK_INT(tfj_kube_replace(k, NULL, "/api/v1/namespaces/t/pods/p1", p), TFJ_ECONFLICT);

	TFJ_CHECK_INT(tfj_kube_list(k, &out, "/api/v1/namespaces/t/pods"), 0);
	TFJ_CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(out, "items")), 1);
	cJSON_Delete(out);

	/* A uid precondition protects a newer incarnation. */
	TFJ_CHECK_INT(tfj_kube_delete(k, "/api/v1/namespaces/t/pods/p1", "uid-other", "Background"),
		      TFJ_ECONFLICT);
	TFJ_CHECK_INT(F.last_delete_grace, -1); /* the pod's own grace period */
	/* A force delete (a pod of a lost node, tfjob/planlost.h) says grace 0. */
	TFJ_CHECK_INT(tfj_kube_delete_grace(k, "/api/v1/namespaces/t/pods/p1", uidbuf, "Background",
					    0), 0);
	TFJ_CHECK_INT(F.last_delete_grace, 0);
	TFJ_CHECK_INT(tfj_kube_delete(k, "/api/v1/namespaces/t/pods/p1", NULL, NULL), TFJ_ENOTFOUND);

	/* Injected server errors. */
	fake_inject(&F, 1, 503, "/pods/zz", NULL, NULL);
	TFJ_CHECK_INT(tfj_kube_get(k, &out, "/api/v1/namespaces/t/pods/zz"), TFJ_EUNAVAIL);

	TFJ_CHECK_INT(tfj_kube_count(k, TFJ_KUBE_POST, 201), 1);
	TFJ_CHECK_INT(tfj_kube_count(k, TFJ_KUBE_POST, 409), 1);
	TFJ_CHECK_INT(tfj_kube_count(k, TFJ_KUBE_DELETE, 404), 1);
	TFJ_CHECK_INT(tfj_kube_count(k, TFJ_KUBE_GET, 503), 1);
	{
		struct tfj_buf m = TFJ_BUF_INIT(1 << 20);
		TFJ_CHECK_INT(tfj_kube_metrics(k, &m), 0);
		TFJ_CHECK(strstr(tfj_buf_cstr(&m),
				 "tfjob_operator_api_requests_total{verb=\"POST\",code=\"409\"} 1\n") != NULL);
		TFJ_CHECK(strstr(tfj_buf_cstr(&m), "tfjob_operator_api_request_seconds_count{verb=\"LIST\"} 1")
			  != NULL);
		tfj_buf_free(&m);
		/* The counter alone under another name (the Events' client). */
		m = (struct tfj_buf)TFJ_BUF_INIT(1 << 20);
		TFJ_CHECK_INT(tfj_kube_requests_metric(k, &m, "x_requests_total", "Help."), 0);
		TFJ_CHECK(strstr(tfj_buf_cstr(&m), "# TYPE x_requests_total counter\n") != NULL);
		TFJ_CHECK(strstr(tfj_buf_cstr(&m),
				 "x_requests_total{verb=\"POST\",code=\"409\"} 1\n") != NULL);
		TFJ_CHECK(strstr(tfj_buf_cstr(&m), "seconds") == NULL);
		tfj_buf_free(&m);
	}
	/* Bad arguments are refused before any request. */
	TFJ_CHECK_INT(tfj_kube_get(k, &out, "no-slash"), TFJ_EINVAL);
	cJSON_Delete(p);
	tfj_kube_free(k);
}

static void test_body_cap(void)
{
	struct tfj_kube *k = client(0, 0), *small;
	cJSON *out = NULL;
	char name[32];
	if (!k)
		return;
	for (int i = 0; i < 20; i++) {
		cJSON *p;
		snprintf(name, sizeof(name), "cap-%d", i);
		p = pod(name);
		tfj_kube_create(k, NULL, "/api/v1/namespaces/cap/pods", p);
		cJSON_Delete(p);
	}
	small = client(0, 1024);
	TFJ_CHECK_INT(tfj_kube_list(small, &out, "/api/v1/namespaces/cap/pods"), TFJ_ETOOBIG);
	TFJ_CHECK(out == NULL);
	TFJ_CHECK_INT(tfj_kube_list(k, &out, "/api/v1/namespaces/cap/pods"), 0);
	cJSON_Delete(out);
	tfj_kube_free(small);
	tfj_kube_free(k);
}

static void test_token_rotation(void)
{
	struct tfj_kubeconfig kc;
	struct tfj_kube *k = NULL;
	cJSON *out = NULL;
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/token", F.dir);
	f = fopen(path, "w");
	fputs("secret-one\n", f);
	fclose(f);
	fake_kubeconfig(&F, &kc, 0);
	free(kc.token);
	kc.token = NULL;
	kc.token_file = strdup(path);
	pthread_mutex_lock(&F.mu);
	snprintf(F.token, sizeof(F.token), "secret-one");
	pthread_mutex_unlock(&F.mu);
	TFJ_CHECK_INT(tfj_kube_new(&k, &kc, NULL), 0);
	tfj_kubeconfig_free(&kc);
	if (!k)
		return;
	TFJ_CHECK_INT(tfj_kube_get(k, &out, "/api/v1/namespaces/t/pods/none"), TFJ_ENOTFOUND);
	/* The token rotates: the server wants the new one, the file has it. */
	f = fopen(path, "w");
	fputs("secret-two", f);
	fclose(f);
	pthread_mutex_lock(&F.mu);
	snprintf(F.token, sizeof(F.token), "secret-two");
	F.unauthorized = 0;
	pthread_mutex_unlock(&F.mu);
	TFJ_CHECK_INT(tfj_kube_get(k, &out, "/api/v1/namespaces/t/pods/none"), TFJ_ENOTFOUND);
	TFJ_CHECK_INT(F.unauthorized, 1);           /* one 401, then the re-read token */
	TFJ_CHECK_INT(tfj_kube_count(k, TFJ_KUBE_GET, 401), 1);
	/* A token nobody accepts: EAUTH, and the secret is not in the detail. */
	pthread_mutex_lock(&F.mu);
	snprintf(F.token, sizeof(F.token), "secret-three");
	pthread_mutex_unlock(&F.mu);
	TFJ_CHECK_INT(tfj_kube_get(k, &out, "/api/v1/namespaces/t/pods/none"), TFJ_EAUTH);
	TFJ_CHECK(strstr(tfj_err_detail(), "secret") == NULL);
	tfj_kube_free(k);
	pthread_mutex_lock(&F.mu);
	snprintf(F.token, sizeof(F.token), "test-token");
	pthread_mutex_unlock(&F.mu);
}

struct sink {
	char buf[8192];
	size_t len;
	int stop_after;
};

static int on_data(void *ud, const char *d, size_t n)
{
	struct sink *s = ud;
	if (s->len + n >= sizeof(s->buf))
		return TFJ_ETOOBIG;
	memcpy(s->buf + s->len, d, n);
	s->len += n;
	s->buf[s->len] = '\0';
	return s->stop_after && strstr(s->buf, "w-2") ? TFJ_ECANCELED : 0;
}

static void test_stream(void)
{
	struct tfj_kube *k = client(0, 0);
	struct sink s;
	_Atomic int cancel = 0;
	char name[16];
	if (!k)
		return;
	for (int i = 0; i < 3; i++) {
		cJSON *p;
		snprintf(name, sizeof(name), "w-%d", i);
		p = pod(name);
		tfj_kube_create(k, NULL, "/api/v1/namespaces/ws/pods", p);
		cJSON_Delete(p);
	}
	memset(&s, 0, sizeof(s));
	/* The watch ends on the server's timeoutSeconds: a normal end. */
	TFJ_CHECK_INT(tfj_kube_stream(k, "/api/v1/namespaces/ws/pods?watch=1&resourceVersion=0"
				      "&timeoutSeconds=1", on_data, &s, &cancel, 30), 0);
	TFJ_CHECK(strstr(s.buf, "\"ADDED\"") != NULL && strstr(s.buf, "w-2") != NULL);
	/* The consumer can end it. */
	memset(&s, 0, sizeof(s));
	s.stop_after = 1;
	TFJ_CHECK_INT(tfj_kube_stream(k, "/api/v1/namespaces/ws/pods?watch=1&resourceVersion=0"
				      "&timeoutSeconds=30", on_data, &s, &cancel, 60), TFJ_ECANCELED);
	/* A non-2xx answer is mapped, not streamed. */
	memset(&s, 0, sizeof(s));
	fake_inject(&F, 1, 410, "/namespaces/ws/pods", NULL, NULL);
	TFJ_CHECK_INT(tfj_kube_stream(k, "/api/v1/namespaces/ws/pods?watch=1", on_data, &s,
				      &cancel, 30), TFJ_EGONE);
	TFJ_CHECK_INT(s.len, 0);
	/* Cancellation from another thread's flag. */
	cancel = 1;
	memset(&s, 0, sizeof(s));
	TFJ_CHECK_INT(tfj_kube_stream(k, "/api/v1/namespaces/none/pods?watch=1&resourceVersion=999"
				      "&timeoutSeconds=30", on_data, &s, &cancel, 60), TFJ_ECANCELED);
	tfj_kube_free(k);
}

static void inject(int n, int status, const char *path, const char *retry_after)
{
	fake_inject(&F, n, status, path, NULL, retry_after);
}

static int left(void)
{
	int n;
	pthread_mutex_lock(&F.mu);
	n = F.fail_n;
	pthread_mutex_unlock(&F.mu);
	return n;
}

static void test_retry_after(void)
{
	struct tfj_kube *k = client(0, 0);
	struct tfj_buf m = TFJ_BUF_INIT(1 << 20);
	cJSON *out = NULL;
	double t0, dt;

	/* Two 429s asking for 1 s each, then the list goes through. */
	inject(2, 429, "/namespaces/thr1/", "1");
	t0 = tfj_testutil_now_s();
	TFJ_CHECK_INT(tfj_kube_list(k, &out, "/api/v1/namespaces/thr1/pods"), 0);
	dt = tfj_testutil_now_s() - t0;
	TFJ_CHECK(out != NULL);
	cJSON_Delete(out);
	out = NULL;
	TFJ_CHECK_INT(left(), 0);
	TFJ_CHECK_GE(dt, 2.0);
	TFJ_CHECK_LT(dt, 10.0);
	TFJ_CHECK_INT(tfj_kube_count(k, TFJ_KUBE_LIST, 429), 2);
	TFJ_CHECK_INT(tfj_kube_count(k, TFJ_KUBE_LIST, 200), 1);

	/* Endless throttling: three retries, then the error reaches the caller. */
	inject(10, 429, "/namespaces/thr2/", "0");
	t0 = tfj_testutil_now_s();
	TFJ_CHECK_INT(tfj_kube_list(k, &out, "/api/v1/namespaces/thr2/pods"), TFJ_EUNAVAIL);
	dt = tfj_testutil_now_s() - t0;
	TFJ_CHECK_INT(left(), 10 - 1 - 3);
	TFJ_CHECK_GE(dt, 0.3);
	TFJ_CHECK_LT(dt, 10.0); /* "0" still pauses 100 ms per retry */

	/* A 503 is retried only when the server says when. */
	inject(1, 503, "/namespaces/thr3/", "");
	TFJ_CHECK_INT(tfj_kube_list(k, &out, "/api/v1/namespaces/thr3/pods"), TFJ_EUNAVAIL);
	TFJ_CHECK_INT(left(), 0);
	inject(1, 503, "/namespaces/thr4/", "1");
	TFJ_CHECK_INT(tfj_kube_list(k, &out, "/api/v1/namespaces/thr4/pods"), 0);
	cJSON_Delete(out);
	out = NULL;
	TFJ_CHECK_INT(left(), 0);

	/* Writes are retried too: a throttled request was never processed. */
	inject(1, 429, "/namespaces/thr5/", "1");
	{
		cJSON *p = pod("p-throttled");
		TFJ_CHECK_INT(tfj_kube_create(k, NULL, "/api/v1/namespaces/thr5/pods", p), 0);
		cJSON_Delete(p);
	}
	TFJ_CHECK_INT(left(), 0);

	TFJ_CHECK_INT(tfj_kube_metrics(k, &m), 0);
	TFJ_CHECK(strstr(tfj_buf_cstr(&m), "tfjob_operator_api_throttled_retries_total 7\n") != NULL);
	tfj_buf_free(&m);
	inject(0, 0, "", "");
	tfj_kube_free(k);
}

/* The fence's arithmetic: no fence, time left, passed. */
static void test_fence_timeout(void)
{
	TFJ_CHECK_EQ(tfj_kube_fence_timeout(30000, 0, 5000), 30000);
	TFJ_CHECK_EQ(tfj_kube_fence_timeout(30000, 12000, 5000), 7000);
	TFJ_CHECK_EQ(tfj_kube_fence_timeout(3000, 12000, 5000), 3000);
	TFJ_CHECK_EQ(tfj_kube_fence_timeout(30000, 5001, 5000), 1);
	TFJ_CHECK_EQ(tfj_kube_fence_timeout(30000, 5000, 5000), 0);
	TFJ_CHECK_EQ(tfj_kube_fence_timeout(30000, 1, 5000), 0);
}

/*
 * Leader fencing against the fake API server: past the deadline nothing is
 * sent; a request whose retries would run past it stops there; no fence
 * (0, not leading yet) changes nothing.
 */
static void test_fence(void)
{
	static _Atomic int64_t deadline;
	struct tfj_kube *k = client(0, 0);
	cJSON *out = NULL;
	int64_t now;
	double t0, dt;

	if (!k)
		return;
	tfj_kube_set_fence(k, &deadline);
	atomic_store(&deadline, 0);
	TFJ_CHECK_INT(tfj_kube_list(k, &out, "/api/v1/namespaces/fence1/pods"), 0);
	cJSON_Delete(out);
	out = NULL;
	/* Stepped down (1: long past): refused here, the server never sees it. */
	atomic_store(&deadline, 1);
	TFJ_CHECK_INT(tfj_kube_list(k, &out, "/api/v1/namespaces/fence1/pods"), TFJ_ECANCELED);
	TFJ_CHECK(strstr(tfj_err_detail(), "renew deadline") != NULL);
	TFJ_CHECK_INT(tfj_kube_count(k, TFJ_KUBE_LIST, 200), 1);
	TFJ_CHECK_INT((int)tfj_kube_fenced(k), 1);
	/* 300 ms left; the server throttles with Retry-After 1 s: the retry is not sent. */
	inject(3, 429, "/namespaces/fence2/", "1");
	now = (int64_t)(tfj_clock_mono_ns() / 1000000);
	atomic_store(&deadline, now + 300);
	t0 = tfj_testutil_now_s();
	{
		cJSON *p = pod("p-fenced");
		TFJ_CHECK_INT(tfj_kube_create(k, NULL, "/api/v1/namespaces/fence2/pods", p),
			      TFJ_ECANCELED);
		cJSON_Delete(p);
	}
	dt = tfj_testutil_now_s() - t0;
	TFJ_CHECK_INT(tfj_kube_count(k, TFJ_KUBE_POST, 429), 1);
	TFJ_CHECK_LT(dt, 1.9);
	inject(0, 0, "", "");
	tfj_kube_set_fence(k, NULL);
	TFJ_CHECK_INT(tfj_kube_list(k, &out, "/api/v1/namespaces/fence1/pods"), 0);
	cJSON_Delete(out);
	tfj_kube_free(k);
}

static _Atomic int stepped_down;
static void on_down(void *ud)
{
	(void)ud;
	atomic_store(&stepped_down, 1);
}

/*
 * The election against the fake API server, with short times (lease 1.5 s,
 * renew deadline 1 s): once the lease cannot be renewed (the server fails
 * every lease request), the leader steps down at its renew deadline, before
 * the lease could pass to anyone, and its fence then stops every request.
 */
static void test_leader_steps_down_on_time(void)
{
	struct tfj_kube *k = client(0, 0);
	struct tfj_leader_opts lo = { "lead", "op", "me_1", 1500, 1000, 200, NULL, on_down, NULL };
	struct tfj_leader *l = NULL;
	const _Atomic int64_t *fence;
	double t0, deadline;
	int64_t now;

	if (!k)
		return;
	TFJ_CHECK_INT(tfj_leader_new(&l, k, &lo), 0);
	if (!l) {
		tfj_kube_free(k);
		return;
	}
	fence = tfj_leader_fence(l);
	tfj_kube_set_fence(k, fence);
	TFJ_CHECK_EQ(atomic_load(fence), 0);
	TFJ_CHECK_INT(tfj_leader_start(l), 0);
	deadline = tfj_testutil_now_s() + 10;
	while (!tfj_leader_is_leader(l) && tfj_testutil_now_s() < deadline)
		nanosleep(&(struct timespec){ 0, 20000000 }, NULL);
	TFJ_CHECK_INT(tfj_leader_is_leader(l), 1);
	/* Leading: the fence is the renew deadline, at most renew_ms ahead. */
	now = (int64_t)(tfj_clock_mono_ns() / 1000000);
	TFJ_CHECK_GT(atomic_load(fence), now);
	TFJ_CHECK_LE(atomic_load(fence), now + 1000);
	inject(100000, 500, "/leases/", "");
	t0 = tfj_testutil_now_s();
	while (!atomic_load(&stepped_down) && tfj_testutil_now_s() < t0 + 10)
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	TFJ_CHECK_INT(atomic_load(&stepped_down), 1);
	/* Within the renew deadline of the last renewal (<= 1 s + a retry period), before the lease (1.5 s). */
	TFJ_CHECK_LT(tfj_testutil_now_s() - t0, 1.5);
	TFJ_CHECK_INT(tfj_leader_is_leader(l), 0);
	TFJ_CHECK_EQ(atomic_load(fence), 1);
	inject(0, 0, "", "");
	{
		cJSON *out = NULL;

		TFJ_CHECK_INT(tfj_kube_list(k, &out, "/api/v1/namespaces/fence3/pods"), TFJ_ECANCELED);
	}
	tfj_kube_set_fence(k, NULL);
	tfj_leader_free(l);
	tfj_kube_free(k);
}

int main(void)
{
	int rc;
	TFJ_RUN(test_map_status);
	TFJ_RUN(test_escape);
	TFJ_RUN(test_fence_timeout);
	rc = fake_start(&F, "test-token");
	if (rc == TFJ_EUNSUPP) {
		fprintf(stderr, "skip: no openssl or no TLS in libmicrohttpd\n");
		fake_stop(&F);
		tfj_test_finish();
		return 77;
	}
	TFJ_CHECK_INT(rc, 0);
	if (rc == 0) {
		TFJ_RUN(test_tls_verified);
		TFJ_RUN(test_crud_and_errors);
		TFJ_RUN(test_body_cap);
		TFJ_RUN(test_token_rotation);
		TFJ_RUN(test_stream);
		TFJ_RUN(test_retry_after);
		TFJ_RUN(test_fence);
		TFJ_RUN(test_leader_steps_down_on_time);
	}
	fake_stop(&F);
	return tfj_test_finish();
}
