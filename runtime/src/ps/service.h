/*
 * service.h - the state of one ps task and how it serves one request that
 * came as a frame on a client's stream (srvstream.h).
 *
 * The split follows what concerns the transport and what does not.
 * Serving a request (check the layout hash, apply it to the shard, park a
 * Pull that asks for a step not reached yet, answer from the parameter
 * buffer pool with copy on write) lives here; tfj_service_respond() hands
 * the answer to the transport (c->respond, set by srvstream.h, which this
 * module does not include: srvstream depends on it, not the other way).
 * server.c owns the server's life (set-up,
 * the completion queue loop, tear-down); srvstream.c owns the streams.
 * Everything runs on the one thread that drains the completion queue, so
 * none of this state is locked.
 *
 * Completion-queue tags: every tag handed to gRPC points at a struct whose
 * first member is an int holding an enum tfj_service_tag, which is how the
 * loop knows what completed.
 *
 * Ownership: the server (struct tfj_service) is set up and freed by
 * server.c; it borrows the config and owns everything else it points
 * to, the buffer pool included (tfj_service_pool_free). A request (struct
 * tfj_service_call) is calloc'ed by the stream that received it and handed
 * to tfj_service_handle(), or straight to tfj_service_respond() when it is
 * refused before it is decoded; either takes it. A parked Pull stays in
 * `parked` until tfj_service_flush_parked() answers it. Once answered, a
 * request belongs to its stream (srvstream.h).
 */
#ifndef TFJ_SERVICE_H
#define TFJ_SERVICE_H

#include <stdint.h>

#include <grpc/grpc.h>
#include <protobuf-c/protobuf-c.h>

#include <tfj/grpc.h>

#include "task/layout.h"
#include "wire/psauth.h"
#include "wire/rpcnames.h"
#include "task/rtconfig.h"
#include "ps/shard.h"
#include "tfj_runtime.pb-c.h"
#include "wire/wire.h"
#include "wire/wiresplit.h"

struct tfj_srvstream;

/* Parameter buffers in the pool: the live one plus those Pulls still send. */
#define TFJ_SERVICE_MAX_SNAPSHOTS 64

enum tfj_service_tag {
	TFJ_SERVICE_TAG_SHUTDOWN = 1,
	/* A new stream, and the batches of one (srvstream.c). */
	TFJ_SERVICE_TAG_NEW_STREAM, TFJ_SERVICE_TAG_STREAM_RECV, TFJ_SERVICE_TAG_STREAM_SEND,
	TFJ_SERVICE_TAG_STREAM_CLOSED, TFJ_SERVICE_TAG_STREAM_STATUS,
	/* A call of a method this ps does not serve. */
	TFJ_SERVICE_TAG_NEW_UNKNOWN
};

/* The slot that takes the next new stream (srvstream.h arms and serves it). */
struct tfj_service_slot {
	int kind;  /* TFJ_SERVICE_TAG_NEW_STREAM */
	void *reg; /* the registered stream method */
	struct tfj_grpc_incoming in;
};

/*
 * Calls of methods not registered here. gRPC's core leaves them waiting
 * until the server asks for them, so without this slot a client calling a
 * method this ps lacks (a unary call of a method that only travels on the
 * stream, say) would wait until its deadline; with it, the client is
 * answered UNIMPLEMENTED at once.
 */
struct tfj_service_unknown_slot {
	int kind; /* TFJ_SERVICE_TAG_NEW_UNKNOWN */
	grpc_call *call;
	grpc_call_details details;
	grpc_metadata_array md;
};

/*
 * A parameter buffer. The shard's live parameters are one of them; a Pull
 * is answered by sending the live buffer itself (zero-copy slices), and an
 * update that finds the live buffer still referenced by such an answer
 * first moves the live values to a free buffer (copy on write, cow() in
 * service.c). So a Pull costs no copy, and an update costs one only when it
 * overlaps a Pull still being sent.
 */
struct tfj_service_snapshot {
	float *data;
	int users;                  /* calls answering from it (loop thread only) */
	struct tfj_wire_lease lease; /* slices gRPC still holds */
};

struct tfj_service_call;

/*
 * How a request's answer leaves (msg only with GRPC_STATUS_OK; may be
 * NULL): set by the transport that received it, which this module does
 * not know (tfj_srvstream_respond, srvstream.h). Takes c.
 */
typedef void (*tfj_service_respond_fn)(struct tfj_service_call *c, grpc_status_code code,
				     const char *detail, const ProtobufCMessage *msg);

/* One request: a frame of a stream, answered as a frame on it. */
struct tfj_service_call {
	tfj_service_respond_fn respond;
	struct tfj_srvstream *st;     /* the stream it came on (the transport's) */
	uint64_t id;
	uint32_t method;
	grpc_byte_buffer *resp;
	struct tfj_service_snapshot *snap;
	/* Parked Pull. */
	int with_state;
	int64_t min_step;
	gpr_timespec wait_until;
	struct tfj_service_call *next;
};

struct tfj_service {
	const struct tfj_rtconfig *cfg;
	struct tfj_layout layout;
	struct tfj_shard shard;
	grpc_server *srv;
	grpc_completion_queue *cq;
	struct tfj_service_slot sslot;
	struct tfj_service_unknown_slot uslot;
	uint64_t streams_opened;
	uint64_t stream_frames;
	uint64_t cow_copies;         /* updates that moved the live values first (cow()) */
	struct tfj_wire_arena arena;
	struct tfj_service_snapshot snaps[TFJ_SERVICE_MAX_SNAPSHOTS];
	struct tfj_service_call *parked;
	Tfj__Runtime__V1__Slice *smsgs;
	Tfj__Runtime__V1__Slice **sptrs;
	Tfj__Runtime__V1__Slice *stmsgs;  /* optimizer state, for Pulls with_state */
	Tfj__Runtime__V1__Slice **stptrs;
	gpr_timespec finish_at;
	int shutdown_kind; /* TFJ_SERVICE_TAG_SHUTDOWN; its address is the shutdown tag */
	struct tfj_psauth auth;    /* the job's ps secret (off when not configured) */
};

/*
 * The pool adopts the shard's live parameters as its first buffer and
 * installs the copy-on-write hook as the shard's prewrite hook (shard.h).
 */
void tfj_service_pool_adopt(struct tfj_service *s);

/*
 * Frees the pool's buffers, the live parameters among them once the pool
 * adopted them (the shard's `param` is then set to NULL, as shard.h asks);
 * no call may still be answering from them.
 */
void tfj_service_pool_free(struct tfj_service *s);

/*
 * Serves one decoded request (wm: tensors still in the received slices,
 * which the shard copies once) and answers it, now or when parked. rc is
 * the outcome of decoding; a request that could not be decoded is refused.
 * Takes c (see Ownership above).
 */
void tfj_service_handle(struct tfj_service *s, int method, struct tfj_service_call *c, int rc,
		      const struct tfj_wire_msg *wmp);

/* Answers c through its transport (c->respond; msg may be NULL for an error). Takes c. */
void tfj_service_respond(struct tfj_service *s, struct tfj_service_call *c, grpc_status_code code,
		       const char *detail, const ProtobufCMessage *msg);

/* Answers parked Pulls whose step arrived, whose wait ran out, or all (force). */
void tfj_service_flush_parked(struct tfj_service *s, int force);

/* Logs a call refused for lacking the job's secret: the first, then every 1000th. */
void tfj_service_log_refused(struct tfj_service *s, grpc_call *call);

#endif
