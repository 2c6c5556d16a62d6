/*
 * test_issuer.c - local verification of agent tokens with the issuer's keys
 * fetched from the local HTTPS server's discovery documents (issuer.h) and
 * its use by the reviewer (tokenreview.h):
 *   - no discovery: no verdict (the fallback), and attempts bounded;
 *   - a token signed by the issuer's key passes; one of another key, or
 *     naming a kid the set lacks, is refused; a flood of unknown kids makes
 *     one refetch per bound, and a rotated key is picked up by the refetch;
 *   - while the keys cannot be fetched, an unknown kid gets no verdict;
 *   - the set is read again 10 minutes after the last good fetch;
 *   - the reviewer verifies locally without any TokenReview, keeps a
 *     verified token until its exp (past the TokenReview ttl), refuses a
 *     forged one locally, and in the fallback holds each namespace to its
 *     share of the TokenReview budget.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/clock.h>
#include <tfj/err.h>
#include <tfj/json.h>

#include "fakeapi.h"
#include "jwt_sign.h"
#include "report/issuer.h"
#include "report/tokenreview.h"
#include "tfjob/podspec.h"

#define AUD "tfjob-report"
#define ISS "https://kubernetes.default.svc.cluster.local"
#define DISCOVERY "{\"issuer\":\"" ISS "\",\"jwks_uri\":\"" ISS "/openid/v1/jwks\"," \
	"\"response_types_supported\":[\"id_token\"],\"subject_types_supported\":[\"public\"]," \
	"\"id_token_signing_alg_values_supported\":[\"RS256\"]}"

static struct fake F;
static struct tfj_kube *K;
static EVP_PKEY *KA, *KB;
static int64_t NOW_MS;

static int jwks_gets(void)
{
	return fake_doc_gets(&F, TFJ_ISSUER_JWKS_PATH);
}

/* Serves a key set of the given keys (NULL-terminated pairs key, kid). */
static void serve_keys(EVP_PKEY *k1, const char *kid1, EVP_PKEY *k2, const char *kid2)
{
	char a[3000], b[3000], doc[7000];

	js_jwk(a, sizeof(a), k1, kid1);
	if (k2)
		js_jwk(b, sizeof(b), k2, kid2);
	snprintf(doc, sizeof(doc), "{\"keys\":[%s%s%s]}", a, k2 ? "," : "", k2 ? b : "");
	fake_serve_doc(&F, TFJ_ISSUER_JWKS_PATH, "application/jwk-set+json", doc);
}

/* A projected-looking token of pod `pod` in `ns`, signed by k under kid. */
static char *tok(EVP_PKEY *k, const char *kid, const char *ns, const char *pod, long long exp_s)
{
	char hdr[256], p[2048], claim[512];

	snprintf(hdr, sizeof(hdr), "{\"alg\":\"RS256\",\"kid\":\"%s\"}", kid);
	jf_pod_claim(claim, sizeof(claim), ns, pod, "pod-0");
	jf_payload(p, sizeof(p), "[\"" AUD "\"]", NOW_MS / 1000 - 10, exp_s, claim);
	return js_sign(k, hdr, p);
}

static void test_setup(void)
{
	NOW_MS = tfj_clock_unix_ms();
	KA = js_key("RSA");
	KB = js_key("RSA");
	TFJ_CHECK(KA && KB);
}

static void test_discovery_parse(void)
{
	char iss[TFJ_ISSUER_NAME_MAX];

	TFJ_CHECK_INT(tfj_issuer_parse_discovery(iss, sizeof(iss), DISCOVERY, strlen(DISCOVERY)),
		      0);
	TFJ_CHECK_STR(iss, ISS);
	TFJ_CHECK_NE(tfj_issuer_parse_discovery(iss, sizeof(iss), "{}", 2), 0);
	TFJ_CHECK_NE(tfj_issuer_parse_discovery(iss, sizeof(iss), "{\"issuer\":\"\"}", 13), 0);
	TFJ_CHECK_NE(tfj_issuer_parse_discovery(iss, sizeof(iss), "{\"issuer\":1}", 12), 0);
	TFJ_CHECK_NE(tfj_issuer_parse_discovery(iss, sizeof(iss), "[]", 2), 0);
	TFJ_CHECK_NE(tfj_issuer_parse_discovery(iss, 4, DISCOVERY, strlen(DISCOVERY)), 0);
}

static void test_issuer_fetch(void)
{
	struct tfj_issuer *is = NULL;
	struct tfj_jwtclaims c;
	enum tfj_jwt_reason why;
	char *ta = tok(KA, "a", "team-a", "mnist-worker-0", NOW_MS / 1000 + 3600);
	char *tb = tok(KB, "b", "team-a", "mnist-worker-0", NOW_MS / 1000 + 3600);
	char *tb_as_a = tok(KB, "a", "team-a", "mnist-worker-0", NOW_MS / 1000 + 3600);
	int gets, i;

	TFJ_CHECK_OK(tfj_issuer_new(&is, K, 5000));
	/* Nothing served yet: no verdict, and one attempt per bound. */
	TFJ_CHECK_INT(tfj_issuer_verify(is, &why, &c, ta, AUD, NOW_MS), TFJ_EUNAVAIL);
	TFJ_CHECK_INT(tfj_issuer_verify(is, &why, &c, ta, AUD, NOW_MS + 4000), TFJ_EUNAVAIL);
	fake_serve_doc(&F, TFJ_ISSUER_DISCOVERY_PATH, "application/json", DISCOVERY);
	serve_keys(KA, "a", NULL, NULL);
	TFJ_CHECK_INT(tfj_issuer_verify(is, &why, &c, ta, AUD, NOW_MS + 4999), TFJ_EUNAVAIL);
	TFJ_CHECK_INT(jwks_gets(), 0);
	/* The bound has passed: fetched, verified. */
	TFJ_CHECK_INT(tfj_issuer_verify(is, &why, &c, ta, AUD, NOW_MS + 5000), 0);
	TFJ_CHECK_INT(why, TFJ_JWT_OK);
	TFJ_CHECK_STR(c.pod, "mnist-worker-0");
	TFJ_CHECK_INT(jwks_gets(), 1);
	/* Another key under the issuer's kid: the signature fails, nothing fetched. */
	TFJ_CHECK_INT(tfj_issuer_verify(is, &why, &c, tb_as_a, AUD, NOW_MS + 5001), 0);
	TFJ_CHECK_INT(why, TFJ_JWT_SIGNATURE);
	/* An unknown kid: one refetch after the bound, then none for 1,000 more. */
	TFJ_CHECK_INT(tfj_issuer_verify(is, &why, &c, tb, AUD, NOW_MS + 10000), 0);
	TFJ_CHECK_INT(why, TFJ_JWT_UNKNOWN_KEY);
	gets = jwks_gets();
	TFJ_CHECK_INT(gets, 2);
	for (i = 0; i < 1000; i++)
		TFJ_CHECK_INT(tfj_issuer_verify(is, &why, &c, tb, AUD, NOW_MS + 10001 + i), 0);
	TFJ_CHECK_INT(jwks_gets(), gets);
	/* The API server rotates to key b: the next refetch picks it up. */
	serve_keys(KA, "a", KB, "b");
	TFJ_CHECK_INT(tfj_issuer_verify(is, &why, &c, tb, AUD, NOW_MS + 15000), 0);
	TFJ_CHECK_INT(why, TFJ_JWT_OK);
	TFJ_CHECK_INT(jwks_gets(), gets + 1);
	/* Keys unreachable: a known kid still verifies, an unknown one gets no verdict. */
	fake_inject(&F, 1000, 500, TFJ_ISSUER_JWKS_PATH, NULL, NULL);
	free(tb_as_a);
	tb_as_a = tok(KB, "c", "team-a", "mnist-worker-0", NOW_MS / 1000 + 3600);
	TFJ_CHECK_INT(tfj_issuer_verify(is, &why, &c, tb_as_a, AUD, NOW_MS + 20000),
		      TFJ_EUNAVAIL);
	TFJ_CHECK_INT(tfj_issuer_verify(is, &why, &c, ta, AUD, NOW_MS + 20001), 0);
	TFJ_CHECK_INT(why, TFJ_JWT_OK);
	fake_inject(&F, 0, 0, NULL, NULL, NULL);
	/* Ten minutes after the last good fetch the set is read again, whatever the tokens. */
	gets = jwks_gets();
	TFJ_CHECK_INT(tfj_issuer_verify(is, &why, &c, ta, AUD, NOW_MS + 15000 + 599999), 0);
	TFJ_CHECK_INT(jwks_gets(), gets);
	TFJ_CHECK_INT(tfj_issuer_verify(is, &why, &c, ta, AUD, NOW_MS + 15000 + 600000), 0);
	TFJ_CHECK_INT(why, TFJ_JWT_OK);
	TFJ_CHECK_INT(jwks_gets(), gets + 1);
	{
		struct tfj_buf m;

		tfj_buf_init(&m, 1 << 16);
		TFJ_CHECK_OK(tfj_issuer_metrics(is, &m));
		TFJ_CHECK(strstr(tfj_buf_cstr(&m), "tfjob_report_issuer_keys 2\n") != NULL);
		TFJ_CHECK(strstr(tfj_buf_cstr(&m),
				 "tfjob_report_issuer_fetches_total{result=\"ok\"} 4\n") != NULL);
		tfj_buf_free(&m);
	}
	tfj_issuer_free(is);
	free(ta);
	free(tb);
	free(tb_as_a);
}

static cJSON *pod_in(const char *ns)
{
	char s[1024];
	cJSON *j = NULL;

	snprintf(s, sizeof(s),
		 "{\"metadata\":{\"name\":\"mnist-worker-0\",\"namespace\":\"%s\","
		 "\"uid\":\"pod-0\",\"labels\":{\"" TFJ_LABEL_JOB_NAME "\":\"mnist\","
		 "\"" TFJ_LABEL_REPLICA_TYPE "\":\"worker\",\"" TFJ_LABEL_REPLICA_INDEX "\":\"0\"},"
		 "\"ownerReferences\":[{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
		 "\"name\":\"mnist\",\"uid\":\"job-1\",\"controller\":true}]}}", ns);
	TFJ_CHECK_OK(tfj_json_parse(&j, s, strlen(s), 1 << 16));
	return j;
}

static void ref_in(struct tfj_reportmsg_ref *ref, const char *ns)
{
	memset(ref, 0, sizeof(*ref));
	snprintf(ref->ns, sizeof(ref->ns), "%s", ns);
	strcpy(ref->job, "mnist");
	strcpy(ref->job_uid, "job-1");
	strcpy(ref->pod, "mnist-worker-0");
	ref->type = TFJ_RT_WORKER;
	ref->index = 0;
}

static unsigned long long metric(const char *text, const char *name)
{
	const char *p = strstr(text, name);

	return p ? strtoull(p + strlen(name), NULL, 10) : ~0ull;
}

static void test_reviewer_local(void)
{
	struct tfj_tokenreviewer *r = NULL;
	struct tfj_issuer *is = NULL;
	struct tfj_tokenreview tr;
	struct tfj_reportmsg_ref ref;
	enum tfj_authz az;
	struct tfj_buf m;
	cJSON *pod = pod_in("team-a");
	char *good = tok(KA, "a", "team-a", "mnist-worker-0", NOW_MS / 1000 + 600);
	char *forged = tok(KB, "a", "team-a", "mnist-worker-0", NOW_MS / 1000 + 600);
	int posts = F.posts[0] + F.posts[1] + F.posts[2] + F.posts[3];

	ref_in(&ref, "team-a");
	serve_keys(KA, "a", NULL, NULL);
	TFJ_CHECK_OK(tfj_tokenreviewer_new(&r, K, AUD, 0, 0));
	TFJ_CHECK_OK(tfj_issuer_new(&is, K, 0));
	tfj_tokenreviewer_use_issuer(r, is);
	TFJ_CHECK_OK(tfj_tokenreviewer_check(r, &tr, &az, good, pod, &ref, NOW_MS));
	TFJ_CHECK_INT(az, TFJ_AUTHZ_OK);
	TFJ_CHECK_INT(tr.authenticated, 1);
	TFJ_CHECK_STR(tr.pod_uid, "pod-0");
	TFJ_CHECK_INT(tfj_tokenreview_authorize(&tr, pod, &ref), TFJ_AUTHZ_OK);
	/* Cached until its exp (10 min), past the 60 s a TokenReview is trusted. */
	TFJ_CHECK_OK(tfj_tokenreviewer_check(r, &tr, &az, good, pod, &ref, NOW_MS + 300000));
	TFJ_CHECK_INT(az, TFJ_AUTHZ_OK);
	TFJ_CHECK_INT(tfj_tokenreviewer_known(r, good, NOW_MS + 590000), 1);
	TFJ_CHECK_INT(tfj_tokenreviewer_known(r, good, NOW_MS + 601000), 0);
	/* Forged (another key under the issuer's kid): refused here. */
	TFJ_CHECK_OK(tfj_tokenreviewer_check(r, &tr, &az, forged, pod, &ref, NOW_MS));
	TFJ_CHECK_INT(az, TFJ_AUTHZ_INVALID_TOKEN);
	TFJ_CHECK_INT(tr.authenticated, 0);
	tfj_buf_init(&m, 1 << 20);
	TFJ_CHECK_OK(tfj_tokenreviewer_metrics(r, &m));
	TFJ_CHECK_EQ(metric(tfj_buf_cstr(&m),
			    "tfjob_report_auth_total{method=\"local\",result=\"ok\"} "), 1ull);
	TFJ_CHECK_EQ(metric(tfj_buf_cstr(&m),
			    "tfjob_report_auth_total{method=\"cache\",result=\"ok\"} "), 1ull);
	TFJ_CHECK_EQ(metric(tfj_buf_cstr(&m),
			    "tfjob_report_auth_total{method=\"local\",result=\"refused\"} "), 1ull);
	TFJ_CHECK_EQ(metric(tfj_buf_cstr(&m),
			    "tfjob_report_token_local_rejected_total{reason=\"signature\"} "), 1ull);
	TFJ_CHECK_EQ(metric(tfj_buf_cstr(&m), "tfjob_report_tokenreviews_total{result=\"error\"} "),
		     0ull);
	tfj_buf_free(&m);
	/* No TokenReview was sent for any of it. */
	TFJ_CHECK_INT(F.posts[0] + F.posts[1] + F.posts[2] + F.posts[3], posts);
	tfj_tokenreviewer_free(r);
	tfj_issuer_free(is);
	cJSON_Delete(pod);
	free(good);
	free(forged);
}

/*
 * The fallback (no issuer): plausible tokens of namespace team-a take at
 * most a quarter of the TokenReview burst; team-b still gets its reviews.
 * The local server has no TokenReview API: a review that is sent comes
 * back as an error, which is all this needs to count.
 */
static void test_namespace_share(void)
{
	struct tfj_tokenreviewer *r = NULL;
	struct tfj_tokenreview tr;
	struct tfj_reportmsg_ref ra, rb;
	enum tfj_authz az;
	cJSON *pa = pod_in("team-a"), *pb = pod_in("team-b");
	uint64_t reviews = 0, hits = 0;
	int i, limited = 0, sent = 0;

	ref_in(&ra, "team-a");
	ref_in(&rb, "team-b");
	TFJ_CHECK_OK(tfj_tokenreviewer_new(&r, K, AUD, 0, 0));
	/* A burst of 16 and a rate that refills nothing during the test. */
	tfj_tokenreviewer_limit(r, 0.001, 16);
	for (i = 0; i < 20; i++) {
		char kid[16], *t;

		snprintf(kid, sizeof(kid), "k%d", i);
		t = tok(KB, kid, "team-a", "mnist-worker-0", NOW_MS / 1000 + 600);
		if (tfj_tokenreviewer_check(r, &tr, &az, t, pa, &ra, NOW_MS))
			sent++;
		else
			limited += az == TFJ_AUTHZ_REVIEW_LIMITED;
		free(t);
	}
	TFJ_CHECK_INT(sent, 4);
	TFJ_CHECK_INT(limited, 16);
	for (i = 0; i < 4; i++) {
		char kid[16], *t;

		snprintf(kid, sizeof(kid), "b%d", i);
		t = tok(KB, kid, "team-b", "mnist-worker-0", NOW_MS / 1000 + 600);
		TFJ_CHECK_NE(tfj_tokenreviewer_check(r, &tr, &az, t, pb, &rb, NOW_MS), 0);
		free(t);
	}
	tfj_tokenreviewer_stats(r, &reviews, &hits);
	TFJ_CHECK_EQ(reviews, 8ull);
	tfj_tokenreviewer_free(r);
	cJSON_Delete(pa);
	cJSON_Delete(pb);
}

int main(void)
{
	int rc = fake_start(&F, "t0k");

	if (fake_unavailable(&F, rc))
		return 77;
	TFJ_CHECK_INT(rc, 0);
	K = fake_client(&F, NULL);
	TFJ_RUN(test_setup);
	TFJ_RUN(test_discovery_parse);
	TFJ_RUN(test_issuer_fetch);
	TFJ_RUN(test_reviewer_local);
	TFJ_RUN(test_namespace_share);
	tfj_kube_free(K);
	fake_stop(&F);
	EVP_PKEY_free(KA);
	EVP_PKEY_free(KB);
	return tfj_test_finish();
}
