/*
 * grpc.h - the gRPC core plumbing every gRPC user shares (library tfj_grpc).
 *
 * The agent's report client, the operator's report service and the
 * runtime's parameter-server client and server all speak gRPC through the
 * core C API. What they have in common lives here: channel and server
 * arguments, creating a channel or a listening server, starting a unary
 * call on a completion queue (or making one and waiting for it), taking
 * calls of a registered method, answering one with a status, byte buffers
 * to and from contiguous bytes, and deadlines on the monotonic clock.
 *
 * What stays with each user: its message types (protobuf-c), its mapping
 * of gRPC statuses onto TFJ_E* codes, and anything on the runtime's tensor
 * path. The runtime sends tensors as slices that point at its own memory
 * and decodes received tensors in place from gRPC's slices (runtime/src/
 * wire.h), so this layer never flattens a message behind a caller's back:
 * tfj_grpc_call_start() takes a ready byte buffer and leaves the received
 * one in `reply` for the caller to read however it likes; only
 * tfj_grpc_unary() and tfj_grpc_bb_read() copy, for the small messages.
 *
 * This is a library of its own, apart from tfj_common, so the components
 * that do not speak gRPC do not link it. The caller runs grpc_init() and
 * grpc_shutdown().
 *
 * Ownership is stated per function: "borrowed" means the caller keeps it
 * and it must outlive the call (or the batch) that uses it.
 */
#ifndef TFJ_GRPC_H
#define TFJ_GRPC_H

#include <stddef.h>
#include <stdint.h>

#include <grpc/byte_buffer.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

/* ---- channel and server arguments ---- */

#define TFJ_GRPC_ARGS_MAX 24

/*
 * A small list of integer arguments. Keys are borrowed (gRPC's own
 * GRPC_ARG_* string constants). Adding past TFJ_GRPC_ARGS_MAX is recorded
 * and refused later by tfj_grpc_channel_new()/tfj_grpc_server_new().
 */
struct tfj_grpc_args {
	grpc_arg arg[TFJ_GRPC_ARGS_MAX];
	size_t n;
	int overflow;
};

void tfj_grpc_args_init(struct tfj_grpc_args *a);
/* Appends key=value; TFJ_ETOOBIG when the list is full. */
int tfj_grpc_args_int(struct tfj_grpc_args *a, const char *key, int value);
/*
 * Appends key=value, a string argument (value borrowed: it must outlive the
 * channel's or server's creation), e.g. GRPC_SSL_TARGET_NAME_OVERRIDE_ARG.
 */
int tfj_grpc_args_str(struct tfj_grpc_args *a, const char *key, const char *value);
/*
 * GRPC_ARG_RESOURCE_QUOTA: the channel or server takes its own reference
 * when it is created; the caller keeps (and later unrefs) its own.
 */
int tfj_grpc_args_quota(struct tfj_grpc_args *a, grpc_resource_quota *q);
/*
 * The message caps, each clamped to INT32_MAX: GRPC_ARG_MAX_RECEIVE_-
 * and GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, in that order.
 */
int tfj_grpc_args_msg_caps(struct tfj_grpc_args *a, size_t max_receive, size_t max_send);
/*
 * Reconnect backoff of a client channel (initial, min, max, in ms), and
 * gRPC's own retries off: every user retries on its own terms (the agent
 * on its next heartbeat, the runtime with the whole step). Beware: gRPC
 * also takes min_ms as the least time one connection attempt (TCP connect
 * and handshakes) gets before it is abandoned; a process with a small CPU
 * limit needs it generous.
 */
int tfj_grpc_args_reconnect(struct tfj_grpc_args *a, int initial_ms, int min_ms, int max_ms);

/* ---- deadlines (GPR_CLOCK_MONOTONIC) ---- */

gpr_timespec tfj_grpc_now(void);
/* Now + ms (negative ms count as 0). */
gpr_timespec tfj_grpc_deadline_ms(int64_t ms);

/* ---- byte buffers ---- */

/* A byte buffer holding a copy of len bytes (data may be NULL when len is 0). */
grpc_byte_buffer *tfj_grpc_bb_new(const void *data, size_t len);
/*
 * Copies a received byte buffer into one malloc'd block (*out, caller
 * frees; never NULL on success, even for 0 bytes). bb NULL reads as an
 * empty message. TFJ_ETOOBIG when it holds more than max bytes,
 * TFJ_EPARSE when it cannot be read (a compressed payload gRPC could not
 * decompress), TFJ_ENOMEM.
 */
int tfj_grpc_bb_read(uint8_t **out, size_t *len, grpc_byte_buffer *bb, size_t max);

/* Shuts a completion queue down, drains it and destroys it. Accepts NULL. */
void tfj_grpc_cq_destroy(grpc_completion_queue *cq);

/*
 * Waits ms milliseconds while letting gRPC make progress: it polls a
 * completion queue of its own instead of sleeping. A client that waits
 * between retries must not simply sleep: gRPC moves a connection attempt
 * (a TLS handshake above all, several round trips) only while some thread
 * polls, so an attempt begun just before a plain sleep stalls until it
 * times out, and the next call fails fast again.
 */
void tfj_grpc_idle_ms(int64_t ms);

/* The name of a status code ("UNAVAILABLE"); "UNKNOWN" for others. */
const char *tfj_grpc_status_name(grpc_status_code st);

/* ---- clients ---- */

/*
 * A channel to target ("host:port"): TLS verified against ca_pem when it is
 * given (PEM roots, borrowed), plaintext otherwise. `a` may be NULL (gRPC's
 * defaults). TFJ_EINVAL when gRPC refuses the target or `a` overflowed.
 * The caller destroys the channel (grpc_channel_destroy).
 */
int tfj_grpc_channel_new(grpc_channel **out, const char *target, const char *ca_pem,
			 const struct tfj_grpc_args *a);

/*
 * One unary call in flight: the send-message, close, receive-metadata,
 * receive-message and receive-status operations in one batch. The fields
 * are filled by gRPC when the batch's tag completes.
 */
struct tfj_grpc_call {
	grpc_call *call;
	grpc_byte_buffer *reply;   /* the answer; NULL when none came. Owned */
	grpc_status_code status;
	grpc_slice details;        /* the status message */
	grpc_metadata_array imd, tmd;
	grpc_metadata md;          /* the authorization entry, when sent */
	int started;
};

/*
 * Starts `method` ("/pkg.Service/Method", a string that lives as long as
 * the call) on ch with request `req` (borrowed: it must stay until the tag
 * completes) and the deadline; `bearer`, when not NULL, is sent as
 * `authorization: Bearer <bearer>` (copied into gRPC's metadata; the
 * intermediate copy here is wiped). The batch completes on cq with `tag`,
 * at the latest when the deadline passes. On failure nothing is left to
 * clean but tfj_grpc_call_end() is still safe. TFJ_EINTERNAL with gRPC's
 * reason when the call cannot be created or started.
 */
int tfj_grpc_call_start(struct tfj_grpc_call *c, grpc_channel *ch, grpc_completion_queue *cq,
			const char *method, const char *bearer, grpc_byte_buffer *req,
			gpr_timespec deadline, void *tag);
/*
 * Releases the call, the metadata, the details and the reply (unless the
 * caller took it: set c->reply to NULL first). Zeroes *c; safe on a call
 * that failed to start, or on a zeroed one.
 */
void tfj_grpc_call_end(struct tfj_grpc_call *c);

/*
 * Opens a bidirectional stream (`method` lives as long as the call) on ch:
 * sends the initial metadata (with `bearer` as in tfj_grpc_call_start) and
 * asks for the server's initial metadata and the final status in one
 * batch, which completes on cq with status_tag when the stream ends (c->
 * status, c->details; c->reply stays unused). No deadline: the caller
 * bounds each exchange itself and cancels the call (grpc_call_cancel) to
 * give up. Messages go both ways with tfj_grpc_stream_send/_recv; release
 * with tfj_grpc_call_end() once status_tag completed.
 */
int tfj_grpc_stream_open(struct tfj_grpc_call *c, grpc_channel *ch, grpc_completion_queue *cq,
			 const char *method, const char *bearer, void *status_tag);

/*
 * One message out on a stream (either side): `msg` borrowed until `tag`
 * completes. One send at a time per stream. TFJ_EINTERNAL when the batch
 * cannot start (then `tag` never completes).
 */
int tfj_grpc_stream_send(grpc_call *call, grpc_byte_buffer *msg, void *tag);
/*
 * Asks for the next message on a stream (either side): *msg is filled when
 * `tag` completes, NULL when the peer closed its side or the stream ended.
 */
int tfj_grpc_stream_recv(grpc_call *call, grpc_byte_buffer **msg, void *tag);

/* The outcome of tfj_grpc_unary(). */
struct tfj_grpc_result {
	grpc_status_code status;
	char *details;      /* the status message, NUL-terminated, never NULL after a call */
	uint8_t *reply;     /* the answer's bytes (never NULL after an OK call) */
	size_t reply_len;
};

/*
 * Makes one unary call and waits for it, on a completion queue of its own:
 * the call's own deadline ends it; should gRPC fail to (a bug), it is
 * cancelled a few seconds later. Returns 0 when the call completed,
 * whatever its status (res->status says); a negative code when it could
 * not be made (TFJ_EINTERNAL, TFJ_ENOMEM) or when an OK answer holds more
 * than max_reply bytes (TFJ_ETOOBIG) or cannot be read (TFJ_EPARSE).
 * The caller frees *res with tfj_grpc_result_free(), after a failure too.
 */
int tfj_grpc_unary(struct tfj_grpc_result *res, grpc_channel *ch, const char *method,
		   const char *bearer, const void *req, size_t req_len, gpr_timespec deadline,
		   size_t max_reply);
void tfj_grpc_result_free(struct tfj_grpc_result *res);

/* ---- servers ---- */

/* grpc_server_create with `a` (may be NULL). TFJ_EINVAL when `a` overflowed. */
int tfj_grpc_server_new(grpc_server **out, const struct tfj_grpc_args *a);
/*
 * Registers a unary method whose request arrives with the call (the
 * handle for tfj_grpc_incoming_request); NULL when gRPC refuses it.
 * Before tfj_grpc_server_listen().
 */
void *tfj_grpc_server_method(grpc_server *srv, const char *path);
/*
 * Listens on addr ("host:port", port 0: any) and starts the server; *port
 * gets the port bound. creds NULL = plaintext; creds are consumed.
 * TFJ_EIO when the address cannot be bound (the server is not started).
 */
int tfj_grpc_server_listen(int *port, grpc_server *srv, const char *addr,
			   grpc_server_credentials *creds);

/*
 * Registers a streaming method: its calls arrive without a message
 * (tfj_grpc_incoming_stream), which the server then reads with
 * tfj_grpc_stream_recv. NULL when gRPC refuses it.
 */
void *tfj_grpc_server_stream_method(grpc_server *srv, const char *path);

/* A call of a registered method, with its request; filled when `tag` completes. */
struct tfj_grpc_incoming {
	grpc_call *call;
	gpr_timespec deadline;
	grpc_metadata_array md;
	grpc_byte_buffer *payload;
};

/* Asks for the next call of `method` on cq (new calls and their events). */
int tfj_grpc_incoming_request(struct tfj_grpc_incoming *in, grpc_server *srv, void *method,
			      grpc_completion_queue *cq, void *tag);
/* Same for a streaming method (in->payload stays NULL). */
int tfj_grpc_incoming_stream(struct tfj_grpc_incoming *in, grpc_server *srv, void *method,
			     grpc_completion_queue *cq, void *tag);
/*
 * The value of the first metadata entry named `key` (borrowed from the
 * call's metadata); 0 when found, TFJ_ENOTFOUND else.
 */
int tfj_grpc_incoming_md(const char **val, size_t *len, const grpc_metadata_array *md,
			 const char *key);
/* Releases what the request delivered (call, metadata, payload); zeroes them. */
void tfj_grpc_incoming_release(struct tfj_grpc_incoming *in);

/*
 * Answers a call: initial metadata, `msg` when the status is OK and msg is
 * not NULL (borrowed until `tag` completes), the status with `detail`
 * (copied; NULL sends none) and the close. *cancelled (must live until the
 * tag completes) says whether the client went away. TFJ_EINTERNAL with
 * gRPC's reason when the batch cannot start; `tag` then never completes.
 */
int tfj_grpc_reply(grpc_call *call, grpc_status_code st, const char *detail,
		   grpc_byte_buffer *msg, int *cancelled, void *tag);

#endif
