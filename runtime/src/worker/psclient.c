/*
 * psclient.c - requests to every ps task at once, each over its stream
 * (clistream.c); see psclient.h.
 */
#include "worker/psclient.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/grpc.h>
#include <tfj/log.h>

#include "wire/psauth.h"
#include "wire/pstls.h"
#include "wire/frame.h"
#include "worker/clistream.h"
#include "wire/wire.h"
#include "wire/wiresplit.h"

/* Least time one connection attempt to a ps gets (see tfj_psclient_new). */
#define PS_CONNECT_MIN_MS 2000

/* The requests of one call for shard i: n parts (n 1: one whole request), none when n 0. */
struct shard_req {
	const ProtobufCMessage *const *list;
	size_t n;
	unsigned char *applied;      /* NULL, or per part: 1 once the ps answered OK */
};

/* One ps: its channel, its stream, this call's request and what its last answer holds. */
struct ps {
	char *host;
	grpc_channel *ch;
	struct tfj_clistream stream;
	struct shard_req rq;         /* this call's request (or parts) for it */
	struct tfj_wire_arena arena;
	struct tfj_wire_msg msg;     /* the last decoded answer */
	grpc_byte_buffer *kept;      /* its payload, which msg points into */
	int known;                   /* it answered a Status on its current stream */
	int pieces;                  /* its last Status announced piece_parts */
	int active;                  /* this exchange has a request on its stream */
	int failed;                  /* this call already failed for it */
	int timed_out;               /* its request of this exchange ran past the deadline */
};

struct tfj_psclient {
	size_t n;
	struct ps *ps;
	grpc_completion_queue *cq;
	struct tfj_psclient_stats stats;
	struct tfj_wire_lease lease;
	struct tfj_wire_lease *zc;   /* &lease, or NULL with TFJ_NOZC set (copy instead) */
	struct tfj_psauth auth;      /* the job's ps secret, sent on every stream */
	struct tfj_pstls tls;        /* the job's CA: the ps is verified against it */
};

/* The first error of a call and its detail. */
struct call_err {
	int rc;
	char detail[TFJ_ERR_DETAIL_MAX];
};

static void note(struct call_err *e, int rc, const char *detail)
{
	if (e->rc || !rc)
		return;
	e->rc = rc;
	snprintf(e->detail, sizeof(e->detail), "%s", detail);
}

size_t tfj_psclient_nshards(const struct tfj_psclient *cl)
{
	return cl->n;
}

/*
 * The channel arguments of every ps. Message caps explicit on both sides;
 * reconnect backoff short, since a restarted ps should be found again
 * within a second; gRPC's own retries off because the runtime retries
 * whole steps with its own deadline. gRPC gives each connection attempt
 * (TCP connect, HTTP/2 and any TLS handshake) max(minimum backoff, current
 * backoff) before abandoning it, and a call fails at once while the
 * channel is in transient failure. With a 100 ms minimum, a worker whose
 * ps answered slowly (a small CPU limit, a congested path) failed its
 * calls until the backoff had grown, and never got through to a ps slower
 * than the 1 s maximum; an attempt gets PS_CONNECT_MIN_MS instead. A
 * refused connection (the ps not up yet, or restarting on the same
 * address) still fails at once and is retried after the short backoff;
 * only an address that swallows packets (a deleted pod's IP) waits the
 * whole attempt out.
 */
static void channel_args(struct tfj_grpc_args *args, const struct tfj_psclient *cl,
			 const struct tfj_rtconfig *cfg)
{
	tfj_grpc_args_init(args);
	tfj_wire_transport_args(args, cfg->max_message_bytes);
	tfj_grpc_args_reconnect(args, 100, PS_CONNECT_MIN_MS, 1000);
	if (cl->tls.on && cl->tls.server_name)
		tfj_grpc_args_str(args, GRPC_SSL_TARGET_NAME_OVERRIDE_ARG, cl->tls.server_name);
}

int tfj_psclient_new(struct tfj_psclient **out, const struct tfj_rtconfig *cfg)
{
	struct tfj_psclient *cl;
	struct tfj_grpc_args args;
	size_t i;
	int rc;

	*out = NULL;
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return tfj_err_set(TFJ_ENOMEM, "psclient: out of memory");
	rc = tfj_psauth_from_env(&cl->auth);
	if (rc == 0 && (rc = tfj_pstls_from_env(&cl->tls, 0)) != 0)
		tfj_psauth_free(&cl->auth);
	if (rc) {
		free(cl);
		return rc;
	}
	cl->n = cfg->nps;
	cl->ps = calloc(cl->n ? cl->n : 1, sizeof(*cl->ps));
	if (!cl->ps) {
		tfj_psclient_free(cl);
		return tfj_err_set(TFJ_ENOMEM, "psclient: out of memory");
	}
	cl->cq = grpc_completion_queue_create_for_next(NULL);
	cl->zc = getenv("TFJ_NOZC") ? NULL : &cl->lease;
	channel_args(&args, cl, cfg);
	for (i = 0; i < cl->n; i++) {
		struct ps *p = &cl->ps[i];
		const char *h = tfj_rtconfig_host(cfg, "ps", i);

		tfj_wire_arena_init(&p->arena, 2 * cfg->max_message_bytes + (1u << 20));
		p->host = strdup(h ? h : "");
		/* With TLS on, gRPC checks the ps's certificate for the host it dials. */
		rc = p->host ? tfj_grpc_channel_new(&p->ch, p->host, cl->tls.on ? cl->tls.ca_pem : NULL,
						    &args)
			     : -1;
		if (rc) {
			tfj_psclient_free(cl);
			return tfj_err_set(TFJ_ENOMEM, "psclient: cannot create channel %zu", i);
		}
		tfj_clistream_init(&p->stream, i, p->host, p->ch, cl->cq, cl->auth.secret, cl->zc,
				   &p->arena);
	}
	*out = cl;
	return 0;
}

static void dispatch(grpc_event ev)
{
	if (ev.type == GRPC_OP_COMPLETE)
		tfj_clistream_complete(ev.tag, ev.success);
}

/* Ends every open stream (cancel, then wait for its batches) and releases it. */
static void streams_close(struct tfj_psclient *cl)
{
	size_t i;
	int busy;

	if (!cl->ps || !cl->cq)
		return;
	for (i = 0; i < cl->n; i++)
		if (cl->ps[i].stream.open && !cl->ps[i].stream.ended)
			tfj_clistream_cancel(&cl->ps[i].stream);
	do {
		busy = 0;
		for (i = 0; i < cl->n; i++)
			busy |= tfj_clistream_busy(&cl->ps[i].stream);
		if (busy)
			dispatch(grpc_completion_queue_next(
				cl->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL));
	} while (busy);
}

void tfj_psclient_free(struct tfj_psclient *cl)
{
	struct tfj_psclient_stats st;
	size_t i;

	if (!cl)
		return;
	tfj_psclient_get_stats(&st, cl);
	if (st.frames)
		tfj_log_fmt(TFJ_LOG_INFO, "psclient: %" PRIu64 " requests over streams, %" PRIu64
			    " streams opened", st.frames, st.streams_opened);
	streams_close(cl);
	/* No request is in flight between tfj_psclient_call()s: the queue drains at once. */
	if (cl->cq)
		tfj_grpc_cq_destroy(cl->cq);
	for (i = 0; cl->ps && i < cl->n; i++) {
		struct ps *p = &cl->ps[i];

		tfj_clistream_free(&p->stream);
		if (p->ch)
			grpc_channel_destroy(p->ch);
		free(p->host);
		tfj_wire_arena_free(&p->arena);
		if (p->kept)
			grpc_byte_buffer_destroy(p->kept);
	}
	free(cl->ps);
	tfj_psauth_free(&cl->auth);
	tfj_pstls_free(&cl->tls);
	free(cl);
}

void tfj_psclient_get_stats(struct tfj_psclient_stats *out, const struct tfj_psclient *cl)
{
	size_t i;

	*out = cl->stats;
	for (i = 0; cl->ps && i < cl->n; i++) {
		out->frames += cl->ps[i].stream.frames;
		out->streams_opened += cl->ps[i].stream.opened;
	}
}

const struct tfj_wire_msg *tfj_psclient_tensors(const struct tfj_psclient *cl, size_t i)
{
	return &cl->ps[i].msg;
}

/* Waits for every request of this exchange; streams past the deadline are cancelled. */
static void wait_all(struct tfj_psclient *cl, gpr_timespec deadline)
{
	size_t i;
	int waiting;

	for (;;) {
		grpc_event ev;

		waiting = 0;
		for (i = 0; i < cl->n; i++)
			if (cl->ps[i].active && !tfj_clistream_done(&cl->ps[i].stream))
				waiting = 1;
		if (!waiting)
			return;
		/* A stream has no deadline of its own: each request has the call's. */
		ev = grpc_completion_queue_next(cl->cq, deadline, NULL);
		if (ev.type == GRPC_QUEUE_TIMEOUT) {
			for (i = 0; i < cl->n; i++)
				if (cl->ps[i].active && !tfj_clistream_done(&cl->ps[i].stream)) {
					cl->ps[i].timed_out = 1;
					tfj_clistream_cancel(&cl->ps[i].stream);
				}
			deadline = gpr_inf_future(GPR_CLOCK_MONOTONIC);
			continue;
		}
		dispatch(ev);
	}
}

/* Puts shard i's request (or its parts) on its stream: 0, or why it could not. */
static int start_one(struct tfj_psclient *cl, size_t i, enum tfj_rpc_method method)
{
	struct ps *p = &cl->ps[i];
	const struct shard_req *rq = &p->rq;

	tfj_wire_arena_reset(&p->arena);
	memset(&p->msg, 0, sizeof(p->msg));
	if (p->kept)
		grpc_byte_buffer_destroy(p->kept);
	p->kept = NULL;
	p->timed_out = 0;
	if (rq->n > 1)
		return tfj_clistream_start_parts(&p->stream, method, rq->list, rq->n, rq->applied);
	return tfj_clistream_start(&p->stream, method, rq->list[0]);
}

/* Takes shard i's answer in: the pieces a Status announces, the last part applied. */
static void took_answer(struct ps *p, enum tfj_rpc_method method)
{
	const struct shard_req *rq = &p->rq;

	if (method == TFJ_RPC_STATUS) {
		const Tfj__Runtime__V1__StatusResponse *r = (const void *)p->msg.head;

		p->pieces = r->partial_push && r->piece_parts;
		p->known = 1;
	}
	/* Answered: its last part (or its only one) was applied. */
	if (rq->applied)
		rq->applied[rq->n - 1] = 1;
}

/*
 * One exchange: every shard with a request (ps[i].rq; and not failed
 * already) gets it on its stream, then every answer is waited for;
 * resps[i] (resps NULL: none kept) is shard i's answer, or stays NULL when
 * it failed (marked failed, error noted).
 */
static void exchange(struct tfj_psclient *cl, enum tfj_rpc_method method,
		     ProtobufCMessage **resps, gpr_timespec deadline, struct call_err *err)
{
	char d[TFJ_ERR_DETAIL_MAX];
	grpc_status_code ended;
	size_t i;
	int rc;

	for (i = 0; i < cl->n; i++) {
		struct ps *p = &cl->ps[i];

		p->active = 0;
		if (!p->rq.n || p->failed)
			continue;
		rc = start_one(cl, i, method);
		if (rc) {
			note(err, rc, tfj_err_detail());
			p->failed = 1;
			tfj_clistream_cancel(&p->stream);
		}
		p->active = !rc || p->stream.open;
	}
	wait_all(cl, deadline);
	for (i = 0; i < cl->n; i++) {
		struct ps *p = &cl->ps[i];

		if (!p->active)
			continue;
		p->active = 0;
		rc = tfj_clistream_result(&p->stream, method, p->timed_out, &p->kept, &p->msg,
					  &ended, d, sizeof(d));
		/* A broken stream: the ps may come back as another one, to be asked again. */
		if (ended != GRPC_STATUS_OK)
			p->known = 0;
		if (p->failed)
			continue;
		if (rc) {
			note(err, rc, d);
			p->failed = 1;
			continue;
		}
		if (resps)
			resps[i] = p->msg.head;
		took_answer(p, method);
	}
}

/*
 * Parts go only to a ps that takes pieces as far as its current stream
 * says (tfj_psclient_pieces_of, the one rule the caller decided its cut
 * by): a shard whose ps does not, or whose stream broke since the caller
 * asked (the ps may be another one), is sent nothing and fails the call,
 * so that the caller asks again and sends it the request whole; the other
 * shards get theirs (the caller keeps which shards answered, pushtrack.h,
 * and does not send them it again).
 */
static void refuse_parts(struct tfj_psclient *cl, struct call_err *err)
{
	char d[TFJ_ERR_DETAIL_MAX];
	size_t i;

	for (i = 0; i < cl->n; i++) {
		struct ps *p = &cl->ps[i];

		if (p->failed || !(p->rq.n > 1 || (p->rq.n && p->rq.applied)) ||
		    tfj_psclient_pieces_of(cl, i))
			continue;
		snprintf(d, sizeof(d), "ps %zu (%s) takes no push in pieces now (%s): the push "
			 "goes again whole", i, p->host, p->known ? "it announced no piece_parts" :
			 "its stream broke since it was asked");
		note(err, TFJ_EUNAVAIL, d);
		p->failed = 1;
	}
}

/* Reads what ended between calls: streams of a ps that went away are released. */
static void reap(struct tfj_psclient *cl)
{
	size_t i;

	for (;;) {
		grpc_event ev = grpc_completion_queue_next(cl->cq, gpr_inf_past(GPR_CLOCK_MONOTONIC),
							   NULL);

		if (ev.type != GRPC_OP_COMPLETE)
			break;
		dispatch(ev);
	}
	for (i = 0; i < cl->n; i++) {
		cl->ps[i].failed = 0;
		if (tfj_clistream_reap(&cl->ps[i].stream))
			cl->ps[i].known = 0;
	}
}

/* Ends a call: waits for gRPC to let go of the caller's tensors; 0 or the first error. */
static int call_end(struct tfj_psclient *cl, struct call_err *err)
{
	if (tfj_wire_lease_wait(&cl->lease, 10000) != 0)
		note(err, TFJ_EINTERNAL, tfj_err_detail());
	if (err->rc)
		return tfj_err_set(err->rc, "%s", err->detail);
	return 0;
}

int tfj_psclient_ask(struct tfj_psclient *cl, const ProtobufCMessage *const *want,
		     double timeout_s)
{
	gpr_timespec deadline = tfj_grpc_deadline_ms((int64_t)(timeout_s * 1000));
	Tfj__Runtime__V1__StatusRequest q = TFJ__RUNTIME__V1__STATUS_REQUEST__INIT;
	const ProtobufCMessage *one = &q.base;
	struct call_err err = { 0 };
	size_t i, n = 0;

	reap(cl);
	for (i = 0; i < cl->n; i++) {
		struct ps *p = &cl->ps[i];

		memset(&p->rq, 0, sizeof(p->rq));
		if ((!want || want[i]) && !p->known) {
			p->rq.list = &one;
			p->rq.n = 1;
			n++;
		}
	}
	if (n)
		exchange(cl, TFJ_RPC_STATUS, NULL, deadline, &err);
	return call_end(cl, &err);
}

/* tfj_psclient_call() and tfj_psclient_call_parts(), once ps[i].rq is set. */
static int call(struct tfj_psclient *cl, enum tfj_rpc_method method, ProtobufCMessage **resps,
		double timeout_s)
{
	gpr_timespec deadline = tfj_grpc_deadline_ms((int64_t)(timeout_s * 1000));
	struct call_err err = { 0 };
	size_t i;

	for (i = 0; i < cl->n; i++)
		resps[i] = NULL;
	refuse_parts(cl, &err);
	exchange(cl, method, resps, deadline, &err);
	/* The caller may reuse its tensors once gRPC has let go of them. */
	return call_end(cl, &err);
}

int tfj_psclient_call(struct tfj_psclient *cl, enum tfj_rpc_method method,
		      const ProtobufCMessage *const *reqs, ProtobufCMessage **resps,
		      double timeout_s)
{
	size_t i;

	/* Streams that ended between calls (a ps went away) are reopened by exchange(). */
	reap(cl);
	for (i = 0; i < cl->n; i++) {
		struct ps *p = &cl->ps[i];

		p->rq.list = &reqs[i];
		p->rq.n = reqs[i] != NULL;
		p->rq.applied = NULL;
	}
	return call(cl, method, resps, timeout_s);
}

int tfj_psclient_call_parts(struct tfj_psclient *cl, enum tfj_rpc_method method,
			    const ProtobufCMessage *const *const *parts, const size_t *nparts,
			    unsigned char *const *applied, ProtobufCMessage **resps,
			    double timeout_s)
{
	size_t i;

	reap(cl);
	for (i = 0; i < cl->n; i++) {
		struct ps *p = &cl->ps[i];

		p->rq.list = parts[i];
		p->rq.n = parts[i] ? nparts[i] : 0;
		p->rq.applied = applied && p->rq.n ? applied[i] : NULL;
	}
	return call(cl, method, resps, timeout_s);
}

int tfj_psclient_streaming_of(const struct tfj_psclient *cl, size_t i)
{
	return cl->ps[i].known;
}

int tfj_psclient_pieces_of(const struct tfj_psclient *cl, size_t i)
{
	return cl->ps[i].known && cl->ps[i].pieces;
}
