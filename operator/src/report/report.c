/*
 * report.c - the report service (see report.h).
 */
#include "report/report.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <tfj/clock.h>
#include <tfj/err.h>
#include <tfj/grpc.h>
#include <grpc/support/alloc.h>
#include <tfj/log.h>
#include <tfj/parse.h>

#include "kube/ratelimit.h"
#include "tfj_report.pb-c.h"
#include "report/peerlimit.h"
#include "report/tokenreview.h"

#define MAX_THREADS 16
/* At least four: a call waiting on a TokenReview must not hold up the others. */
#define DEFAULT_THREADS 4
#define BUCKETS 4096     /* per-pod buckets, hashed: bounded whatever the pod count */
#define TOKEN_MAX TFJ_TOKENREVIEW_TOKEN_MAX

/* Metrics labels of refusals; the callbacks' reasons are mapped onto these. */
static const char *const reject_names[] = {
	"no_token", "invalid_token", "not_pod_bound", "pod_mismatch", "pod_unknown",
	"wrong_replica", "invalid_argument", "rate_limited", "job_finished", "job_unknown",
	"unavailable", "peer_limited", "review_limited", "other"
};
#define NREJECT (sizeof(reject_names) / sizeof(reject_names[0]))

struct slot {
	struct worker *w;
	enum tfj_reportmsg_kind kind;
	void *reg;
	struct tfj_grpc_incoming in;
	grpc_byte_buffer *resp;
	struct tfj_report_ack ack;  /* what the reply acknowledges */
	int cancelled;
	int sending;          /* the reply batch is in flight */
	int tag_send;         /* its address tags the reply batch */
	int stop;             /* Heartbeat reply: the advise callback's answer */
	char stop_reason[TFJ_REPORT_STOP_REASON_MAX];
};

struct worker {
	struct tfj_report *s;
	grpc_completion_queue *cq;
	struct slot slots[TFJ_RM_COUNT];
	pthread_t th;
	int started;
};

struct tfj_report {
	struct tfj_report_opts o;
	grpc_server *srv;
	grpc_resource_quota *quota;
	int port;
	int nworkers;
	struct worker w[MAX_THREADS];
	_Atomic int stopping;
	struct tfj_ratelimit *buckets; /* BUCKETS of them */
	struct tfj_peerlimit *peers;   /* failed calls per peer address */
	_Atomic uint64_t requests[TFJ_RM_COUNT];
	_Atomic uint64_t rejected[NREJECT];
	int shutdown_tag;
	_Atomic int shutdown_done;
};

static void count_reject(struct tfj_report *s, const char *reason)
{
	size_t i;

	for (i = 0; i < NREJECT - 1; i++)
		if (reason && !strcmp(reason, reject_names[i]))
			break;
	atomic_fetch_add(&s->rejected[i], 1);
}

uint64_t tfj_report_rejected(struct tfj_report *s, const char *reason)
{
	size_t i;

	for (i = 0; i < NREJECT; i++)
		if (!strcmp(reason, reject_names[i]))
			return atomic_load(&s->rejected[i]);
	return 0;
}

/* FNV-1a: spreads pods over the buckets; collisions only share a budget. */
static size_t bucket_of(const char *subject)
{
	uint64_t h = 1469598103934665603ull;
	const unsigned char *p = (const unsigned char *)subject;

	for (; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return (size_t)(h % BUCKETS);
}

static int allow(struct tfj_report *s, const char *subject)
{
	return tfj_ratelimit_try(&s->buckets[bucket_of(subject)], tfj_clock_mono_ns());
}

/* The bearer token from the call's metadata into tok ("" when none). */
static void bearer(char *tok, size_t cap, const grpc_metadata_array *md)
{
	const char *p;
	size_t n;

	tok[0] = '\0';
	if (tfj_grpc_incoming_md(&p, &n, md, "authorization") != 0)
		return;
	if (n <= 7 || strncasecmp(p, "Bearer ", 7) || n - 7 >= cap)
		return;
	memcpy(tok, p + 7, n - 7);
	tok[n - 7] = '\0';
}

static grpc_status_code to_status(enum tfj_report_code c)
{
	switch (c) {
	case TFJ_REPORT_OK: return GRPC_STATUS_OK;
	case TFJ_REPORT_UNAUTHENTICATED: return GRPC_STATUS_UNAUTHENTICATED;
	case TFJ_REPORT_PERMISSION_DENIED: return GRPC_STATUS_PERMISSION_DENIED;
	case TFJ_REPORT_FAILED_PRECONDITION: return GRPC_STATUS_FAILED_PRECONDITION;
	case TFJ_REPORT_NOT_FOUND: return GRPC_STATUS_NOT_FOUND;
	default: return GRPC_STATUS_UNAVAILABLE;
	}
}

/* Packs the response of a successful call: register settings, the ack, a stop. */
static grpc_byte_buffer *response(struct tfj_report *s, const struct slot *sl)
{
	Tfj__Report__V1__RegisterResponse rr = TFJ__REPORT__V1__REGISTER_RESPONSE__INIT;
	Tfj__Report__V1__HeartbeatResponse hr = TFJ__REPORT__V1__HEARTBEAT_RESPONSE__INIT;
	Tfj__Report__V1__ExitResponse er = TFJ__REPORT__V1__EXIT_RESPONSE__INIT;
	uint8_t buf[32 + TFJ_REPORT_STOP_REASON_MAX];
	size_t n = 0;

	if (sl->kind == TFJ_RM_REGISTER) {
		rr.heartbeat_interval_seconds = s->o.heartbeat_s;
		n = tfj__report__v1__register_response__pack(&rr, buf);
	} else if (sl->kind == TFJ_RM_HEARTBEAT) {
		hr.acked_progress_unix_time_ms = sl->ack.progress_ms;
		if (sl->stop) {
			/* The reason is NUL-terminated within its cap: the packed size is bounded. */
			hr.stop = 1;
			hr.stop_reason = (char *)sl->stop_reason;
		}
		n = tfj__report__v1__heartbeat_response__pack(&hr, buf);
	} else if (sl->kind == TFJ_RM_EXIT) {
		er.acked = sl->ack.exit ? 1 : 0;
		n = tfj__report__v1__exit_response__pack(&er, buf);
	}
	return tfj_grpc_bb_new(buf, n);
}

/* Decides one call; returns the status and sets *detail (static text). */
static grpc_status_code handle(struct tfj_report *s, struct slot *sl, const char **detail)
{
	struct tfj_reportmsg m;
	uint8_t *body;
	size_t len;
	enum tfj_report_code code;
	const char *reason = NULL;
	char *tok = NULL, subject[TFJ_REPORT_SUBJECT_MAX] = "";
	int rc;

	char peer[TFJ_PEERLIMIT_ADDR_MAX];
	int limited;

	atomic_fetch_add(&s->requests[sl->kind], 1);
	/*
	 * A peer whose calls keep failing gets no authentication work done
	 * (peerlimit.h), unless its token is one already verified: an agent
	 * behind the same address as a flood still gets through.
	 */
	{
		char *p = grpc_call_get_peer(sl->in.call);

		tfj_peerlimit_addr(peer, sizeof(peer), p);
		gpr_free(p);
	}
	limited = !tfj_peerlimit_allowed(s->peers, peer, tfj_clock_mono_ns());
	/* gRPC already refused bodies over the cap; the read is bounded again anyway. */
	if (!sl->in.payload ||
	    tfj_grpc_bb_read(&body, &len, sl->in.payload, TFJ_REPORTMSG_MAX) != 0) {
		tfj_peerlimit_charge(s->peers, peer, tfj_clock_mono_ns());
		count_reject(s, "invalid_argument");
		*detail = "no request message";
		return GRPC_STATUS_INVALID_ARGUMENT;
	}
	rc = tfj_reportmsg_decode(&m, sl->kind, body, len);
	free(body);
	if (rc) {
		tfj_peerlimit_charge(s->peers, peer, tfj_clock_mono_ns());
		count_reject(s, "invalid_argument");
		tfj_log_debug("report refused", "reason", "invalid_argument", "detail",
			      tfj_err_detail());
		*detail = "malformed report";
		return GRPC_STATUS_INVALID_ARGUMENT;
	}
	if (!(tok = malloc(TOKEN_MAX + 1))) {
		*detail = "out of memory";
		return GRPC_STATUS_RESOURCE_EXHAUSTED;
	}
	bearer(tok, TOKEN_MAX + 1, &sl->in.md);
	if (limited && !(tok[0] && s->o.known && s->o.known(s->o.ud, tok))) {
		explicit_bzero(tok, TOKEN_MAX + 1);
		free(tok);
		count_reject(s, "peer_limited");
		*detail = "too many failed calls from this address";
		return GRPC_STATUS_RESOURCE_EXHAUSTED;
	}
	if (!tok[0]) {
		code = TFJ_REPORT_UNAUTHENTICATED;
		reason = "no_token";
	} else {
		code = s->o.auth(s->o.ud, &m, tok, subject, sizeof(subject), &reason);
	}
	explicit_bzero(tok, TOKEN_MAX + 1);
	free(tok);
	/*
	 * Refusals cost the sender, and so does a call its token could not be
	 * checked for because the TokenReview budget was spent: a peer sending
	 * plausible forgeries where only TokenReview can tell is slowed like
	 * one sending garbage. A real agent's verified token is never refused.
	 */
	if (code == TFJ_REPORT_UNAUTHENTICATED || code == TFJ_REPORT_PERMISSION_DENIED ||
	    (code == TFJ_REPORT_UNAVAILABLE && reason && !strcmp(reason, "review_limited")))
		tfj_peerlimit_charge(s->peers, peer, tfj_clock_mono_ns());
	if (code == TFJ_REPORT_OK && !allow(s, subject)) {
		count_reject(s, "rate_limited");
		*detail = "too many reports from this pod";
		return GRPC_STATUS_RESOURCE_EXHAUSTED;
	}
	if (code == TFJ_REPORT_OK)
		code = s->o.deliver(s->o.ud, &m, subject, &reason);
	sl->stop = 0;
	sl->stop_reason[0] = '\0';
	if (code == TFJ_REPORT_OK && m.kind == TFJ_RM_HEARTBEAT && s->o.advise) {
		s->o.advise(s->o.ud, &m, &sl->stop, sl->stop_reason, sizeof(sl->stop_reason));
		sl->stop_reason[sizeof(sl->stop_reason) - 1] = '\0';
	}
	memset(&sl->ack, 0, sizeof(sl->ack));
	if (code == TFJ_REPORT_OK && s->o.ack)
		s->o.ack(s->o.ud, &m, subject, &sl->ack);
	if (code != TFJ_REPORT_OK) {
		count_reject(s, reason ? reason : "other");
		tfj_log_debug("report refused", "method", tfj_reportmsg_kind_name(m.kind),
			     "namespace", m.ref.ns, "pod", m.ref.pod, "reason",
			     reason ? reason : "other");
		*detail = reason ? reason : "refused";
		return to_status(code);
	}
	*detail = NULL;
	return GRPC_STATUS_OK;
}

static int arm(struct slot *sl)
{
	sl->resp = NULL;
	sl->sending = 0;
	if (tfj_grpc_incoming_request(&sl->in, sl->w->s->srv, sl->reg, sl->w->cq, sl) != 0)
		return tfj_err_set(TFJ_EINTERNAL, "report: cannot request calls");
	return 0;
}

static void reply(struct slot *sl)
{
	struct tfj_report *s = sl->w->s;
	const char *detail = NULL;
	grpc_status_code st = handle(s, sl, &detail);

	if (st == GRPC_STATUS_OK)
		sl->resp = response(s, sl);
	sl->sending = 1;
	if (tfj_grpc_reply(sl->in.call, st, detail, sl->resp, &sl->cancelled, &sl->tag_send) !=
	    0) {
		/* Nothing will complete: clean up here. */
		sl->sending = 0;
		grpc_call_cancel(sl->in.call, NULL);
	}
}

static void release(struct slot *sl)
{
	tfj_grpc_incoming_release(&sl->in);
	if (sl->resp)
		grpc_byte_buffer_destroy(sl->resp);
	sl->resp = NULL;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (;;) {
		grpc_event ev = grpc_completion_queue_next(w->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC),
							   NULL);
		struct slot *sl;
		int k;

		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.type != GRPC_OP_COMPLETE)
			continue;
		if (ev.tag == &w->s->shutdown_tag) {
			atomic_store(&w->s->shutdown_done, 1);
			continue;
		}
		sl = NULL;
		for (k = 0; k < TFJ_RM_COUNT; k++)
			if (ev.tag == &w->slots[k] || ev.tag == &w->slots[k].tag_send)
				sl = &w->slots[k];
		if (!sl)
			continue;
		if (ev.tag == sl) {
			/* A new call (or, at shutdown, a failed request). */
			if (!ev.success || atomic_load(&w->s->stopping)) {
				release(sl);
				continue;
			}
			reply(sl);
			if (sl->sending)
				continue;
		}
		release(sl);
		if (!atomic_load(&w->s->stopping) && arm(sl))
			tfj_log_error("report: cannot accept more calls", "detail", tfj_err_detail());
	}
	return NULL;
}

int tfj_report_start(struct tfj_report **out, const struct tfj_report_opts *o)
{
	struct tfj_grpc_args args;
	struct tfj_report *s;
	char bind[192];
	int i, k, rc = 0;

	*out = NULL;
	if (!o || !o->addr || !*o->addr || !o->auth || !o->deliver) {
		if (o && o->creds)
			grpc_server_credentials_release(o->creds);
		return tfj_err_set(TFJ_EINVAL, "report: address and callbacks are required");
	}
	if (!(s = calloc(1, sizeof(*s)))) {
		if (o->creds)
			grpc_server_credentials_release(o->creds);
		return tfj_err_set(TFJ_ENOMEM, "report");
	}
	s->o = *o;
	s->o.addr = NULL;
	s->nworkers = o->threads > 0 ? (o->threads > MAX_THREADS ? MAX_THREADS : o->threads) :
				       DEFAULT_THREADS;
	if (s->o.pod_qps <= 0)
		s->o.pod_qps = 2;
	if (s->o.pod_burst < 1)
		s->o.pod_burst = 10;
	if (!(s->buckets = calloc(BUCKETS, sizeof(*s->buckets)))) {
		if (s->o.creds)
			grpc_server_credentials_release(s->o.creds);
		free(s);
		return tfj_err_set(TFJ_ENOMEM, "report");
	}
	for (i = 0; i < BUCKETS; i++)
		tfj_ratelimit_init(&s->buckets[i], s->o.pod_qps, s->o.pod_burst);
	if (tfj_peerlimit_new(&s->peers, s->o.peer_qps > 0 ? s->o.peer_qps : 1,
			      s->o.peer_burst > 0 ? s->o.peer_burst : 20, 0)) {
		free(s->buckets);
		free(s);
		return tfj_err_set(TFJ_ENOMEM, "report");
	}
	grpc_init();
	tfj_grpc_args_init(&args);
	tfj_grpc_args_msg_caps(&args, TFJ_REPORTMSG_MAX, TFJ_REPORTMSG_MAX);
	/* A bearer token fits in the metadata cap; no more. */
	tfj_grpc_args_int(&args, GRPC_ARG_MAX_METADATA_SIZE, 32 * 1024);
	tfj_grpc_args_int(&args, GRPC_ARG_MAX_CONCURRENT_STREAMS, 16);
	/*
	 * A tenant can open connections without calling on them: bound how
	 * long one may sit in the handshake or idle, and what all of them may
	 * hold (under the quota's pressure gRPC closes connections without
	 * calls first).
	 */
	tfj_grpc_args_int(&args, GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
			  o->handshake_timeout_ms > 0 ? o->handshake_timeout_ms :
							TFJ_REPORT_HANDSHAKE_MS);
	tfj_grpc_args_int(&args, GRPC_ARG_MAX_CONNECTION_IDLE_MS,
			  o->idle_timeout_ms > 0 ? o->idle_timeout_ms : TFJ_REPORT_IDLE_MS);
	s->quota = grpc_resource_quota_create("tfjob-report");
	grpc_resource_quota_resize(s->quota, o->quota_bytes ? o->quota_bytes :
							     TFJ_REPORT_QUOTA_BYTES);
	tfj_grpc_args_quota(&args, s->quota);
	rc = tfj_grpc_server_new(&s->srv, &args);
	if (rc) {
		grpc_shutdown();
		tfj_report_stop(s);
		return rc;
	}
	for (i = 0; i < s->nworkers; i++) {
		struct worker *w = &s->w[i];

		w->s = s;
		w->cq = grpc_completion_queue_create_for_next(NULL);
		grpc_server_register_completion_queue(s->srv, w->cq, NULL);
	}
	{
		void *reg[TFJ_RM_COUNT];
		static const char *const paths[TFJ_RM_COUNT] = {
			TFJ_REPORT_PATH_REGISTER, TFJ_REPORT_PATH_HEARTBEAT, TFJ_REPORT_PATH_EXIT
		};

		for (k = 0; k < TFJ_RM_COUNT; k++)
			reg[k] = tfj_grpc_server_method(s->srv, paths[k]);
		for (i = 0; i < s->nworkers; i++)
			for (k = 0; k < TFJ_RM_COUNT; k++) {
				s->w[i].slots[k].w = &s->w[i];
				s->w[i].slots[k].kind = (enum tfj_reportmsg_kind)k;
				s->w[i].slots[k].reg = reg[k];
			}
	}
	/* The same address forms as --metrics-addr (":9443" = every interface). */
	{
		char host[128];
		int port = 0;

		if (tfj_parse_hostport(host, sizeof(host), &port, o->addr, TFJ_HOSTPORT_LISTEN,
				       "report address")) {
			rc = tfj_err_set(TFJ_EINVAL, "report: bad address %s", o->addr);
			goto out;
		}
		if (!host[0])
			snprintf(bind, sizeof(bind), "[::]:%d", port);
		else if (strchr(host, ':'))
			snprintf(bind, sizeof(bind), "[%s]:%d", host, port);
		else
			snprintf(bind, sizeof(bind), "%s:%d", host, port);
	}
	/* TLS unless the caller asked for plaintext (--report-insecure, tests). */
	rc = tfj_grpc_server_listen(&s->port, s->srv, bind, s->o.creds);
	s->o.creds = NULL; /* consumed */
	if (rc != 0) {
		rc = tfj_err_set(TFJ_EIO, "report: cannot listen on %s", o->addr);
		goto out;
	}
	for (i = 0; i < s->nworkers && !rc; i++)
		for (k = 0; k < TFJ_RM_COUNT && !rc; k++)
			rc = arm(&s->w[i].slots[k]);
	for (i = 0; i < s->nworkers && !rc; i++) {
		if (pthread_create(&s->w[i].th, NULL, worker_main, &s->w[i]))
			rc = tfj_err_set(TFJ_EINTERNAL, "report: cannot start a thread");
		else
			s->w[i].started = 1;
	}
out:
	if (rc) {
		tfj_report_stop(s);
		return rc;
	}
	*out = s;
	return 0;
}

int tfj_report_port(const struct tfj_report *s)
{
	return s ? s->port : 0;
}

void tfj_report_stop(struct tfj_report *s)
{
	int i;

	if (!s)
		return;
	atomic_store(&s->stopping, 1);
	if (s->o.creds)
		grpc_server_credentials_release(s->o.creds);
	if (s->srv) {
		grpc_server_shutdown_and_notify(s->srv, s->w[0].cq, &s->shutdown_tag);
		grpc_server_cancel_all_calls(s->srv);
		/*
		 * The server may only be destroyed once its shutdown tag came
		 * out of the queue: the worker thread sees it, or we drain the
		 * queue here when the threads never started.
		 */
		if (s->w[0].started) {
			struct timespec ts = { 0, 5 * 1000 * 1000 };

			while (!atomic_load(&s->shutdown_done))
				nanosleep(&ts, NULL);
		} else {
			grpc_event ev;

			do {
				ev = grpc_completion_queue_next(s->w[0].cq,
								gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
			} while (ev.type == GRPC_OP_COMPLETE && ev.tag != &s->shutdown_tag);
		}
		grpc_server_destroy(s->srv);
	}
	for (i = 0; i < s->nworkers; i++) {
		if (s->w[i].cq)
			grpc_completion_queue_shutdown(s->w[i].cq);
		if (s->w[i].started)
			pthread_join(s->w[i].th, NULL);
		else if (s->w[i].cq)
			while (grpc_completion_queue_next(s->w[i].cq,
							  gpr_inf_future(GPR_CLOCK_MONOTONIC),
							  NULL).type != GRPC_QUEUE_SHUTDOWN)
				;
		if (s->w[i].cq)
			grpc_completion_queue_destroy(s->w[i].cq);
	}
	if (s->quota)
		grpc_resource_quota_unref(s->quota);
	if (s->srv)
		grpc_shutdown();
	for (i = 0; i < BUCKETS; i++)
		tfj_ratelimit_destroy(&s->buckets[i]);
	free(s->buckets);
	tfj_peerlimit_free(s->peers);
	free(s);
}

int tfj_report_metrics(struct tfj_report *s, struct tfj_buf *out)
{
	size_t i;
	int rc = 0;

	if (!s)
		return 0;
	rc |= tfj_buf_puts(out, "# HELP tfjob_report_requests_total Report calls received.\n"
			   "# TYPE tfjob_report_requests_total counter\n");
	for (i = 0; i < TFJ_RM_COUNT; i++)
		rc |= tfj_buf_printf(out, "tfjob_report_requests_total{method=\"%s\"} %llu\n",
				     tfj_reportmsg_kind_name((enum tfj_reportmsg_kind)i),
				     (unsigned long long)atomic_load(&s->requests[i]));
	rc |= tfj_buf_puts(out, "# HELP tfjob_report_rejected_total Report calls refused, by reason.\n"
			   "# TYPE tfjob_report_rejected_total counter\n");
	for (i = 0; i < NREJECT; i++)
		rc |= tfj_buf_printf(out, "tfjob_report_rejected_total{reason=\"%s\"} %llu\n",
				     reject_names[i], (unsigned long long)atomic_load(&s->rejected[i]));
	return rc ? TFJ_ENOMEM : 0;
}
