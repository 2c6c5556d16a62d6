/*
 * reporter.c - gRPC client of the operator's report service (see reporter.h).
 */
#include "reporter.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <tfj/clock.h>
#include <tfj/err.h>
#include <tfj/exitcode.h>
#include <tfj/file.h>
#include <tfj/grpc.h>
#include <tfj/log.h>

#include "tfj_report.pb-c.h"

#define IDENT_MAX 256
#define REASON_MAX 128
#define MESSAGE_MAX 2048
#define CA_MAX (1u << 20)
#define LOG_FAIL_EVERY 10   /* log 1 of every N consecutive failures */
#define CONNECT_MIN_MS 10000   /* least time a connection attempt gets */
#define ACK_PAUSE_MIN_MS 500   /* first pause between unacked resends */
#define ACK_PAUSE_MAX_MS 5000  /* doubling up to this */

struct tfj_reporter {
	grpc_channel *ch;
	char *addr, *token_file;
	char *ca;                 /* PEM roots (NULL: plaintext), kept to reconnect */
	char *ca_file;            /* where they come from: re-read on a reconnect */
	int reconnect;            /* the last call got UNAVAILABLE: new channel next */
	int grpc_up;              /* grpc_init() done: close shuts it down */
	double timeout_s, heartbeat_s, ack_wait_s;
	/* Identity, copied. */
	char *ns, *job, *uid, *rtype, *pod;
	int rindex;

	pthread_t thread;
	int thread_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	struct tfj_progress_state progress;
	int child_running;
	struct tfj_reporter_stats stats;
	uint64_t consecutive_failures;
	int warned_token;
	/* The operator's stop (HeartbeatResponse.stop), under mu. */
	int stop_fd;
	int stop_requested;
	char stop_reason[REASON_MAX];
};

static char *dup_bounded(const char *s, size_t max)
{
	size_t l;
	char *d;

	if (!s)
		s = "";
	l = strnlen(s, max);
	d = malloc(l + 1);
	if (d) {
		memcpy(d, s, l);
		d[l] = '\0';
	}
	return d;
}

/*
 * Reads the token. Returns 0 with *tok (caller wipes and frees), or a
 * negative code when there is no usable token; the call then goes without
 * authorization and the operator rejects it, which is the right outcome.
 */
static int read_token(struct tfj_reporter *r, char **tok)
{
	size_t len = 0, i;
	int rc;

	/* Trailing whitespace is trimmed by the one rule of file.h. */
	rc = tfj_file_read_secret(tok, &len, r->token_file, TFJ_REPORTER_TOKEN_MAX);
	if (rc < 0)
		return rc;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)(*tok)[i];
		if (c < 0x21 || c > 0x7E) {
			explicit_bzero(*tok, len);
			free(*tok);
			*tok = NULL;
			return tfj_err_set(TFJ_EAUTH, "token file %s: not a printable token",
					   r->token_file);
		}
	}
	if (len == 0) {
		free(*tok);
		*tok = NULL;
		return tfj_err_set(TFJ_EAUTH, "token file %s: empty", r->token_file);
	}
	return 0;
}

static int status_err(grpc_status_code st)
{
	switch (st) {
	case GRPC_STATUS_OK: return 0;
	case GRPC_STATUS_DEADLINE_EXCEEDED: return TFJ_ETIMEOUT;
	case GRPC_STATUS_UNAUTHENTICATED: return TFJ_EAUTH;
	case GRPC_STATUS_PERMISSION_DENIED: return TFJ_EFORBIDDEN;
	case GRPC_STATUS_INVALID_ARGUMENT: return TFJ_EINVAL;
	case GRPC_STATUS_UNAVAILABLE: return TFJ_EUNAVAIL;
	case GRPC_STATUS_RESOURCE_EXHAUSTED: return TFJ_ETOOBIG;
	case GRPC_STATUS_FAILED_PRECONDITION: return TFJ_ESTATE;  /* the job is finished */
	case GRPC_STATUS_NOT_FOUND: return TFJ_ENOTFOUND;         /* the job is gone */
	default: return TFJ_EIO;
	}
}

/*
 * A channel of its own (local subchannel pool), so that a new one opens a
 * new connection: behind a Service the operator's standby replicas answer
 * UNAVAILABLE, and only a new connection can land on the leader.
 */
static int new_channel(struct tfj_reporter *r)
{
	struct tfj_grpc_args args;
	char *ca = NULL;
	size_t calen = 0;

	/*
	 * The CA bundle is a ConfigMap volume kubelet updates in place: after
	 * the operator's CA rotated, a failed handshake (UNAVAILABLE) brings
	 * us here and the new bundle is used. Unreadable: keep the old one.
	 */
	if (r->ca_file && r->ca && tfj_file_read(&ca, &calen, r->ca_file, CA_MAX, 0) == 0) {
		free(r->ca);
		r->ca = ca;
	}
	tfj_grpc_args_init(&args);
	tfj_grpc_args_msg_caps(&args, TFJ_REPORTER_MAX_MSG, TFJ_REPORTER_MAX_MSG);
	/*
	 * gRPC takes the minimum reconnect backoff as the least time a
	 * connection attempt gets (its handshakes included): 10 s, so that an
	 * agent starved by a 50m CPU limit still completes one.
	 */
	tfj_grpc_args_reconnect(&args, 1000, CONNECT_MIN_MS, 10000);
	tfj_grpc_args_int(&args, GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
	if (tfj_grpc_channel_new(&r->ch, r->addr, r->ca, &args) != 0) {
		r->ch = NULL;
		return tfj_err_set(TFJ_EINVAL, "report address '%s': cannot create channel", r->addr);
	}
	return 0;
}

/* Phase 1 of a call: the request's bytes (malloc'd), within the message cap. */
static int pack_request(uint8_t **out, size_t *len, const char *method,
			const ProtobufCMessage *req)
{
	*len = protobuf_c_message_get_packed_size(req);
	if (*len > TFJ_REPORTER_MAX_MSG)
		return tfj_err_set(TFJ_ETOOBIG, "report %s: %zu bytes", method, *len);
	*out = malloc(*len ? *len : 1);
	if (!*out)
		return tfj_err_set(TFJ_ENOMEM, "report message");
	protobuf_c_message_pack(req, *out);
	return 0;
}

/*
 * Phase 2: the token for this call (caller wipes and frees), or NULL: the
 * call then goes without authorization, and the first such call says so.
 */
static char *call_token(struct tfj_reporter *r)
{
	char *tok = NULL;

	if (read_token(r, &tok) == 0) {
		r->warned_token = 0;
		return tok;
	}
	if (!r->warned_token) {
		/* The detail names the file, never its contents. */
		tfj_log_warn("report: no token, calling without authorization", "detail",
			     tfj_err_detail());
		r->warned_token = 1;
	}
	return NULL;
}

/* Phase 3: the outcome of a completed call; an OK one hands over its reply bytes. */
static int call_outcome(uint8_t **resp, size_t *resp_len, const char *method,
			struct tfj_grpc_result *res)
{
	char safe[256];

	if (res->status != GRPC_STATUS_OK) {
		tfj_log_redact(safe, sizeof(safe), res->details ? res->details : "");
		return tfj_err_set(status_err(res->status), "report %s: status %d: %s", method,
				   (int)res->status, safe);
	}
	*resp = res->reply;
	*resp_len = res->reply_len;
	res->reply = NULL;
	return 0;
}

/* Phase 4: the counters (the failure streak rate-limits the log). */
static void count_call(struct tfj_reporter *r, int rc)
{
	pthread_mutex_lock(&r->mu);
	if (rc == 0) {
		r->stats.calls_ok++;
		r->consecutive_failures = 0;
	} else {
		r->stats.calls_failed++;
		r->consecutive_failures++;
	}
	pthread_mutex_unlock(&r->mu);
}

/*
 * One unary call: packs `req`, sends it with the bearer token and returns
 * the response bytes in *resp (malloc'd, caller frees).
 */
static int unary(struct tfj_reporter *r, const char *method, const ProtobufCMessage *req,
		 uint8_t **resp, size_t *resp_len)
{
	struct tfj_grpc_result res;
	uint8_t *pbuf = NULL;
	size_t plen = 0;
	char *tok;
	int rc;

	*resp = NULL;
	*resp_len = 0;
	if (r->reconnect || !r->ch) {
		/* Calls are never concurrent (the sender thread, or after it). */
		if (r->ch)
			grpc_channel_destroy(r->ch);
		r->ch = NULL;
		r->reconnect = 0;
		pthread_mutex_lock(&r->mu);
		r->stats.reconnects++;
		pthread_mutex_unlock(&r->mu);
		if ((rc = new_channel(r)) < 0)
			return rc; /* r->ch NULL: the next call tries again */
	}
	rc = pack_request(&pbuf, &plen, method, req);
	if (rc < 0)
		return rc;
	tok = call_token(r);
	rc = tfj_grpc_unary(&res, r->ch, method, tok, pbuf, plen,
			    tfj_grpc_deadline_ms((int64_t)(r->timeout_s * 1000.0)),
			    TFJ_REPORTER_MAX_MSG);
	if (tok) {
		explicit_bzero(tok, strlen(tok));
		free(tok);
	}
	if (rc < 0)
		rc = tfj_err_set(rc, "report %s: %s", method, tfj_err_detail());
	else
		rc = call_outcome(resp, resp_len, method, &res);
	tfj_grpc_result_free(&res);
	free(pbuf);
	count_call(r, rc);
	/*
	 * A timeout says as little about the connection as UNAVAILABLE does:
	 * when the operator's pod vanished without closing it (force-deleted,
	 * its node or network gone), nothing ever will, and every later call on
	 * it would time out too, for as long as TCP keeps retransmitting (about
	 * 15 min). A new connection lands on the current leader. But a
	 * connection still being made is left to finish: under a tight CPU
	 * limit (the trainer shares the container's quota) connecting and the
	 * TLS handshake can outlast a call's deadline, and starting over each
	 * time would never connect at all.
	 */
	if ((rc == TFJ_EUNAVAIL || rc == TFJ_ETIMEOUT) &&
	    grpc_channel_check_connectivity_state(r->ch, 0) != GRPC_CHANNEL_CONNECTING)
		r->reconnect = 1;
	return rc;
}

static void fill_ref(struct tfj_reporter *r, Tfj__Report__V1__ReplicaRef *ref)
{
	ref->namespace_ = r->ns;
	ref->job_name = r->job;
	ref->job_uid = r->uid;
	ref->replica_type = r->rtype;
	ref->replica_index = r->rindex;
	ref->pod_name = r->pod;
}

int tfj_reporter_register(struct tfj_reporter *r, uint32_t *heartbeat_s)
{
	Tfj__Report__V1__RegisterRequest req = TFJ__REPORT__V1__REGISTER_REQUEST__INIT;
	Tfj__Report__V1__ReplicaRef ref = TFJ__REPORT__V1__REPLICA_REF__INIT;
	Tfj__Report__V1__RegisterResponse *resp;
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc;

	if (heartbeat_s)
		*heartbeat_s = 0;
	fill_ref(r, &ref);
	req.replica = &ref;
	req.agent_version = (char *)TFJ_REPORTER_AGENT_VERSION;
	req.start_unix_time_ms = tfj_clock_unix_ms();
	rc = unary(r, TFJ_REPORTER_METHOD_REGISTER, &req.base, &buf, &len);
	if (rc < 0)
		return rc;
	resp = tfj__report__v1__register_response__unpack(NULL, len, buf);
	free(buf);
	if (!resp)
		return tfj_err_set(TFJ_EPARSE, "report Register: malformed response");
	if (heartbeat_s)
		*heartbeat_s = resp->heartbeat_interval_seconds;
	tfj__report__v1__register_response__free_unpacked(resp, NULL);
	pthread_mutex_lock(&r->mu);
	r->stats.registered = 1;
	pthread_mutex_unlock(&r->mu);
	return 0;
}

/*
 * Acts on a heartbeat's reply: a stop is recorded once and wakes whoever
 * polls the stop fd. An empty or unreadable reply asks for nothing (an
 * older operator sends an empty one).
 */
static void heartbeat_reply(struct tfj_reporter *r, const uint8_t *buf, size_t len)
{
	Tfj__Report__V1__HeartbeatResponse *resp;
	uint64_t one = 1;
	int first = 0;

	/* An unreadable reply acks nothing; the record is sent again. */
	resp = len ? tfj__report__v1__heartbeat_response__unpack(NULL, len, buf) : NULL;
	pthread_mutex_lock(&r->mu);
	r->stats.acked_progress_ms = resp ? resp->acked_progress_unix_time_ms : 0;
	if (!resp) {
		pthread_mutex_unlock(&r->mu);
		return;
	}
	if (resp->stop && !r->stop_requested) {
		/* Free text off the wire: scrubbed like any before it is logged. */
		r->stop_requested = first = 1;
		tfj_log_redact(r->stop_reason, sizeof(r->stop_reason),
			       resp->stop_reason && *resp->stop_reason ? resp->stop_reason :
			       "the operator asked to stop");
	}
	pthread_mutex_unlock(&r->mu);
	tfj__report__v1__heartbeat_response__free_unpacked(resp, NULL);
	if (first) {
		tfj_log_info("the operator asks to stop the command", "reason", r->stop_reason);
		if (r->stop_fd >= 0 && write(r->stop_fd, &one, sizeof(one)) < 0)
			tfj_log_warn("cannot signal the stop", "detail", strerror(errno));
	}
}

int tfj_reporter_heartbeat(struct tfj_reporter *r, const struct tfj_progress_state *p,
			   int child_running)
{
	Tfj__Report__V1__HeartbeatRequest req = TFJ__REPORT__V1__HEARTBEAT_REQUEST__INIT;
	Tfj__Report__V1__ReplicaRef ref = TFJ__REPORT__V1__REPLICA_REF__INIT;
	Tfj__Report__V1__Progress pr = TFJ__REPORT__V1__PROGRESS__INIT;
	Tfj__Report__V1__Metric mv[TFJ_PROGREC_METRICS_MAX];
	Tfj__Report__V1__Metric *mp[TFJ_PROGREC_METRICS_MAX];
	uint8_t *buf = NULL;
	size_t len = 0, i;
	int rc;

	fill_ref(r, &ref);
	pr.has_step = !!(p->have & TFJ_PROGREC_BIT(TFJ_PROGREC_STEP));
	pr.global_step = p->step;
	pr.has_loss = !!(p->have & TFJ_PROGREC_BIT(TFJ_PROGREC_LOSS));
	pr.loss = p->loss;
	pr.has_accuracy = !!(p->have & TFJ_PROGREC_BIT(TFJ_PROGREC_ACCURACY));
	pr.accuracy = p->accuracy;
	pr.has_examples_per_sec = !!(p->have & TFJ_PROGREC_BIT(TFJ_PROGREC_EPS));
	pr.examples_per_sec = p->examples_per_sec;
	pr.has_total_steps = !!(p->have & TFJ_PROGREC_BIT(TFJ_PROGREC_TOTAL));
	pr.total_steps = p->total_steps;
	for (i = 0; i < p->named.n && i < TFJ_PROGREC_METRICS_MAX; i++) {
		tfj__report__v1__metric__init(&mv[i]);
		mv[i].name = (char *)p->named.m[i].name;
		mv[i].value = p->named.m[i].value;
		mp[i] = &mv[i];
	}
	pr.n_metrics = i;
	pr.metrics = i ? mp : NULL;
	pr.unix_time_ms = p->unix_time_ms;
	pr.records_seen = p->records;
	req.replica = &ref;
	req.progress = &pr;
	req.unix_time_ms = tfj_clock_unix_ms();
	req.child_running = child_running ? 1 : 0;
	rc = unary(r, TFJ_REPORTER_METHOD_HEARTBEAT, &req.base, &buf, &len);
	if (rc == 0)
		heartbeat_reply(r, buf, len);
	free(buf);
	return rc;
}

int tfj_reporter_exit(struct tfj_reporter *r, const struct tfj_reporter_exit *e)
{
	Tfj__Report__V1__ExitRequest req = TFJ__REPORT__V1__EXIT_REQUEST__INIT;
	Tfj__Report__V1__ReplicaRef ref = TFJ__REPORT__V1__REPLICA_REF__INIT;
	char *reason = dup_bounded(e->reason, REASON_MAX);
	char *msg = dup_bounded(e->message, MESSAGE_MAX);
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc;

	if (!reason || !msg) {
		free(reason);
		free(msg);
		return tfj_err_set(TFJ_ENOMEM, "report Exit");
	}
	fill_ref(r, &ref);
	req.replica = &ref;
	req.exit_code = e->exit_code;
	req.reason = reason;
	req.retryable = tfj_exitcode_retryable(e->exit_code);
	req.has_last_step = e->has_last_step ? 1 : 0;
	req.last_step = e->last_step;
	req.message = msg;
	req.signal = e->signal;
	rc = unary(r, TFJ_REPORTER_METHOD_EXIT, &req.base, &buf, &len);
	if (rc == 0) {
		Tfj__Report__V1__ExitResponse *resp =
			tfj__report__v1__exit_response__unpack(NULL, len, buf);

		pthread_mutex_lock(&r->mu);
		r->stats.exit_acked = resp && resp->acked;
		pthread_mutex_unlock(&r->mu);
		if (resp)
			tfj__report__v1__exit_response__free_unpacked(resp, NULL);
	}
	free(buf);
	free(reason);
	free(msg);
	return rc;
}

static void log_failure(struct tfj_reporter *r, const char *what)
{
	uint64_t n;

	pthread_mutex_lock(&r->mu);
	n = r->consecutive_failures;
	pthread_mutex_unlock(&r->mu);
	/* One line for the first failure, then one per LOG_FAIL_EVERY: no storm. */
	if (n == 1 || n % LOG_FAIL_EVERY == 0)
		tfj_log_warn("report call failed (training goes on)", "call", what, "detail",
			     tfj_err_detail());
}

static void *sender(void *arg)
{
	struct tfj_reporter *r = arg;
	int registered = 0;

	pthread_mutex_lock(&r->mu);
	while (!r->stop) {
		struct tfj_progress_state p = r->progress;
		int running = r->child_running;
		struct timespec until;
		double hb = r->heartbeat_s;

		pthread_mutex_unlock(&r->mu);
		if (!registered) {
			uint32_t want = 0;

			if (tfj_reporter_register(r, &want) == 0) {
				registered = 1;
				if (want > 0)
					hb = want < 1 ? 1 : want > 3600 ? 3600 : want;
			} else {
				log_failure(r, "Register");
			}
		} else if (tfj_reporter_heartbeat(r, &p, running) < 0) {
			log_failure(r, "Heartbeat");
		}
		pthread_mutex_lock(&r->mu);
		r->heartbeat_s = hb;
		tfj_clock_deadline(&until, hb > 0 ? (uint64_t)(hb * 1000.0) : 0);
		while (!r->stop) {
			if (pthread_cond_timedwait(&r->cv, &r->mu, &until) == ETIMEDOUT)
				break;
		}
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

int tfj_reporter_open(struct tfj_reporter **out, const struct tfj_reporter_opts *o,
		      const struct tfj_reporter_ident *id)
{
	struct tfj_reporter *r;
	size_t calen = 0;
	int rc = 0;

	*out = NULL;
	if (!o->addr || !*o->addr || strlen(o->addr) > 512)
		return tfj_err_set(TFJ_EINVAL, "report address missing or too long");
	r = calloc(1, sizeof(*r));
	if (!r)
		return tfj_err_set(TFJ_ENOMEM, "report client");
	pthread_mutex_init(&r->mu, NULL);
	tfj_clock_cond_init(&r->cv);
	/* Without it the stop is still recorded (tfj_reporter_stop_requested). */
	r->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r->addr = dup_bounded(o->addr, 512);
	r->token_file = dup_bounded(o->token_file ? o->token_file : TFJ_REPORTER_TOKEN_DEFAULT, 4096);
	r->ns = dup_bounded(id->namespace_, IDENT_MAX);
	r->job = dup_bounded(id->job_name, IDENT_MAX);
	r->uid = dup_bounded(id->job_uid, IDENT_MAX);
	r->rtype = dup_bounded(id->replica_type, IDENT_MAX);
	r->pod = dup_bounded(id->pod_name, IDENT_MAX);
	r->rindex = id->replica_index;
	r->timeout_s = o->timeout_s > 0 ? o->timeout_s : 2.0;
	r->heartbeat_s = o->heartbeat_s > 0 ? o->heartbeat_s : 10.0;
	r->ack_wait_s = o->ack_wait_s > 0 ? o->ack_wait_s : 0;
	if (!r->addr || !r->token_file || !r->ns || !r->job || !r->uid || !r->rtype || !r->pod) {
		rc = tfj_err_set(TFJ_ENOMEM, "report client");
		goto out;
	}
	if (o->ca_file && *o->ca_file) {
		rc = tfj_file_read(&r->ca, &calen, o->ca_file, CA_MAX, 0);
		if (rc < 0)
			goto out;
		if (!(r->ca_file = dup_bounded(o->ca_file, 4096))) {
			rc = tfj_err_set(TFJ_ENOMEM, "report client");
			goto out;
		}
	}
	grpc_init();
	r->grpc_up = 1;
	rc = new_channel(r);
out:
	if (rc < 0) {
		r->ch = NULL;
		tfj_reporter_close(r);
		return rc;
	}
	*out = r;
	return 0;
}

int tfj_reporter_start(struct tfj_reporter *r)
{
	int e = pthread_create(&r->thread, NULL, sender, r);

	if (e)
		return tfj_err_set(TFJ_EIO, "report thread: %s", strerror(e));
	r->thread_started = 1;
	return 0;
}

void tfj_reporter_update(struct tfj_reporter *r, const struct tfj_progress_state *p,
			 int child_running)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	if (p)
		r->progress = *p;
	r->child_running = child_running;
	pthread_mutex_unlock(&r->mu);
}

/* Refusals that resending cannot change. */
static int final_refusal(int rc)
{
	return rc == TFJ_EAUTH || rc == TFJ_EFORBIDDEN || rc == TFJ_EINVAL || rc == TFJ_ESTATE ||
	       rc == TFJ_ENOTFOUND;
}

/* One send of the final record; *acked when the reply covers it. */
static int send_final_progress(struct tfj_reporter *r, const void *arg, int *acked)
{
	const struct tfj_progress_state *p = arg;
	int rc = tfj_reporter_heartbeat(r, p, 0);

	pthread_mutex_lock(&r->mu);
	*acked = rc == 0 && r->stats.acked_progress_ms >= p->unix_time_ms;
	pthread_mutex_unlock(&r->mu);
	return rc;
}

static int send_exit(struct tfj_reporter *r, const void *arg, int *acked)
{
	int rc = tfj_reporter_exit(r, arg);

	pthread_mutex_lock(&r->mu);
	*acked = rc == 0 && r->stats.exit_acked;
	pthread_mutex_unlock(&r->mu);
	return rc;
}

/*
 * Sends until acked, refused for good, or the monotonic deadline `until_ms`
 * passed (always once). Pauses grow from ACK_PAUSE_MIN_MS to ..._MAX_MS,
 * within the per-pod rate the operator allows. Returns the last call's code.
 */
static int until_acked(struct tfj_reporter *r,
		       int (*send)(struct tfj_reporter *, const void *, int *), const void *arg,
		       int64_t until_ms, const char *what)
{
	int64_t pause = ACK_PAUSE_MIN_MS, now;
	int acked = 0, rc, tries = 0;

	for (;;) {
		rc = send(r, arg, &acked);
		tries++;
		now = (int64_t)tfj_clock_mono_ns() / 1000000;
		if (acked || final_refusal(rc) || now >= until_ms)
			break;
		if (pause > until_ms - now)
			pause = until_ms - now;
		nanosleep(&(struct timespec){ pause / 1000, (pause % 1000) * 1000000 }, NULL);
		pause = pause * 2 > ACK_PAUSE_MAX_MS ? ACK_PAUSE_MAX_MS : pause * 2;
	}
	pthread_mutex_lock(&r->mu);
	r->stats.resends += (uint64_t)(tries - 1);
	pthread_mutex_unlock(&r->mu);
	if (!acked && r->ack_wait_s > 0) {
		char n[24];

		/* The status falls back on the termination message (planprog.h). */
		snprintf(n, sizeof(n), "%d", tries);
		tfj_log_warn("report not acknowledged", "call", what, "tries", n, "detail",
			     rc ? tfj_err_detail() : "no ack");
	}
	return rc;
}

void tfj_reporter_finish(struct tfj_reporter *r, const struct tfj_reporter_exit *e)
{
	if (!r)
		return;
	if (r->thread_started) {
		pthread_mutex_lock(&r->mu);
		r->stop = 1;
		pthread_cond_broadcast(&r->cv);
		pthread_mutex_unlock(&r->mu);
		pthread_join(r->thread, NULL);
		r->thread_started = 0;
	}
	/* The heartbeat thread sends on a timer, so the last records (the final
	 * step and test accuracy) usually arrive after its last beat: send them
	 * once more before Exit so the job's status ends with the final figures,
	 * and again until the operator holds them (its ack), so that an
	 * operator restarting right now still gets them. */
	if (e) {
		int64_t until = (int64_t)tfj_clock_mono_ns() / 1000000 + (int64_t)(r->ack_wait_s * 1000.0);
		struct tfj_progress_state p = r->progress;
		int rc = 0;

		if (p.records > 0)
			rc = until_acked(r, send_final_progress, &p, until, "final progress");
		/* Refused for good (job finished or gone): the Exit would be too. */
		if (!final_refusal(rc) &&
		    until_acked(r, send_exit, e, until, "Exit") < 0)
			tfj_log_warn("report Exit failed (the termination message still holds the reason)",
				     "detail", tfj_err_detail());
	}
}

void tfj_reporter_no_ack_wait(struct tfj_reporter *r)
{
	if (r)
		r->ack_wait_s = 0;
}

int tfj_reporter_stop_fd(struct tfj_reporter *r)
{
	return r ? r->stop_fd : -1;
}

int tfj_reporter_stop_requested(struct tfj_reporter *r, char *reason, size_t reason_len)
{
	int stop;

	if (!r)
		return 0;
	pthread_mutex_lock(&r->mu);
	stop = r->stop_requested;
	if (stop && reason && reason_len)
		snprintf(reason, reason_len, "%s", r->stop_reason);
	pthread_mutex_unlock(&r->mu);
	return stop;
}

void tfj_reporter_get_stats(struct tfj_reporter *r, struct tfj_reporter_stats *out)
{
	pthread_mutex_lock(&r->mu);
	*out = r->stats;
	pthread_mutex_unlock(&r->mu);
}

void tfj_reporter_close(struct tfj_reporter *r)
{
	if (!r)
		return;
	if (r->thread_started)
		tfj_reporter_finish(r, NULL);
	if (r->ch)
		grpc_channel_destroy(r->ch);
	if (r->grpc_up)
		grpc_shutdown();
	free(r->addr);
	free(r->ca);
	free(r->ca_file);
	free(r->token_file);
	free(r->ns);
	free(r->job);
	free(r->uid);
	free(r->rtype);
	free(r->pod);
	if (r->stop_fd >= 0)
		close(r->stop_fd);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r);
}
