/*
 * srvstream.c - the ps's side of the streams: one per client (srvstream.h).
 */
#include "ps/srvstream.h"

#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/log.h>

#include "wire/psauth.h"
#include "wire/frame.h"
#include "wire/rpcnames.h"
#include "wire/wire.h"
#include "wire/wiresplit.h"

/* A batch of a stream: the tag names the stream and what completed. */
struct stag {
	int kind;
	struct tfj_srvstream *st;
};

/*
 * One client's stream. Requests arrive one frame at a time
 * (one receive outstanding); answers queue in `q` and go out one send at a
 * time, in the order they were made (a parked Pull answers later, so
 * answers may leave in another order than their requests came; the ids
 * pair them). `refs` counts the outstanding batches and the requests not
 * yet answered (struct tfj_service_call), so the stream outlives everything
 * that names it.
 */
struct tfj_srvstream {
	grpc_call *call;
	struct stag recv_tag, send_tag, closed_tag, status_tag;
	grpc_byte_buffer *rx;
	/* Answers to send; q is on the wire while `sending`. */
	struct tfj_service_call *q, *q_tail;
	int sending, half_closed, status_sent, closed, cancelled;
	int refs;
};

int tfj_srvstream_arm(struct tfj_service *s)
{
	return tfj_grpc_incoming_stream(&s->sslot.in, s->srv, s->sslot.reg, s->cq, &s->sslot);
}

static void stream_unref(struct tfj_srvstream *st)
{
	if (--st->refs > 0)
		return;
	grpc_call_unref(st->call);
	free(st);
}

/* Frees an answered (or dropped) request of a stream. */
static void stream_ctx_free(struct tfj_service_call *c)
{
	struct tfj_srvstream *st = c->st;

	if (c->resp)
		grpc_byte_buffer_destroy(c->resp);
	if (c->snap)
		c->snap->users--;
	free(c);
	stream_unref(st);
}

/* Once the client closed its side and every answer left: the stream's OK status. */
static void stream_maybe_finish(struct tfj_srvstream *st)
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
static void stream_kick(struct tfj_srvstream *st)
{
	struct tfj_service_call *c;

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

void tfj_srvstream_respond(struct tfj_service_call *c, grpc_status_code code, const char *detail,
			  const ProtobufCMessage *msg)
{
	struct tfj_srvstream *st = c->st;
	int rc;

	if (st->closed) {
		stream_ctx_free(c);
		return;
	}
	rc = tfj_frame_encode(&c->resp, c->id, c->method, (uint32_t)code, detail,
				code == GRPC_STATUS_OK ? msg : NULL, c->snap ? &c->snap->lease : NULL);
	if (rc)
		rc = tfj_frame_encode(&c->resp, c->id, c->method,
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

static void on_stream_send(struct tfj_srvstream *st)
{
	struct tfj_service_call *c = st->q;

	st->sending = 0;
	if (c) {
		st->q = c->next;
		stream_ctx_free(c);
	}
	stream_kick(st);
	stream_unref(st);
}

/* A frame came (or the client's side ended: rx NULL). */
static void on_stream_recv(struct tfj_service *s, struct tfj_srvstream *st, int ok)
{
	grpc_byte_buffer *rx = st->rx;
	struct tfj_frame f;
	struct tfj_wire_msg wm;
	struct tfj_service_call *c;
	int rc;

	st->rx = NULL;
	if (!ok || !rx) {
		st->half_closed = 1;
		stream_maybe_finish(st);
		goto out;
	}
	tfj_wire_arena_reset(&s->arena);
	if (tfj_frame_decode(&f, rx, &s->arena) != 0) {
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
	c->respond = tfj_srvstream_respond;
	c->st = st;
	c->id = f.id;
	c->method = f.method;
	st->refs++;
	/* The next frame may come while this one's answer is parked (a Pull waiting). */
	if (tfj_grpc_stream_recv(st->call, &st->rx, &st->recv_tag) == 0)
		st->refs++;
	if (f.method >= TFJ_RPC_NMETHODS) {
		tfj_service_respond(s, c, GRPC_STATUS_UNIMPLEMENTED, "unknown method", NULL);
	} else {
		rc = tfj_frame_body(&wm, &f, tfj_rpc_methods[f.method].req, &s->arena);
		tfj_service_handle(s, (int)f.method, c, rc, &wm);
	}
out:
	if (rx)
		grpc_byte_buffer_destroy(rx);
	stream_unref(st);
}

/* A new stream: the job's secret is checked on its initial metadata, once. */
static void on_new_stream(struct tfj_service *s, struct tfj_service_slot *sl, int ok)
{
	grpc_call *call = sl->in.call;
	struct tfj_srvstream *st;
	grpc_op ops[2];
	int denied = 0;

	if (ok && call)
		denied = tfj_psauth_check_md(&s->auth, &sl->in.md);
	sl->in.call = NULL;
	tfj_grpc_incoming_release(&sl->in);
	if (!ok || !call)
		return; /* server shutting down */
	if (tfj_srvstream_arm(s) != 0)
		tfj_log_error("cannot accept more streams", "detail", tfj_err_detail());
	if (denied) {
		/* UNAUTHENTICATED, before any frame is read. */
		tfj_service_log_refused(s, call);
		grpc_call_cancel_with_status(call, GRPC_STATUS_UNAUTHENTICATED,
					     "ps: missing or wrong job secret", NULL);
		grpc_call_unref(call);
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
	st->recv_tag = (struct stag){ TFJ_SERVICE_TAG_STREAM_RECV, st };
	st->send_tag = (struct stag){ TFJ_SERVICE_TAG_STREAM_SEND, st };
	st->closed_tag = (struct stag){ TFJ_SERVICE_TAG_STREAM_CLOSED, st };
	st->status_tag = (struct stag){ TFJ_SERVICE_TAG_STREAM_STATUS, st };
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

void tfj_srvstream_complete(struct tfj_service *s, void *tag, int ok)
{
	struct stag *t = tag;

	switch (*(int *)tag) {
	case TFJ_SERVICE_TAG_NEW_STREAM: on_new_stream(s, tag, ok); break;
	case TFJ_SERVICE_TAG_STREAM_RECV: on_stream_recv(s, t->st, ok); break;
	case TFJ_SERVICE_TAG_STREAM_SEND: on_stream_send(t->st); break;
	case TFJ_SERVICE_TAG_STREAM_CLOSED:
		t->st->closed = 1;
		stream_unref(t->st);
		break;
	case TFJ_SERVICE_TAG_STREAM_STATUS: stream_unref(t->st); break;
	default: break;
	}
}

void tfj_srvstream_slot_discard(struct tfj_service_slot *sl, int ok)
{
	if (!ok)
		sl->in.call = NULL;
	if (sl->in.call)
		grpc_call_unref(sl->in.call);
	sl->in.call = NULL;
	tfj_grpc_incoming_release(&sl->in);
}
