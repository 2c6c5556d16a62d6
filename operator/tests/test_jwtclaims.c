/*
 * test_jwtclaims.c - the local look at a bearer token: projected
 * service-account tokens pass, every other shape, algorithm, audience, time
 * and claim is refused with its reason, random bytes never pass; and the
 * reviewer refuses garbage and tokens claiming pods it does not know without
 * any TokenReview (it has no API client here: one call would crash).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/json.h>
#include <tfj_test.h>

#include "jwt_forge.h"
#include "report/jwtclaims.h"
#include "report/tokenreview.h"
#include "tfjob/podspec.h"

#define AUD "tfjob-report"
#define NOW_S 1700000000LL
#define NOW_MS (NOW_S * 1000)

#define K8S_POD "\"kubernetes.io\":{\"namespace\":\"team-a\",\"node\":{\"name\":\"n\"," \
	"\"uid\":\"nu\"},\"pod\":{\"name\":\"mnist-worker-0\",\"uid\":\"pod-0\"}," \
	"\"serviceaccount\":{\"name\":\"default\",\"uid\":\"sa\"}},"
#define HDR "{\"alg\":\"RS256\",\"kid\":\"k1\"}"

static enum tfj_jwt_reason check_one(struct tfj_jwtclaims *c, const char *hdr, const char *aud,
				     long long iat, long long exp, const char *k8s)
{
	char p[2048];
	char *t;
	enum tfj_jwt_reason r;

	jf_payload(p, sizeof(p), aud, iat, exp, k8s);
	t = jf_jwt(hdr, p);
	r = tfj_jwtclaims_check(c, t, AUD, NOW_MS);
	free(t);
	return r;
}

static void test_projected_token(void)
{
	struct tfj_jwtclaims c;

	TFJ_CHECK_INT(check_one(&c, HDR, "[\"" AUD "\"]", NOW_S - 10, NOW_S + 3590, K8S_POD),
		      TFJ_JWT_OK);
	TFJ_CHECK_STR(c.ns, "team-a");
	TFJ_CHECK_STR(c.pod, "mnist-worker-0");
	TFJ_CHECK_STR(c.pod_uid, "pod-0");
	TFJ_CHECK_STR(c.sa, "default");
	TFJ_CHECK_EQ(c.exp_ms, (NOW_S + 3590) * 1000);
	/* aud as one string; ours among others; ES256 keys. */
	TFJ_CHECK_INT(check_one(&c, HDR, "\"" AUD "\"", NOW_S, NOW_S + 60, K8S_POD), TFJ_JWT_OK);
	TFJ_CHECK_INT(check_one(&c, HDR, "[\"x\",\"" AUD "\"]", NOW_S, NOW_S + 60, K8S_POD),
		      TFJ_JWT_OK);
	TFJ_CHECK_INT(check_one(&c, "{\"alg\":\"ES256\"}", "[\"" AUD "\"]", NOW_S, NOW_S + 60,
				K8S_POD), TFJ_JWT_OK);
	/* Clocks a little apart are tolerated. */
	TFJ_CHECK_INT(check_one(&c, HDR, "[\"" AUD "\"]", NOW_S + 30, NOW_S + 600, K8S_POD),
		      TFJ_JWT_OK);
	TFJ_CHECK_INT(check_one(&c, HDR, "[\"" AUD "\"]", NOW_S - 600, NOW_S - 30, K8S_POD),
		      TFJ_JWT_OK);
}

static void test_refusals(void)
{
	struct tfj_jwtclaims c;
	const char *ok_aud = "[\"" AUD "\"]";

	/* Algorithms no service-account issuer uses. */
	TFJ_CHECK_INT(check_one(&c, "{\"alg\":\"none\"}", ok_aud, NOW_S, NOW_S + 60, K8S_POD),
		      TFJ_JWT_ALGORITHM);
	TFJ_CHECK_INT(check_one(&c, "{\"alg\":\"HS256\"}", ok_aud, NOW_S, NOW_S + 60, K8S_POD),
		      TFJ_JWT_ALGORITHM);
	TFJ_CHECK_INT(check_one(&c, "{\"typ\":\"JWT\"}", ok_aud, NOW_S, NOW_S + 60, K8S_POD),
		      TFJ_JWT_ALGORITHM);
	TFJ_CHECK_INT(check_one(&c, "{\"alg\":7}", ok_aud, NOW_S, NOW_S + 60, K8S_POD),
		      TFJ_JWT_ALGORITHM);
	/* Audiences. */
	TFJ_CHECK_INT(check_one(&c, HDR, "[\"https://kubernetes.default.svc\"]", NOW_S,
				NOW_S + 60, K8S_POD), TFJ_JWT_AUDIENCE);
	TFJ_CHECK_INT(check_one(&c, HDR, "[]", NOW_S, NOW_S + 60, K8S_POD), TFJ_JWT_AUDIENCE);
	TFJ_CHECK_INT(check_one(&c, HDR, "[1]", NOW_S, NOW_S + 60, K8S_POD), TFJ_JWT_MALFORMED);
	TFJ_CHECK_INT(check_one(&c, HDR, "{}", NOW_S, NOW_S + 60, K8S_POD), TFJ_JWT_MALFORMED);
	/* Times. */
	TFJ_CHECK_INT(check_one(&c, HDR, ok_aud, NOW_S - 4000, NOW_S - 400, K8S_POD),
		      TFJ_JWT_EXPIRED);
	TFJ_CHECK_INT(check_one(&c, HDR, ok_aud, NOW_S + 400, NOW_S + 4000, K8S_POD),
		      TFJ_JWT_NOT_YET_VALID);
	TFJ_CHECK_INT(check_one(&c, HDR, ok_aud, NOW_S, NOW_S - 1, K8S_POD),
		      TFJ_JWT_NOT_YET_VALID);
	TFJ_CHECK_INT(check_one(&c, HDR, ok_aud, NOW_S, -5, K8S_POD), TFJ_JWT_MALFORMED);
	/* Not bound to a pod (kubectl create token without --bound-object-kind Pod). */
	TFJ_CHECK_INT(check_one(&c, HDR, ok_aud, NOW_S, NOW_S + 60, ""), TFJ_JWT_NOT_POD_BOUND);
	TFJ_CHECK_INT(check_one(&c, HDR, ok_aud, NOW_S, NOW_S + 60,
				"\"kubernetes.io\":{\"namespace\":\"team-a\"},"),
		      TFJ_JWT_NOT_POD_BOUND);
	TFJ_CHECK_INT(check_one(&c, HDR, ok_aud, NOW_S, NOW_S + 60,
				"\"kubernetes.io\":{\"namespace\":\"team-a\",\"pod\":{\"name\":1,"
				"\"uid\":\"u\"}},"), TFJ_JWT_MALFORMED);
	TFJ_CHECK_INT(check_one(&c, HDR, ok_aud, NOW_S, NOW_S + 60,
				"\"kubernetes.io\":\"team-a\","), TFJ_JWT_MALFORMED);
	/* A refusal leaves nothing behind. */
	TFJ_CHECK_STR(c.pod, "");
	TFJ_CHECK_STR(tfj_jwtclaims_reason(TFJ_JWT_NOT_YET_VALID), "not_yet_valid");
}

static void test_shapes(void)
{
	static const char *const bad[] = {
		"", "abc", "a.b", "a.b.c.d", "...", "eyJ.eyJ.", ".eyJ.c2ln",
		"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.AAAA",  /* no aud: see below */
		"eyJhbGciOiJSUzI1NiJ9.eyJ+dWIiOiJ4In0.AAAA",  /* '+' is not base64url */
		"eyJhbGciOiJSUzI1NiJ9=.eyJzdWIiOiJ4In0.AAAA", /* no padding */
		"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0 .AAAA",
		"eyJhbGciOiJSUzI1NiJ9.e.AAAA",                /* length 1 mod 4 */
		"bm90IGpzb24.bm90IGpzb24.AAAA",               /* "not json" */
		"WzFd.WzFd.AAAA",                             /* [1]: not objects */
	};
	struct tfj_jwtclaims c;
	char *big;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		enum tfj_jwt_reason r = tfj_jwtclaims_check(&c, bad[i], AUD, NOW_MS);

		TFJ_CHECK(r == TFJ_JWT_MALFORMED || r == TFJ_JWT_AUDIENCE);
		TFJ_CHECK_NE(r, TFJ_JWT_OK);
	}
	TFJ_CHECK_INT(tfj_jwtclaims_check(&c, bad[7], AUD, NOW_MS), TFJ_JWT_AUDIENCE);
	/* Sizes: a 100 kB string, with and without dots. */
	big = malloc(100001);
	memset(big, 'A', 100000);
	big[100000] = '\0';
	TFJ_CHECK_INT(tfj_jwtclaims_check(&c, big, AUD, NOW_MS), TFJ_JWT_TOO_LARGE);
	big[10] = '.';
	big[20] = '.';
	TFJ_CHECK_INT(tfj_jwtclaims_check(&c, big, AUD, NOW_MS), TFJ_JWT_TOO_LARGE);
	big[20] = 'A';
	big[TFJ_JWT_PAYLOAD_MAX + 12] = '.';
	big[TFJ_JWT_PAYLOAD_MAX + 40] = '\0';
	TFJ_CHECK_INT(tfj_jwtclaims_check(&c, big, AUD, NOW_MS), TFJ_JWT_TOO_LARGE);
	free(big);
}

/* Random bytes and random dotted base64url strings never pass. */
static void test_random_garbage(void)
{
	static const char alpha[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.";
	struct tfj_jwtclaims c;
	char buf[600];
	int i, ok = 0;

	for (i = 0; i < 20000; i++) {
		size_t n = tfj_test_rand() % (sizeof(buf) - 1), j;

		for (j = 0; j < n; j++)
			buf[j] = (i & 1) ? (char)(1 + tfj_test_rand() % 255)
					 : alpha[tfj_test_rand() % (sizeof(alpha) - 1)];
		buf[n] = '\0';
		ok += tfj_jwtclaims_check(&c, buf, AUD, NOW_MS) == TFJ_JWT_OK;
	}
	TFJ_CHECK_INT(ok, 0);
}

static cJSON *pod_json(void)
{
	cJSON *j = NULL;
	const char *s =
		"{\"metadata\":{\"name\":\"mnist-worker-0\",\"namespace\":\"team-a\","
		"\"uid\":\"pod-0\",\"labels\":{\"" TFJ_LABEL_JOB_NAME "\":\"mnist\","
		"\"" TFJ_LABEL_REPLICA_TYPE "\":\"worker\",\"" TFJ_LABEL_REPLICA_INDEX "\":\"0\"},"
		"\"ownerReferences\":[{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
		"\"name\":\"mnist\",\"uid\":\"job-1\",\"controller\":true}]}}";

	TFJ_CHECK_OK(tfj_json_parse(&j, s, strlen(s), 1 << 16));
	return j;
}

/*
 * The reviewer refuses without asking: no API client exists, so one
 * TokenReview would crash the test. Its metrics count each reason.
 */
static void test_reviewer_local(void)
{
	struct tfj_tokenreviewer *r = NULL;
	struct tfj_tokenreview tr;
	struct tfj_reportmsg_ref ref;
	struct tfj_buf m;
	enum tfj_authz local;
	char p[2048], *t;
	cJSON *pod = pod_json();
	int64_t now = tfj_test_rand() % 2 ? NOW_MS : NOW_MS + 1000;
	int i;

	memset(&ref, 0, sizeof(ref));
	strcpy(ref.ns, "team-a");
	strcpy(ref.job, "mnist");
	strcpy(ref.job_uid, "job-1");
	strcpy(ref.pod, "mnist-worker-0");
	ref.type = TFJ_RT_WORKER;
	ref.index = 0;
	TFJ_CHECK_OK(tfj_tokenreviewer_new(&r, NULL, AUD, 0, 16));
	if (!r)
		return;
	/* 10,000 garbage strings: all refused as invalid, none asked about. */
	for (i = 0; i < 10000; i++) {
		char g[64];

		snprintf(g, sizeof(g), "garbage-%d.%d.x", i, i * 7);
		TFJ_CHECK_OK(tfj_tokenreviewer_check(r, &tr, &local, g, pod, &ref, now));
		if (local != TFJ_AUTHZ_INVALID_TOKEN)
			TFJ_CHECK_INT(local, TFJ_AUTHZ_INVALID_TOKEN);
	}
	TFJ_CHECK_OK(tfj_tokenreviewer_check(r, &tr, &local, "", pod, &ref, now));
	TFJ_CHECK_INT(local, TFJ_AUTHZ_NO_TOKEN);
	/* Plausible tokens that claim a pod we do not know, or another pod. */
	jf_payload(p, sizeof(p), "[\"" AUD "\"]", NOW_S, NOW_S + 3600, K8S_POD);
	t = jf_jwt(HDR, p);
	TFJ_CHECK_OK(tfj_tokenreviewer_check(r, &tr, &local, t, NULL, &ref, now));
	TFJ_CHECK_INT(local, TFJ_AUTHZ_POD_UNKNOWN);
	ref.index = 1;
	strcpy(ref.pod, "mnist-worker-1");
	TFJ_CHECK_OK(tfj_tokenreviewer_check(r, &tr, &local, t, pod, &ref, now));
	TFJ_CHECK_INT(local, TFJ_AUTHZ_POD_MISMATCH);
	strcpy(ref.pod, "mnist-worker-0");
	ref.index = 0;
	strcpy(ref.job_uid, "job-2");
	TFJ_CHECK_OK(tfj_tokenreviewer_check(r, &tr, &local, t, pod, &ref, now));
	TFJ_CHECK_INT(local, TFJ_AUTHZ_WRONG_REPLICA);
	TFJ_CHECK_INT(tr.authenticated, 0);
	free(t);
	tfj_buf_init(&m, 1 << 16);
	TFJ_CHECK_OK(tfj_tokenreviewer_metrics(r, &m));
	TFJ_CHECK(strstr(tfj_buf_cstr(&m),
			 "tfjob_report_tokenreviews_total{result=\"authenticated\"} 0\n") != NULL);
	TFJ_CHECK(strstr(tfj_buf_cstr(&m),
			 "tfjob_report_token_local_rejected_total{reason=\"malformed\"} 10000\n"));
	TFJ_CHECK(strstr(tfj_buf_cstr(&m),
			 "tfjob_report_token_local_rejected_total{reason=\"pod_unknown\"} 1\n"));
	TFJ_CHECK(strstr(tfj_buf_cstr(&m),
			 "tfjob_report_token_local_rejected_total{reason=\"wrong_replica\"} 1\n"));
	tfj_buf_free(&m);
	tfj_tokenreviewer_free(r);
	cJSON_Delete(pod);
}

int main(void)
{
	TFJ_RUN(test_projected_token);
	TFJ_RUN(test_refusals);
	TFJ_RUN(test_shapes);
	TFJ_RUN(test_random_garbage);
	TFJ_RUN(test_reviewer_local);
	return tfj_test_finish();
}
