/*
 * test_reporter.c - the report client against a real gRPC server on
 * loopback, written here with gRPC core and common's tfj/grpc.h; it
 * records every call (method, authorization metadata, decoded request).
 * Also runs the whole agent against it, and against a channel that is down
 * or hangs.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>

#include <tfj/clock.h>
#include <tfj/err.h>
#include <tfj/grpc.h>
#include <tfj/json.h>
#include "agent_testutil.h"
#include "reporter.h"
#include "tfj_report.pb-c.h"
#include "tfj_test.h"

#define MAX_CALLS 512

struct rec {
	char method[96];
	char auth[512];
	int has_auth;
	uint8_t *body;
	size_t len;
};

struct server {
	grpc_server *srv;
	grpc_completion_queue *cq;
	pthread_t th;
	int port;
	const char *require_token;  /* reject other tokens with UNAUTHENTICATED */
	uint32_t heartbeat_reply;   /* RegisterResponse.heartbeat_interval_seconds */
	int stop_at_step;           /* > 0: HeartbeatResponse.stop once a step >= it arrived */
	/*
	 * An operator that restarts, then holds reports durably only after a
	 * while: the first `down` Heartbeat/Exit calls get UNAVAILABLE; from the
	 * ack_hb-th Heartbeat (ack_exit-th Exit) on, replies ack what they got
	 * (0 = never). `refuse` (non-zero) refuses every Heartbeat/Exit with it.
	 */
	size_t down, ack_hb, ack_exit;
	grpc_status_code refuse;
	size_t nhb, nexit;
	pthread_mutex_t mu;
	struct rec calls[MAX_CALLS];
	size_t ncalls;
};

#define TAG_NEW ((void *)1)
#define TAG_OPS ((void *)2)
#define TAG_SHUT ((void *)3)

static grpc_event next_ev(grpc_completion_queue *cq)
{
	return grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
}

/* Heartbeat/Exit reply per the server's knobs (struct server). */
static grpc_status_code ack_reply(struct server *s, const struct rec *r, uint8_t *rbuf, size_t *rlen)
{
	int hb = strcmp(r->method, TFJ_REPORTER_METHOD_HEARTBEAT) == 0;
	size_t n;

	pthread_mutex_lock(&s->mu);
	n = hb ? ++s->nhb : ++s->nexit;
	pthread_mutex_unlock(&s->mu);
	if (s->refuse)
		return s->refuse;
	if (s->down && s->nhb + s->nexit <= s->down)
		return GRPC_STATUS_UNAVAILABLE;
	if (hb && s->ack_hb && n >= s->ack_hb) {
		Tfj__Report__V1__HeartbeatResponse hr = TFJ__REPORT__V1__HEARTBEAT_RESPONSE__INIT;
		Tfj__Report__V1__HeartbeatRequest *hq =
			tfj__report__v1__heartbeat_request__unpack(NULL, r->len, r->body);

		if (hq && hq->progress)
			hr.acked_progress_unix_time_ms = hq->progress->unix_time_ms;
		if (hq)
			tfj__report__v1__heartbeat_request__free_unpacked(hq, NULL);
		*rlen = tfj__report__v1__heartbeat_response__pack(&hr, rbuf);
	} else if (!hb && s->ack_exit && n >= s->ack_exit) {
		Tfj__Report__V1__ExitResponse er = TFJ__REPORT__V1__EXIT_RESPONSE__INIT;

		er.acked = 1;
		*rlen = tfj__report__v1__exit_response__pack(&er, rbuf);
	}
	return GRPC_STATUS_OK;
}

static void handle(struct server *s, grpc_call *call, grpc_call_details *det, grpc_metadata_array *md)
{
	grpc_byte_buffer *req = NULL, *resp = NULL;
	grpc_op op;
	grpc_status_code code = GRPC_STATUS_OK;
	struct rec r;
	int cancelled = 0;
	const char *auth;
	size_t alen;
	uint8_t rbuf[64];
	size_t rlen = 0;

	memset(&r, 0, sizeof(r));
	snprintf(r.method, sizeof(r.method), "%.*s", (int)GRPC_SLICE_LENGTH(det->method),
		 (const char *)GRPC_SLICE_START_PTR(det->method));
	if (tfj_grpc_incoming_md(&auth, &alen, md, "authorization") == 0) {
		r.has_auth = 1;
		snprintf(r.auth, sizeof(r.auth), "%.*s", (int)alen, auth);
	}
	/* An unregistered call: its message is received on its own. */
	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_RECV_MESSAGE;
	op.data.recv_message.recv_message = &req;
	grpc_call_start_batch(call, &op, 1, TAG_OPS, NULL);
	next_ev(s->cq);
	if (req) {
		TFJ_CHECK(tfj_grpc_bb_read(&r.body, &r.len, req, TFJ_REPORTER_MAX_MSG) == 0);
		grpc_byte_buffer_destroy(req);
	}
	if (s->require_token) {
		char want[256];
		snprintf(want, sizeof(want), "Bearer %s", s->require_token);
		if (!r.has_auth || strcmp(r.auth, want) != 0)
			code = GRPC_STATUS_UNAUTHENTICATED;
	}
	/* Recorded before replying, so a client that got its reply sees it. */
	pthread_mutex_lock(&s->mu);
	if (s->ncalls < MAX_CALLS)
		s->calls[s->ncalls++] = r;
	else
		free(r.body);
	pthread_mutex_unlock(&s->mu);
	if (strcmp(r.method, TFJ_REPORTER_METHOD_REGISTER) == 0) {
		Tfj__Report__V1__RegisterResponse rr = TFJ__REPORT__V1__REGISTER_RESPONSE__INIT;
		rr.heartbeat_interval_seconds = s->heartbeat_reply;
		rlen = tfj__report__v1__register_response__pack(&rr, rbuf);
	} else if (strcmp(r.method, TFJ_REPORTER_METHOD_HEARTBEAT) == 0 && s->stop_at_step > 0) {
		/* As the operator answers once the job has succeeded. */
		Tfj__Report__V1__HeartbeatResponse hr = TFJ__REPORT__V1__HEARTBEAT_RESPONSE__INIT;
		Tfj__Report__V1__HeartbeatRequest *hq =
			tfj__report__v1__heartbeat_request__unpack(NULL, r.len, r.body);

		if (hq && hq->progress && hq->progress->has_step &&
		    hq->progress->global_step >= s->stop_at_step) {
			hr.stop = 1;
			hr.stop_reason = "the job has succeeded";
			rlen = tfj__report__v1__heartbeat_response__pack(&hr, rbuf);
		}
		if (hq)
			tfj__report__v1__heartbeat_request__free_unpacked(hq, NULL);
	} else if (code == GRPC_STATUS_OK) {
		code = ack_reply(s, &r, rbuf, &rlen);
	}
	/* The message goes only with an OK status: a refusal is metadata and status. */
	resp = tfj_grpc_bb_new(rbuf, rlen);
	if (tfj_grpc_reply(call, code, NULL, resp, &cancelled, TAG_OPS) != 0) {
		TFJ_CHECK(!"server start_batch failed");
		grpc_byte_buffer_destroy(resp);
		return;
	}
	next_ev(s->cq);
	grpc_byte_buffer_destroy(resp);
}

static void *serve(void *arg)
{
	struct server *s = arg;
	grpc_call *call = NULL;
	grpc_call_details det;
	grpc_metadata_array md;
	int shut = 0, pending = 0;

	for (;;) {
		grpc_event ev;

		if (!pending && !shut) {
			call = NULL;
			grpc_call_details_init(&det);
			grpc_metadata_array_init(&md);
			grpc_server_request_call(s->srv, &call, &det, &md, s->cq, s->cq, TAG_NEW);
			pending = 1;
		}
		ev = next_ev(s->cq);
		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.tag == TAG_SHUT) {
			shut = 1;
		} else if (ev.tag == TAG_NEW) {
			if (ev.success)
				handle(s, call, &det, &md);
			else
				shut = 1; /* the server is going away */
			if (call)
				grpc_call_unref(call);
			grpc_call_details_destroy(&det);
			grpc_metadata_array_destroy(&md);
			pending = 0;
		}
		if (shut && !pending)
			break;
	}
	return NULL;
}

/* Starts the server; `creds` NULL = plaintext. Takes ownership of creds. */
static void server_start_creds(struct server *s, grpc_server_credentials *creds)
{
	struct tfj_grpc_args args;

	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->mu, NULL);
	tfj_grpc_args_init(&args);
	tfj_grpc_args_int(&args, GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, TFJ_REPORTER_MAX_MSG);
	s->cq = grpc_completion_queue_create_for_next(NULL);
	TFJ_CHECK(tfj_grpc_server_new(&s->srv, &args) == 0);
	grpc_server_register_completion_queue(s->srv, s->cq, NULL);
	TFJ_CHECK(tfj_grpc_server_listen(&s->port, s->srv, "127.0.0.1:0", creds) == 0);
	TFJ_CHECK_GT(s->port, 0);
	pthread_create(&s->th, NULL, serve, s);
}

static void server_start(struct server *s)
{
	server_start_creds(s, grpc_insecure_server_credentials_create());
}

static void server_stop(struct server *s)
{
	size_t i;

	grpc_server_shutdown_and_notify(s->srv, s->cq, TAG_SHUT);
	grpc_server_cancel_all_calls(s->srv);
	pthread_join(s->th, NULL);
	grpc_server_destroy(s->srv);
	tfj_grpc_cq_destroy(s->cq);
	for (i = 0; i < s->ncalls; i++)
		free(s->calls[i].body);
	pthread_mutex_destroy(&s->mu);
}

static size_t count_method(struct server *s, const char *method)
{
	size_t i, n = 0;

	pthread_mutex_lock(&s->mu);
	for (i = 0; i < s->ncalls; i++)
		n += strcmp(s->calls[i].method, method) == 0;
	pthread_mutex_unlock(&s->mu);
	return n;
}

static char dir[64], token_path[128], tm_path[128], out_path[128], err_path[128];

static void check_ref(const Tfj__Report__V1__ReplicaRef *ref, const char *type, int index)
{
	TFJ_CHECK(ref != NULL);
	if (!ref)
		return;
	TFJ_CHECK_STR(ref->namespace_, "team-a");
	TFJ_CHECK_STR(ref->job_name, "mnist");
	TFJ_CHECK_STR(ref->job_uid, "uid-123");
	TFJ_CHECK_STR(ref->replica_type, type);
	TFJ_CHECK_INT(ref->replica_index, index);
	TFJ_CHECK_STR(ref->pod_name, "mnist-worker-1");
}

/*
 * Starts the recording server and opens a client to it as `id` (2 s call
 * deadline, the given heartbeat period), with `token` in the token file. 0 with *r set; -1 (server stopped) when open failed.
 */
static int open_client(struct server *s, struct tfj_reporter **r, double heartbeat_s,
		       const struct tfj_reporter_ident *id, const char *token)
{
	struct tfj_reporter_opts o = { NULL, token_path, NULL, 2.0, heartbeat_s, 0 };
	char addr[64];

	server_start(s);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", s->port);
	o.addr = addr;
	TFJ_CHECK_INT(tu_write(token_path, token), 0);
	TFJ_CHECK_INT(tfj_reporter_open(r, &o, id), 0);
	if (*r)
		return 0;
	server_stop(s);
	return -1;
}

static void test_client_calls(void)
{
	struct server s;
	struct tfj_reporter *r = NULL;
	struct tfj_reporter_ident id = { "team-a", "mnist", "uid-123", "worker", 1, "mnist-worker-1" };
	struct tfj_progress_state p;
	struct tfj_reporter_exit e = { 138, "PeerWaitTimeout", 1, 99, "peer ps:0 missing", 0 };
	uint32_t hb = 0;

	if (open_client(&s, &r, 10, &id, "tok-1\n"))
		return;
	s.heartbeat_reply = 7;
	TFJ_CHECK_INT(tfj_reporter_register(r, &hb), 0);
	TFJ_CHECK_INT(hb, 7);
	memset(&p, 0, sizeof(p));
	p.have = TFJ_PROGREC_BIT(TFJ_PROGREC_STEP) | TFJ_PROGREC_BIT(TFJ_PROGREC_LOSS);
	p.step = 1234;
	p.loss = 0.5;
	p.records = 3;
	/* The token is re-read on every call (kubelet rotates it). */
	TFJ_CHECK_INT(tu_write(token_path, "tok-2"), 0);
	TFJ_CHECK_INT(tfj_reporter_heartbeat(r, &p, 1), 0);
	TFJ_CHECK_INT(tfj_reporter_exit(r, &e), 0);
	TFJ_CHECK_INT(s.ncalls, 3);
	if (s.ncalls == 3) {
		Tfj__Report__V1__RegisterRequest *rq;
		Tfj__Report__V1__HeartbeatRequest *hq;
		Tfj__Report__V1__ExitRequest *eq;

		TFJ_CHECK_STR(s.calls[0].method, "/tfj.report.v1.Report/RegisterReplica");
		TFJ_CHECK_STR(s.calls[0].auth, "Bearer tok-1");
		rq = tfj__report__v1__register_request__unpack(NULL, s.calls[0].len, s.calls[0].body);
		TFJ_CHECK(rq != NULL);
		if (rq) {
			check_ref(rq->replica, "worker", 1);
			TFJ_CHECK_STR(rq->agent_version, TFJ_REPORTER_AGENT_VERSION);
			TFJ_CHECK_GT(rq->start_unix_time_ms, 0);
			tfj__report__v1__register_request__free_unpacked(rq, NULL);
		}
		TFJ_CHECK_STR(s.calls[1].method, "/tfj.report.v1.Report/Heartbeat");
		TFJ_CHECK_STR(s.calls[1].auth, "Bearer tok-2");
		hq = tfj__report__v1__heartbeat_request__unpack(NULL, s.calls[1].len, s.calls[1].body);
		TFJ_CHECK(hq != NULL && hq->progress != NULL);
		if (hq && hq->progress) {
			check_ref(hq->replica, "worker", 1);
			TFJ_CHECK_INT(hq->progress->has_step, 1);
			TFJ_CHECK_INT(hq->progress->global_step, 1234);
			TFJ_CHECK_INT(hq->progress->has_loss, 1);
			TFJ_CHECK(hq->progress->loss == 0.5);
			TFJ_CHECK_INT(hq->progress->has_accuracy, 0);
			TFJ_CHECK_INT(hq->progress->records_seen, 3);
			TFJ_CHECK_INT(hq->child_running, 1);
		}
		if (hq)
			tfj__report__v1__heartbeat_request__free_unpacked(hq, NULL);
		TFJ_CHECK_STR(s.calls[2].method, "/tfj.report.v1.Report/Exit");
		eq = tfj__report__v1__exit_request__unpack(NULL, s.calls[2].len, s.calls[2].body);
		TFJ_CHECK(eq != NULL);
		if (eq) {
			TFJ_CHECK_INT(eq->exit_code, 138);
			TFJ_CHECK_STR(eq->reason, "PeerWaitTimeout");
			TFJ_CHECK_INT(eq->retryable, 1);
			TFJ_CHECK_INT(eq->has_last_step, 1);
			TFJ_CHECK_INT(eq->last_step, 99);
			TFJ_CHECK_STR(eq->message, "peer ps:0 missing");
			tfj__report__v1__exit_request__free_unpacked(eq, NULL);
		}
	}
	/* A server that wants another token: UNAUTHENTICATED maps to TFJ_EAUTH. */
	s.require_token = "tok-3";
	TFJ_CHECK_INT(tfj_reporter_heartbeat(r, &p, 1), TFJ_EAUTH);
	TFJ_CHECK_INT(tu_write(token_path, "tok-3"), 0);
	TFJ_CHECK_INT(tfj_reporter_heartbeat(r, &p, 1), 0);
	/* No token file: the call goes without authorization and is refused. */
	unlink(token_path);
	TFJ_CHECK_INT(tfj_reporter_heartbeat(r, &p, 0), TFJ_EAUTH);
	pthread_mutex_lock(&s.mu);
	TFJ_CHECK_INT(s.calls[s.ncalls - 1].has_auth, 0);
	pthread_mutex_unlock(&s.mu);
	tfj_reporter_close(r);
	server_stop(&s);
	TFJ_CHECK_LT(tfj_reporter_open(&r, &(struct tfj_reporter_opts){ "", NULL, NULL, 1, 1, 0 }, &id), 0);
}

/* The last progress (the final step and accuracy) goes out in a heartbeat
 * right before Exit, even when the timer never fired after it arrived. */
static void test_final_heartbeat_before_exit(void)
{
	struct server s;
	struct tfj_reporter *r = NULL;
	struct tfj_reporter_ident id = { "team-a", "mnist", "uid-123", "worker", 0, "mnist-worker-0" };
	struct tfj_reporter_exit e = { 0, "Completed", 0, 939, "", 0 };
	struct tfj_progress_state p;
	int n;

	if (open_client(&s, &r, 3600, &id, "tok-1"))
		return;
	TFJ_CHECK_INT(tfj_reporter_start(r), 0);
	memset(&p, 0, sizeof(p));
	p.have = TFJ_PROGREC_BIT(TFJ_PROGREC_STEP) | TFJ_PROGREC_BIT(TFJ_PROGREC_ACCURACY);
	p.step = 939;
	p.accuracy = 0.875;
	p.records = 12;
	tfj_reporter_update(r, &p, 0);
	tfj_reporter_finish(r, &e);
	pthread_mutex_lock(&s.mu);
	n = s.ncalls;
	TFJ_CHECK_GE(n, 2);
	if (n >= 2) {
		Tfj__Report__V1__HeartbeatRequest *hq;

		TFJ_CHECK_STR(s.calls[n - 2].method, "/tfj.report.v1.Report/Heartbeat");
		TFJ_CHECK_STR(s.calls[n - 1].method, "/tfj.report.v1.Report/Exit");
		hq = tfj__report__v1__heartbeat_request__unpack(NULL, s.calls[n - 2].len,
								s.calls[n - 2].body);
		TFJ_CHECK(hq != NULL && hq->progress != NULL);
		if (hq && hq->progress) {
			TFJ_CHECK_INT(hq->progress->global_step, 939);
			TFJ_CHECK(hq->progress->accuracy == 0.875);
			TFJ_CHECK_INT(hq->child_running, 0);
		}
		if (hq)
			tfj__report__v1__heartbeat_request__free_unpacked(hq, NULL);
	}
	pthread_mutex_unlock(&s.mu);
	tfj_reporter_close(r);
	server_stop(&s);
}

/* A heartbeat reply with stop is recorded once and makes the stop fd readable. */
static void test_client_stop(void)
{
	struct server s;
	struct tfj_reporter *r = NULL;
	struct tfj_reporter_ident id = { "team-a", "mnist", "uid-123", "ps", 0, "mnist-ps-0" };
	struct tfj_progress_state p;
	struct pollfd pf;
	char why[128] = "";

	if (open_client(&s, &r, 10, &id, "tok"))
		return;
	s.stop_at_step = 10;
	TFJ_CHECK_GE(tfj_reporter_stop_fd(r), 0);
	pf.fd = tfj_reporter_stop_fd(r);
	pf.events = POLLIN;
	memset(&p, 0, sizeof(p));
	p.have = TFJ_PROGREC_BIT(TFJ_PROGREC_STEP);
	p.step = 9;
	/* An empty reply (what every heartbeat got so far) asks for nothing. */
	TFJ_CHECK_INT(tfj_reporter_heartbeat(r, &p, 1), 0);
	TFJ_CHECK_INT(tfj_reporter_stop_requested(r, why, sizeof(why)), 0);
	TFJ_CHECK_INT(poll(&pf, 1, 0), 0);
	p.step = 10;
	TFJ_CHECK_INT(tfj_reporter_heartbeat(r, &p, 1), 0);
	TFJ_CHECK_INT(tfj_reporter_stop_requested(r, why, sizeof(why)), 1);
	TFJ_CHECK_STR(why, "the job has succeeded");
	TFJ_CHECK_INT(poll(&pf, 1, 0), 1);
	/* Asked again: still one stop. */
	TFJ_CHECK_INT(tfj_reporter_heartbeat(r, &p, 1), 0);
	TFJ_CHECK_INT(tfj_reporter_stop_requested(r, NULL, 0), 1);
	tfj_reporter_close(r);
	server_stop(&s);
	TFJ_CHECK_INT(tfj_reporter_stop_fd(NULL), -1);
	TFJ_CHECK_INT(tfj_reporter_stop_requested(NULL, NULL, 0), 0);
}

static char *agent_env[] = {
	NULL, /* TFJOB_REPORT_ADDR=... */
	NULL, /* TFJOB_REPORT_TOKEN_FILE=... */
	"TFJOB_JOB_NAMESPACE=team-a", "TFJOB_JOB_NAME=mnist", "TFJOB_JOB_UID=uid-123",
	"POD_NAME=mnist-worker-1",
	"TFJOB_REPORT_INSECURE=true", /* the test's server is plaintext */
	"TF_CONFIG={\"cluster\":{\"worker\":[\"localhost:2222\",\"localhost:2223\"]},"
	"\"task\":{\"type\":\"worker\",\"index\":1}}",
	NULL
};

static int run_agent_with(const char *addr, const char *report_timeout, const char *ack_wait,
			  double *elapsed)
{
	static char a_env[128], t_env[160];
	char *args[] = { "--termination-log", tm_path, "--heartbeat-interval", "0.1",
			 "--report-timeout", (char *)report_timeout, "--report-ack-wait",
			 (char *)ack_wait, "--", "sh", "-c",
			 "echo 'TFJ_PROGRESS {\"step\":7,\"loss\":0.25}'; sleep 0.6; "
			 "echo 'training failed' >&2; exit 5", NULL };
	double t0 = tfj_testutil_now_s();
	pid_t pid;
	int code;

	snprintf(a_env, sizeof(a_env), "TFJOB_REPORT_ADDR=%s", addr);
	snprintf(t_env, sizeof(t_env), "TFJOB_REPORT_TOKEN_FILE=%s", token_path);
	agent_env[0] = a_env;
	agent_env[1] = t_env;
	unlink(tm_path);
	pid = tu_spawn_agent(args, agent_env, out_path, err_path);
	code = tfj_testutil_wait(pid, 25);
	*elapsed = tfj_testutil_now_s() - t0;
	return code;
}

static void check_tm_exit5(void)
{
	char buf[8192];

	TFJ_CHECK_GT(tu_read(tm_path, buf, sizeof(buf)), 0);
	TFJ_CHECK(strstr(buf, "\"reason\":\"Error\"") != NULL);
	TFJ_CHECK(strstr(buf, "\"exitCode\":5") != NULL);
	TFJ_CHECK(strstr(buf, "\"lastStep\":7") != NULL);
	TFJ_CHECK(strstr(buf, "training failed") != NULL);
}

static void test_agent_reports(void)
{
	struct server s;
	char addr[64], buf[65536];
	double dt;
	size_t i, hb_with_step = 0;
	int saw_exit = 0;

	server_start(&s);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", s.port);
	TFJ_CHECK_INT(tu_write(token_path, "secret-token-abc123\n"), 0);
	/* The server acks at once: one Exit, no resends, whatever the wait. */
	s.ack_hb = 1;
	s.ack_exit = 1;
	TFJ_CHECK_INT(run_agent_with(addr, "2", "60", &dt), 5);
	check_tm_exit5();
	TFJ_CHECK_INT(count_method(&s, TFJ_REPORTER_METHOD_REGISTER), 1);
	TFJ_CHECK_GE(count_method(&s, TFJ_REPORTER_METHOD_HEARTBEAT), 2);
	TFJ_CHECK_INT(count_method(&s, TFJ_REPORTER_METHOD_EXIT), 1);
	pthread_mutex_lock(&s.mu);
	for (i = 0; i < s.ncalls; i++) {
		struct rec *c = &s.calls[i];

		TFJ_CHECK_STR(c->auth, "Bearer secret-token-abc123");
		if (strcmp(c->method, TFJ_REPORTER_METHOD_HEARTBEAT) == 0) {
			Tfj__Report__V1__HeartbeatRequest *hq =
				tfj__report__v1__heartbeat_request__unpack(NULL, c->len, c->body);
			TFJ_CHECK(hq != NULL);
			if (hq && hq->progress && hq->progress->has_step) {
				TFJ_CHECK_INT(hq->progress->global_step, 7);
				TFJ_CHECK(hq->progress->loss == 0.25);
				hb_with_step++;
			}
			if (hq) {
				check_ref(hq->replica, "worker", 1);
				tfj__report__v1__heartbeat_request__free_unpacked(hq, NULL);
			}
		}
		if (strcmp(c->method, TFJ_REPORTER_METHOD_EXIT) == 0) {
			Tfj__Report__V1__ExitRequest *eq =
				tfj__report__v1__exit_request__unpack(NULL, c->len, c->body);
			TFJ_CHECK(eq != NULL);
			if (eq) {
				saw_exit = 1;
				TFJ_CHECK_INT(eq->exit_code, 5);
				TFJ_CHECK_STR(eq->reason, "Error");
				TFJ_CHECK_INT(eq->retryable, 0);
				TFJ_CHECK_INT(eq->last_step, 7);
				TFJ_CHECK_STR(eq->message, "training failed");
				check_ref(eq->replica, "worker", 1);
				tfj__report__v1__exit_request__free_unpacked(eq, NULL);
			}
			/* Exit is the last call. */
			TFJ_CHECK_INT(i, s.ncalls - 1);
		}
	}
	pthread_mutex_unlock(&s.mu);
	TFJ_CHECK_GE(hb_with_step, 1);
	TFJ_CHECK_INT(saw_exit, 1);
	/* The token never reaches the agent's logs. */
	TFJ_CHECK_GT(tu_read(err_path, buf, sizeof(buf)), 0);
	TFJ_CHECK(strstr(buf, "secret-token-abc123") == NULL);
	server_stop(&s);
}

/*
 * The operator's stop ends a command that would never end on its own: the
 * agent sends SIGTERM (then SIGKILL after --grace-period) and exits 0 with
 * reason Stopped, in its termination message and its Exit report. The
 * server says stop only once the command's progress record arrived, so the
 * command has trapped SIGTERM by then, on any machine speed.
 */
static void run_stopped(const char *script, int want_term, int want_killed)
{
	static char a_env[128], t_env[160];
	/* This server never acks (test_resend_until_ack covers that): no wait for one. */
	char *args[] = { "--termination-log", tm_path, "--heartbeat-interval", "0.1",
			 "--grace-period", "1", "--report-ack-wait", "0", "--", "sh", "-c",
			 (char *)script, NULL };
	Tfj__Report__V1__ExitRequest *eq;
	char buf[8192];
	struct server s;
	pid_t pid;

	server_start(&s);
	s.stop_at_step = 1;
	snprintf(a_env, sizeof(a_env), "TFJOB_REPORT_ADDR=127.0.0.1:%d", s.port);
	snprintf(t_env, sizeof(t_env), "TFJOB_REPORT_TOKEN_FILE=%s", token_path);
	agent_env[0] = a_env;
	agent_env[1] = t_env;
	TFJ_CHECK_INT(tu_write(token_path, "tok"), 0);
	unlink(tm_path);
	pid = tu_spawn_agent(args, agent_env, out_path, err_path);
	/* Without the stop the command runs forever: the bound is generous. */
	TFJ_CHECK_INT(tfj_testutil_wait(pid, 60), 0);
	TFJ_CHECK_GT(tu_read(tm_path, buf, sizeof(buf)), 0);
	TFJ_CHECK(strstr(buf, "\"reason\":\"Stopped\"") != NULL);
	TFJ_CHECK(strstr(buf, "\"exitCode\":0") != NULL);
	TFJ_CHECK(strstr(buf, "\"retryable\":false") != NULL);
	TFJ_CHECK(strstr(buf, "the job has succeeded") != NULL);
	TFJ_CHECK_INT(strstr(buf, "after the grace period") != NULL, want_killed);
	/* The command's output before and during the stop is the pod's log. */
	TFJ_CHECK_GT(tu_read(out_path, buf, sizeof(buf)), 0);
	TFJ_CHECK(strstr(buf, "serving") != NULL);
	TFJ_CHECK_INT(strstr(buf, "got SIGTERM") != NULL, want_term);
	TFJ_CHECK_INT(count_method(&s, TFJ_REPORTER_METHOD_EXIT), 1);
	/* The Exit report is the last call. */
	pthread_mutex_lock(&s.mu);
	eq = s.ncalls ? tfj__report__v1__exit_request__unpack(NULL, s.calls[s.ncalls - 1].len,
							      s.calls[s.ncalls - 1].body) : NULL;
	pthread_mutex_unlock(&s.mu);
	TFJ_CHECK(eq != NULL);
	if (eq) {
		TFJ_CHECK_INT(eq->exit_code, 0);
		TFJ_CHECK_STR(eq->reason, "Stopped");
		TFJ_CHECK_INT(eq->retryable, 0);
		tfj__report__v1__exit_request__free_unpacked(eq, NULL);
	}
	server_stop(&s);
}

/*
 * No CA file and no --report-insecure: the agent runs the command but never
 * sends its token in plaintext (nothing reaches the server) and says why.
 */
static void test_agent_refuses_plaintext(void)
{
	struct server s;
	char addr[64], buf[8192];
	double dt;

	server_start(&s);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", s.port);
	TFJ_CHECK_INT(tu_write(token_path, "tok"), 0);
	agent_env[6] = "TFJOB_REPORT_INSECURE=false";
	TFJ_CHECK_INT(run_agent_with(addr, "2", "0", &dt), 5);
	agent_env[6] = "TFJOB_REPORT_INSECURE=true";
	check_tm_exit5();
	pthread_mutex_lock(&s.mu);
	TFJ_CHECK_INT(s.ncalls, 0);
	pthread_mutex_unlock(&s.mu);
	TFJ_CHECK_GT(tu_read(err_path, buf, sizeof(buf)), 0);
	TFJ_CHECK_NOT_NULL(strstr(buf, "report channel off"));
	server_stop(&s);
}

static void test_agent_stopped(void)
{
	/* A command that ends on SIGTERM with a non-zero code (as most do). */
	run_stopped("trap 'echo got SIGTERM; exit 143' TERM; echo serving; "
		    "echo 'TFJ_PROGRESS {\"step\":1}'; while :; do sleep 0.05; done", 1, 0);
	/* One that ignores SIGTERM: SIGKILLed after the grace period, still exit 0. */
	run_stopped("trap '' TERM; echo serving; echo 'TFJ_PROGRESS {\"step\":1}'; "
		    "while :; do sleep 0.05; done", 0, 1);
}

static int bound_socket(int *port, int do_listen)
{
	int fd = tfj_testutil_bind_loopback(port);

	if (fd >= 0 && do_listen)
		listen(fd, 64);
	return fd;
}

static void test_channel_down(void)
{
	char addr[64];
	double dt;
	int port = 0, fd;

	TFJ_CHECK_INT(tu_write(token_path, "tok"), 0);
	/* Refused: nobody listens on the port. */
	fd = bound_socket(&port, 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	TFJ_CHECK_INT(run_agent_with(addr, "0.5", "0", &dt), 5);
	check_tm_exit5();
	TFJ_CHECK_LT(dt, 6);
	/* Waiting for an ack that cannot come ends at --report-ack-wait. */
	TFJ_CHECK_INT(run_agent_with(addr, "0.5", "2", &dt), 5);
	check_tm_exit5();
	TFJ_CHECK_GE(dt, 2);
	TFJ_CHECK_LT(dt, 10);
	close(fd);

	/* Hangs: TCP is accepted by the kernel but nobody speaks HTTP/2. */
	fd = bound_socket(&port, 1);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	TFJ_CHECK_INT(run_agent_with(addr, "0.5", "0", &dt), 5);
	check_tm_exit5();
	TFJ_CHECK_LT(dt, 8);
	close(fd);

	/* An address gRPC cannot even parse: the agent goes on without reports. */
	TFJ_CHECK_INT(run_agent_with("unix-abstract:", "0.5", "0", &dt), 5);
	check_tm_exit5();
}

/* Generates a self-signed certificate for localhost/127.0.0.1 with openssl(1). */
static int make_cert(const char *key, const char *cert)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd),
		 "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
		 "-keyout %s -out %s -days 2 -subj /CN=localhost "
		 "-addext subjectAltName=DNS:localhost,IP:127.0.0.1 >/dev/null 2>&1", key, cert);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_tls(void)
{
	char key[160], cert[160], other_key[160], other_cert[160], addr[64];
	static char kbuf[8192], cbuf[8192];
	grpc_ssl_pem_key_cert_pair pair;
	struct server s;
	struct tfj_reporter *r = NULL;
	struct tfj_reporter_opts o = { NULL, token_path, NULL, 3.0, 10.0, 0 };
	struct tfj_reporter_ident id = { "team-a", "mnist", "uid-123", "worker", 1, "mnist-worker-1" };
	struct tfj_progress_state p;

	snprintf(key, sizeof(key), "%s/key.pem", dir);
	snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
	snprintf(other_key, sizeof(other_key), "%s/other-key.pem", dir);
	snprintf(other_cert, sizeof(other_cert), "%s/other-cert.pem", dir);
	TFJ_CHECK_INT(make_cert(key, cert), 0);
	TFJ_CHECK_INT(make_cert(other_key, other_cert), 0);
	TFJ_CHECK_GT(tu_read(key, kbuf, sizeof(kbuf)), 0);
	TFJ_CHECK_GT(tu_read(cert, cbuf, sizeof(cbuf)), 0);
	pair.private_key = kbuf;
	pair.cert_chain = cbuf;
	server_start_creds(&s, grpc_ssl_server_credentials_create(NULL, &pair, 1, 0, NULL));
	/* An IP literal: verified against the certificate's IP SAN. */
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", s.port);
	o.addr = addr;
	TFJ_CHECK_INT(tu_write(token_path, "tls-token"), 0);
	memset(&p, 0, sizeof(p));

	/* Trusting the server's certificate: the calls go through TLS. */
	o.ca_file = cert;
	TFJ_CHECK_INT(tfj_reporter_open(&r, &o, &id), 0);
	if (r) {
		TFJ_CHECK_INT(tfj_reporter_register(r, NULL), 0);
		TFJ_CHECK_INT(tfj_reporter_heartbeat(r, &p, 1), 0);
		tfj_reporter_close(r);
		r = NULL;
	}
	TFJ_CHECK_INT(s.ncalls, 2);
	if (s.ncalls == 2)
		TFJ_CHECK_STR(s.calls[1].auth, "Bearer tls-token");

	/* Trusting another certificate: verification fails, nothing arrives. */
	o.ca_file = other_cert;
	TFJ_CHECK_INT(tfj_reporter_open(&r, &o, &id), 0);
	if (r) {
		TFJ_CHECK_LT(tfj_reporter_heartbeat(r, &p, 1), 0);
		TFJ_CHECK_INT(s.ncalls, 2);
		/* The bundle file changes (kubelet updated the CA ConfigMap after a
		 * CA rotation): the next connection uses it, without a restart. */
		TFJ_CHECK_INT(tu_write(other_cert, cbuf), 0);
		TFJ_CHECK_INT(tfj_reporter_heartbeat(r, &p, 1), 0);
		TFJ_CHECK_INT(s.ncalls, 3);
		tfj_reporter_close(r);
	}

	/* A CA file that does not exist is an error at open. */
	o.ca_file = "/nonexistent/ca.pem";
	TFJ_CHECK_LT(tfj_reporter_open(&r, &o, &id), 0);
	server_stop(&s);
	unlink(key);
	unlink(cert);
	unlink(other_key);
	unlink(other_cert);
}

/* One finish() against a server set up by `setup`; returns the reporter's stats. */
static void finish_against(struct server *s, double ack_wait_s, struct tfj_reporter_stats *st)
{
	struct tfj_reporter *r = NULL;
	struct tfj_reporter_opts o = { NULL, token_path, NULL, 2.0, 3600.0, ack_wait_s };
	struct tfj_reporter_ident id = { "team-a", "mnist", "uid-123", "chief", 0, "mnist-worker-1" };
	struct tfj_reporter_exit e = { 0, "Completed", 1, 1000, "", 0 };
	struct tfj_progress_state p;
	char addr[64];

	memset(st, 0, sizeof(*st));
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", s->port);
	o.addr = addr;
	TFJ_CHECK_INT(tu_write(token_path, "tok-1"), 0);
	TFJ_CHECK_INT(tfj_reporter_open(&r, &o, &id), 0);
	if (!r)
		return;
	memset(&p, 0, sizeof(p));
	p.have = TFJ_PROGREC_BIT(TFJ_PROGREC_STEP) | TFJ_PROGREC_BIT(TFJ_PROGREC_ACCURACY);
	p.step = 1000;
	p.accuracy = 0.9;
	p.records = 50;
	p.unix_time_ms = 1700000000123;
	tfj_reporter_update(r, &p, 0);
	tfj_reporter_finish(r, &e);
	tfj_reporter_get_stats(r, st);
	tfj_reporter_close(r);
}

/*
 * The operator is down when the agent ends (it restarts), then holds the
 * reports durably a little later: the final record is resent until its ack
 * names its time, then the Exit until acked, nothing more.
 */
static void test_resend_until_ack(void)
{
	struct server s;
	struct tfj_reporter_stats st;
	size_t i, hbs = 0;

	server_start(&s);
	s.down = 2;      /* heartbeats 1, 2: UNAVAILABLE */
	s.ack_hb = 4;    /* heartbeat 3: OK but not durable yet; 4: acked */
	s.ack_exit = 2;  /* exit 1: OK, not acked; 2: acked */
	finish_against(&s, 60, &st);
	TFJ_CHECK_INT(count_method(&s, TFJ_REPORTER_METHOD_HEARTBEAT), 4);
	TFJ_CHECK_INT(count_method(&s, TFJ_REPORTER_METHOD_EXIT), 2);
	TFJ_CHECK_INT(st.acked_progress_ms, 1700000000123);
	TFJ_CHECK_INT(st.exit_acked, 1);
	TFJ_CHECK_INT(st.resends, 4);
	/* Each UNAVAILABLE (a standby behind the Service) made the next call reconnect. */
	TFJ_CHECK_INT(st.reconnects, 2);
	/* The Exit goes only after the final record is acked; every resend is that record. */
	pthread_mutex_lock(&s.mu);
	for (i = 0; i < s.ncalls; i++) {
		Tfj__Report__V1__HeartbeatRequest *hq;

		if (strcmp(s.calls[i].method, TFJ_REPORTER_METHOD_HEARTBEAT))
			continue;
		TFJ_CHECK_INT(hbs, i);
		hbs++;
		hq = tfj__report__v1__heartbeat_request__unpack(NULL, s.calls[i].len, s.calls[i].body);
		TFJ_CHECK(hq && hq->progress && hq->progress->global_step == 1000 &&
			  hq->progress->unix_time_ms == 1700000000123);
		if (hq)
			tfj__report__v1__heartbeat_request__free_unpacked(hq, NULL);
	}
	pthread_mutex_unlock(&s.mu);
	server_stop(&s);
}

/* A finished (or gone) job: FAILED_PRECONDITION stops at once, no Exit after it. */
static void test_final_refusal_stops_resends(void)
{
	struct server s;
	struct tfj_reporter_stats st;

	server_start(&s);
	s.refuse = GRPC_STATUS_FAILED_PRECONDITION;
	finish_against(&s, 60, &st);
	TFJ_CHECK_INT(count_method(&s, TFJ_REPORTER_METHOD_HEARTBEAT), 1);
	TFJ_CHECK_INT(count_method(&s, TFJ_REPORTER_METHOD_EXIT), 0);
	TFJ_CHECK_INT(st.resends, 0);
	server_stop(&s);
	/* NOT_FOUND (the job is gone) too. */
	server_start(&s);
	s.refuse = GRPC_STATUS_NOT_FOUND;
	finish_against(&s, 60, &st);
	TFJ_CHECK_INT(count_method(&s, TFJ_REPORTER_METHOD_HEARTBEAT), 1);
	TFJ_CHECK_INT(st.resends, 0);
	server_stop(&s);
}

/*
 * An operator that never acks (an old one, or none for good): the agent
 * gives up after --report-ack-wait, the Exit still goes once; with no wait
 * configured each record goes exactly once.
 */
static void test_ack_wait_bounded(void)
{
	struct server s;
	struct tfj_reporter_stats st;
	uint64_t t0;

	server_start(&s);
	t0 = tfj_clock_mono_ns();
	finish_against(&s, 1.0, &st);
	TFJ_CHECK_LT(tfj_clock_mono_ns() - t0, 30ull * 1000000000ull);
	TFJ_CHECK_GE(count_method(&s, TFJ_REPORTER_METHOD_HEARTBEAT), 2);
	TFJ_CHECK_INT(count_method(&s, TFJ_REPORTER_METHOD_EXIT), 1);
	TFJ_CHECK_INT(st.exit_acked, 0);
	server_stop(&s);
	server_start(&s);
	finish_against(&s, 0, &st);
	TFJ_CHECK_INT(count_method(&s, TFJ_REPORTER_METHOD_HEARTBEAT), 1);
	TFJ_CHECK_INT(count_method(&s, TFJ_REPORTER_METHOD_EXIT), 1);
	server_stop(&s);
}

/*
 * A TCP relay on loopback in front of the server whose connections can be
 * frozen: a frozen one is neither read nor written nor closed, as when the
 * operator's pod vanished (force-deleted) and nothing answers its address
 * any more. Connections accepted after a freeze relay again.
 */
#define RELAY_MAX 16

struct relay {
	int lfd, port, to_port, stop[2];
	int fds[RELAY_MAX][2];  /* client side, server side; -1 = free */
	int frozen[RELAY_MAX];
	int freeze_all;         /* set by the test: freeze every open pair */
	pthread_mutex_t mu;
	pthread_t th;
};

static void relay_close(struct relay *x, int i)
{
	close(x->fds[i][0]);
	close(x->fds[i][1]);
	x->fds[i][0] = x->fds[i][1] = -1;
}

static void relay_accept(struct relay *x)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int c = accept(x->lfd, NULL, NULL), u, i;

	if (c < 0)
		return;
	a.sin_port = htons((uint16_t)x->to_port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	u = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (u < 0 || connect(u, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(c);
		if (u >= 0)
			close(u);
		return;
	}
	for (i = 0; i < RELAY_MAX && x->fds[i][0] >= 0; i++)
		;
	if (i == RELAY_MAX) {
		close(c);
		close(u);
		return;
	}
	x->fds[i][0] = c;
	x->fds[i][1] = u;
	x->frozen[i] = 0;
}

static void *relay_run(void *arg)
{
	struct relay *x = arg;

	for (;;) {
		struct pollfd pf[2 + 2 * RELAY_MAX];
		int map[2 + 2 * RELAY_MAX], n = 0, i, k;

		pthread_mutex_lock(&x->mu);
		for (i = 0; i < RELAY_MAX; i++)
			if (x->freeze_all && x->fds[i][0] >= 0)
				x->frozen[i] = 1;
		x->freeze_all = 0;
		pthread_mutex_unlock(&x->mu);
		pf[n] = (struct pollfd){ .fd = x->stop[0], .events = POLLIN };
		map[n++] = -1;
		pf[n] = (struct pollfd){ .fd = x->lfd, .events = POLLIN };
		map[n++] = -2;
		for (i = 0; i < RELAY_MAX; i++) {
			if (x->fds[i][0] < 0 || x->frozen[i])
				continue;
			for (k = 0; k < 2; k++) {
				pf[n] = (struct pollfd){ .fd = x->fds[i][k], .events = POLLIN };
				map[n++] = 2 * i + k;
			}
		}
		if (poll(pf, (nfds_t)n, 50) < 0)
			continue;
		if (pf[0].revents)
			break;
		if (pf[1].revents & POLLIN)
			relay_accept(x);
		for (k = 2; k < n; k++) {
			char buf[16384];
			int pair = map[k] / 2, side = map[k] % 2;
			ssize_t got;

			if (!pf[k].revents || x->fds[pair][0] < 0)
				continue;
			got = read(x->fds[pair][side], buf, sizeof(buf));
			if (got <= 0 || write(x->fds[pair][!side], buf, (size_t)got) != got)
				relay_close(x, pair);
		}
	}
	return NULL;
}

static void relay_start(struct relay *x, int to_port)
{
	int i;

	memset(x, 0, sizeof(*x));
	pthread_mutex_init(&x->mu, NULL);
	for (i = 0; i < RELAY_MAX; i++)
		x->fds[i][0] = x->fds[i][1] = -1;
	x->to_port = to_port;
	x->lfd = tfj_testutil_bind_loopback(&x->port);
	TFJ_CHECK_GE(x->lfd, 0);
	TFJ_CHECK_INT(listen(x->lfd, 16), 0);
	TFJ_CHECK_INT(pipe(x->stop), 0);
	pthread_create(&x->th, NULL, relay_run, x);
}

static void relay_stop(struct relay *x)
{
	int i;

	TFJ_CHECK_INT(write(x->stop[1], "x", 1), 1);
	pthread_join(x->th, NULL);
	for (i = 0; i < RELAY_MAX; i++)
		if (x->fds[i][0] >= 0)
			relay_close(x, i);
	close(x->lfd);
	close(x->stop[0]);
	close(x->stop[1]);
	pthread_mutex_destroy(&x->mu);
}

/*
 * The connection to the operator goes silent for good (its pod vanished
 * without closing it): the call on it times out, and the next one opens a
 * new connection, which reaches the operator, instead of timing out on the
 * dead one until TCP gives up.
 */
static void test_vanished_peer_reconnects(void)
{
	struct tfj_reporter_opts o = { NULL, token_path, NULL, 1.0, 3600.0, 0 };
	struct tfj_reporter_ident id = { "team-a", "mnist", "uid-123", "worker", 1, "mnist-worker-1" };
	struct tfj_reporter_stats st;
	struct tfj_progress_state p;
	struct tfj_reporter *r = NULL;
	struct server s;
	struct relay x;
	char addr[64];

	server_start(&s);
	relay_start(&x, s.port);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", x.port);
	o.addr = addr;
	TFJ_CHECK_INT(tu_write(token_path, "tok-1"), 0);
	TFJ_CHECK_INT(tfj_reporter_open(&r, &o, &id), 0);
	if (r) {
		memset(&p, 0, sizeof(p));
		p.have = TFJ_PROGREC_BIT(TFJ_PROGREC_STEP);
		p.step = 10;
		p.records = 1;
		p.unix_time_ms = 1700000000000;
		TFJ_CHECK_INT(tfj_reporter_heartbeat(r, &p, 1), 0);
		pthread_mutex_lock(&x.mu);
		x.freeze_all = 1;
		pthread_mutex_unlock(&x.mu);
		/* The relay thread freezes within one poll period (50 ms). */
		nanosleep(&(struct timespec){ 0, 200 * 1000000L }, NULL);
		p.step = 20;
		p.unix_time_ms++;
		TFJ_CHECK_INT(tfj_reporter_heartbeat(r, &p, 1), TFJ_ETIMEOUT);
		p.step = 30;
		p.unix_time_ms++;
		TFJ_CHECK_INT(tfj_reporter_heartbeat(r, &p, 1), 0);
		tfj_reporter_get_stats(r, &st);
		TFJ_CHECK_INT(st.reconnects, 1);
		TFJ_CHECK_INT(st.calls_ok, 2);
		tfj_reporter_close(r);
	}
	/* Only the heartbeats that were answered reached the server. */
	TFJ_CHECK_INT(count_method(&s, TFJ_REPORTER_METHOD_HEARTBEAT), 2);
	relay_stop(&x);
	server_stop(&s);
}

int main(int argc, char **argv)
{
	TFJ_AGENT_TEST_DISPATCH(argc, argv);
	if (tfj_testutil_tmpdir(dir, sizeof(dir), "tfj-report-test"))
		return 1;
	snprintf(token_path, sizeof(token_path), "%s/token", dir);
	snprintf(tm_path, sizeof(tm_path), "%s/termination-log", dir);
	snprintf(out_path, sizeof(out_path), "%s/stdout", dir);
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	grpc_init();
	TFJ_RUN(test_client_calls);
	TFJ_RUN(test_final_heartbeat_before_exit);
	TFJ_RUN(test_client_stop);
	TFJ_RUN(test_resend_until_ack);
	TFJ_RUN(test_final_refusal_stops_resends);
	TFJ_RUN(test_ack_wait_bounded);
	TFJ_RUN(test_agent_reports);
	TFJ_RUN(test_agent_stopped);
	TFJ_RUN(test_agent_refuses_plaintext);
	TFJ_RUN(test_channel_down);
	TFJ_RUN(test_vanished_peer_reconnects);
	TFJ_RUN(test_tls);
	grpc_shutdown();
	tfj_testutil_rmtree(dir);
	return tfj_test_finish();
}
