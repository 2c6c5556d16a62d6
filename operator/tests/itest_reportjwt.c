/*
 * itest_reportjwt.c - agent tokens verified by the operator itself with the
 * test bed's real service-account keys (issuer discovery and
 * /openid/v1/jwks of the real API server; report/issuer.h), no TokenReview.
 * The controller, the reviewer (on its own API client, whose requests are
 * counted) and the report server run in this process as main.c wires them.
 * Shown here, with tokens from the real TokenRequest API bound to real pod
 * objects (pods pinned to a node that does not exist: they never start):
 *   - two workers' tokens are accepted, the second call of each from the
 *     cache, and not one TokenReview is sent;
 *   - a token with the same claims and kid signed by another key, a real
 *     token for another audience, and a real token checked at a time past
 *     its exp are refused;
 *   - a cached, verified token stops working as soon as its pod is gone
 *     from the pod cache (deleted; the controller makes a new one with
 *     another uid).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <tfj/clock.h>
#include <tfj/log.h>

#include "app/controller.h"
#include "itest_common.h"
#include "jwt_sign.h"
#include "report/jwtclaims.h"
#include "report/report.h"
#include "report/tokenreview.h"
#include "report_client.h"
#include "report_stack.h"
#include "tfj_test.h"
#include "tfj_testutil.h"

#define JOB "jwtjob"
#define AUD "tfjob-report"
#define MANAGER "tfjob-itest.kubeflow.org/jwt"

#define JOB_FMT \
	"{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\"," \
	"\"metadata\":{\"name\":\"" JOB "\",\"namespace\":\"%s\"}," \
	"\"spec\":{\"runPolicy\":{\"managedBy\":\"" MANAGER "\"},\"tfReplicaSpecs\":{" \
	"\"Worker\":{\"replicas\":2,\"template\":{\"spec\":{" \
	"\"nodeSelector\":{\"tfjob-itest/no-such-node\":\"true\"}," \
	"\"containers\":[{\"name\":\"tensorflow\",\"image\":\"localhost/tfjob-itest:1\"}]}}}}}}"

static struct tfj_kube *K, *KR;
static char NS[64], KC[512];
static struct rstack ST;
static char OLD_UID[64];

static int have_pods(void *ud)
{
	(void)ud;
	return it_count(K, NS, JOB, "pods") == 2;
}

static void uid_of(char *out, size_t cap, const char *kind, const char *name)
{
	cJSON *o = it_get(K, NS, kind, name);
	const char *u = o ? cJSON_GetStringValue(cJSON_GetObjectItem(
		cJSON_GetObjectItem(o, "metadata"), "uid")) : NULL;

	snprintf(out, cap, "%s", u ? u : "");
	cJSON_Delete(o);
}

static grpc_status_code beat(grpc_channel *ch, const char *tok, const char *job_uid, int idx)
{
	Tfj__Report__V1__ReplicaRef ref;
	Tfj__Report__V1__HeartbeatResponse *r = NULL;
	char pod[64];
	grpc_status_code st;

	snprintf(pod, sizeof(pod), JOB "-worker-%d", idx);
	rc_ref(&ref, NS, JOB, job_uid, "worker", idx, pod);
	st = rc_heartbeat_reply(ch, tok, &ref, &r);
	if (r)
		tfj__report__v1__heartbeat_response__free_unpacked(r, NULL);
	return st;
}

static unsigned long long metric(const char *name)
{
	struct tfj_buf m;
	const char *p;
	unsigned long long v = ~0ull;

	tfj_buf_init(&m, 1 << 20);
	if (!tfj_tokenreviewer_metrics(ST.hub.tr, &m) && (p = strstr(tfj_buf_cstr(&m), name)))
		v = strtoull(p + strlen(name), NULL, 10);
	tfj_buf_free(&m);
	return v;
}

/* The real token's claims re-signed by a key of our own, under its kid. */
static char *resign(const char *real, EVP_PKEY *k)
{
	struct tfj_jwtclaims c;
	unsigned char *payload = NULL;
	size_t len = 0;
	const char *d1 = strchr(real, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
	char hdr[256], *t = NULL;

	if (tfj_jwtclaims_check(&c, real, AUD, tfj_clock_unix_ms()) != TFJ_JWT_OK || !d2 ||
	    tfj_jwtclaims_b64url(&payload, &len, d1 + 1, (size_t)(d2 - d1 - 1)))
		return NULL;
	snprintf(hdr, sizeof(hdr), "{\"alg\":\"RS256\",\"kid\":\"%s\"}", c.kid);
	t = js_sign(k, hdr, (const char *)payload);
	free(payload);
	return t;
}

/* The pod cache no longer holds worker-1 with the uid its token names. */
static int old_pod_gone(void *ud)
{
	cJSON *pod = tfj_controller_get_pod(ST.c, NS, JOB "-worker-1");
	const char *uid = pod ? cJSON_GetStringValue(cJSON_GetObjectItem(
		cJSON_GetObjectItem(pod, "metadata"), "uid")) : NULL;
	int gone = !uid || strcmp(uid, OLD_UID);

	(void)ud;
	cJSON_Delete(pod);
	return gone;
}

/* A real token checked at a time past its exp: refused as expired. */
static void check_expired(const char *tok, const char *job_uid)
{
	struct tfj_jwtclaims c;
	struct tfj_tokenreview tr;
	struct tfj_reportmsg_ref ref;
	enum tfj_authz az = TFJ_AUTHZ_OK;
	cJSON *pod = tfj_controller_get_pod(ST.c, NS, JOB "-worker-0");

	TFJ_CHECK_INT(tfj_jwtclaims_check(&c, tok, AUD, tfj_clock_unix_ms()), TFJ_JWT_OK);
	memset(&ref, 0, sizeof(ref));
	snprintf(ref.ns, sizeof(ref.ns), "%s", NS);
	snprintf(ref.job, sizeof(ref.job), JOB);
	snprintf(ref.job_uid, sizeof(ref.job_uid), "%s", job_uid);
	snprintf(ref.pod, sizeof(ref.pod), JOB "-worker-0");
	ref.type = TFJ_RT_WORKER;
	TFJ_CHECK_OK(tfj_tokenreviewer_check(ST.hub.tr, &tr, &az, tok, pod, &ref,
					     c.exp_ms + TFJ_JWT_SKEW_MS + 1000));
	TFJ_CHECK_INT(az, TFJ_AUTHZ_INVALID_TOKEN);
	TFJ_CHECK_EQ(metric("tfjob_report_token_local_rejected_total{reason=\"expired\"} "), 1ull);
	cJSON_Delete(pod);
}

static void test_local_verification(void)
{
	char path[256], body[4096], job_uid[64], uid0[64], uid1[64];
	char *t0 = NULL, *t1 = NULL, *t_aud = NULL, *forged = NULL;
	EVP_PKEY *other = js_key("RSA");
	grpc_channel *ch = NULL;
	cJSON *job;

	snprintf(body, sizeof(body), JOB_FMT, NS);
	job = cJSON_Parse(body);
	snprintf(path, sizeof(path), "/apis/kubeflow.org/v1/namespaces/%s/tfjobs", NS);
	TFJ_CHECK_INT(tfj_kube_create(K, NULL, path, job), 0);
	cJSON_Delete(job);
	if (rs_start(&ST, K, KR, NS, MANAGER, AUD, NULL))
		goto out;
	rs_use_issuer(&ST, KR);
	ch = rc_channel(tfj_report_port(ST.srv));
	TFJ_CHECK(it_wait(have_pods, NULL, 60));
	uid_of(job_uid, sizeof(job_uid), "tfjobs", JOB);
	uid_of(uid0, sizeof(uid0), "pods", JOB "-worker-0");
	uid_of(uid1, sizeof(uid1), "pods", JOB "-worker-1");
	TFJ_CHECK_INT(it_token(&t0, K, NS, AUD, JOB "-worker-0", uid0), 0);
	TFJ_CHECK_INT(it_token(&t1, K, NS, AUD, JOB "-worker-1", uid1), 0);
	TFJ_CHECK_INT(it_token(&t_aud, K, NS, "somebody-else", JOB "-worker-0", uid0), 0);
	if (!t0 || !t1 || !t_aud || !(forged = resign(t0, other))) {
		TFJ_CHECK(!"tokens");
		goto out;
	}
	/* Valid: verified here, then from the cache. */
	TFJ_CHECK_INT(beat(ch, t0, job_uid, 0), GRPC_STATUS_OK);
	TFJ_CHECK_INT(beat(ch, t1, job_uid, 1), GRPC_STATUS_OK);
	TFJ_CHECK_INT(beat(ch, t0, job_uid, 0), GRPC_STATUS_OK);
	TFJ_CHECK_EQ(metric("tfjob_report_auth_total{method=\"local\",result=\"ok\"} "), 2ull);
	TFJ_CHECK_EQ(metric("tfjob_report_auth_total{method=\"cache\",result=\"ok\"} "), 1ull);
	/* Refused: another key, another audience, a real token past its exp. */
	TFJ_CHECK_INT(beat(ch, forged, job_uid, 0), GRPC_STATUS_UNAUTHENTICATED);
	TFJ_CHECK_EQ(metric("tfjob_report_token_local_rejected_total{reason=\"signature\"} "),
		     1ull);
	TFJ_CHECK_INT(beat(ch, t_aud, job_uid, 0), GRPC_STATUS_UNAUTHENTICATED);
	check_expired(t0, job_uid);
	/* Worker 1's pod deleted: its cached token is refused at once. */
	snprintf(OLD_UID, sizeof(OLD_UID), "%s", uid1);
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/" JOB "-worker-1", NS);
	TFJ_CHECK_INT(tfj_kube_delete(K, path, uid1, NULL), 0);
	TFJ_CHECK(it_wait(old_pod_gone, NULL, 60));
	TFJ_CHECK_INT(tfj_tokenreviewer_known(ST.hub.tr, t1, tfj_clock_unix_ms()), 1);
	TFJ_CHECK_INT(beat(ch, t1, job_uid, 1), GRPC_STATUS_PERMISSION_DENIED);
	/* None of it cost a TokenReview. */
	TFJ_CHECK_EQ(tfj_kube_count(KR, TFJ_KUBE_POST, 201), 0ull);
	TFJ_CHECK_EQ(metric("tfjob_report_auth_total{method=\"tokenreview\",result=\"ok\"} "),
		     0ull);
	TFJ_CHECK_EQ(metric("tfjob_report_issuer_fetches_total{result=\"ok\"} "), 1ull);
	TFJ_CHECK_EQ(metric("tfjob_report_issuer_fetches_total{result=\"error\"} "), 0ull);
out:
	if (ch)
		grpc_channel_destroy(ch);
	rs_stop(&ST);
	free(t0);
	free(t1);
	free(t_aud);
	free(forged);
	EVP_PKEY_free(other);
}

int main(void)
{
	struct tfj_kubeconfig kc;
	struct tfj_kube_opts ko = { 5, 20, 10000, 0, 60, "tfjob-itest-review" };
	int rc;

	tfj_log_set_component("itest");
	rc = it_start(&K, KC, sizeof(KC), NS, sizeof(NS), "jwt");
	if (rc)
		return rc;
	if (tfj_kubeconfig_load_file(&kc, KC) || tfj_kube_new(&KR, &kc, &ko)) {
		fprintf(stderr, "review client: %s\n", tfj_err_detail());
		return it_finish(K, NS);
	}
	tfj_kubeconfig_free(&kc);
	grpc_init();
	TFJ_RUN(test_local_verification);
	grpc_shutdown();
	tfj_kube_free(KR);
	return it_finish(K, NS);
}
