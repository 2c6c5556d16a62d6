/*
 * report.c - gRPC client of the operator's report service (see report.h).
 */
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include <tfj/clock.h>
#include <tfj/err.h>
#include <tfj/exitcode.h>
#include <tfj/file.h>
#include <tfj/log.h>

#include "tfj_report.pb-c.h"

#define IDENT_MAX 256
#define REASON_MAX 128
#define MESSAGE_MAX 2048
#define CA_MAX (1u << 20)
#define LOG_FAIL_EVERY 10   /* log 1 of every N consecutive failures */

struct tfj_report {
	grpc_channel *ch;
	char *addr, *token_file;
	double timeout_s, heartbeat_s;
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
	struct tfj_report_stats stats;
	uint64_t consecutive_failures;
	int warned_token;
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
static int read_token(struct tfj_report *r, char **tok)
{
	size_t len = 0, i;
	int rc;

	/* Trailing whitespace is trimmed by the one rule of file.h. */
	rc = tfj_file_read_secret(tok, &len, r->token_file, TFJ_REPORT_TOKEN_MAX);
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
	default: return TFJ_EIO;
	}
}

/*
 * One unary call: packs `req`, sends it with the bearer token and returns
 * the response bytes in *resp (malloc'd, caller frees).
 */
static int unary(struct tfj_report *r, const char *method, const ProtobufCMessage *req,
		 uint8_t **resp, size_t *resp_len)
{
	grpc_completion_queue *cq = NULL;
	grpc_call *call = NULL;
	grpc_byte_buffer *send_bb = NULL, *recv_bb = NULL;
	grpc_metadata_array imd, tmd;
	grpc_metadata md;
	grpc_status_code status = GRPC_STATUS_UNKNOWN;
	grpc_slice details = grpc_empty_slice();
	grpc_slice auth = grpc_empty_slice();
	grpc_op ops[6];
	grpc_event ev;
	gpr_timespec deadline;
	char *tok = NULL, *hdr = NULL;
	size_t plen, hlen = 0;
	uint8_t *pbuf = NULL;
	int rc = 0, have_auth = 0;

	*resp = NULL;
	*resp_len = 0;
	grpc_metadata_array_init(&imd);
	grpc_metadata_array_init(&tmd);
	plen = protobuf_c_message_get_packed_size(req);
	if (plen > TFJ_REPORT_MAX_MSG)
		return tfj_err_set(TFJ_ETOOBIG, "report %s: %zu bytes", method, plen);
	pbuf = malloc(plen ? plen : 1);
	if (!pbuf)
		return tfj_err_set(TFJ_ENOMEM, "report message");
	protobuf_c_message_pack(req, pbuf);
	{
		grpc_slice s = grpc_slice_from_copied_buffer((const char *)pbuf, plen);
		send_bb = grpc_raw_byte_buffer_create(&s, 1);
		grpc_slice_unref(s);
	}
	if (read_token(r, &tok) == 0) {
		hlen = strlen(tok) + sizeof("Bearer ");
		hdr = malloc(hlen);
		if (hdr) {
			snprintf(hdr, hlen, "Bearer %s", tok);
			auth = grpc_slice_from_copied_string(hdr);
			have_auth = 1;
		}
		explicit_bzero(tok, strlen(tok));
		free(tok);
		r->warned_token = 0;
	} else if (!r->warned_token) {
		/* The detail names the file, never its contents. */
		tfj_log_warn("report: no token, calling without authorization", "detail",
			     tfj_err_detail());
		r->warned_token = 1;
	}
	memset(&md, 0, sizeof(md));
	md.key = grpc_slice_from_static_string("authorization");
	md.value = auth;

	cq = grpc_completion_queue_create_for_next(NULL);
	deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
				gpr_time_from_millis((int64_t)(r->timeout_s * 1000.0), GPR_TIMESPAN));
	call = grpc_channel_create_call(r->ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
					grpc_slice_from_static_string(method), NULL, deadline, NULL);
	if (!call) {
		rc = tfj_err_set(TFJ_EINTERNAL, "report %s: cannot create call", method);
		goto out;
	}
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[0].data.send_initial_metadata.count = have_auth ? 1 : 0;
	ops[0].data.send_initial_metadata.metadata = have_auth ? &md : NULL;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = send_bb;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &imd;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &recv_bb;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &tmd;
	ops[5].data.recv_status_on_client.status = &status;
	ops[5].data.recv_status_on_client.status_details = &details;
	if (grpc_call_start_batch(call, ops, 6, (void *)call, NULL) != GRPC_CALL_OK) {
		rc = tfj_err_set(TFJ_EINTERNAL, "report %s: start_batch failed", method);
		goto out;
	}
	/* The call's own deadline ends the batch; the margin only guards a bug. */
	ev = grpc_completion_queue_next(cq, gpr_time_add(deadline, gpr_time_from_seconds(5, GPR_TIMESPAN)),
					NULL);
	if (ev.type != GRPC_OP_COMPLETE) {
		grpc_call_cancel(call, NULL);
		ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
	}
	if (status != GRPC_STATUS_OK) {
		char *d = grpc_slice_to_c_string(details);
		char safe[256];

		tfj_log_redact(safe, sizeof(safe), d ? d : "");
		rc = tfj_err_set(status_err(status), "report %s: status %d: %s", method, (int)status,
				 safe);
		gpr_free(d);
		goto out;
	}
	if (recv_bb) {
		grpc_byte_buffer_reader rd;
		grpc_slice all;

		if (!grpc_byte_buffer_reader_init(&rd, recv_bb)) {
			rc = tfj_err_set(TFJ_EPARSE, "report %s: bad response", method);
			goto out;
		}
		all = grpc_byte_buffer_reader_readall(&rd);
		grpc_byte_buffer_reader_destroy(&rd);
		*resp_len = GRPC_SLICE_LENGTH(all);
		*resp = malloc(*resp_len ? *resp_len : 1);
		if (*resp)
			memcpy(*resp, GRPC_SLICE_START_PTR(all), *resp_len);
		grpc_slice_unref(all);
		if (!*resp)
			rc = tfj_err_set(TFJ_ENOMEM, "report response");
	}
out:
	if (call)
		grpc_call_unref(call);
	if (cq) {
		grpc_completion_queue_shutdown(cq);
		while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
		       GRPC_QUEUE_SHUTDOWN)
			;
		grpc_completion_queue_destroy(cq);
	}
	if (hdr) {
		explicit_bzero(hdr, hlen);
		free(hdr);
	}
	grpc_slice_unref(auth);
	grpc_slice_unref(details);
	grpc_metadata_array_destroy(&imd);
	grpc_metadata_array_destroy(&tmd);
	if (send_bb)
		grpc_byte_buffer_destroy(send_bb);
	if (recv_bb)
		grpc_byte_buffer_destroy(recv_bb);
	free(pbuf);
	pthread_mutex_lock(&r->mu);
	if (rc == 0) {
		r->stats.calls_ok++;
		r->consecutive_failures = 0;
	} else {
		r->stats.calls_failed++;
		r->consecutive_failures++;
	}
	pthread_mutex_unlock(&r->mu);
	return rc;
}

static void fill_ref(struct tfj_report *r, Tfj__Report__V1__ReplicaRef *ref)
{
	ref->namespace_ = r->ns;
	ref->job_name = r->job;
	ref->job_uid = r->uid;
	ref->replica_type = r->rtype;
	ref->replica_index = r->rindex;
	ref->pod_name = r->pod;
}

int tfj_report_register(struct tfj_report *r, uint32_t *heartbeat_s)
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
	req.agent_version = (char *)TFJ_REPORT_AGENT_VERSION;
	req.start_unix_time_ms = tfj_clock_unix_ms();
	rc = unary(r, TFJ_REPORT_METHOD_REGISTER, &req.base, &buf, &len);
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

int tfj_report_heartbeat(struct tfj_report *r, const struct tfj_progress_state *p,
			 int child_running)
{
	Tfj__Report__V1__HeartbeatRequest req = TFJ__REPORT__V1__HEARTBEAT_REQUEST__INIT;
	Tfj__Report__V1__ReplicaRef ref = TFJ__REPORT__V1__REPLICA_REF__INIT;
	Tfj__Report__V1__Progress pr = TFJ__REPORT__V1__PROGRESS__INIT;
	uint8_t *buf = NULL;
	size_t len = 0;
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
	pr.unix_time_ms = p->unix_time_ms;
	pr.records_seen = p->records;
	req.replica = &ref;
	req.progress = &pr;
	req.unix_time_ms = tfj_clock_unix_ms();
	req.child_running = child_running ? 1 : 0;
	rc = unary(r, TFJ_REPORT_METHOD_HEARTBEAT, &req.base, &buf, &len);
	free(buf);
	return rc;
}

int tfj_report_exit(struct tfj_report *r, const struct tfj_report_exit *e)
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
	rc = unary(r, TFJ_REPORT_METHOD_EXIT, &req.base, &buf, &len);
	free(buf);
	free(reason);
	free(msg);
	return rc;
}

static void log_failure(struct tfj_report *r, const char *what)
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
	struct tfj_report *r = arg;
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

			if (tfj_report_register(r, &want) == 0) {
				registered = 1;
				if (want > 0)
					hb = want < 1 ? 1 : want > 3600 ? 3600 : want;
			} else {
				log_failure(r, "Register");
			}
		} else if (tfj_report_heartbeat(r, &p, running) < 0) {
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

int tfj_report_open(struct tfj_report **out, const struct tfj_report_opts *o,
		    const struct tfj_report_ident *id)
{
	grpc_channel_credentials *creds = NULL;
	grpc_arg args[6];
	grpc_channel_args cargs;
	struct tfj_report *r;
	char *ca = NULL;
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
	r->addr = dup_bounded(o->addr, 512);
	r->token_file = dup_bounded(o->token_file ? o->token_file : TFJ_REPORT_TOKEN_DEFAULT, 4096);
	r->ns = dup_bounded(id->namespace_, IDENT_MAX);
	r->job = dup_bounded(id->job_name, IDENT_MAX);
	r->uid = dup_bounded(id->job_uid, IDENT_MAX);
	r->rtype = dup_bounded(id->replica_type, IDENT_MAX);
	r->pod = dup_bounded(id->pod_name, IDENT_MAX);
	r->rindex = id->replica_index;
	r->timeout_s = o->timeout_s > 0 ? o->timeout_s : 2.0;
	r->heartbeat_s = o->heartbeat_s > 0 ? o->heartbeat_s : 10.0;
	if (!r->addr || !r->token_file || !r->ns || !r->job || !r->uid || !r->rtype || !r->pod) {
		rc = tfj_err_set(TFJ_ENOMEM, "report client");
		goto out;
	}
	if (o->ca_file && *o->ca_file) {
		rc = tfj_file_read(&ca, &calen, o->ca_file, CA_MAX, 0);
		if (rc < 0)
			goto out;
	}
	grpc_init();
	creds = ca ? grpc_ssl_credentials_create(ca, NULL, NULL, NULL)
		   : grpc_insecure_credentials_create();
	args[0].type = GRPC_ARG_INTEGER;
	args[0].key = (char *)GRPC_ARG_MAX_SEND_MESSAGE_LENGTH;
	args[0].value.integer = TFJ_REPORT_MAX_MSG;
	args[1].type = GRPC_ARG_INTEGER;
	args[1].key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
	args[1].value.integer = TFJ_REPORT_MAX_MSG;
	args[2].type = GRPC_ARG_INTEGER;
	args[2].key = (char *)GRPC_ARG_ENABLE_RETRIES;
	args[2].value.integer = 0;
	args[3].type = GRPC_ARG_INTEGER;
	args[3].key = (char *)GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS;
	args[3].value.integer = 1000;
	args[4].type = GRPC_ARG_INTEGER;
	args[4].key = (char *)GRPC_ARG_MAX_RECONNECT_BACKOFF_MS;
	args[4].value.integer = 10000;
	args[5].type = GRPC_ARG_INTEGER;
	args[5].key = (char *)GRPC_ARG_MIN_RECONNECT_BACKOFF_MS;
	args[5].value.integer = 500;
	cargs.num_args = 6;
	cargs.args = args;
	r->ch = grpc_channel_create(r->addr, creds, &cargs);
	grpc_channel_credentials_release(creds);
	if (!r->ch) {
		grpc_shutdown();
		rc = tfj_err_set(TFJ_EINVAL, "report address '%s': cannot create channel", r->addr);
		goto out;
	}
out:
	free(ca);
	if (rc < 0) {
		r->ch = NULL;
		tfj_report_close(r);
		return rc;
	}
	*out = r;
	return 0;
}

int tfj_report_start(struct tfj_report *r)
{
	int e = pthread_create(&r->thread, NULL, sender, r);

	if (e)
		return tfj_err_set(TFJ_EIO, "report thread: %s", strerror(e));
	r->thread_started = 1;
	return 0;
}

void tfj_report_update(struct tfj_report *r, const struct tfj_progress_state *p,
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

void tfj_report_finish(struct tfj_report *r, const struct tfj_report_exit *e)
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
	 * once more before Exit so the job's status ends with the final figures. */
	if (e && r->progress.records > 0) {
		struct tfj_progress_state p = r->progress;

		if (tfj_report_heartbeat(r, &p, 0) < 0)
			tfj_log_debug("final heartbeat failed", "detail", tfj_err_detail());
	}
	if (e && tfj_report_exit(r, e) < 0)
		tfj_log_warn("report Exit failed (the termination message still holds the reason)",
			     "detail", tfj_err_detail());
}

void tfj_report_get_stats(struct tfj_report *r, struct tfj_report_stats *out)
{
	pthread_mutex_lock(&r->mu);
	*out = r->stats;
	pthread_mutex_unlock(&r->mu);
}

void tfj_report_close(struct tfj_report *r)
{
	if (!r)
		return;
	if (r->thread_started)
		tfj_report_finish(r, NULL);
	if (r->ch) {
		grpc_channel_destroy(r->ch);
		grpc_shutdown();
	}
	free(r->addr);
	free(r->token_file);
	free(r->ns);
	free(r->job);
	free(r->uid);
	free(r->rtype);
	free(r->pod);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r);
}
