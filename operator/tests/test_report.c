/*
 * test_report.c - the report server on loopback with stand-in callbacks:
 * decoding, the bearer token hand-off, status codes for each refusal, the
 * 64 KiB cap, the per-pod rate limit, RegisterReplica's answer, the
 * Heartbeat reply's stop and the rejected-total metric. (The real TokenReview and pod checks are in
 * itest_report.c; the decision function in test_tokenreview.c.)
 */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj_test.h>

#include "report/report.h"
#include "tfjob/tfjob.h"
#include "report_client.h"

struct seen {
	pthread_mutex_t mu;
	int auths, delivers;
	char token[64];
	struct tfj_reportmsg last;
	enum tfj_report_code deliver_code;
};

static enum tfj_report_code fake_auth(void *ud, const struct tfj_reportmsg *m, const char *token,
				      char *subject, size_t n, const char **reason)
{
	struct seen *s = ud;

	pthread_mutex_lock(&s->mu);
	s->auths++;
	snprintf(s->token, sizeof(s->token), "%s", token);
	pthread_mutex_unlock(&s->mu);
	if (!strcmp(token, "good")) {
		snprintf(subject, n, "uid-%s", m->ref.pod);
		return TFJ_REPORT_OK;
	}
	if (!strcmp(token, "other-pod")) {
		*reason = "pod_mismatch";
		return TFJ_REPORT_PERMISSION_DENIED;
	}
	if (!strcmp(token, "review-limited")) {
		*reason = "review_limited";
		return TFJ_REPORT_UNAVAILABLE;
	}
	if (!strcmp(token, "standby")) {
		*reason = "unavailable";
		return TFJ_REPORT_UNAVAILABLE;
	}
	*reason = "invalid_token";
	return TFJ_REPORT_UNAUTHENTICATED;
}

static enum tfj_report_code fake_deliver(void *ud, const struct tfj_reportmsg *m,
					 const char *subject, const char **reason)
{
	struct seen *s = ud;
	enum tfj_report_code c;

	pthread_mutex_lock(&s->mu);
	s->delivers++;
	s->last = *m;
	c = s->deliver_code;
	pthread_mutex_unlock(&s->mu);
	if (c != TFJ_REPORT_OK)
		*reason = "job_finished";
	return c;
}

static void heartbeat(Tfj__Report__V1__HeartbeatRequest *hb, Tfj__Report__V1__ReplicaRef *ref,
		      Tfj__Report__V1__Progress *pr, const char *pod)
{
	tfj__report__v1__heartbeat_request__init(hb);
	tfj__report__v1__progress__init(pr);
	rc_ref(ref, "team-a", "mnist", "job-1", "worker", 1, pod);
	pr->has_step = 1;
	pr->global_step = 1234;
	pr->has_accuracy = 1;
	pr->accuracy = 0.75;
	pr->unix_time_ms = 1700000000000;
	hb->replica = ref;
	hb->progress = pr;
	hb->child_running = 1;
}

/* Starts the server on loopback with the stand-in callbacks and `s` as their state. */
static struct tfj_report *start_fake(struct seen *s, struct tfj_report_opts *o,
				     tfj_report_advise_fn advise)
{
	struct tfj_report *srv = NULL;

	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->mu, NULL);
	o->addr = "127.0.0.1:0";
	o->auth = fake_auth;
	o->deliver = fake_deliver;
	o->advise = advise;
	o->ud = s;
	TFJ_CHECK_INT(tfj_report_start(&srv, o), 0);
	return srv;
}

static void test_server(void)
{
	struct seen s;
	struct tfj_report_opts o;
	struct tfj_report *srv = NULL;
	Tfj__Report__V1__HeartbeatRequest hb;
	Tfj__Report__V1__ReplicaRef ref;
	Tfj__Report__V1__Progress pr;
	Tfj__Report__V1__RegisterRequest reg = TFJ__REPORT__V1__REGISTER_REQUEST__INIT;
	Tfj__Report__V1__ExitRequest ex = TFJ__REPORT__V1__EXIT_REQUEST__INIT;
	struct tfj_buf mb;
	grpc_channel *ch;
	size_t rlen = 0;
	uint8_t *big;
	int i, limited = 0;

	memset(&o, 0, sizeof(o));
	o.pod_qps = 0.001; /* effectively no refill during the test */
	o.pod_burst = 5;
	o.heartbeat_s = 7;
	if (!(srv = start_fake(&s, &o, NULL)))
		return;
	TFJ_CHECK_GT(tfj_report_port(srv), 0);
	ch = rc_channel(tfj_report_port(srv));

	/* A valid heartbeat reaches deliver, decoded. */
	heartbeat(&hb, &ref, &pr, "mnist-worker-1");
	TFJ_CHECK_INT(rc_call(ch, TFJ_REPORT_PATH_HEARTBEAT, &hb.base, NULL, 0, "good", NULL),
		      GRPC_STATUS_OK);
	TFJ_CHECK_INT(s.delivers, 1);
	TFJ_CHECK_STR(s.token, "good");
	TFJ_CHECK_STR(s.last.ref.pod, "mnist-worker-1");
	TFJ_CHECK_INT(s.last.ref.index, 1);
	TFJ_CHECK_INT((int)s.last.step, 1234);
	TFJ_CHECK(s.last.accuracy == 0.75);
	TFJ_CHECK_INT(s.last.has_total, 0);

	/* RegisterReplica answers with the operator's heartbeat period. */
	rc_ref(&ref, "team-a", "mnist", "job-1", "chief", 0, "mnist-chief-0");
	reg.replica = &ref;
	TFJ_CHECK_INT(rc_call(ch, TFJ_REPORT_PATH_REGISTER, &reg.base, NULL, 0, "good", &rlen),
		      GRPC_STATUS_OK);
	TFJ_CHECK_INT((int)rlen, 2); /* field 1 varint 7 */

	/* No token, a forged token, a foreign pod's token. */
	heartbeat(&hb, &ref, &pr, "mnist-worker-1");
	TFJ_CHECK_INT(rc_call(ch, TFJ_REPORT_PATH_HEARTBEAT, &hb.base, NULL, 0, NULL, NULL),
		      GRPC_STATUS_UNAUTHENTICATED);
	TFJ_CHECK_INT(rc_call(ch, TFJ_REPORT_PATH_HEARTBEAT, &hb.base, NULL, 0, "forged", NULL),
		      GRPC_STATUS_UNAUTHENTICATED);
	TFJ_CHECK_INT(rc_call(ch, TFJ_REPORT_PATH_HEARTBEAT, &hb.base, NULL, 0, "other-pod", NULL),
		      GRPC_STATUS_PERMISSION_DENIED);
	TFJ_CHECK_INT((int)tfj_report_rejected(srv, "no_token"), 1);
	TFJ_CHECK_INT((int)tfj_report_rejected(srv, "invalid_token"), 1);
	TFJ_CHECK_INT((int)tfj_report_rejected(srv, "pod_mismatch"), 1);

	/* Malformed bodies and requests without a replica never reach auth. */
	i = s.auths;
	TFJ_CHECK_INT(rc_call(ch, TFJ_REPORT_PATH_EXIT, NULL, (const uint8_t *)"\xff\xff\xff", 3,
			      "good", NULL), GRPC_STATUS_INVALID_ARGUMENT);
	TFJ_CHECK_INT(rc_call(ch, TFJ_REPORT_PATH_EXIT, &ex.base, NULL, 0, "good", NULL),
		      GRPC_STATUS_INVALID_ARGUMENT);
	rc_ref(&ref, "team-a", "mnist", "job-1", "gpu", 0, "mnist-gpu-0");
	ex.replica = &ref;
	TFJ_CHECK_INT(rc_call(ch, TFJ_REPORT_PATH_EXIT, &ex.base, NULL, 0, "good", NULL),
		      GRPC_STATUS_INVALID_ARGUMENT);
	TFJ_CHECK_INT(s.auths, i);
	TFJ_CHECK_INT((int)tfj_report_rejected(srv, "invalid_argument"), 3);

	/* Over 64 KiB: refused by the transport. */
	big = calloc(1, 70 * 1024);
	TFJ_CHECK_INT(rc_call(ch, TFJ_REPORT_PATH_EXIT, NULL, big, 70 * 1024, "good", NULL),
		      GRPC_STATUS_RESOURCE_EXHAUSTED);
	free(big);

	/* A finished job: FAILED_PRECONDITION from deliver. */
	s.deliver_code = TFJ_REPORT_FAILED_PRECONDITION;
	heartbeat(&hb, &ref, &pr, "mnist-worker-2");
	TFJ_CHECK_INT(rc_call(ch, TFJ_REPORT_PATH_HEARTBEAT, &hb.base, NULL, 0, "good", NULL),
		      GRPC_STATUS_FAILED_PRECONDITION);
	TFJ_CHECK_INT((int)tfj_report_rejected(srv, "job_finished"), 1);
	s.deliver_code = TFJ_REPORT_OK;

	/* Per pod: burst 5 (one used above by worker-2), then refused; other pods unaffected. */
	for (i = 0; i < 8; i++)
		limited += rc_call(ch, TFJ_REPORT_PATH_HEARTBEAT, &hb.base, NULL, 0, "good", NULL) ==
			   GRPC_STATUS_RESOURCE_EXHAUSTED;
	TFJ_CHECK_INT(limited, 4);
	TFJ_CHECK_INT((int)tfj_report_rejected(srv, "rate_limited"), 4);
	heartbeat(&hb, &ref, &pr, "mnist-worker-3");
	TFJ_CHECK_INT(rc_call(ch, TFJ_REPORT_PATH_HEARTBEAT, &hb.base, NULL, 0, "good", NULL),
		      GRPC_STATUS_OK);

	tfj_buf_init(&mb, 1 << 20);
	TFJ_CHECK_INT(tfj_report_metrics(srv, &mb), 0);
	TFJ_CHECK(strstr(tfj_buf_cstr(&mb), "tfjob_report_rejected_total{reason=\"rate_limited\"} 4") !=
		  NULL);
	TFJ_CHECK(strstr(tfj_buf_cstr(&mb), "tfjob_report_requests_total{method=\"Heartbeat\"}") !=
		  NULL);
	tfj_buf_free(&mb);
	grpc_channel_destroy(ch);
	tfj_report_stop(srv);
	pthread_mutex_destroy(&s.mu);
}

/* Stand-in advise: ps replicas are told to stop, others not. */
static void fake_advise(void *ud, const struct tfj_reportmsg *m, int *stop, char *reason,
			size_t n)
{
	(void)ud;
	if (m->ref.type == TFJ_RT_PS) {
		*stop = 1;
		snprintf(reason, n, "the job has succeeded");
	}
}

/* A Heartbeat call's decoded reply (NULL when the call failed or the reply is bad). */
static Tfj__Report__V1__HeartbeatResponse *heartbeat_reply(grpc_channel *ch, const char *type,
							   const char *pod)
{
	Tfj__Report__V1__ReplicaRef ref;
	Tfj__Report__V1__HeartbeatResponse *r = NULL;

	rc_ref(&ref, "team-a", "mnist", "job-1", type, 0, pod);
	rc_heartbeat_reply(ch, "good", &ref, &r);
	return r;
}

/* The Heartbeat reply carries the advise callback's stop; without one it is empty. */
/*
 * A call refused for want of TokenReview budget drains its peer's bucket
 * like a refusal; a standby's UNAVAILABLE does not.
 */
static void test_review_limited_charged(void)
{
	struct seen s;
	struct tfj_report_opts o;
	struct tfj_report *srv = NULL;
	Tfj__Report__V1__HeartbeatRequest hb;
	Tfj__Report__V1__ReplicaRef ref;
	Tfj__Report__V1__Progress pr;
	grpc_channel *ch;
	int i;

	memset(&o, 0, sizeof(o));
	o.peer_qps = 0.001; /* no refill during the test */
	o.peer_burst = 3;
	if (!(srv = start_fake(&s, &o, NULL)))
		return;
	ch = rc_channel(tfj_report_port(srv));
	heartbeat(&hb, &ref, &pr, "mnist-worker-1");
	for (i = 0; i < 5; i++)
		TFJ_CHECK_INT(rc_call(ch, TFJ_REPORT_PATH_HEARTBEAT, &hb.base, NULL, 0, "standby",
				      NULL), GRPC_STATUS_UNAVAILABLE);
	for (i = 0; i < 3; i++)
		TFJ_CHECK_INT(rc_call(ch, TFJ_REPORT_PATH_HEARTBEAT, &hb.base, NULL, 0,
				      "review-limited", NULL), GRPC_STATUS_UNAVAILABLE);
	TFJ_CHECK_INT(rc_call(ch, TFJ_REPORT_PATH_HEARTBEAT, &hb.base, NULL, 0, "review-limited",
			      NULL), GRPC_STATUS_RESOURCE_EXHAUSTED);
	TFJ_CHECK_EQ(tfj_report_rejected(srv, "peer_limited"), 1ull);
	TFJ_CHECK_INT(s.auths, 8);
	grpc_channel_destroy(ch);
	tfj_report_stop(srv);
	pthread_mutex_destroy(&s.mu);
}

static void test_heartbeat_stop(void)
{
	struct seen s;
	struct tfj_report_opts o;
	struct tfj_report *srv = NULL;
	Tfj__Report__V1__HeartbeatResponse *r;
	grpc_channel *ch;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		memset(&o, 0, sizeof(o));
		if (!(srv = start_fake(&s, &o, pass ? fake_advise : NULL)))
			return;
		ch = rc_channel(tfj_report_port(srv));
		r = heartbeat_reply(ch, "ps", "mnist-ps-0");
		TFJ_CHECK(r != NULL);
		if (r) {
			TFJ_CHECK_INT(r->stop, pass);
			TFJ_CHECK_STR(r->stop_reason, pass ? "the job has succeeded" : "");
			tfj__report__v1__heartbeat_response__free_unpacked(r, NULL);
		}
		r = heartbeat_reply(ch, "worker", "mnist-worker-0");
		TFJ_CHECK(r != NULL);
		if (r) {
			TFJ_CHECK_INT(r->stop, 0);
			tfj__report__v1__heartbeat_response__free_unpacked(r, NULL);
		}
		/* A refused heartbeat is never advised. */
		s.deliver_code = TFJ_REPORT_FAILED_PRECONDITION;
		TFJ_CHECK(heartbeat_reply(ch, "ps", "mnist-ps-1") == NULL);
		grpc_channel_destroy(ch);
		tfj_report_stop(srv);
		pthread_mutex_destroy(&s.mu);
	}
}

static void test_bad_address(void)
{
	struct tfj_report_opts o;
	struct tfj_report *srv = NULL;

	memset(&o, 0, sizeof(o));
	o.addr = "256.1.1.1:1";
	o.auth = fake_auth;
	o.deliver = fake_deliver;
	TFJ_CHECK_LT(tfj_report_start(&srv, &o), 0);
	TFJ_CHECK(srv == NULL);
	o.addr = NULL;
	TFJ_CHECK_INT(tfj_report_start(&srv, &o), TFJ_EINVAL);
}

/* The training length: carried when said, and a length below one step is refused. */
static void test_decode_total_steps(void)
{
	Tfj__Report__V1__HeartbeatRequest hb;
	Tfj__Report__V1__ReplicaRef ref;
	Tfj__Report__V1__Progress pr;
	struct tfj_reportmsg m;
	uint8_t buf[1024];
	size_t n;

	heartbeat(&hb, &ref, &pr, "mnist-worker-1");
	pr.has_total_steps = 1;
	pr.total_steps = 5000;
	n = tfj__report__v1__heartbeat_request__pack(&hb, buf);
	TFJ_CHECK_INT(tfj_reportmsg_decode(&m, TFJ_RM_HEARTBEAT, buf, n), 0);
	TFJ_CHECK_INT(m.has_total, 1);
	TFJ_CHECK_INT((int)m.total, 5000);
	pr.total_steps = 0;
	n = tfj__report__v1__heartbeat_request__pack(&hb, buf);
	TFJ_CHECK_INT(tfj_reportmsg_decode(&m, TFJ_RM_HEARTBEAT, buf, n), TFJ_EINVAL);
}

/* Named metrics: at most 16, names 1-63 of [A-Za-z0-9_./-], finite values. */
static void test_decode_metrics(void)
{
	Tfj__Report__V1__HeartbeatRequest hb;
	Tfj__Report__V1__ReplicaRef ref;
	Tfj__Report__V1__Progress pr;
	Tfj__Report__V1__Metric mv[17], *mp[17];
	struct tfj_reportmsg m;
	char names[17][8], longname[65];
	uint8_t buf[4096];
	size_t n, i;

	heartbeat(&hb, &ref, &pr, "mnist-worker-1");
	for (i = 0; i < 17; i++) {
		tfj__report__v1__metric__init(&mv[i]);
		snprintf(names[i], sizeof(names[i]), "m_%zu", i);
		mv[i].name = names[i];
		mv[i].value = (double)i;
		mp[i] = &mv[i];
	}
	pr.metrics = mp;
	pr.n_metrics = 16;
	n = tfj__report__v1__heartbeat_request__pack(&hb, buf);
	TFJ_CHECK_INT(tfj_reportmsg_decode(&m, TFJ_RM_HEARTBEAT, buf, n), 0);
	TFJ_CHECK_INT((int)m.nmetrics, 16);
	TFJ_CHECK_STR(m.metrics[15].name, "m_15");
	TFJ_CHECK(m.metrics[15].value == 15.0);
	pr.n_metrics = 17;
	n = tfj__report__v1__heartbeat_request__pack(&hb, buf);
	TFJ_CHECK_INT(tfj_reportmsg_decode(&m, TFJ_RM_HEARTBEAT, buf, n), TFJ_EINVAL);
	pr.n_metrics = 1;
	mv[0].name = (char *)"val loss";
	n = tfj__report__v1__heartbeat_request__pack(&hb, buf);
	TFJ_CHECK_INT(tfj_reportmsg_decode(&m, TFJ_RM_HEARTBEAT, buf, n), TFJ_EINVAL);
	mv[0].name = (char *)"";
	n = tfj__report__v1__heartbeat_request__pack(&hb, buf);
	TFJ_CHECK_INT(tfj_reportmsg_decode(&m, TFJ_RM_HEARTBEAT, buf, n), TFJ_EINVAL);
	memset(longname, 'a', 64);
	longname[64] = '\0';
	mv[0].name = longname;
	n = tfj__report__v1__heartbeat_request__pack(&hb, buf);
	TFJ_CHECK_INT(tfj_reportmsg_decode(&m, TFJ_RM_HEARTBEAT, buf, n), TFJ_EINVAL);
	longname[63] = '\0';
	n = tfj__report__v1__heartbeat_request__pack(&hb, buf);
	TFJ_CHECK_INT(tfj_reportmsg_decode(&m, TFJ_RM_HEARTBEAT, buf, n), 0);
	mv[0].name = names[0];
	mv[0].value = NAN;
	n = tfj__report__v1__heartbeat_request__pack(&hb, buf);
	TFJ_CHECK_INT(tfj_reportmsg_decode(&m, TFJ_RM_HEARTBEAT, buf, n), TFJ_EINVAL);
}

int main(void)
{
	grpc_init();
	TFJ_RUN(test_server);
	TFJ_RUN(test_decode_total_steps);
	TFJ_RUN(test_decode_metrics);
	TFJ_RUN(test_heartbeat_stop);
	TFJ_RUN(test_review_limited_charged);
	TFJ_RUN(test_bad_address);
	grpc_shutdown();
	return tfj_test_finish();
}
