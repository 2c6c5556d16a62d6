/*
 * grpc.c - the gRPC core plumbing every gRPC user shares (see grpc.h).
 */
#include <tfj/grpc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/support/alloc.h>

#include <tfj/err.h>

/* How long past its own deadline a blocking call may take before it is cancelled. */
#define UNARY_MARGIN_S 5

void tfj_grpc_args_init(struct tfj_grpc_args *a)
{
	memset(a, 0, sizeof(*a));
}

int tfj_grpc_args_int(struct tfj_grpc_args *a, const char *key, int value)
{
	grpc_arg *g;

	if (a->n >= TFJ_GRPC_ARGS_MAX) {
		a->overflow = 1;
		return tfj_err_set(TFJ_ETOOBIG, "grpc: more than %d channel arguments",
				   TFJ_GRPC_ARGS_MAX);
	}
	g = &a->arg[a->n++];
	memset(g, 0, sizeof(*g));
	g->type = GRPC_ARG_INTEGER;
	g->key = (char *)key;
	g->value.integer = value;
	return 0;
}

static int clamp_int(size_t v)
{
	return v > (size_t)INT32_MAX ? INT32_MAX : (int)v;
}

int tfj_grpc_args_str(struct tfj_grpc_args *a, const char *key, const char *value)
{
	int rc = tfj_grpc_args_int(a, key, 0);

	if (rc)
		return rc;
	a->arg[a->n - 1].type = GRPC_ARG_STRING;
	a->arg[a->n - 1].value.string = (char *)value;
	return 0;
}

int tfj_grpc_args_quota(struct tfj_grpc_args *a, grpc_resource_quota *q)
{
	int rc = tfj_grpc_args_int(a, GRPC_ARG_RESOURCE_QUOTA, 0);

	if (rc)
		return rc;
	a->arg[a->n - 1].type = GRPC_ARG_POINTER;
	a->arg[a->n - 1].value.pointer.p = q;
	a->arg[a->n - 1].value.pointer.vtable = grpc_resource_quota_arg_vtable();
	return 0;
}

int tfj_grpc_args_msg_caps(struct tfj_grpc_args *a, size_t max_receive, size_t max_send)
{
	int rc = tfj_grpc_args_int(a, GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, clamp_int(max_receive));

	return rc ? rc : tfj_grpc_args_int(a, GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, clamp_int(max_send));
}

int tfj_grpc_args_reconnect(struct tfj_grpc_args *a, int initial_ms, int min_ms, int max_ms)
{
	int rc = tfj_grpc_args_int(a, GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, initial_ms);

	if (!rc)
		rc = tfj_grpc_args_int(a, GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, min_ms);
	if (!rc)
		rc = tfj_grpc_args_int(a, GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, max_ms);
	if (!rc)
		rc = tfj_grpc_args_int(a, GRPC_ARG_ENABLE_RETRIES, 0);
	return rc;
}

/*
 * The grpc_channel_args view of `a`, built when it is used: a struct that
 * pointed into itself would dangle once copied.
 */
static int args_view(grpc_channel_args *out, const struct tfj_grpc_args *a)
{
	if (!a) {
		out->num_args = 0;
		out->args = NULL;
		return 0;
	}
	if (a->overflow)
		return tfj_err_set(TFJ_EINVAL, "grpc: too many channel arguments");
	out->num_args = a->n;
	out->args = (grpc_arg *)a->arg;
	return 0;
}

gpr_timespec tfj_grpc_now(void)
{
	return gpr_now(GPR_CLOCK_MONOTONIC);
}

gpr_timespec tfj_grpc_deadline_ms(int64_t ms)
{
	return gpr_time_add(tfj_grpc_now(), gpr_time_from_millis(ms > 0 ? ms : 0, GPR_TIMESPAN));
}

grpc_byte_buffer *tfj_grpc_bb_new(const void *data, size_t len)
{
	grpc_slice s = grpc_slice_from_copied_buffer(len ? (const char *)data : "", len);
	grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&s, 1);

	grpc_slice_unref(s);
	return bb;
}

int tfj_grpc_bb_read(uint8_t **out, size_t *len, grpc_byte_buffer *bb, size_t max)
{
	grpc_byte_buffer_reader rd;
	grpc_slice s;
	uint8_t *buf, *grown;
	size_t n = 0, cap;
	int rc = 0;

	*out = NULL;
	*len = 0;
	cap = bb ? grpc_byte_buffer_length(bb) : 0;
	if (cap > max)
		return tfj_err_set(TFJ_ETOOBIG, "grpc: message of %zu bytes (at most %zu)", cap, max);
	buf = malloc(cap ? cap : 1);
	if (!buf)
		return tfj_err_set(TFJ_ENOMEM, "grpc: message of %zu bytes", cap);
	if (!bb)
		goto out;
	if (!grpc_byte_buffer_reader_init(&rd, bb)) {
		rc = tfj_err_set(TFJ_EPARSE, "grpc: unreadable message");
		goto out;
	}
	/*
	 * The reader yields the decompressed bytes, which may be more than the
	 * buffer's length said: the cap is checked again on what it yields.
	 */
	while (!rc && grpc_byte_buffer_reader_next(&rd, &s)) {
		size_t k = GRPC_SLICE_LENGTH(s);

		if (k > max - n) {
			rc = tfj_err_set(TFJ_ETOOBIG, "grpc: message larger than %zu bytes", max);
		} else if (k > cap - n) {
			grown = realloc(buf, n + k);
			if (grown) {
				buf = grown;
				cap = n + k;
			} else {
				rc = tfj_err_set(TFJ_ENOMEM, "grpc: message of %zu bytes", n + k);
			}
		}
		if (!rc) {
			memcpy(buf + n, GRPC_SLICE_START_PTR(s), k);
			n += k;
		}
		grpc_slice_unref(s);
	}
	grpc_byte_buffer_reader_destroy(&rd);
out:
	if (rc) {
		free(buf);
		return rc;
	}
	*out = buf;
	*len = n;
	return 0;
}

void tfj_grpc_cq_destroy(grpc_completion_queue *cq)
{
	if (!cq)
		return;
	grpc_completion_queue_shutdown(cq);
	while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
	       GRPC_QUEUE_SHUTDOWN)
		;
	grpc_completion_queue_destroy(cq);
}

void tfj_grpc_idle_ms(int64_t ms)
{
	grpc_completion_queue *cq = grpc_completion_queue_create_for_next(NULL);
	gpr_timespec until = tfj_grpc_deadline_ms(ms);

	if (!cq)
		return;
	/* Nothing is ever queued here: next returns at the deadline, having polled. */
	while (grpc_completion_queue_next(cq, until, NULL).type != GRPC_QUEUE_TIMEOUT &&
	       gpr_time_cmp(tfj_grpc_now(), until) < 0)
		;
	tfj_grpc_cq_destroy(cq);
}

const char *tfj_grpc_status_name(grpc_status_code st)
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

int tfj_grpc_channel_new(grpc_channel **out, const char *target, const char *ca_pem,
			 const struct tfj_grpc_args *a)
{
	grpc_channel_credentials *creds;
	grpc_channel_args cargs;
	int rc;

	*out = NULL;
	rc = args_view(&cargs, a);
	if (rc)
		return rc;
	creds = ca_pem ? grpc_ssl_credentials_create(ca_pem, NULL, NULL, NULL)
		       : grpc_insecure_credentials_create();
	if (!creds)
		return tfj_err_set(TFJ_EINVAL, "grpc: cannot make credentials for '%s'", target);
	*out = grpc_channel_create(target, creds, a ? &cargs : NULL);
	grpc_channel_credentials_release(creds);
	if (!*out)
		return tfj_err_set(TFJ_EINVAL, "grpc: cannot create a channel to '%s'", target);
	return 0;
}

/* Sets c->md to `authorization: Bearer <token>`; the text is wiped after gRPC copied it. */
static int bearer_md(struct tfj_grpc_call *c, const char *token)
{
	size_t tlen = strlen(token), hlen;
	char *hdr;

	if (tlen > SIZE_MAX - sizeof("Bearer "))
		return tfj_err_set(TFJ_ETOOBIG, "grpc: token too long");
	hlen = tlen + sizeof("Bearer ");
	hdr = malloc(hlen);
	if (!hdr)
		return tfj_err_set(TFJ_ENOMEM, "grpc: authorization header");
	snprintf(hdr, hlen, "Bearer %s", token);
	c->md.key = grpc_slice_from_static_string("authorization");
	c->md.value = grpc_slice_from_copied_string(hdr);
	explicit_bzero(hdr, hlen);
	free(hdr);
	return 0;
}

/*
 * The part of starting a call that unary calls and streams share: c
 * initialised (from here on tfj_grpc_call_end releases it), the bearer
 * entry, the call created with the deadline. *nmd: metadata entries to send.
 */
static int call_create(struct tfj_grpc_call *c, int *nmd, grpc_channel *ch,
		       grpc_completion_queue *cq, const char *method, const char *bearer,
		       gpr_timespec deadline)
{
	int rc;

	memset(c, 0, sizeof(*c));
	*nmd = 0;
	c->status = GRPC_STATUS_UNKNOWN;
	c->details = grpc_empty_slice();
	c->md.value = grpc_empty_slice();
	grpc_metadata_array_init(&c->imd);
	grpc_metadata_array_init(&c->tmd);
	c->started = 1; /* what is above is now released by tfj_grpc_call_end */
	if (bearer) {
		rc = bearer_md(c, bearer);
		if (rc)
			return rc;
		*nmd = 1;
	}
	c->call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
					   grpc_slice_from_static_string(method), NULL, deadline,
					   NULL);
	if (!c->call)
		return tfj_err_set(TFJ_EINTERNAL, "grpc %s: cannot create a call", method);
	return 0;
}

/* ops[0]: send the initial metadata (nmd entries); ops[1]: receive the server's. */
static void ops_open(grpc_op *ops, struct tfj_grpc_call *c, int nmd)
{
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[0].data.send_initial_metadata.count = (size_t)nmd;
	ops[0].data.send_initial_metadata.metadata = nmd ? &c->md : NULL;
	ops[1].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[1].data.recv_initial_metadata.recv_initial_metadata = &c->imd;
}

/* op: receive the final status into c. */
static void op_status(grpc_op *op, struct tfj_grpc_call *c)
{
	op->op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	op->data.recv_status_on_client.trailing_metadata = &c->tmd;
	op->data.recv_status_on_client.status = &c->status;
	op->data.recv_status_on_client.status_details = &c->details;
}

/* Starts the call's batch; on failure the call is released (c->call NULL). */
static int call_batch(struct tfj_grpc_call *c, grpc_op *ops, size_t n, void *tag,
		      const char *method)
{
	grpc_call_error e = grpc_call_start_batch(c->call, ops, n, tag, NULL);

	if (e != GRPC_CALL_OK) {
		grpc_call_unref(c->call);
		c->call = NULL;
		return tfj_err_set(TFJ_EINTERNAL, "grpc %s: start_batch failed (%s)", method,
				   grpc_call_error_to_string(e));
	}
	return 0;
}

int tfj_grpc_call_start(struct tfj_grpc_call *c, grpc_channel *ch, grpc_completion_queue *cq,
			const char *method, const char *bearer, grpc_byte_buffer *req,
			gpr_timespec deadline, void *tag)
{
	grpc_op ops[6];
	int rc, nmd;

	rc = call_create(c, &nmd, ch, cq, method, bearer, deadline);
	if (rc)
		return rc;
	memset(ops, 0, sizeof(ops));
	ops_open(ops, c, nmd);
	ops[2].op = GRPC_OP_SEND_MESSAGE;
	ops[2].data.send_message.send_message = req;
	ops[3].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &c->reply;
	op_status(&ops[5], c);
	return call_batch(c, ops, 6, tag, method);
}

int tfj_grpc_stream_open(struct tfj_grpc_call *c, grpc_channel *ch, grpc_completion_queue *cq,
			 const char *method, const char *bearer, void *status_tag)
{
	grpc_op ops[3];
	int rc, nmd;

	rc = call_create(c, &nmd, ch, cq, method, bearer, gpr_inf_future(GPR_CLOCK_MONOTONIC));
	if (rc)
		return rc;
	memset(ops, 0, sizeof(ops));
	ops_open(ops, c, nmd);
	op_status(&ops[2], c);
	return call_batch(c, ops, 3, status_tag, method);
}

/* Starts a batch of one operation. */
static int one_op(grpc_call *call, grpc_op *op, void *tag, const char *what)
{
	grpc_call_error e = grpc_call_start_batch(call, op, 1, tag, NULL);

	if (e != GRPC_CALL_OK)
		return tfj_err_set(TFJ_EINTERNAL, "grpc: cannot %s (%s)", what,
				   grpc_call_error_to_string(e));
	return 0;
}

int tfj_grpc_stream_send(grpc_call *call, grpc_byte_buffer *msg, void *tag)
{
	grpc_op op;

	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_SEND_MESSAGE;
	op.data.send_message.send_message = msg;
	return one_op(call, &op, tag, "send on a stream");
}

int tfj_grpc_stream_recv(grpc_call *call, grpc_byte_buffer **msg, void *tag)
{
	grpc_op op;

	*msg = NULL;
	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_RECV_MESSAGE;
	op.data.recv_message.recv_message = msg;
	return one_op(call, &op, tag, "receive on a stream");
}

void tfj_grpc_call_end(struct tfj_grpc_call *c)
{
	if (!c->started)
		return;
	if (c->call)
		grpc_call_unref(c->call);
	if (c->reply)
		grpc_byte_buffer_destroy(c->reply);
	grpc_metadata_array_destroy(&c->imd);
	grpc_metadata_array_destroy(&c->tmd);
	grpc_slice_unref(c->details);
	grpc_slice_unref(c->md.value);
	memset(c, 0, sizeof(*c));
}

void tfj_grpc_result_free(struct tfj_grpc_result *res)
{
	if (res) {
		free(res->details);
		free(res->reply);
		memset(res, 0, sizeof(*res));
	}
}

/* Waits for the call's batch; cancels it when gRPC overruns the deadline. */
static void unary_wait(grpc_completion_queue *cq, struct tfj_grpc_call *c, gpr_timespec deadline)
{
	grpc_event ev;

	/* The call's own deadline ends the batch; the margin only guards a bug. */
	ev = grpc_completion_queue_next(
		cq, gpr_time_add(deadline, gpr_time_from_seconds(UNARY_MARGIN_S, GPR_TIMESPAN)),
		NULL);
	if (ev.type != GRPC_OP_COMPLETE) {
		grpc_call_cancel(c->call, NULL);
		grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
	}
}

/* Copies the status details of a completed call into res->details. */
static int unary_details(struct tfj_grpc_result *res, const struct tfj_grpc_call *c)
{
	char *d = grpc_slice_to_c_string(c->details);

	if (!d)
		return tfj_err_set(TFJ_ENOMEM, "grpc: status details");
	res->details = strdup(d);
	gpr_free(d);
	return res->details ? 0 : tfj_err_set(TFJ_ENOMEM, "grpc: status details");
}

int tfj_grpc_unary(struct tfj_grpc_result *res, grpc_channel *ch, const char *method,
		   const char *bearer, const void *req, size_t req_len, gpr_timespec deadline,
		   size_t max_reply)
{
	struct tfj_grpc_call c = { 0 };
	grpc_completion_queue *cq;
	grpc_byte_buffer *send;
	int rc;

	memset(res, 0, sizeof(*res));
	res->status = GRPC_STATUS_UNKNOWN;
	send = tfj_grpc_bb_new(req, req_len);
	cq = grpc_completion_queue_create_for_next(NULL);
	rc = tfj_grpc_call_start(&c, ch, cq, method, bearer, send, deadline, &c);
	if (rc)
		goto out;
	unary_wait(cq, &c, deadline);
	res->status = c.status;
	rc = unary_details(res, &c);
	if (rc || c.status != GRPC_STATUS_OK)
		goto out;
	rc = tfj_grpc_bb_read(&res->reply, &res->reply_len, c.reply, max_reply);
	if (rc)
		tfj_err_set(rc, "grpc %s: reply: %s", method, tfj_err_detail());
out:
	tfj_grpc_call_end(&c);
	tfj_grpc_cq_destroy(cq);
	grpc_byte_buffer_destroy(send);
	return rc;
}

int tfj_grpc_server_new(grpc_server **out, const struct tfj_grpc_args *a)
{
	grpc_channel_args cargs;
	int rc;

	*out = NULL;
	rc = args_view(&cargs, a);
	if (rc)
		return rc;
	*out = grpc_server_create(a ? &cargs : NULL, NULL);
	return *out ? 0 : tfj_err_set(TFJ_EINTERNAL, "grpc: cannot create a server");
}

void *tfj_grpc_server_method(grpc_server *srv, const char *path)
{
	return grpc_server_register_method(srv, path, NULL, GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER,
					   0);
}

void *tfj_grpc_server_stream_method(grpc_server *srv, const char *path)
{
	return grpc_server_register_method(srv, path, NULL, GRPC_SRM_PAYLOAD_NONE, 0);
}

int tfj_grpc_server_listen(int *port, grpc_server *srv, const char *addr,
			   grpc_server_credentials *creds)
{
	if (!creds)
		creds = grpc_insecure_server_credentials_create();
	*port = grpc_server_add_http2_port(srv, addr, creds);
	grpc_server_credentials_release(creds);
	if (*port <= 0)
		return tfj_err_set(TFJ_EIO, "grpc: cannot listen on %s", addr);
	grpc_server_start(srv);
	return 0;
}

/* Asks for the next call of `method`; with_payload as the method was registered. */
static int incoming(struct tfj_grpc_incoming *in, grpc_server *srv, void *method,
		    grpc_completion_queue *cq, void *tag, int with_payload)
{
	grpc_call_error e;

	in->call = NULL;
	in->payload = NULL;
	grpc_metadata_array_init(&in->md);
	e = grpc_server_request_registered_call(srv, method, &in->call, &in->deadline, &in->md,
						with_payload ? &in->payload : NULL, cq, cq, tag);
	if (e != GRPC_CALL_OK)
		return tfj_err_set(TFJ_EINTERNAL, "grpc: cannot request calls (%s)",
				   grpc_call_error_to_string(e));
	return 0;
}

int tfj_grpc_incoming_request(struct tfj_grpc_incoming *in, grpc_server *srv, void *method,
			      grpc_completion_queue *cq, void *tag)
{
	return incoming(in, srv, method, cq, tag, 1);
}

int tfj_grpc_incoming_stream(struct tfj_grpc_incoming *in, grpc_server *srv, void *method,
			     grpc_completion_queue *cq, void *tag)
{
	return incoming(in, srv, method, cq, tag, 0);
}

int tfj_grpc_incoming_md(const char **val, size_t *len, const grpc_metadata_array *md,
			 const char *key)
{
	size_t i;

	*val = NULL;
	*len = 0;
	for (i = 0; i < md->count; i++) {
		if (grpc_slice_str_cmp(md->metadata[i].key, key) != 0)
			continue;
		*val = (const char *)GRPC_SLICE_START_PTR(md->metadata[i].value);
		*len = GRPC_SLICE_LENGTH(md->metadata[i].value);
		return 0;
	}
	return TFJ_ENOTFOUND;
}

void tfj_grpc_incoming_release(struct tfj_grpc_incoming *in)
{
	if (in->call)
		grpc_call_unref(in->call);
	if (in->payload)
		grpc_byte_buffer_destroy(in->payload);
	grpc_metadata_array_destroy(&in->md);
	in->call = NULL;
	in->payload = NULL;
	memset(&in->md, 0, sizeof(in->md));
}

int tfj_grpc_reply(grpc_call *call, grpc_status_code st, const char *detail,
		   grpc_byte_buffer *msg, int *cancelled, void *tag)
{
	grpc_op ops[4];
	grpc_slice det = grpc_slice_from_copied_string(detail ? detail : "");
	grpc_call_error e;
	size_t n = 0;

	memset(ops, 0, sizeof(ops));
	ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
	if (msg && st == GRPC_STATUS_OK) {
		ops[n].op = GRPC_OP_SEND_MESSAGE;
		ops[n++].data.send_message.send_message = msg;
	}
	ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	ops[n].data.send_status_from_server.status = st;
	ops[n++].data.send_status_from_server.status_details = detail ? &det : NULL;
	ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	ops[n++].data.recv_close_on_server.cancelled = cancelled;
	/* gRPC keeps its own reference to the details, so ours goes right away. */
	e = grpc_call_start_batch(call, ops, n, tag, NULL);
	grpc_slice_unref(det);
	if (e != GRPC_CALL_OK)
		return tfj_err_set(TFJ_EINTERNAL, "grpc: cannot answer a call (%s)",
				   grpc_call_error_to_string(e));
	return 0;
}
