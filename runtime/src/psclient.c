/*
 * psclient.c - parallel unary calls to the ps tasks (psclient.h).
 */
#include "psclient.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include <tfj/err.h>
#include <tfj/log.h>

#include "wire.h"

struct rpc {
	int shard;
	grpc_call *call;
	grpc_byte_buffer *req, *resp;
	grpc_metadata_array imd, tmd;
	grpc_status_code status;
	grpc_slice details;
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
};

size_t tfj_psclient_nshards(const struct tfj_psclient *cl)
{
	return cl->n;
}

int tfj_psclient_new(struct tfj_psclient **out, const struct tfj_rtconfig *cfg)
{
	struct tfj_psclient *cl;
	grpc_arg args[TFJ_WIRE_NARGS + 4];
	size_t n;
	grpc_channel_args cargs;
	grpc_channel_credentials *creds;
	size_t i;

	*out = NULL;
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return tfj_err_set(TFJ_ENOMEM, "psclient: out of memory");
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
	n = tfj_wire_transport_args(args, cfg->max_message_bytes);
	args[n + 0].type = GRPC_ARG_INTEGER;
	args[n + 0].key = GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS;
	args[n + 0].value.integer = 100;
	args[n + 1].type = GRPC_ARG_INTEGER;
	args[n + 1].key = GRPC_ARG_MIN_RECONNECT_BACKOFF_MS;
	args[n + 1].value.integer = 100;
	args[n + 2].type = GRPC_ARG_INTEGER;
	args[n + 2].key = GRPC_ARG_MAX_RECONNECT_BACKOFF_MS;
	args[n + 2].value.integer = 1000;
	args[n + 3].type = GRPC_ARG_INTEGER;
	args[n + 3].key = GRPC_ARG_ENABLE_RETRIES;
	args[n + 3].value.integer = 0;
	cargs.num_args = n + 4;
	cargs.args = args;
	creds = grpc_insecure_credentials_create();
	for (i = 0; i < cl->n; i++) {
		const char *h = tfj_rtconfig_host(cfg, "ps", i);

		cl->hosts[i] = strdup(h ? h : "");
		cl->ch[i] = grpc_channel_create(cl->hosts[i] ? cl->hosts[i] : "", creds, &cargs);
		tfj_wire_arena_init(&cl->arenas[i], 2 * cfg->max_message_bytes + (1u << 20));
		if (!cl->hosts[i] || !cl->ch[i]) {
			grpc_channel_credentials_release(creds);
			tfj_psclient_free(cl);
			return tfj_err_set(TFJ_ENOMEM, "psclient: cannot create channel %zu", i);
		}
	}
	grpc_channel_credentials_release(creds);
	cl->cq = grpc_completion_queue_create_for_next(NULL);
	*out = cl;
	return 0;
}

void tfj_psclient_free(struct tfj_psclient *cl)
{
	size_t i;

	if (!cl)
		return;
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
	if (cl->cq) {
		grpc_completion_queue_shutdown(cl->cq);
		while (grpc_completion_queue_next(cl->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL)
			       .type != GRPC_QUEUE_SHUTDOWN)
			;
		grpc_completion_queue_destroy(cl->cq);
	}
	free(cl->ch);
	free(cl->hosts);
	free(cl->arenas);
	free(cl->rpcs);
	free(cl->msgs);
	free(cl->kept);
	free(cl);
}

const struct tfj_wire_msg *tfj_psclient_tensors(const struct tfj_psclient *cl, size_t i)
{
	return &cl->msgs[i];
}

static const char *status_name(grpc_status_code st)
{
	static const char *const names[] = {
		"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
		"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
		"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
		"UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"
	};

	if ((int)st >= 0 && (size_t)st < sizeof(names) / sizeof(names[0]))
		return names[st];
	return "UNKNOWN";
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
	default: return TFJ_EINTERNAL;
	}
}

static int start(struct tfj_psclient *cl, struct rpc *r, enum tfj_rpc_method method,
		 const ProtobufCMessage *req, gpr_timespec deadline)
{
	grpc_op ops[6];
	grpc_slice path = grpc_slice_from_static_string(tfj_rpc_methods[method].path);
	grpc_call_error e;
	int rc;

	rc = tfj_wire_encode(&r->req, req, getenv("TFJ_NOZC") ? NULL : &cl->lease);
	if (rc)
		return rc;
	r->call = grpc_channel_create_call(cl->ch[r->shard], NULL, GRPC_PROPAGATE_DEFAULTS, cl->cq,
					   path, NULL, deadline, NULL);
	if (!r->call)
		return tfj_err_set(TFJ_EINTERNAL, "grpc: cannot create a call");
	grpc_metadata_array_init(&r->imd);
	grpc_metadata_array_init(&r->tmd);
	r->details = grpc_empty_slice();
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = r->req;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &r->imd;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &r->resp;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &r->tmd;
	ops[5].data.recv_status_on_client.status = &r->status;
	ops[5].data.recv_status_on_client.status_details = &r->details;
	e = grpc_call_start_batch(r->call, ops, 6, r, NULL);
	if (e != GRPC_CALL_OK) {
		grpc_call_unref(r->call);
		r->call = NULL;
		grpc_metadata_array_destroy(&r->imd);
		grpc_metadata_array_destroy(&r->tmd);
		return tfj_err_set(TFJ_EINTERNAL, "grpc: start_batch failed (%s)",
				   grpc_call_error_to_string(e));
	}
	return 0;
}

static void finish_rpc(struct rpc *r)
{
	if (r->call)
		grpc_call_unref(r->call);
	if (r->req)
		grpc_byte_buffer_destroy(r->req);
	if (r->resp)
		grpc_byte_buffer_destroy(r->resp);
	grpc_metadata_array_destroy(&r->imd);
	grpc_metadata_array_destroy(&r->tmd);
	grpc_slice_unref(r->details);
	memset(r, 0, sizeof(*r));
}

int tfj_psclient_call(struct tfj_psclient *cl, enum tfj_rpc_method method,
		      const ProtobufCMessage *const *reqs, ProtobufCMessage **resps,
		      double timeout_s)
{
	gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
					     gpr_time_from_millis((int64_t)(timeout_s * 1000),
								  GPR_TIMESPAN));
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
			if (cl->rpcs[i].req)
				grpc_byte_buffer_destroy(cl->rpcs[i].req);
			cl->rpcs[i].req = NULL;
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

		if (!reqs[i] || !r->call)
			continue;
		e = err_of(r->status);
		if (!e) {
			e = tfj_wire_decode_split(&cl->msgs[i], tfj_rpc_methods[method].resp,
						  r->resp, &cl->arenas[i]);
			resps[i] = cl->msgs[i].head;
			if (e)
				e = TFJ_EINTERNAL;
			/* The decoded tensors point into the payload: keep it to the next call. */
			cl->kept[i] = r->resp;
			r->resp = NULL;
		}
		if (e && !first) {
			char *d = grpc_slice_to_c_string(r->details);

			first = e;
			snprintf(detail, sizeof(detail), "ps %zu (%s) %s: %s: %s", i, cl->hosts[i],
				 tfj_rpc_methods[method].path, status_name(r->status),
				 d ? d : "");
			gpr_free(d);
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
