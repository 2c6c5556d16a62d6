/*
 * psserver.c - gRPC server of one parameter server shard (psserver.h).
 */
#include "psserver.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/support/alloc.h>

#include <tfj/err.h>
#include <tfj/grpc.h>
#include <tfj/log.h>

#include "checkpoint.h"
#include "ckptdir.h"
#include <tfj/exitcode.h>
#include "layout.h"
#include "psauth.h"
#include "psframe.h"
#include "rpcnames.h"
#include "shard.h"
#include "wire.h"

volatile sig_atomic_t tfj_stop_requested;

#define MAX_SNAPSHOTS 64
#define MAX_PULL_WAIT_MS 30000

enum tag_kind {
	TAG_NEW_CALL = 1, TAG_CALL_DONE, TAG_SHUTDOWN,
	/* Protocol v2: a new stream, and the batches of one (struct stag). */
	TAG_NEW_STREAM, TAG_STREAM_RECV, TAG_STREAM_SEND, TAG_STREAM_CLOSED, TAG_STREAM_STATUS,
	/* A call of a method this ps does not serve. */
	TAG_NEW_UNKNOWN
};

struct slot {
	int kind;                /* TAG_NEW_CALL */
	int method;              /* enum tfj_rpc_method */
	void *reg;               /* registered method handle */
	struct tfj_grpc_incoming in;
};

/*
 * A parameter buffer. The shard's live parameters are one of them; a Pull
 * is answered by sending the live buffer itself (zero-copy slices), and an
 * update that finds the live buffer still referenced by such an answer
 * first moves the live values to a free buffer (copy on write, cow()). So
 * a Pull costs no copy, and an update costs one only when it overlaps a
 * Pull still being sent.
 */
struct snapshot {
	float *data;
	int users;                  /* calls answering from it (loop thread only) */
	struct tfj_wire_lease lease; /* slices gRPC still holds */
};

struct stream;

/* A batch of a stream: the tag names the stream and what completed. */
struct stag {
	int kind;
	struct stream *st;
};

/*
 * One client's stream (protocol v2). Requests arrive one frame at a time
 * (one receive outstanding); answers queue in `q` and go out one send at a
 * time, in the order they were made (a parked Pull answers later, so
 * answers may leave in another order than their requests came; the ids
 * pair them). `refs` counts the outstanding batches and the requests not
 * yet answered (ctx), so the stream outlives everything that names it.
 */
struct stream {
	grpc_call *call;
	struct stag recv_tag, send_tag, closed_tag, status_tag;
	grpc_byte_buffer *rx;
	struct ctx *q, *q_tail;   /* answers to send; q is on the wire while `sending` */
	int sending, half_closed, status_sent, closed, cancelled;
	int refs;
};

/* The slot that takes new streams. */
struct stream_slot {
	int kind; /* TAG_NEW_STREAM */
	void *reg;
	struct tfj_grpc_incoming in;
};

/*
 * Calls of methods not registered here. gRPC's core leaves them waiting
 * until the server asks for them, so without this slot a client calling a
 * method this ps lacks (a newer client's stream, with --protocol 1 the v2
 * stream) would wait until its deadline; with it, the client is answered
 * UNIMPLEMENTED at once and can fall back (psclient.h).
 */
struct unknown_slot {
	int kind; /* TAG_NEW_UNKNOWN */
	grpc_call *call;
	grpc_call_details details;
	grpc_metadata_array md;
};

struct ctx {
	int kind; /* TAG_CALL_DONE */
	grpc_call *call;
	/* A request that came on a stream (call NULL): answered as a frame. */
	struct stream *st;
	uint64_t id;
	uint32_t method;
	grpc_byte_buffer *resp;
	struct snapshot *snap;
	int cancelled;
	/* Parked Pull. */
	int with_state;
	int64_t min_step;
	gpr_timespec wait_until;
	struct ctx *next;
};

struct server {
	const struct tfj_rtconfig *cfg;
	struct tfj_layout plan;
	struct tfj_shard shard;
	grpc_server *srv;
	grpc_completion_queue *cq;
	struct slot slots[TFJ_RPC_NMETHODS];
	struct stream_slot sslot;     /* reg NULL: v2 off (--protocol 1) */
	struct unknown_slot uslot;
	uint64_t streams_opened;
	uint64_t stream_frames;
	uint64_t cow_copies;         /* updates that moved the live values first (cow()) */
	struct tfj_wire_arena arena;
	struct snapshot snaps[MAX_SNAPSHOTS];
	struct ctx *parked;
	Tfj__Runtime__V1__Slice *smsgs;
	Tfj__Runtime__V1__Slice **sptrs;
	Tfj__Runtime__V1__Slice *stmsgs;  /* optimizer state, for Pulls with_state */
	Tfj__Runtime__V1__Slice **stptrs;
	int inflight;
	int finished_logged;
	gpr_timespec finish_at;
	int shutdown_kind; /* TAG_SHUTDOWN; its address is the shutdown tag */
	int64_t last_logged_step;
	struct tfj_psauth auth;    /* the job's ps secret (off when not configured) */
};

static int arm_slot(struct server *s, struct slot *sl)
{
	return tfj_grpc_incoming_request(&sl->in, s->srv, sl->reg, s->cq, sl);
}

static void stream_respond(struct server *s, struct ctx *c, grpc_status_code code,
			   const char *detail, const ProtobufCMessage *msg);

/* Sends the answer (msg may be NULL for an error) and closes the call. */
static void respond(struct server *s, struct ctx *c, grpc_status_code code, const char *detail,
		    const ProtobufCMessage *msg)
{
	if (c->st) {
		stream_respond(s, c, code, detail, msg);
		return;
	}
	if (msg && tfj_wire_encode(&c->resp, msg, c->snap ? &c->snap->lease : NULL) != 0) {
		code = GRPC_STATUS_RESOURCE_EXHAUSTED;
		detail = "cannot encode the response";
		c->resp = NULL;
	}
	c->kind = TAG_CALL_DONE;
	if (tfj_grpc_reply(c->call, code, detail, c->resp, &c->cancelled, c) != 0) {
		tfj_log_warn("cannot answer a call", "error", tfj_err_detail());
		if (c->resp)
			grpc_byte_buffer_destroy(c->resp);
		if (c->snap)
			c->snap->users--;
		grpc_call_unref(c->call);
		free(c);
		return;
	}
	s->inflight++;
}

static void call_done(struct server *s, struct ctx *c)
{
	if (c->resp)
		grpc_byte_buffer_destroy(c->resp);
	if (c->snap)
		c->snap->users--;
	grpc_call_unref(c->call);
	free(c);
	s->inflight--;
}

/* The pool entry holding the live parameters (NULL before the pool adopted them). */
static struct snapshot *live_buf(struct server *s)
{
	size_t i;

	for (i = 0; i < MAX_SNAPSHOTS; i++)
		if (s->snaps[i].data && s->snaps[i].data == s->shard.param)
			return &s->snaps[i];
	return NULL;
}

static int buf_free(struct snapshot *sn)
{
	return sn->users == 0 && tfj_wire_lease_busy(&sn->lease) == 0;
}

/* The shard's prewrite hook: copy on write when a Pull still sends the live buffer. */
static int cow(struct tfj_shard *sh, void *ud)
{
	struct server *s = ud;
	struct snapshot *cur = live_buf(s), *fr = NULL;
	size_t i;

	if (!cur || buf_free(cur))
		return 0;
	for (i = 0; i < MAX_SNAPSHOTS; i++) {
		struct snapshot *sn = &s->snaps[i];

		if (sn == cur || !buf_free(sn))
			continue;
		if (!fr || (!fr->data && sn->data))
			fr = sn;
	}
	if (!fr)
		return tfj_err_set(TFJ_EUNAVAIL, "ps: too many pulls in flight to apply an update");
	if (!fr->data) {
		fr->data = malloc(sh->n * sizeof(float));
		if (!fr->data)
			return tfj_err_set(TFJ_ENOMEM, "ps: out of memory");
	}
	memcpy(fr->data, sh->param, sh->n * sizeof(float));
	sh->param = fr->data;
	s->cow_copies++;
	return 0;
}

static void answer_pull(struct server *s, struct ctx *c)
{
	Tfj__Runtime__V1__PullResponse r = TFJ__RUNTIME__V1__PULL_RESPONSE__INIT;
	struct snapshot *sn = live_buf(s);

	if (!sn) {
		respond(s, c, GRPC_STATUS_INTERNAL, "ps: parameters not in the buffer pool", NULL);
		return;
	}
	tfj_shard_describe(&s->shard, s->smsgs, s->sptrs, sn->data);
	r.step = s->shard.step;
	r.finished = s->shard.finished;
	r.n_slices = s->shard.nslices;
	r.slices = s->sptrs;
	if (c->with_state) {
		/*
		 * A checkpoint's Pull (rare): the state has no copy-on-write
		 * pool, so the whole answer is copied into gRPC's slices while
		 * it is encoded (no lease) and nothing here is referenced later.
		 */
		r.n_state = tfj_shard_describe_state(&s->shard, s->stmsgs, s->stptrs);
		r.state = s->stptrs;
		r.optim_steps = s->shard.opt_t;
		respond(s, c, GRPC_STATUS_OK, NULL, &r.base);
		return;
	}
	sn->users++;
	c->snap = sn;
	respond(s, c, GRPC_STATUS_OK, NULL, &r.base);
}

/* Answers parked Pulls whose step arrived, whose wait ran out, or all (force). */
static void flush_parked(struct server *s, int force)
{
	struct ctx **pp = &s->parked;
	gpr_timespec now = tfj_grpc_now();

	while (*pp) {
		struct ctx *c = *pp;

		if (force || s->shard.finished || s->shard.step >= c->min_step ||
		    gpr_time_cmp(now, c->wait_until) >= 0) {
			*pp = c->next;
			if (force && !s->shard.initialized)
				respond(s, c, GRPC_STATUS_UNAVAILABLE, "ps: shutting down", NULL);
			else
				answer_pull(s, c);
		} else {
			pp = &c->next;
		}
	}
}

static grpc_status_code status_of(int rc)
{
	switch (rc) {
	case TFJ_EUNAVAIL: return GRPC_STATUS_UNAVAILABLE;
	case TFJ_ENUMERIC: return GRPC_STATUS_OUT_OF_RANGE;
	case TFJ_ECONFLICT: return GRPC_STATUS_FAILED_PRECONDITION;
	case TFJ_ENOMEM: case TFJ_ETOOBIG: return GRPC_STATUS_RESOURCE_EXHAUSTED;
	default: return GRPC_STATUS_INVALID_ARGUMENT;
	}
}

static int check_hash(struct server *s, struct ctx *c, uint64_t h)
{
	char msg[160];

	if (h == s->plan.layout_hash)
		return 0;
	snprintf(msg, sizeof(msg), "layout mismatch: ps %u has %016" PRIx64 ", caller %016" PRIx64
		 " (different model/optimizer/placement flags?)", s->shard.id, s->plan.layout_hash, h);
	respond(s, c, GRPC_STATUS_FAILED_PRECONDITION, msg, NULL);
	return -1;
}

/*
 * Serves one decoded request (wm: tensors still in the received slices,
 * which the shard copies once) and answers it, now or when parked. rc is
 * the outcome of decoding; a request that could not be decoded is refused.
 */
static void handle(struct server *s, int method, struct ctx *c, int rc,
		   const struct tfj_wire_msg *wmp)
{
	struct tfj_wire_msg wm = *wmp;
	ProtobufCMessage *m = wm.head;
	char detail[TFJ_ERR_DETAIL_MAX];

	if (rc) {
		snprintf(detail, sizeof(detail), "%s", tfj_err_detail());
		respond(s, c, GRPC_STATUS_INVALID_ARGUMENT, detail, NULL);
		return;
	}
	switch (method) {
	case TFJ_RPC_STATUS: {
		Tfj__Runtime__V1__StatusResponse r = TFJ__RUNTIME__V1__STATUS_RESPONSE__INIT;

		r.shard = s->shard.id;
		r.num_shards = (uint32_t)s->plan.place.nps;
		r.initialized = s->shard.initialized;
		r.finished = s->shard.finished;
		r.step = s->shard.step;
		r.layout_hash = s->plan.layout_hash;
		r.num_slices = (uint32_t)s->shard.nslices;
		/* A ps forced to v1 says so, as an old one does by leaving it 0. */
		r.protocol = s->sslot.reg ? TFJ_PSFRAME_PROTOCOL : 1;
		/* Parts are an async rule: a sync ps says no, and its clients push whole. */
		r.partial_push = !s->cfg->sync;
		respond(s, c, GRPC_STATUS_OK, NULL, &r.base);
		return;
	}
	case TFJ_RPC_INIT: {
		Tfj__Runtime__V1__InitRequest *q = (Tfj__Runtime__V1__InitRequest *)m;
		Tfj__Runtime__V1__InitResponse r = TFJ__RUNTIME__V1__INIT_RESPONSE__INIT;

		if (check_hash(s, c, q->layout_hash))
			return;
		if (!s->shard.initialized || q->force) {
			rc = tfj_shard_load(&s->shard, wm.t, wm.nt, q->step, wm.st, wm.nst,
					    q->optim_steps);
			if (rc) {
				snprintf(detail, sizeof(detail), "%s", tfj_err_detail());
				respond(s, c, status_of(rc), detail, NULL);
				return;
			}
			r.applied = 1;
			if (wm.nst)
				tfj_log_fmt(TFJ_LOG_INFO, "ps %u initialised at step %" PRId64
					    " with optimizer state (%s, %" PRId64 " updates)",
					    s->shard.id, s->shard.step,
					    tfj_optim_name(s->cfg->optim), s->shard.opt_t);
			else
				tfj_log_fmt(TFJ_LOG_INFO, "ps %u initialised at step %" PRId64
					    ", optimizer state fresh", s->shard.id, s->shard.step);
		}
		r.step = s->shard.step;
		respond(s, c, GRPC_STATUS_OK, NULL, &r.base);
		flush_parked(s, 0);
		return;
	}
	case TFJ_RPC_PULL: {
		Tfj__Runtime__V1__PullRequest *q = (Tfj__Runtime__V1__PullRequest *)m;
		uint32_t wait = q->max_wait_ms > MAX_PULL_WAIT_MS ? MAX_PULL_WAIT_MS : q->max_wait_ms;

		if (check_hash(s, c, q->layout_hash))
			return;
		if (!s->shard.initialized) {
			respond(s, c, GRPC_STATUS_UNAVAILABLE, "ps: not initialised yet", NULL);
			return;
		}
		c->with_state = q->with_state;
		if (s->shard.finished || s->shard.step >= q->min_step || wait == 0) {
			answer_pull(s, c);
			return;
		}
		c->min_step = q->min_step;
		c->wait_until = tfj_grpc_deadline_ms(wait);
		c->next = s->parked;
		s->parked = c;
		return;
	}
	case TFJ_RPC_PUSH: {
		Tfj__Runtime__V1__PushRequest *q = (Tfj__Runtime__V1__PushRequest *)m;
		Tfj__Runtime__V1__PushResponse r = TFJ__RUNTIME__V1__PUSH_RESPONSE__INIT;
		int64_t before = s->shard.step;

		if (check_hash(s, c, q->layout_hash))
			return;
		rc = tfj_shard_push(&s->shard, q, wm.t, wm.nt, &r.result);
		if (rc) {
			snprintf(detail, sizeof(detail), "%s", tfj_err_detail());
			respond(s, c, status_of(rc), detail, NULL);
			return;
		}
		r.step = s->shard.step;
		r.finished = s->shard.finished;
		respond(s, c, GRPC_STATUS_OK, NULL, &r.base);
		if (s->shard.step != before)
			flush_parked(s, 0);
		return;
	}
	case TFJ_RPC_FINISH: {
		Tfj__Runtime__V1__FinishRequest *q = (Tfj__Runtime__V1__FinishRequest *)m;
		Tfj__Runtime__V1__FinishResponse r = TFJ__RUNTIME__V1__FINISH_RESPONSE__INIT;

		if (check_hash(s, c, q->layout_hash))
			return;
		if (!s->shard.finished) {
			s->shard.finished = 1;
			s->finish_at = tfj_grpc_now();
			tfj_log_fmt(TFJ_LOG_INFO, "ps %u: chief finished training at step %" PRId64
				    "; serving %.1fs more", s->shard.id, q->step, s->cfg->ps_linger_s);
		}
		r.step = s->shard.step;
		respond(s, c, GRPC_STATUS_OK, NULL, &r.base);
		flush_parked(s, 0);
		return;
	}
	default:
		respond(s, c, GRPC_STATUS_UNIMPLEMENTED, "unknown method", NULL);
	}
}

/* The first refusal and then every 1000th, so a flood cannot fill the log. */
static void log_refused(struct server *s, grpc_call *call)
{
	if (s->auth.refused % 1000 == 1) {
		char *peer = grpc_call_get_peer(call);

		tfj_log_fmt(TFJ_LOG_WARN, "ps %u: refused a call without the job's secret "
			    "from %s (%" PRIu64 " refused so far)", s->shard.id,
			    peer ? peer : "?", s->auth.refused);
		gpr_free(peer);
	}
}

static void on_new_call(struct server *s, struct slot *sl, int ok)
{
	grpc_call *call = sl->in.call;
	grpc_byte_buffer *payload = sl->in.payload;
	struct ctx *c;
	int denied = 0;

	/* Before anything is decoded: a call without the job's secret gets no further. */
	if (ok && call)
		denied = tfj_psauth_check_md(&s->auth, &sl->in.md);
	/* The call and its payload are ours now; the slot is armed again below. */
	sl->in.call = NULL;
	sl->in.payload = NULL;
	tfj_grpc_incoming_release(&sl->in);
	if (!ok || !call) {
		if (payload)
			grpc_byte_buffer_destroy(payload);
		return; /* server shutting down */
	}
	if (arm_slot(s, sl) != 0)
		tfj_log_error("cannot accept more calls", "detail", tfj_err_detail());
	c = calloc(1, sizeof(*c));
	if (!c) {
		grpc_call_cancel_with_status(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory",
					     NULL);
		grpc_call_unref(call);
		if (payload)
			grpc_byte_buffer_destroy(payload);
		return;
	}
	c->call = call;
	if (denied) {
		log_refused(s, call);
		respond(s, c, GRPC_STATUS_UNAUTHENTICATED, "ps: missing or wrong job secret", NULL);
	} else {
		struct tfj_wire_msg wm;
		int rc;

		tfj_wire_arena_reset(&s->arena);
		rc = tfj_wire_decode_split(&wm, tfj_rpc_methods[sl->method].req, payload, &s->arena);
		handle(s, sl->method, c, rc, &wm);
	}
	if (payload)
		grpc_byte_buffer_destroy(payload);
}

/* ---- protocol v2: one stream per client ---------------------------------- */

static void stream_unref(struct stream *st)
{
	if (--st->refs > 0)
		return;
	grpc_call_unref(st->call);
	free(st);
}

/* Frees an answered (or dropped) request of a stream. */
static void stream_ctx_free(struct ctx *c)
{
	struct stream *st = c->st;

	if (c->resp)
		grpc_byte_buffer_destroy(c->resp);
	if (c->snap)
		c->snap->users--;
	free(c);
	stream_unref(st);
}

/* Once the client closed its side and every answer left: the stream's OK status. */
static void stream_maybe_finish(struct stream *st)
{
	grpc_op op;

	if (!st->half_closed || st->sending || st->q || st->status_sent || st->closed)
		return;
	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	op.data.send_status_from_server.status = GRPC_STATUS_OK;
	st->status_sent = 1;
	if (grpc_call_start_batch(st->call, &op, 1, &st->status_tag, NULL) == GRPC_CALL_OK)
		st->refs++;
}

/* Sends the next queued answer, if none is on the wire. */
static void stream_kick(struct stream *st)
{
	struct ctx *c;

	while (!st->sending && st->q) {
		c = st->q;
		if (!st->closed && tfj_grpc_stream_send(st->call, c->resp, &st->send_tag) == 0) {
			st->sending = 1;
			st->refs++;
			return;
		}
		/* The stream is gone: what is left cannot be answered. */
		st->q = c->next;
		stream_ctx_free(c);
	}
	stream_maybe_finish(st);
}

static void stream_respond(struct server *s, struct ctx *c, grpc_status_code code,
			   const char *detail, const ProtobufCMessage *msg)
{
	struct stream *st = c->st;
	int rc;

	(void)s;
	if (st->closed) {
		stream_ctx_free(c);
		return;
	}
	rc = tfj_psframe_encode(&c->resp, c->id, c->method, (uint32_t)code, detail,
				code == GRPC_STATUS_OK ? msg : NULL, c->snap ? &c->snap->lease : NULL);
	if (rc)
		rc = tfj_psframe_encode(&c->resp, c->id, c->method,
					GRPC_STATUS_RESOURCE_EXHAUSTED, "cannot encode the response",
					NULL, NULL);
	if (rc) {
		grpc_call_cancel_with_status(st->call, GRPC_STATUS_RESOURCE_EXHAUSTED,
					     "cannot encode the response", NULL);
		stream_ctx_free(c);
		return;
	}
	c->next = NULL;
	if (st->q_tail && st->q)
		st->q_tail->next = c;
	else
		st->q = c;
	st->q_tail = c;
	stream_kick(st);
}

static void on_stream_send(struct stream *st)
{
	struct ctx *c = st->q;

	st->sending = 0;
	if (c) {
		st->q = c->next;
		stream_ctx_free(c);
	}
	stream_kick(st);
	stream_unref(st);
}

/* A frame came (or the client's side ended: rx NULL). */
static void on_stream_recv(struct server *s, struct stream *st, int ok)
{
	grpc_byte_buffer *rx = st->rx;
	struct tfj_psframe f;
	struct tfj_wire_msg wm;
	struct ctx *c;
	int rc;

	st->rx = NULL;
	if (!ok || !rx) {
		st->half_closed = 1;
		stream_maybe_finish(st);
		goto out;
	}
	tfj_wire_arena_reset(&s->arena);
	if (tfj_psframe_decode(&f, rx, &s->arena) != 0) {
		/* Without an id there is nothing to answer: the stream ends instead. */
		grpc_call_cancel_with_status(st->call, GRPC_STATUS_INVALID_ARGUMENT,
					     "ps: malformed stream frame", NULL);
		st->half_closed = 1;
		goto out;
	}
	s->stream_frames++;
	c = calloc(1, sizeof(*c));
	if (!c) {
		grpc_call_cancel_with_status(st->call, GRPC_STATUS_RESOURCE_EXHAUSTED,
					     "out of memory", NULL);
		st->half_closed = 1;
		goto out;
	}
	c->st = st;
	c->id = f.id;
	c->method = f.method;
	st->refs++;
	/* The next frame may come while this one's answer is parked (a Pull waiting). */
	if (tfj_grpc_stream_recv(st->call, &st->rx, &st->recv_tag) == 0)
		st->refs++;
	if (f.method >= TFJ_RPC_NMETHODS) {
		respond(s, c, GRPC_STATUS_UNIMPLEMENTED, "unknown method", NULL);
	} else {
		rc = tfj_psframe_body(&wm, &f, tfj_rpc_methods[f.method].req, &s->arena);
		handle(s, (int)f.method, c, rc, &wm);
	}
out:
	if (rx)
		grpc_byte_buffer_destroy(rx);
	stream_unref(st);
}

/* A new stream: the job's secret is checked on its initial metadata, once. */
static void on_new_stream(struct server *s, struct stream_slot *sl, int ok)
{
	grpc_call *call = sl->in.call;
	struct stream *st;
	struct ctx *c;
	grpc_op ops[2];
	int denied = 0;

	if (ok && call)
		denied = tfj_psauth_check_md(&s->auth, &sl->in.md);
	sl->in.call = NULL;
	tfj_grpc_incoming_release(&sl->in);
	if (!ok || !call)
		return; /* server shutting down */
	if (tfj_grpc_incoming_stream(&sl->in, s->srv, sl->reg, s->cq, sl) != 0)
		tfj_log_error("cannot accept more streams", "detail", tfj_err_detail());
	if (denied) {
		/* Refused like a unary call: UNAUTHENTICATED, before any frame is read. */
		log_refused(s, call);
		c = calloc(1, sizeof(*c));
		if (!c) {
			grpc_call_cancel_with_status(call, GRPC_STATUS_UNAUTHENTICATED,
						     "ps: missing or wrong job secret", NULL);
			grpc_call_unref(call);
			return;
		}
		c->call = call;
		respond(s, c, GRPC_STATUS_UNAUTHENTICATED, "ps: missing or wrong job secret", NULL);
		return;
	}
	st = calloc(1, sizeof(*st));
	if (!st) {
		grpc_call_cancel_with_status(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory",
					     NULL);
		grpc_call_unref(call);
		return;
	}
	st->call = call;
	st->recv_tag = (struct stag){ TAG_STREAM_RECV, st };
	st->send_tag = (struct stag){ TAG_STREAM_SEND, st };
	st->closed_tag = (struct stag){ TAG_STREAM_CLOSED, st };
	st->status_tag = (struct stag){ TAG_STREAM_STATUS, st };
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	ops[1].data.recv_close_on_server.cancelled = &st->cancelled;
	if (grpc_call_start_batch(call, ops, 2, &st->closed_tag, NULL) != GRPC_CALL_OK) {
		grpc_call_cancel(call, NULL);
		grpc_call_unref(call);
		free(st);
		return;
	}
	st->refs = 1;
	if (tfj_grpc_stream_recv(call, &st->rx, &st->recv_tag) == 0)
		st->refs++;
	s->streams_opened++;
}

static int arm_unknown(struct server *s)
{
	struct unknown_slot *u = &s->uslot;

	u->kind = TAG_NEW_UNKNOWN;
	u->call = NULL;
	grpc_call_details_init(&u->details);
	grpc_metadata_array_init(&u->md);
	if (grpc_server_request_call(s->srv, &u->call, &u->details, &u->md, s->cq, s->cq, u) !=
	    GRPC_CALL_OK)
		return tfj_err_set(TFJ_EINTERNAL, "cannot ask for unknown calls");
	return 0;
}

static void unknown_release(struct unknown_slot *u)
{
	grpc_call_details_destroy(&u->details);
	grpc_metadata_array_destroy(&u->md);
}

/* Answers a call of a method this ps does not serve: UNIMPLEMENTED, before anything is read. */
static void on_unknown(struct server *s, int ok)
{
	grpc_call *call = s->uslot.call;
	struct ctx *c;

	unknown_release(&s->uslot);
	if (!ok || !call)
		return;
	if (arm_unknown(s) != 0)
		tfj_log_error("cannot accept more calls", "detail", tfj_err_detail());
	c = calloc(1, sizeof(*c));
	if (!c) {
		grpc_call_cancel_with_status(call, GRPC_STATUS_UNIMPLEMENTED, "unknown method",
					     NULL);
		grpc_call_unref(call);
		return;
	}
	c->call = call;
	respond(s, c, GRPC_STATUS_UNIMPLEMENTED, "ps: unknown method", NULL);
}

/* Every completion of the server's queue but the shutdown tag. */
static void dispatch(struct server *s, void *tag, int ok)
{
	struct stag *t = tag;

	switch (*(int *)tag) {
	case TAG_NEW_CALL: on_new_call(s, tag, ok); break;
	case TAG_CALL_DONE: call_done(s, tag); break;
	case TAG_NEW_STREAM: on_new_stream(s, tag, ok); break;
	case TAG_STREAM_RECV: on_stream_recv(s, t->st, ok); break;
	case TAG_STREAM_SEND: on_stream_send(t->st); break;
	case TAG_STREAM_CLOSED:
		t->st->closed = 1;
		stream_unref(t->st);
		break;
	case TAG_STREAM_STATUS: stream_unref(t->st); break;
	case TAG_NEW_UNKNOWN: on_unknown(s, ok); break;
	default: break;
	}
}

/* Restores this shard from the newest checkpoint, if any. */
static int restore(struct server *s)
{
	char path[TFJ_RT_PATH_MAX + 64];
	struct tfj_ckpt ck = { 0 };
	int64_t step;
	int rc, with_state = 0;

	if (!s->cfg->checkpoint_dir[0])
		return 0;
	rc = tfj_ckptdir_latest(path, sizeof(path), &step, s->cfg->checkpoint_dir, "model");
	if (rc == TFJ_ENOTFOUND)
		return 0;
	if (rc)
		return rc;
	rc = tfj_ckpt_load(&ck, path);
	if (rc == 0)
		rc = tfj_shard_restore(&with_state, &s->shard, &ck);
	if (rc == 0) {
		tfj_log_info("restored shard from checkpoint", "path", path);
		if (with_state)
			tfj_log_fmt(TFJ_LOG_INFO, "ps %u: optimizer state restored (%s, %" PRId64
				    " updates)", s->shard.id, tfj_optim_name(s->cfg->optim),
				    s->shard.opt_t);
		else if (tfj_shard_state_k(&s->shard))
			tfj_log_fmt(TFJ_LOG_INFO, "ps %u: checkpoint holds no %s state for this "
				    "shard (written by %s); optimizer state starts afresh",
				    s->shard.id, tfj_optim_name(s->cfg->optim),
				    tfj_optim_name((enum tfj_optim_kind)ck.optim_kind));
	}
	tfj_ckpt_free(&ck);
	return rc;
}

static void teardown(struct server *s)
{
	size_t i;

	if (s->srv) {
		grpc_event ev;
		int done = 0;

		flush_parked(s, 1);
		s->shutdown_kind = TAG_SHUTDOWN;
		grpc_server_shutdown_and_notify(s->srv, s->cq, &s->shutdown_kind);
		grpc_server_cancel_all_calls(s->srv);
		/* Drain until the shutdown tag; bounded so a stuck call cannot hang us. */
		while (!done) {
			ev = grpc_completion_queue_next(s->cq, tfj_grpc_deadline_ms(5000), NULL);
			if (ev.type == GRPC_QUEUE_TIMEOUT)
				break;
			if (ev.type != GRPC_OP_COMPLETE)
				continue;
			if (ev.tag == &s->shutdown_kind) {
				done = 1;
			} else if (*(int *)ev.tag == TAG_NEW_CALL) {
				struct slot *sl = ev.tag;

				if (!ev.success)
					sl->in.call = NULL; /* never delivered: nothing to unref */
				tfj_grpc_incoming_release(&sl->in);
			} else if (*(int *)ev.tag == TAG_NEW_UNKNOWN) {
				if (ev.success && s->uslot.call)
					grpc_call_unref(s->uslot.call);
				unknown_release(&s->uslot);
			} else if (*(int *)ev.tag == TAG_NEW_STREAM) {
				if (!ev.success)
					s->sslot.in.call = NULL;
				if (s->sslot.in.call)
					grpc_call_unref(s->sslot.in.call);
				s->sslot.in.call = NULL;
				tfj_grpc_incoming_release(&s->sslot.in);
			} else {
				dispatch(s, ev.tag, ev.success);
			}
		}
		grpc_server_destroy(s->srv);
	}
	tfj_grpc_cq_destroy(s->cq);
	/* The pool owns the live parameters once it adopted them (see shard.h). */
	if (live_buf(s))
		s->shard.param = NULL;
	for (i = 0; i < MAX_SNAPSHOTS; i++)
		free(s->snaps[i].data);
	free(s->smsgs);
	free(s->sptrs);
	free(s->stmsgs);
	free(s->stptrs);
	tfj_wire_arena_free(&s->arena);
	tfj_psauth_free(&s->auth);
	tfj_shard_free(&s->shard);
	tfj_layout_free(&s->plan);
}

int tfj_psserver_main(const struct tfj_rtconfig *cfg)
{
	struct server *s = calloc(1, sizeof(*s));
	struct tfj_grpc_args args;
	int port, rc, code = TFJ_EXIT_OK, i;

	if (!s)
		return TFJ_EXIT_NOMEM;
	s->cfg = cfg;
	rc = tfj_psauth_from_env(&s->auth);
	if (rc) {
		tfj_log_error("cannot read the job's ps secret", "detail", tfj_err_detail());
		code = tfj_exitcode_from_err(rc);
		goto out;
	}
	if (tfj_psauth_on(&s->auth))
		tfj_log_info("ps calls must carry the job's secret", "file", getenv(TFJ_PSAUTH_ENV));
	else
		tfj_log_warn("ps secret check off: " TFJ_PSAUTH_ENV " not set; any caller that "
			     "reaches this port is served");
	rc = tfj_layout_build(&s->plan, cfg);
	if (rc == 0)
		rc = tfj_shard_init(&s->shard, &s->plan, cfg, (uint32_t)cfg->index);
	if (rc) {
		tfj_log_error("cannot set up the shard", "detail", tfj_err_detail());
		code = tfj_exitcode_from_err(rc);
		goto out;
	}
	s->snaps[0].data = s->shard.param;
	s->shard.prewrite = cow;
	s->shard.prewrite_ud = s;
	rc = restore(s);
	if (rc) {
		tfj_log_error("cannot restore from checkpoint", "dir", cfg->checkpoint_dir, "detail",
			      tfj_err_detail());
		code = rc == TFJ_EIO ? TFJ_EXIT_IO : TFJ_EXIT_CHECKPOINT;
		goto out;
	}
	s->smsgs = calloc(s->shard.nslices, sizeof(*s->smsgs));
	s->sptrs = calloc(s->shard.nslices, sizeof(*s->sptrs));
	s->stmsgs = calloc(s->shard.nslices, sizeof(*s->stmsgs));
	s->stptrs = calloc(s->shard.nslices, sizeof(*s->stptrs));
	if (!s->smsgs || !s->sptrs || !s->stmsgs || !s->stptrs) {
		code = TFJ_EXIT_NOMEM;
		goto out;
	}
	tfj_wire_arena_init(&s->arena, 2 * cfg->max_message_bytes + (1u << 20));
	tfj_grpc_args_init(&args);
	tfj_wire_transport_args(&args, cfg->max_message_bytes);
	s->cq = grpc_completion_queue_create_for_next(NULL);
	if (tfj_grpc_server_new(&s->srv, &args) != 0) {
		tfj_log_error("cannot create the server", "detail", tfj_err_detail());
		code = TFJ_EXIT_INTERNAL;
		goto out;
	}
	grpc_server_register_completion_queue(s->srv, s->cq, NULL);
	for (i = 0; i < TFJ_RPC_NMETHODS; i++) {
		s->slots[i].kind = TAG_NEW_CALL;
		s->slots[i].method = i;
		s->slots[i].reg = tfj_grpc_server_method(s->srv, tfj_rpc_methods[i].path);
		if (!s->slots[i].reg) {
			tfj_log_error("cannot register a method", "method", tfj_rpc_methods[i].path);
			code = TFJ_EXIT_INTERNAL;
			grpc_server_destroy(s->srv);
			s->srv = NULL;
			goto out;
		}
	}
	/* Protocol v2 unless forced off: a v1 ps answers the stream UNIMPLEMENTED. */
	s->sslot.kind = TAG_NEW_STREAM;
	if (cfg->protocol != 1) {
		s->sslot.reg = tfj_grpc_server_stream_method(s->srv, TFJ_PSFRAME_PATH);
		if (!s->sslot.reg) {
			tfj_log_error("cannot register a method", "method", TFJ_PSFRAME_PATH);
			code = TFJ_EXIT_INTERNAL;
			grpc_server_destroy(s->srv);
			s->srv = NULL;
			goto out;
		}
	}
	if (tfj_grpc_server_listen(&port, s->srv, cfg->bind, NULL) != 0) {
		tfj_log_error("cannot listen (port in use?)", "address", cfg->bind);
		code = TFJ_EXIT_IO;
		grpc_server_destroy(s->srv);
		s->srv = NULL;
		goto out;
	}
	for (i = 0; i < TFJ_RPC_NMETHODS; i++)
		if (arm_slot(s, &s->slots[i]) != 0) {
			code = TFJ_EXIT_INTERNAL;
			goto out;
		}
	if ((s->sslot.reg && tfj_grpc_incoming_stream(&s->sslot.in, s->srv, s->sslot.reg, s->cq,
						      &s->sslot) != 0) || arm_unknown(s) != 0) {
		code = TFJ_EXIT_INTERNAL;
		goto out;
	}
	tfj_log_fmt(TFJ_LOG_INFO, "ps %d listening on %s: %zu slices, %zu floats, %s, protocol %s",
		    cfg->index, cfg->bind, s->shard.nslices, s->shard.n,
		    s->shard.initialized ? "restored" : "waiting for the chief's Init",
		    s->sslot.reg ? "v1 and v2 (stream)" : "v1 only");
	for (;;) {
		grpc_event ev = grpc_completion_queue_next(s->cq, tfj_grpc_deadline_ms(100), NULL);

		if (ev.type == GRPC_OP_COMPLETE) {
			dispatch(s, ev.tag, ev.success);
		} else if (ev.type == GRPC_QUEUE_SHUTDOWN) {
			break;
		}
		flush_parked(s, 0);
		if (tfj_stop_requested) {
			tfj_log_warn("stopping on signal");
			code = TFJ_EXIT_ABORTED;
			break;
		}
		if (s->shard.finished &&
		    gpr_time_cmp(tfj_grpc_now(), gpr_time_add(s->finish_at, gpr_time_from_millis(
			(int64_t)(cfg->ps_linger_s * 1000), GPR_TIMESPAN))) >= 0) {
			tfj_log_fmt(TFJ_LOG_INFO, "ps %d done at step %" PRId64 " (applied %" PRIu64
				    ", early parts %" PRIu64 ", stale %" PRIu64 ", duplicate %" PRIu64
				    ", refused without secret %" PRIu64 ", streams %" PRIu64
				    ", stream frames %" PRIu64 ", copies on write %" PRIu64 ")",
				    cfg->index, s->shard.step, s->shard.applied, s->shard.parts,
				    s->shard.stale, s->shard.duplicate, s->auth.refused,
				    s->streams_opened, s->stream_frames, s->cow_copies);
			break;
		}
	}
out:
	teardown(s);
	free(s);
	return code;
}
