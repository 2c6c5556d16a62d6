/*
 * psclient.c - calls to every ps task at once, unary (v1) or each over its
 * stream (v2, pscstream.c); see psclient.h.
 */
#include "psclient.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/grpc.h>
#include <tfj/log.h>

#include "psauth.h"
#include "pstls.h"
#include "psframe.h"
#include "pscstream.h"
#include "wire.h"

/* Least time one connection attempt to a ps gets (see tfj_psclient_new). */
#define PS_CONNECT_MIN_MS 2000

/* What a completion of the client's queue was (the first member of every tag). */
enum tag_kind { TAG_UNARY = 1 }; /* the streams' tags: pscstream.h */

/* A unary call (protocol v1). */
struct rpc {
	int kind; /* TAG_UNARY */
	int shard;
	grpc_byte_buffer *req;
	struct tfj_grpc_call c; /* c.reply: the answer */
	int done;
};

struct tfj_psclient {
	size_t n;
	char **hosts;
	grpc_channel **ch;
	grpc_completion_queue *cq;
	struct tfj_wire_arena *arenas;
	struct tfj_wire_msg *msgs;   /* last decoded answer per shard */
	grpc_byte_buffer **kept;     /* its payload, which msgs[i] points into */
	struct rpc *rpcs;
	struct tfj_pscstream *streams;
	int *proto;                  /* per shard: 0 not negotiated yet, 1, 2 */
	int *pieces;                 /* per shard: its last Status announced piece_parts */
	int *use;                    /* per shard, this call: 1 unary, 2 stream */
	int forced;                  /* --protocol: 0 auto, 1, 2 */
	struct tfj_psclient_stats stats;
	struct tfj_wire_lease lease;
	struct tfj_wire_lease *zc;   /* &lease, or NULL with TFJ_NOZC set (copy instead) */
	struct tfj_psauth auth;      /* the job's ps secret, sent on every call */
	struct tfj_pstls tls;        /* the job's CA: the ps is verified against it */
};

size_t tfj_psclient_nshards(const struct tfj_psclient *cl)
{
	return cl->n;
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
	cl->ch = calloc(cl->n, sizeof(*cl->ch));
	cl->hosts = calloc(cl->n, sizeof(*cl->hosts));
	cl->arenas = calloc(cl->n, sizeof(*cl->arenas));
	cl->rpcs = calloc(cl->n, sizeof(*cl->rpcs));
	cl->msgs = calloc(cl->n, sizeof(*cl->msgs));
	cl->kept = calloc(cl->n, sizeof(*cl->kept));
	cl->streams = calloc(cl->n, sizeof(*cl->streams));
	cl->proto = calloc(cl->n, sizeof(*cl->proto));
	cl->pieces = calloc(cl->n, sizeof(*cl->pieces));
	cl->use = calloc(cl->n, sizeof(*cl->use));
	cl->forced = cfg->protocol;
	if (!cl->ch || !cl->hosts || !cl->arenas || !cl->rpcs || !cl->msgs || !cl->kept ||
	    !cl->streams || !cl->proto || !cl->pieces || !cl->use) {
		tfj_psclient_free(cl);
		return tfj_err_set(TFJ_ENOMEM, "psclient: out of memory");
	}
	/*
	 * Message caps explicit on both sides; reconnect backoff short, since a
	 * restarted ps should be found again within a second; gRPC's own retries
	 * off because the runtime retries whole steps with its own deadline.
	 * gRPC gives each connection attempt (TCP connect, HTTP/2 and any TLS
	 * handshake) max(minimum backoff, current backoff) before abandoning
	 * it, and a call fails at once while the channel is in transient
	 * failure. With a 100 ms minimum, a worker whose ps answered slowly (a
	 * small CPU limit, a congested path) failed its calls until the
	 * backoff had grown, and never got through to a ps slower than the
	 * 1 s maximum; an attempt gets PS_CONNECT_MIN_MS instead. A refused
	 * connection (the ps not up yet, or restarting on the same address)
	 * still fails at once and is retried after the short backoff; only an
	 * address that swallows packets (a deleted pod's IP) waits the whole
	 * attempt out.
	 */
	tfj_grpc_args_init(&args);
	tfj_wire_transport_args(&args, cfg->max_message_bytes);
	tfj_grpc_args_reconnect(&args, 100, PS_CONNECT_MIN_MS, 1000);
	if (cl->tls.on && cl->tls.server_name)
		tfj_grpc_args_str(&args, GRPC_SSL_TARGET_NAME_OVERRIDE_ARG, cl->tls.server_name);
	for (i = 0; i < cl->n; i++) {
		const char *h = tfj_rtconfig_host(cfg, "ps", i);

		cl->hosts[i] = strdup(h ? h : "");
		/* With TLS on, gRPC checks the ps's certificate for the host it dials. */
		rc = cl->hosts[i] ? tfj_grpc_channel_new(&cl->ch[i], cl->hosts[i],
							 cl->tls.on ? cl->tls.ca_pem : NULL, &args)
				  : -1;
		tfj_wire_arena_init(&cl->arenas[i], 2 * cfg->max_message_bytes + (1u << 20));
		if (rc) {
			tfj_psclient_free(cl);
			return tfj_err_set(TFJ_ENOMEM, "psclient: cannot create channel %zu", i);
		}
	}
	cl->cq = grpc_completion_queue_create_for_next(NULL);
	cl->zc = getenv("TFJ_NOZC") ? NULL : &cl->lease;
	for (i = 0; i < cl->n; i++)
		tfj_pscstream_init(&cl->streams[i], i, cl->hosts[i], cl->ch[i], cl->cq,
				   cl->auth.secret, cl->zc, &cl->arenas[i]);
	*out = cl;
	return 0;
}

static void dispatch(grpc_event ev);

/* Ends every open stream (cancel, then wait for its batches) and releases it. */
static void streams_close(struct tfj_psclient *cl)
{
	size_t i;
	int busy;

	if (!cl->streams || !cl->cq)
		return;
	for (i = 0; i < cl->n; i++)
		if (cl->streams[i].open && !cl->streams[i].ended)
			tfj_pscstream_cancel(&cl->streams[i]);
	do {
		busy = 0;
		for (i = 0; i < cl->n; i++)
			busy |= tfj_pscstream_busy(&cl->streams[i]);
		if (busy)
			dispatch(grpc_completion_queue_next(
				cl->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL));
	} while (busy);
}

void tfj_psclient_free(struct tfj_psclient *cl)
{
	size_t i;

	struct tfj_psclient_stats st;

	if (!cl)
		return;
	tfj_psclient_get_stats(&st, cl);
	if (st.frames || st.unary || st.status_unary)
		tfj_log_fmt(TFJ_LOG_INFO, "psclient: %" PRIu64 " requests over streams (protocol v2), "
			    "%" PRIu64 " unary calls (v1) besides %" PRIu64 " unary Status, %" PRIu64
			    " streams opened, %" PRIu64 " fell back to v1", st.frames, st.unary,
			    st.status_unary, st.streams_opened, st.fallbacks);
	streams_close(cl);
	/* No call is in flight between tfj_psclient_call()s: the queue drains at once. */
	tfj_grpc_cq_destroy(cl->cq);
	for (i = 0; i < cl->n; i++) {
		if (cl->ch && cl->ch[i])
			grpc_channel_destroy(cl->ch[i]);
		if (cl->hosts)
			free(cl->hosts[i]);
		if (cl->arenas)
			tfj_wire_arena_free(&cl->arenas[i]);
		if (cl->kept && cl->kept[i])
			grpc_byte_buffer_destroy(cl->kept[i]);
	}
	free(cl->ch);
	free(cl->hosts);
	free(cl->arenas);
	for (i = 0; cl->streams && i < cl->n; i++)
		tfj_pscstream_free(&cl->streams[i]);
	free(cl->streams);
	free(cl->proto);
	free(cl->pieces);
	free(cl->use);
	free(cl->rpcs);
	free(cl->msgs);
	free(cl->kept);
	tfj_psauth_free(&cl->auth);
	tfj_pstls_free(&cl->tls);
	free(cl);
}

void tfj_psclient_get_stats(struct tfj_psclient_stats *out, const struct tfj_psclient *cl)
{
	size_t i;

	*out = cl->stats;
	for (i = 0; cl->streams && i < cl->n; i++) {
		out->frames += cl->streams[i].frames;
		out->streams_opened += cl->streams[i].opened;
	}
}

const struct tfj_wire_msg *tfj_psclient_tensors(const struct tfj_psclient *cl, size_t i)
{
	return &cl->msgs[i];
}

int tfj_psclient_err_of(grpc_status_code st)
{
	switch (st) {
	case GRPC_STATUS_OK: return 0;
	case GRPC_STATUS_UNAVAILABLE:
	case GRPC_STATUS_DEADLINE_EXCEEDED:
	case GRPC_STATUS_RESOURCE_EXHAUSTED:
	case GRPC_STATUS_ABORTED:
	case GRPC_STATUS_CANCELLED:
		return TFJ_EUNAVAIL;
	case GRPC_STATUS_FAILED_PRECONDITION: return TFJ_ECONFLICT;
	case GRPC_STATUS_OUT_OF_RANGE: return TFJ_ENUMERIC;
	/* The ps refused our job secret: permanent, a retry sends the same one. */
	case GRPC_STATUS_UNAUTHENTICATED: return TFJ_EAUTH;
	default: return TFJ_EINTERNAL;
	}
}


static int unary_start(struct tfj_psclient *cl, struct rpc *r, enum tfj_rpc_method method,
		       const ProtobufCMessage *req, gpr_timespec deadline)
{
	int rc;

	r->kind = TAG_UNARY;
	rc = tfj_wire_encode(&r->req, req, cl->zc);
	if (rc)
		return rc;
	return tfj_grpc_call_start(&r->c, cl->ch[r->shard], cl->cq, tfj_rpc_methods[method].path,
				   cl->auth.secret, r->req, deadline, r);
}

static void finish_rpc(struct rpc *r)
{
	if (r->req)
		grpc_byte_buffer_destroy(r->req);
	tfj_grpc_call_end(&r->c);
	memset(r, 0, sizeof(*r));
}

/* Records one completion of the client's queue. */
static void dispatch(grpc_event ev)
{
	if (ev.type != GRPC_OP_COMPLETE)
		return;
	if (*(int *)ev.tag == TAG_UNARY)
		((struct rpc *)ev.tag)->done = 1;
	else
		tfj_pscstream_complete(ev.tag, ev.success);
}

static int shard_done(const struct tfj_psclient *cl, size_t i)
{
	if (cl->use[i] == 1)
		return cl->rpcs[i].done || !cl->rpcs[i].c.call;
	if (cl->use[i] == 2)
		return tfj_pscstream_done(&cl->streams[i]);
	return 1;
}

/* Waits for every request of this pass; streams past the deadline are cancelled. */
static void wait_all(struct tfj_psclient *cl, gpr_timespec deadline, int *timed_out)
{
	size_t i;
	int waiting;

	for (;;) {
		grpc_event ev;

		waiting = 0;
		for (i = 0; i < cl->n; i++)
			if (!shard_done(cl, i))
				waiting = 1;
		if (!waiting)
			return;
		/* Unary calls end at their own deadline; a stream has none of its own. */
		ev = grpc_completion_queue_next(cl->cq, deadline, NULL);
		if (ev.type == GRPC_QUEUE_TIMEOUT) {
			for (i = 0; i < cl->n; i++)
				if (cl->use[i] == 2 && !shard_done(cl, i)) {
					timed_out[i] = 1;
					tfj_pscstream_cancel(&cl->streams[i]);
				}
			deadline = gpr_inf_future(GPR_CLOCK_MONOTONIC);
			continue;
		}
		dispatch(ev);
	}
}

/* Negotiation: a Status answer says which protocol the ps serves. */
static void negotiate(struct tfj_psclient *cl, size_t i, const ProtobufCMessage *resp)
{
	const Tfj__Runtime__V1__StatusResponse *r = (const void *)resp;
	int p = r->protocol >= TFJ_PSFRAME_PROTOCOL ? 2 : 1;

	/* Whether it takes parts cut anywhere: asked again with every Status, like the version. */
	cl->pieces[i] = r->partial_push && r->piece_parts;
	if (cl->forced || cl->proto[i] == p)
		return;
	cl->proto[i] = p;
	tfj_log_fmt(TFJ_LOG_INFO, "ps %zu (%s): protocol v%d%s", i, cl->hosts[i], p,
		    p == 2 ? " (one stream)" : " (unary calls; the ps has no stream)");
}

/*
 * The outcome of shard i's request on its stream: 0 with resps[i] set, an
 * error with `detail`, or 1 when the ps turned out to have no stream and
 * the request must go again as a unary call (auto mode; a request in parts
 * cannot, and fails with TFJ_EUNAVAIL so that the caller sends it whole).
 */
static int stream_result(struct tfj_psclient *cl, size_t i, enum tfj_rpc_method method,
			 ProtobufCMessage **resps, int timed_out, char *detail, size_t cap)
{
	struct tfj_pscstream *ps = &cl->streams[i];
	grpc_status_code ended;
	int parts = ps->nparts > 0, e;

	e = tfj_pscstream_result(ps, method, timed_out, &cl->kept[i], &cl->msgs[i], &ended,
				 detail, cap);
	if (!e)
		resps[i] = cl->msgs[i].head;
	if (ended == GRPC_STATUS_OK || cl->forced)
		return e;
	cl->proto[i] = 0; /* the ps may come back as another version: ask again */
	if (ended != GRPC_STATUS_UNIMPLEMENTED)
		return e;
	/* A ps without the stream never saw the request: it goes again, unary. */
	cl->proto[i] = 1;
	cl->stats.fallbacks++;
	tfj_log_fmt(TFJ_LOG_INFO, "ps %zu (%s): no stream (UNIMPLEMENTED); protocol v1", i,
		    cl->hosts[i]);
	return parts ? TFJ_EUNAVAIL : 1;
}

/* The outcome of shard i's unary call, as stream_result() (never 1). */
static int unary_result(struct tfj_psclient *cl, size_t i, enum tfj_rpc_method method,
			ProtobufCMessage **resps, char *detail, size_t cap)
{
	struct rpc *r = &cl->rpcs[i];
	int e;

	if (!r->c.call)
		return 0;
	if (method == TFJ_RPC_STATUS)
		cl->stats.status_unary++;
	else
		cl->stats.unary++;
	e = tfj_psclient_err_of(r->c.status);
	if (!e) {
		/* Tensors stay in the reply's slices (no copy here). */
		e = tfj_wire_decode_split(&cl->msgs[i], tfj_rpc_methods[method].resp, r->c.reply,
					  &cl->arenas[i]);
		resps[i] = cl->msgs[i].head;
		if (e)
			e = TFJ_EINTERNAL;
		/* The decoded tensors point into the payload: keep it to the next call. */
		cl->kept[i] = r->c.reply;
		r->c.reply = NULL;
	}
	if (e)
		snprintf(detail, cap, "ps %zu (%s) %s: %s: %.*s", i, cl->hosts[i],
			 tfj_rpc_methods[method].path, tfj_grpc_status_name(r->c.status),
			 (int)GRPC_SLICE_LENGTH(r->c.details),
			 (const char *)GRPC_SLICE_START_PTR(r->c.details));
	finish_rpc(r);
	return e;
}

/*
 * Asks shard i which protocol it serves (a unary Status): done before the
 * first stream to a ps and again after a stream broke, since the ps may
 * have come back as another version. 0, or the call's error with `detail`.
 */
static int renegotiate(struct tfj_psclient *cl, size_t i, gpr_timespec deadline, char *detail,
		       size_t cap)
{
	Tfj__Runtime__V1__StatusRequest q = TFJ__RUNTIME__V1__STATUS_REQUEST__INIT;
	Tfj__Runtime__V1__StatusResponse *r;
	struct tfj_grpc_result res;
	uint8_t buf[64];
	size_t n;
	int rc;

	q.protocol = TFJ_PSFRAME_PROTOCOL;
	n = protobuf_c_message_pack(&q.base, buf);
	rc = tfj_grpc_unary(&res, cl->ch[i], tfj_rpc_methods[TFJ_RPC_STATUS].path,
			    cl->auth.secret, buf, n, deadline, 1 << 16);
	cl->stats.status_unary++;
	if (!rc && res.status != GRPC_STATUS_OK)
		rc = tfj_psclient_err_of(res.status);
	if (rc) {
		snprintf(detail, cap, "ps %zu (%s) %s: %s: %s", i, cl->hosts[i],
			 tfj_rpc_methods[TFJ_RPC_STATUS].path, tfj_grpc_status_name(res.status),
			 res.details ? res.details : tfj_err_detail());
		tfj_grpc_result_free(&res);
		return rc;
	}
	r = tfj__runtime__v1__status_response__unpack(NULL, res.reply_len, res.reply);
	tfj_grpc_result_free(&res);
	if (!r) {
		snprintf(detail, cap, "ps %zu (%s): malformed StatusResponse", i, cl->hosts[i]);
		return TFJ_EINTERNAL;
	}
	negotiate(cl, i, &r->base);
	tfj__runtime__v1__status_response__free_unpacked(r, NULL);
	return 0;
}

/* Which transport shard i's request takes: 1 unary, 2 the stream. */
static int choose(const struct tfj_psclient *cl, size_t i, enum tfj_rpc_method method)
{
	if (cl->forced)
		return cl->forced;
	/* Status is the negotiation itself, so it is always understood: unary. */
	if (method == TFJ_RPC_STATUS || cl->proto[i] != 2)
		return 1;
	return 2;
}

/*
 * Shard i's requests of this call: nparts[i] parts, or (nparts NULL) the one
 * request reqs[i]; none when it is NULL.
 */
static size_t shard_parts(const ProtobufCMessage *const **list, const ProtobufCMessage *const *reqs,
			  const ProtobufCMessage *const *const *parts, const size_t *nparts,
			  size_t i)
{
	if (nparts) {
		*list = parts[i];
		return parts[i] ? nparts[i] : 0;
	}
	*list = &reqs[i];
	return reqs[i] != NULL;
}

/* tfj_psclient_call() and tfj_psclient_call_parts(): see shard_parts(). */
static int call(struct tfj_psclient *cl, enum tfj_rpc_method method,
		const ProtobufCMessage *const *reqs, const ProtobufCMessage *const *const *parts,
		const size_t *nparts, unsigned char *const *applied, ProtobufCMessage **resps,
		double timeout_s)
{
	gpr_timespec deadline = tfj_grpc_deadline_ms((int64_t)(timeout_s * 1000));
	size_t i;
	int rc = 0, first = 0, pass, again = 0;
	int timed_out[64], *tout = timed_out;
	char detail[TFJ_ERR_DETAIL_MAX], d[TFJ_ERR_DETAIL_MAX];

	detail[0] = '\0';
	if (cl->n > sizeof(timed_out) / sizeof(timed_out[0])) {
		tout = calloc(cl->n, sizeof(*tout));
		if (!tout)
			return tfj_err_set(TFJ_ENOMEM, "psclient: out of memory");
	}
	/* Streams that ended between calls (a ps went away) are reopened below. */
	for (;;) {
		grpc_event ev = grpc_completion_queue_next(cl->cq, gpr_inf_past(GPR_CLOCK_MONOTONIC),
							   NULL);

		if (ev.type != GRPC_OP_COMPLETE)
			break;
		dispatch(ev);
	}
	for (i = 0; i < cl->n; i++) {
		const ProtobufCMessage *const *list;

		resps[i] = NULL;
		cl->use[i] = 0;
		if (tfj_pscstream_reap(&cl->streams[i]) && !cl->forced)
			cl->proto[i] = 0;
		if (!shard_parts(&list, reqs, parts, nparts, i))
			continue;
		/* Not negotiated yet (or the stream broke since): ask first. */
		if (!cl->forced && !cl->proto[i] && method != TFJ_RPC_STATUS) {
			rc = renegotiate(cl, i, deadline, d, sizeof(d));
			if (rc) {
				if (!first) {
					first = rc;
					snprintf(detail, sizeof(detail), "%s", d);
				}
				continue;
			}
		}
		cl->use[i] = choose(cl, i, method);
	}
	/*
	 * A shard that cannot take its parts now (no stream, or a ps that
	 * takes no pieces, as negotiated again above after a stream broke)
	 * is sent nothing and fails the call, so that the caller sends it the
	 * request whole; the other shards get theirs (the caller keeps which
	 * shards answered, pushtrack.h, and does not send them it again).
	 */
	for (i = 0; nparts && i < cl->n; i++) {
		const ProtobufCMessage *const *list;
		size_t np = shard_parts(&list, reqs, parts, nparts, i);

		if (!cl->use[i] || !(np > 1 || (np && applied && applied[i])) ||
		    (cl->use[i] == 2 && cl->pieces[i]))
			continue;
		if (!first) {
			first = TFJ_EUNAVAIL;
			snprintf(detail, sizeof(detail), "ps %zu (%s) takes no push in pieces now "
				 "(%s): the push goes again whole", i, cl->hosts[i],
				 cl->use[i] == 2 ? "it announced no piece_parts" : "no stream");
		}
		cl->use[i] = 0;
	}
	/* Pass 1 goes as chosen; pass 2 only repeats, unary, what a ps without the stream refused. */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < cl->n; i++) {
			const ProtobufCMessage *const *list;
			size_t np = shard_parts(&list, reqs, parts, nparts, i);

			memset(&cl->rpcs[i], 0, sizeof(cl->rpcs[i]));
			cl->rpcs[i].shard = (int)i;
			tout[i] = 0;
			if (!cl->use[i])
				continue;
			tfj_wire_arena_reset(&cl->arenas[i]);
			memset(&cl->msgs[i], 0, sizeof(cl->msgs[i]));
			if (cl->kept[i])
				grpc_byte_buffer_destroy(cl->kept[i]);
			cl->kept[i] = NULL;
			if (cl->use[i] == 2 && np > 1)
				rc = tfj_pscstream_start_parts(&cl->streams[i], method, list, np,
							       applied ? applied[i] : NULL);
			else if (cl->use[i] == 2)
				rc = tfj_pscstream_start(&cl->streams[i], method, list[0]);
			else
				rc = unary_start(cl, &cl->rpcs[i], method, list[0], deadline);
			if (rc) {
				if (!first) {
					first = rc;
					snprintf(detail, sizeof(detail), "%s", tfj_err_detail());
				}
				if (cl->use[i] == 1)
					finish_rpc(&cl->rpcs[i]);
				else
					tfj_pscstream_cancel(&cl->streams[i]);
				if (cl->use[i] == 1 || !cl->streams[i].open)
					cl->use[i] = 0;
			}
		}
		wait_all(cl, deadline, tout);
		again = 0;
		for (i = 0; i < cl->n; i++) {
			int e = 0, use = cl->use[i];

			cl->use[i] = 0;
			if (use == 2) {
				e = stream_result(cl, i, method, resps, tout[i], d, sizeof(d));
				if (e == 1) {
					cl->use[i] = 1;
					again = 1;
					continue;
				}
			} else if (use == 1) {
				e = unary_result(cl, i, method, resps, d, sizeof(d));
			}
			if (!e && use && method == TFJ_RPC_STATUS && resps[i])
				negotiate(cl, i, resps[i]);
			/* Answered: its last part (or its only one) was applied. */
			if (!e && use && applied && applied[i] && nparts[i])
				applied[i][nparts[i] - 1] = 1;
			if (e && !first) {
				first = e;
				snprintf(detail, sizeof(detail), "%s", d);
			}
		}
		if (!again)
			break;
	}
	if (tout != timed_out)
		free(tout);
	/* The caller may reuse its tensors once gRPC has let go of them. */
	if (tfj_wire_lease_wait(&cl->lease, 10000) != 0 && !first) {
		first = TFJ_EINTERNAL;
		snprintf(detail, sizeof(detail), "%s", tfj_err_detail());
	}
	if (first)
		return tfj_err_set(first, "%s", detail);
	return 0;
}

int tfj_psclient_call(struct tfj_psclient *cl, enum tfj_rpc_method method,
		      const ProtobufCMessage *const *reqs, ProtobufCMessage **resps,
		      double timeout_s)
{
	return call(cl, method, reqs, NULL, NULL, NULL, resps, timeout_s);
}

int tfj_psclient_call_parts(struct tfj_psclient *cl, enum tfj_rpc_method method,
			    const ProtobufCMessage *const *const *parts, const size_t *nparts,
			    unsigned char *const *applied, ProtobufCMessage **resps,
			    double timeout_s)
{
	return call(cl, method, NULL, parts, nparts, applied, resps, timeout_s);
}

int tfj_psclient_streaming_of(const struct tfj_psclient *cl, size_t i)
{
	return cl->forced == 2 || cl->proto[i] == 2;
}

int tfj_psclient_pieces_of(const struct tfj_psclient *cl, size_t i)
{
	return cl->pieces[i] && tfj_psclient_streaming_of(cl, i);
}
