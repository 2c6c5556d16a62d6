/*
 * psclient.c - parallel unary calls to the ps tasks (psclient.h).
 */
#include "psclient.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/grpc.h>
#include <tfj/log.h>

#include "psauth.h"
#include "wire.h"

struct rpc {
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
	struct tfj_wire_lease lease;
	struct tfj_psauth auth;      /* the job's ps secret, sent on every call */
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
	if (!cl->ch || !cl->hosts || !cl->arenas || !cl->rpcs || !cl->msgs || !cl->kept) {
		tfj_psclient_free(cl);
		return tfj_err_set(TFJ_ENOMEM, "psclient: out of memory");
	}
	/*
	 * Message caps explicit on both sides; reconnect backoff short, since a
	 * restarted ps should be found again within a second; gRPC's own retries
	 * off because the runtime retries whole steps with its own deadline.
	 */
	tfj_grpc_args_init(&args);
	tfj_wire_transport_args(&args, cfg->max_message_bytes);
	tfj_grpc_args_reconnect(&args, 100, 100, 1000);
	for (i = 0; i < cl->n; i++) {
		const char *h = tfj_rtconfig_host(cfg, "ps", i);

		cl->hosts[i] = strdup(h ? h : "");
		rc = cl->hosts[i] ? tfj_grpc_channel_new(&cl->ch[i], cl->hosts[i], NULL, &args) : -1;
		tfj_wire_arena_init(&cl->arenas[i], 2 * cfg->max_message_bytes + (1u << 20));
		if (rc) {
			tfj_psclient_free(cl);
			return tfj_err_set(TFJ_ENOMEM, "psclient: cannot create channel %zu", i);
		}
	}
	cl->cq = grpc_completion_queue_create_for_next(NULL);
	*out = cl;
	return 0;
}

void tfj_psclient_free(struct tfj_psclient *cl)
{
	size_t i;

	if (!cl)
		return;
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
	free(cl->rpcs);
	free(cl->msgs);
	free(cl->kept);
	tfj_psauth_free(&cl->auth);
	free(cl);
}

const struct tfj_wire_msg *tfj_psclient_tensors(const struct tfj_psclient *cl, size_t i)
{
	return &cl->msgs[i];
}

static int err_of(grpc_status_code st)
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

static int start(struct tfj_psclient *cl, struct rpc *r, enum tfj_rpc_method method,
		 const ProtobufCMessage *req, gpr_timespec deadline)
{
	int rc;

	rc = tfj_wire_encode(&r->req, req, getenv("TFJ_NOZC") ? NULL : &cl->lease);
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

int tfj_psclient_call(struct tfj_psclient *cl, enum tfj_rpc_method method,
		      const ProtobufCMessage *const *reqs, ProtobufCMessage **resps,
		      double timeout_s)
{
	gpr_timespec deadline = tfj_grpc_deadline_ms((int64_t)(timeout_s * 1000));
	size_t i, pending = 0;
	int rc = 0, first = 0;
	char detail[TFJ_ERR_DETAIL_MAX];

	detail[0] = '\0';
	for (i = 0; i < cl->n; i++) {
		resps[i] = NULL;
		memset(&cl->rpcs[i], 0, sizeof(cl->rpcs[i]));
		cl->rpcs[i].shard = (int)i;
		if (!reqs[i])
			continue;
		tfj_wire_arena_reset(&cl->arenas[i]);
		memset(&cl->msgs[i], 0, sizeof(cl->msgs[i]));
		if (cl->kept[i])
			grpc_byte_buffer_destroy(cl->kept[i]);
		cl->kept[i] = NULL;
		rc = start(cl, &cl->rpcs[i], method, reqs[i], deadline);
		if (rc) {
			if (!first) {
				first = rc;
				snprintf(detail, sizeof(detail), "%s", tfj_err_detail());
			}
			finish_rpc(&cl->rpcs[i]);
			continue;
		}
		pending++;
	}
	/*
	 * Every started call completes, at the latest when its deadline passes
	 * (gRPC then reports DEADLINE_EXCEEDED), so this loop ends.
	 */
	while (pending) {
		grpc_event ev = grpc_completion_queue_next(cl->cq, gpr_inf_future(GPR_CLOCK_REALTIME),
							   NULL);
		struct rpc *r;

		if (ev.type != GRPC_OP_COMPLETE)
			continue;
		r = ev.tag;
		r->done = 1;
		pending--;
	}
	for (i = 0; i < cl->n; i++) {
		struct rpc *r = &cl->rpcs[i];
		int e;

		if (!reqs[i] || !r->c.call)
			continue;
		e = err_of(r->c.status);
		if (!e) {
			/* Tensors stay in the reply's slices (no copy here). */
			e = tfj_wire_decode_split(&cl->msgs[i], tfj_rpc_methods[method].resp,
						  r->c.reply, &cl->arenas[i]);
			resps[i] = cl->msgs[i].head;
			if (e)
				e = TFJ_EINTERNAL;
			/* The decoded tensors point into the payload: keep it to the next call. */
			cl->kept[i] = r->c.reply;
			r->c.reply = NULL;
		}
		if (e && !first) {
			first = e;
			snprintf(detail, sizeof(detail), "ps %zu (%s) %s: %s: %.*s", i, cl->hosts[i],
				 tfj_rpc_methods[method].path, tfj_grpc_status_name(r->c.status),
				 (int)GRPC_SLICE_LENGTH(r->c.details),
				 (const char *)GRPC_SLICE_START_PTR(r->c.details));
		}
		finish_rpc(r);
	}
	/* The caller may reuse its tensors once gRPC has let go of them. */
	if (tfj_wire_lease_wait(&cl->lease, 10000) != 0 && !first) {
		first = TFJ_EINTERNAL;
		snprintf(detail, sizeof(detail), "%s", tfj_err_detail());
	}
	if (first)
		return tfj_err_set(first, "%s", detail);
	return 0;
}
