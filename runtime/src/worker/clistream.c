/*
 * clistream.c - a client's stream to one ps (clistream.h).
 */
#include "worker/clistream.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <tfj/log.h>

#include "wire/frame.h"
#include "wire/wiresplit.h"

int tfj_clistream_err_of(grpc_status_code st)
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

void tfj_clistream_init(struct tfj_clistream *ps, size_t shard, const char *host,
			grpc_channel *ch, grpc_completion_queue *cq, const char *secret,
			struct tfj_wire_lease *lease, struct tfj_wire_arena *arena)
{
	memset(ps, 0, sizeof(*ps));
	ps->shard = shard;
	ps->host = host;
	ps->ch = ch;
	ps->cq = cq;
	ps->secret = secret;
	ps->lease = lease;
	ps->arena = arena;
	ps->recv_tag = (struct tfj_clistream_tag){ TFJ_CLISTREAM_TAG_RECV, ps };
	ps->send_tag = (struct tfj_clistream_tag){ TFJ_CLISTREAM_TAG_SEND, ps };
	ps->status_tag = (struct tfj_clistream_tag){ TFJ_CLISTREAM_TAG_STATUS, ps };
}

void tfj_clistream_free(struct tfj_clistream *ps)
{
	if (!ps)
		return;
	tfj_grpc_call_end(&ps->gs);
	if (ps->rx)
		grpc_byte_buffer_destroy(ps->rx);
	if (ps->req)
		grpc_byte_buffer_destroy(ps->req);
	ps->rx = ps->req = NULL;
}

static int encode(struct tfj_clistream *ps, uint64_t id, enum tfj_rpc_method method,
		  const ProtobufCMessage *req)
{
	return tfj_frame_encode(&ps->req, id, (uint32_t)method, 0, NULL, req, ps->lease);
}

/* Releases an ended stream (nothing of it pending) so the next request opens another. */
static void stream_reset(struct tfj_clistream *ps)
{
	tfj_grpc_call_end(&ps->gs);
	if (ps->rx)
		grpc_byte_buffer_destroy(ps->rx);
	ps->rx = NULL;
	ps->open = 0;
	ps->ended = 0;
}

int tfj_clistream_reap(struct tfj_clistream *ps)
{
	if (!ps->open || !ps->ended || ps->recv_pending || ps->send_pending)
		return 0;
	stream_reset(ps);
	return 1;
}

int tfj_clistream_busy(const struct tfj_clistream *ps)
{
	return ps->open && (!ps->ended || ps->recv_pending || ps->send_pending);
}

void tfj_clistream_cancel(struct tfj_clistream *ps)
{
	if (ps->open && ps->gs.call)
		grpc_call_cancel(ps->gs.call, NULL);
}

/* Opens the stream when there is none (or the last one ended). */
static int stream_open(struct tfj_clistream *ps)
{
	int rc;

	tfj_clistream_reap(ps);
	if (ps->open)
		return 0;
	rc = tfj_grpc_stream_open(&ps->gs, ps->ch, ps->cq, TFJ_FRAME_PATH, ps->secret,
				  &ps->status_tag);
	if (rc) {
		tfj_grpc_call_end(&ps->gs);
		return rc;
	}
	ps->open = 1;
	ps->opened++;
	tfj_log_fmt(ps->opened == 1 ? TFJ_LOG_INFO : TFJ_LOG_DEBUG,
		    "ps %zu (%s): stream opened", ps->shard, ps->host);
	return 0;
}

int tfj_clistream_start(struct tfj_clistream *ps, enum tfj_rpc_method method,
			const ProtobufCMessage *req)
{
	grpc_op ops[2];
	int rc;

	rc = stream_open(ps);
	if (rc)
		return rc;
	ps->nparts = 0; /* its answer ends the exchange batch, not part_answer() */
	ps->want_id = ++ps->next_id;
	rc = encode(ps, ps->want_id, method, req);
	if (rc)
		return rc;
	/* One batch, one completion: the request out and its answer in. */
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_MESSAGE;
	ops[0].data.send_message.send_message = ps->req;
	ops[1].op = GRPC_OP_RECV_MESSAGE;
	ops[1].data.recv_message.recv_message = &ps->rx;
	if (grpc_call_start_batch(ps->gs.call, ops, 2, &ps->recv_tag, NULL) == GRPC_CALL_OK)
		ps->recv_pending = 1;
	else /* the batch could not start: end the stream; its status tells the caller */
		grpc_call_cancel(ps->gs.call, NULL);
	return 0;
}

/* The answers a request in parts waits for: every part's, or those sent before one failed. */
static size_t parts_expected(const struct tfj_clistream *ps)
{
	return ps->perr ? ps->nsent : ps->nparts;
}

/*
 * Sends the next part, once the one before left; `ok` false: that send
 * failed, the stream is going and its status will say why. 0, or why the
 * part could not be encoded (then no further part goes and the stream is
 * cancelled, so that no receive waits for an answer that cannot come).
 */
static int part_send_next(struct tfj_clistream *ps, int ok)
{
	uint64_t id = ps->want_id - (ps->nparts - 1) + ps->nsent;
	int rc;

	if (ps->req)
		grpc_byte_buffer_destroy(ps->req);
	ps->req = NULL;
	if (!ok || ps->perr || ps->nsent >= ps->nparts)
		return 0;
	rc = encode(ps, id, ps->method, ps->parts[ps->nsent]);
	if (rc) {
		ps->perr = rc;
		snprintf(ps->pdetail, sizeof(ps->pdetail), "ps %zu (%s): part %zu of %zu: %s",
			 ps->shard, ps->host, ps->nsent + 1, ps->nparts, tfj_err_detail());
		grpc_call_cancel(ps->gs.call, NULL);
		return rc;
	}
	if (tfj_grpc_stream_send(ps->gs.call, ps->req, &ps->send_tag) != 0) {
		grpc_call_cancel(ps->gs.call, NULL); /* its status tells the caller */
		return 0;
	}
	ps->send_pending = 1;
	ps->nsent++;
	return 0;
}

int tfj_clistream_start_parts(struct tfj_clistream *ps, enum tfj_rpc_method method,
			      const ProtobufCMessage *const *parts, size_t n,
			      unsigned char *applied)
{
	int rc;

	rc = stream_open(ps);
	if (rc)
		return rc;
	ps->parts = parts;
	ps->applied = applied;
	ps->nparts = n;
	ps->nsent = ps->nanswered = 0;
	ps->perr = 0;
	ps->method = method;
	ps->want_id = ps->next_id + n;
	ps->next_id += n;
	rc = part_send_next(ps, 1);
	if (rc || !ps->nsent)
		return rc;
	if (tfj_grpc_stream_recv(ps->gs.call, &ps->rx, &ps->recv_tag) == 0)
		ps->recv_pending = 1;
	else
		grpc_call_cancel(ps->gs.call, NULL);
	return 0;
}

/*
 * An answer to a part came (rx), or the stream ended (rx NULL: its status
 * is the request's). The last part's answer stays in rx for
 * tfj_clistream_result(); an earlier one is checked here and dropped: a
 * refusal stops the parts not sent yet (perr), the others' answers are
 * still collected.
 */
static void part_answer(struct tfj_clistream *ps)
{
	uint64_t id = ps->want_id - (ps->nparts - 1) + ps->nanswered;
	struct tfj_frame f;
	int e;

	if (!ps->rx || ps->nanswered + 1 == ps->nparts)
		return;
	ps->frames++;
	tfj_wire_arena_reset(ps->arena);
	e = tfj_frame_decode(&f, ps->rx, ps->arena);
	grpc_byte_buffer_destroy(ps->rx);
	ps->rx = NULL;
	if (!e && (f.id != id || f.method != (uint32_t)ps->method))
		e = tfj_err_set(TFJ_EINTERNAL, "answer %" PRIu64 " to part %" PRIu64, f.id, id);
	if (e) {
		/* Out of step with the ps: this stream cannot be trusted any more. */
		if (!ps->perr) {
			ps->perr = TFJ_EINTERNAL;
			snprintf(ps->pdetail, sizeof(ps->pdetail), "ps %zu (%s) %s: %s", ps->shard,
				 ps->host, TFJ_FRAME_PATH, tfj_err_detail());
		}
		grpc_call_cancel(ps->gs.call, NULL);
		return;
	}
	if (f.status == GRPC_STATUS_OK && ps->applied)
		ps->applied[ps->nanswered] = 1;
	if (f.status != GRPC_STATUS_OK && !ps->perr) {
		ps->perr = tfj_clistream_err_of((grpc_status_code)f.status);
		snprintf(ps->pdetail, sizeof(ps->pdetail), "ps %zu (%s) %s over the stream, part "
			 "%zu of %zu: %s: %s", ps->shard, ps->host, tfj_rpc_methods[ps->method].path,
			 ps->nanswered + 1, ps->nparts,
			 tfj_grpc_status_name((grpc_status_code)f.status), f.detail);
	}
	ps->nanswered++;
	if (ps->nanswered >= parts_expected(ps))
		return;
	if (tfj_grpc_stream_recv(ps->gs.call, &ps->rx, &ps->recv_tag) == 0)
		ps->recv_pending = 1;
	else
		grpc_call_cancel(ps->gs.call, NULL);
}

void tfj_clistream_complete(void *tag, int success)
{
	struct tfj_clistream_tag *t = tag;

	switch (t->kind) {
	case TFJ_CLISTREAM_TAG_RECV:
		t->ps->recv_pending = 0;
		if (t->ps->nparts)
			part_answer(t->ps);
		break;
	case TFJ_CLISTREAM_TAG_SEND:
		t->ps->send_pending = 0;
		if (t->ps->nparts)
			part_send_next(t->ps, success);
		break;
	case TFJ_CLISTREAM_TAG_STATUS: t->ps->ended = 1; break;
	default: break;
	}
}

int tfj_clistream_done(const struct tfj_clistream *ps)
{
	return !ps->recv_pending && !ps->send_pending &&
	       (ps->rx || ps->ended || (ps->nparts && ps->nanswered >= parts_expected(ps)));
}

/*
 * The answer in rx (to the last of nparts parts, or to a single request:
 * nparts 0), decoded: 0 with *msg set, or an error with `detail`.
 */
static int take_answer(struct tfj_clistream *ps, enum tfj_rpc_method method, size_t nparts,
		       grpc_byte_buffer **kept, struct tfj_wire_msg *msg, char *detail, size_t cap)
{
	char part[64] = "";

	struct tfj_frame f;
	int e;

	ps->frames++;
	/* Kept to the shard's next call: the answer's tensors point into it. */
	*kept = ps->rx;
	ps->rx = NULL;
	e = tfj_frame_decode(&f, *kept, ps->arena);
	if (!e && (f.id != ps->want_id || f.method != (uint32_t)method)) {
		/* Out of step with the ps: this stream cannot be trusted any more. */
		e = tfj_err_set(TFJ_EINTERNAL, "answer %" PRIu64 " to request %" PRIu64, f.id,
				ps->want_id);
		grpc_call_cancel(ps->gs.call, NULL);
	}
	if (e) {
		snprintf(detail, cap, "ps %zu (%s) %s: %s", ps->shard, ps->host, TFJ_FRAME_PATH,
			 tfj_err_detail());
		return TFJ_EINTERNAL;
	}
	if (f.status != GRPC_STATUS_OK) {
		if (nparts)
			snprintf(part, sizeof(part), ", part %zu of %zu", nparts, nparts);
		snprintf(detail, cap, "ps %zu (%s) %s over the stream%s: %s: %s", ps->shard,
			 ps->host, tfj_rpc_methods[method].path, part,
			 tfj_grpc_status_name((grpc_status_code)f.status), f.detail);
		return tfj_clistream_err_of((grpc_status_code)f.status);
	}
	/* Tensors stay in the frame's slices (no copy here). */
	if (tfj_frame_body(msg, &f, tfj_rpc_methods[method].resp, ps->arena)) {
		snprintf(detail, cap, "ps %zu (%s) %s: %s", ps->shard, ps->host, TFJ_FRAME_PATH,
			 tfj_err_detail());
		return TFJ_EINTERNAL;
	}
	return 0;
}

int tfj_clistream_result(struct tfj_clistream *ps, enum tfj_rpc_method method, int timed_out,
			 grpc_byte_buffer **kept, struct tfj_wire_msg *msg,
			 grpc_status_code *ended, char *detail, size_t cap)
{
	unsigned char *applied = ps->nparts ? ps->applied : NULL;
	size_t nparts = ps->nparts;
	int perr = ps->perr, e;
	grpc_status_code st;
	struct tfj_frame f;

	*ended = GRPC_STATUS_OK;
	ps->nparts = 0;
	ps->parts = NULL;
	ps->applied = NULL;
	if (ps->req)
		grpc_byte_buffer_destroy(ps->req);
	ps->req = NULL;
	if (nparts && perr) {
		/*
		 * A part failed: that is the request's outcome, whatever the
		 * others got; the last part's answer still says whether it was
		 * applied.
		 */
		if (ps->rx && applied && tfj_frame_decode(&f, ps->rx, ps->arena) == 0 &&
		    f.id == ps->want_id && f.status == GRPC_STATUS_OK)
			applied[nparts - 1] = 1;
		if (ps->rx)
			grpc_byte_buffer_destroy(ps->rx);
		ps->rx = NULL;
		snprintf(detail, cap, "%s", ps->pdetail);
		return perr;
	}
	if (ps->rx) {
		e = take_answer(ps, method, nparts, kept, msg, detail, cap);
		if (!e && applied)
			applied[nparts - 1] = 1;
		return e;
	}
	/* The stream ended before the answer: its status is the request's. */
	st = timed_out ? GRPC_STATUS_DEADLINE_EXCEEDED : ps->gs.status;
	if (st == GRPC_STATUS_OK)
		st = GRPC_STATUS_UNAVAILABLE; /* closed by the ps without answering */
	snprintf(detail, cap, "ps %zu (%s) %s: %s: %.*s", ps->shard, ps->host, TFJ_FRAME_PATH,
		 tfj_grpc_status_name(st), (int)GRPC_SLICE_LENGTH(ps->gs.details),
		 (const char *)GRPC_SLICE_START_PTR(ps->gs.details));
	stream_reset(ps);
	*ended = st;
	return tfj_clistream_err_of(st);
}
