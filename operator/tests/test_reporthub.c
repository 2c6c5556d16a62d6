/*
 * test_reporthub.c - the report callbacks joined with the controller's
 * caches (app/reporthub.h) against the local HTTPS server, past
 * authorization: a report for a job the cache does not have, or with
 * another uid, is NOT_FOUND; one for a running job is stored, and a pod's
 * first record is dropped again when the pod is no longer cached; a
 * succeeded job's ps is told to stop and its chief is not; a failed job
 * refuses reports. The job's spec and status are read from the cached
 * text (app/jobpeek.h). And authentication through the hub with the
 * issuer's keys (report/issuer.h): a signed token of a cached pod passes
 * without a TokenReview, one signed by another key does not, and deleting
 * the pod refuses its verified, cached token at once.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <tfj/clock.h>
#include <tfj/err.h>
#include <tfj/json.h>

#include "app/controller.h"
#include "app/reporthub.h"
#include "fakeapi.h"
#include "jwt_sign.h"
#include "kube/kube.h"
#include "report/issuer.h"
#include "report/progress.h"
#include "tfj_test.h"
#include "tfjob/podspec.h"
#include "tfjob/tfjob.h"

static struct fake F;
static struct tfj_kube *K;

/* Managed by someone else: the controller caches it and leaves it alone. */
static const char *job_json =
	"{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
	"\"metadata\":{\"name\":\"mnist\",\"namespace\":\"hub\"},"
	"\"spec\":{\"runPolicy\":{\"managedBy\":\"example.com/other\"},\"tfReplicaSpecs\":{"
	"\"Chief\":{\"template\":{\"spec\":{\"containers\":"
	"[{\"name\":\"tensorflow\",\"image\":\"localhost/rt:1\"}]}}},"
	"\"PS\":{\"replicas\":1,\"template\":{\"spec\":{\"containers\":"
	"[{\"name\":\"tensorflow\",\"image\":\"localhost/rt:1\",\"command\":[\"rt\"]}]}}}}}}";

static const char *pod_json =
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"mnist-ps-0\","
	"\"namespace\":\"hub\",\"labels\":{\"training.kubeflow.org/job-name\":\"mnist\"}},"
	"\"spec\":{\"containers\":[{\"name\":\"tensorflow\",\"image\":\"localhost/rt:1\"}]}}";

static struct tfj_reportmsg msg(enum tfj_reportmsg_kind kind, const char *job_uid, int type,
				const char *pod)
{
	struct tfj_reportmsg m;

	memset(&m, 0, sizeof(m));
	m.kind = kind;
	snprintf(m.ref.ns, sizeof(m.ref.ns), "hub");
	snprintf(m.ref.job, sizeof(m.ref.job), "mnist");
	snprintf(m.ref.job_uid, sizeof(m.ref.job_uid), "%s", job_uid);
	snprintf(m.ref.pod, sizeof(m.ref.pod), "%s", pod);
	m.ref.type = type;
	m.has_step = 1;
	m.step = 7;
	m.progress_ms = 1000;
	return m;
}

static size_t records(struct tfj_progress *p)
{
	struct tfj_progress_stats s;

	tfj_progress_stats(p, &s);
	return s.records;
}

/* advise's answer for a heartbeat of type `type`, waiting up to 6 s for `want`. */
static int advise_until(struct tfj_reporthub *h, const char *job_uid, int type, int want)
{
	struct tfj_reportmsg m = msg(TFJ_RM_HEARTBEAT, job_uid, type, "mnist-ps-0");
	char reason[128];
	int stop = -1;

	for (int i = 0; i < 300; i++) {
		tfj_reporthub_advise(h, &m, &stop, reason, sizeof(reason));
		if (stop == want)
			break;
		usleep(20000);
	}
	return stop;
}

static void test_deliver_and_advise(void)
{
	struct tfj_controller_opts o = { 0 };
	struct tfj_controller *c = NULL;
	struct tfj_progress *p = NULL;
	struct tfj_reporthub h;
	struct tfj_reportmsg m;
	char job_uid[64], pod_uid[64], reason[128];
	const char *why = NULL;
	cJSON *obj;
	int i, stop = -1;

	o.namespace = "hub";
	o.workers = 1;
	o.watch_timeout_s = 5;
	TFJ_CHECK_OK(tfj_progress_new(&p, 0));
	TFJ_CHECK_OK(tfj_controller_new(&c, K, &o));
	if (!p || !c)
		goto out;
	tfj_controller_set_progress(c, p);
	TFJ_CHECK_OK(tfj_controller_start(c, 10000));
	memset(&h, 0, sizeof(h));
	h.ctl = c;
	h.prog = p;

	/* No such job yet. */
	m = msg(TFJ_RM_HEARTBEAT, "u", TFJ_RT_PS, "mnist-ps-0");
	TFJ_CHECK_INT(tfj_reporthub_deliver(&h, &m, "pod-uid", &why), TFJ_REPORT_NOT_FOUND);
	TFJ_CHECK_STR(why, "job_unknown");
	tfj_reporthub_advise(&h, &m, &stop, reason, sizeof(reason));
	TFJ_CHECK_INT(stop, 0);

	obj = cJSON_Parse(job_json);
	TFJ_CHECK_OK(tfj_kube_create(K, NULL, "/apis/kubeflow.org/v1/namespaces/hub/tfjobs", obj));
	cJSON_Delete(obj);
	obj = cJSON_Parse(pod_json);
	TFJ_CHECK_OK(tfj_kube_create(K, NULL, "/api/v1/namespaces/hub/pods", obj));
	cJSON_Delete(obj);
	fake_uid_of(K, job_uid, sizeof(job_uid), "/apis/kubeflow.org/v1/namespaces/hub/tfjobs/mnist");
	fake_uid_of(K, pod_uid, sizeof(pod_uid), "/api/v1/namespaces/hub/pods/mnist-ps-0");
	TFJ_CHECK(job_uid[0] && pod_uid[0]);
	for (i = 0; i < 300; i++) {
		cJSON *pod = tfj_controller_get_pod(c, "hub", "mnist-ps-0");
		int cached = pod != NULL;

		cJSON_Delete(pod);
		m = msg(TFJ_RM_HEARTBEAT, job_uid, TFJ_RT_PS, "mnist-ps-0");
		if (cached && tfj_reporthub_deliver(&h, &m, pod_uid, &why) == TFJ_REPORT_OK)
			break;
		usleep(20000);
	}
	TFJ_CHECK_EQ(records(p), 1);

	/* Another uid (a job re-created under the same name) is unknown. */
	m = msg(TFJ_RM_HEARTBEAT, "another-uid", TFJ_RT_PS, "mnist-ps-0");
	TFJ_CHECK_INT(tfj_reporthub_deliver(&h, &m, pod_uid, &why), TFJ_REPORT_NOT_FOUND);
	TFJ_CHECK_STR(why, "job_unknown");

	/* A pod gone from the cache since it was authorized: its first record goes again. */
	m = msg(TFJ_RM_HEARTBEAT, job_uid, TFJ_RT_WORKER, "mnist-worker-0");
	TFJ_CHECK_INT(tfj_reporthub_deliver(&h, &m, "gone-pod-uid", &why), TFJ_REPORT_OK);
	TFJ_CHECK_EQ(records(p), 1);
	/* ... as does one whose name now belongs to a newer pod (another uid). */
	m = msg(TFJ_RM_HEARTBEAT, job_uid, TFJ_RT_PS, "mnist-ps-0");
	TFJ_CHECK_INT(tfj_reporthub_deliver(&h, &m, "older-pod-uid", &why), TFJ_REPORT_OK);
	TFJ_CHECK_EQ(records(p), 1);

	/* Running: nobody stops. Succeeded: the ps stops, the chief does not. */
	TFJ_CHECK_INT(advise_until(&h, job_uid, TFJ_RT_PS, 0), 0);
	fake_put_status(&F, "tfjobs", "hub", "mnist",
			"{\"conditions\":[{\"type\":\"Succeeded\",\"status\":\"True\"}]}");
	TFJ_CHECK_INT(advise_until(&h, job_uid, TFJ_RT_PS, 1), 1);
	TFJ_CHECK_INT(advise_until(&h, job_uid, TFJ_RT_CHIEF, 0), 0);
	TFJ_CHECK_INT(advise_until(&h, job_uid, TFJ_RT_WORKER, 0), 0);
	TFJ_CHECK_INT(advise_until(&h, "another-uid", TFJ_RT_PS, 0), 0);
	/* A succeeded job still takes reports (its lingering replicas'). */
	m = msg(TFJ_RM_HEARTBEAT, job_uid, TFJ_RT_PS, "mnist-ps-0");
	TFJ_CHECK_INT(tfj_reporthub_deliver(&h, &m, pod_uid, &why), TFJ_REPORT_OK);

	/* Failed: reports are refused. */
	fake_put_status(&F, "tfjobs", "hub", "mnist",
			"{\"conditions\":[{\"type\":\"Failed\",\"status\":\"True\"}]}");
	for (i = 0; i < 300; i++) {
		if (tfj_reporthub_deliver(&h, &m, pod_uid, &why) == TFJ_REPORT_FAILED_PRECONDITION)
			break;
		usleep(20000);
	}
	TFJ_CHECK_INT(tfj_reporthub_deliver(&h, &m, pod_uid, &why),
		      TFJ_REPORT_FAILED_PRECONDITION);
	TFJ_CHECK_STR(why, "job_finished");
	TFJ_CHECK_INT(advise_until(&h, job_uid, TFJ_RT_PS, 0), 0);
out:
	tfj_controller_free(c);
	tfj_progress_free(p);
}

#define JWT_ISS "https://kubernetes.default.svc.cluster.local"

static int pod_cached(struct tfj_controller *c, const char *ns, const char *name)
{
	cJSON *pod = tfj_controller_get_pod(c, ns, name);
	int cached = pod != NULL;

	cJSON_Delete(pod);
	return cached;
}

/* A token for pod mnist-worker-0 (uid) of namespace jwt, signed by k under kid "a". */
static char *pod_token(EVP_PKEY *k, const char *uid)
{
	char p[2048], claim[512];
	long long now = (long long)(tfj_clock_unix_ms() / 1000);

	jf_pod_claim(claim, sizeof(claim), "jwt", "mnist-worker-0", uid);
	jf_payload(p, sizeof(p), "[\"tfjob-report\"]", now - 10, now + 600, claim);
	return js_sign(k, "{\"alg\":\"RS256\",\"kid\":\"a\"}", p);
}

/* Job mnist in namespace jwt (managed elsewhere) and its worker 0's pod. */
static void create_jwt_objects(char *job_uid, size_t cap, char *pod_uid, size_t pcap)
{
	char body[2048];
	cJSON *obj;

	obj = cJSON_Parse("{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
			  "\"metadata\":{\"name\":\"mnist\",\"namespace\":\"jwt\"},"
			  "\"spec\":{\"runPolicy\":{\"managedBy\":\"example.com/other\"},"
			  "\"tfReplicaSpecs\":{\"Worker\":{\"template\":{\"spec\":{"
			  "\"containers\":[{\"name\":\"tensorflow\",\"image\":\"rt:1\"}]}}}}}}");
	TFJ_CHECK_OK(tfj_kube_create(K, NULL, "/apis/kubeflow.org/v1/namespaces/jwt/tfjobs", obj));
	cJSON_Delete(obj);
	fake_uid_of(K, job_uid, cap, "/apis/kubeflow.org/v1/namespaces/jwt/tfjobs/mnist");
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"mnist-worker-0\","
		 "\"namespace\":\"jwt\",\"labels\":{\"" TFJ_LABEL_JOB_NAME "\":\"mnist\","
		 "\"" TFJ_LABEL_REPLICA_TYPE "\":\"worker\",\"" TFJ_LABEL_REPLICA_INDEX "\":\"0\"},"
		 "\"ownerReferences\":[{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
		 "\"name\":\"mnist\",\"uid\":\"%s\",\"controller\":true}]},"
		 "\"spec\":{\"containers\":[{\"name\":\"tensorflow\",\"image\":\"rt:1\"}]}}",
		 job_uid);
	obj = cJSON_Parse(body);
	TFJ_CHECK_OK(tfj_kube_create(K, NULL, "/api/v1/namespaces/jwt/pods", obj));
	cJSON_Delete(obj);
	fake_uid_of(K, pod_uid, pcap, "/api/v1/namespaces/jwt/pods/mnist-worker-0");
}

static void test_auth_with_issuer_keys(void)
{
	struct tfj_controller_opts o = { 0 };
	struct tfj_controller *c = NULL;
	struct tfj_issuer *is = NULL;
	struct tfj_reporthub h;
	struct tfj_reportmsg m;
	EVP_PKEY *key = js_key("RSA"), *other = js_key("RSA");
	char job_uid[64], pod_uid[64], subject[128], jwk[3000], doc[3100];
	char *tok = NULL, *forged = NULL;
	const char *why = NULL;
	int i;

	memset(&h, 0, sizeof(h));
	o.namespace = "jwt";
	o.workers = 1;
	o.watch_timeout_s = 5;
	TFJ_CHECK_OK(tfj_controller_new(&c, K, &o));
	TFJ_CHECK_OK(tfj_tokenreviewer_new(&h.tr, K, "tfjob-report", 0, 0));
	TFJ_CHECK_OK(tfj_issuer_new(&is, K, 0));
	if (!c || !h.tr || !is)
		goto out;
	tfj_tokenreviewer_use_issuer(h.tr, is);
	h.ctl = c;
	fake_serve_doc(&F, TFJ_ISSUER_DISCOVERY_PATH, "application/json", "{\"issuer\":\"" JWT_ISS "\"}");
	js_jwk(jwk, sizeof(jwk), key, "a");
	snprintf(doc, sizeof(doc), "{\"keys\":[%s]}", jwk);
	fake_serve_doc(&F, TFJ_ISSUER_JWKS_PATH, "application/jwk-set+json", doc);
	TFJ_CHECK_OK(tfj_controller_start(c, 10000));
	create_jwt_objects(job_uid, sizeof(job_uid), pod_uid, sizeof(pod_uid));
	for (i = 0; i < 300 && !pod_cached(c, "jwt", "mnist-worker-0"); i++)
		usleep(20000);
	tok = pod_token(key, pod_uid);
	forged = pod_token(other, pod_uid);
	m = msg(TFJ_RM_HEARTBEAT, job_uid, TFJ_RT_WORKER, "mnist-worker-0");
	snprintf(m.ref.ns, sizeof(m.ref.ns), "jwt");
	TFJ_CHECK_INT(tfj_reporthub_auth(&h, &m, tok, subject, sizeof(subject), &why),
		      TFJ_REPORT_OK);
	TFJ_CHECK_STR(subject, pod_uid);
	TFJ_CHECK_INT(tfj_reporthub_auth(&h, &m, forged, subject, sizeof(subject), &why),
		      TFJ_REPORT_UNAUTHENTICATED);
	TFJ_CHECK_STR(why, "invalid_token");
	/* The pod goes: its token, verified and cached, is refused once the cache knows. */
	TFJ_CHECK_OK(tfj_kube_delete(K, "/api/v1/namespaces/jwt/pods/mnist-worker-0", NULL, NULL));
	for (i = 0; i < 300 && pod_cached(c, "jwt", "mnist-worker-0"); i++)
		usleep(20000);
	TFJ_CHECK_INT(tfj_reporthub_known(&h, tok), 1);
	TFJ_CHECK_INT(tfj_reporthub_auth(&h, &m, tok, subject, sizeof(subject), &why),
		      TFJ_REPORT_PERMISSION_DENIED);
	TFJ_CHECK_STR(why, "pod_unknown");
	/* No TokenReview for any of it. */
	TFJ_CHECK_INT(fake_count(&F, "tokenreviews", NULL), 0);
out:
	tfj_controller_free(c);
	tfj_tokenreviewer_free(h.tr);
	tfj_issuer_free(is);
	EVP_PKEY_free(key);
	EVP_PKEY_free(other);
	free(tok);
	free(forged);
}

int main(void)
{
	int rc = fake_start(&F, "tok");

	if (fake_unavailable(&F, rc))
		return 77;
	TFJ_CHECK_INT(rc, 0);
	K = fake_client(&F, NULL);
	if (rc == 0 && K)
		TFJ_RUN(test_deliver_and_advise);
	if (rc == 0 && K)
		TFJ_RUN(test_auth_with_issuer_keys);
	tfj_kube_free(K);
	fake_stop(&F);
	return tfj_test_finish();
}
