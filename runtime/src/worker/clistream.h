/*
 * clistream.h - a client's stream to one ps: the requests
 * that psclient.c puts on it, one at a time or as the parts of one, and
 * their answers (docs/runtime-protocol.md).
 *
 * A stream is opened by the first request that needs it and kept for the
 * next ones; a call puts one request on it, or the parts of one (a large
 * Push), and the next call waits for every answer of this one. One request
 * is one batch (send it, receive the answer). Parts go out one send after
 * the other without waiting for answers (gRPC takes one send at a time per
 * stream) while one receive at a time collects their answers, in order: an
 * answer before the last is only checked, the last is the request's. Its
 * completions come through the client's queue, whose owner hands every
 * tag of this module (the TFJ_CLISTREAM_TAG_* kinds) to
 * tfj_clistream_complete().
 *
 * Ownership: the stream borrows its channel, queue, secret, lease and
 * arena from the client, which must outlive it; tfj_clistream_free()
 * releases the call and the buffers it holds (the stream must have ended,
 * see tfj_clistream_busy()).
 */
#ifndef TFJ_CLISTREAM_H
#define TFJ_CLISTREAM_H

#include <stddef.h>
#include <stdint.h>

#include <grpc/grpc.h>
#include <protobuf-c/protobuf-c.h>

#include <tfj/err.h>
#include <tfj/grpc.h>

#include "wire/rpcnames.h"
#include "wire/wire.h"
#include "wire/wiresplit.h"

/* Tag kinds of a stream's batches (the first member of every tag). */
enum { TFJ_CLISTREAM_TAG_RECV = 16, TFJ_CLISTREAM_TAG_SEND, TFJ_CLISTREAM_TAG_STATUS };

struct tfj_clistream;

struct tfj_clistream_tag {
	int kind;
	struct tfj_clistream *ps;
};

struct tfj_clistream {
	size_t shard;
	const char *host;             /* for messages */
	grpc_channel *ch;
	grpc_completion_queue *cq;
	const char *secret;           /* the job's ps secret, on the initial metadata */
	struct tfj_wire_lease *lease; /* zero-copy sends (NULL: copied) */
	struct tfj_wire_arena *arena; /* answers are decoded here */
	struct tfj_grpc_call gs;      /* the call and its final status */
	struct tfj_clistream_tag recv_tag, send_tag, status_tag;
	int open, ended;              /* ended: the status came, gs.status says why */
	int recv_pending;             /* a receive (with the send of a single request) */
	int send_pending;             /* the send of a part */
	grpc_byte_buffer *req, *rx;
	uint64_t next_id, want_id;    /* want_id: the answer the request returns */
	/* A request in parts (nparts > 0 only while one is on the stream). */
	const ProtobufCMessage *const *parts;
	unsigned char *applied;       /* NULL, or per part: 1 once answered OK */
	size_t nparts, nsent, nanswered;
	enum tfj_rpc_method method;
	int perr;                     /* an earlier part's failure (no more parts go) */
	char pdetail[TFJ_ERR_DETAIL_MAX];
	uint64_t frames, opened;      /* answers received, streams opened */
};

/*
 * The TFJ_E* code of a gRPC status (0 for OK): UNAVAILABLE,
 * DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED, CANCELLED -> TFJ_EUNAVAIL
 * (try again later); FAILED_PRECONDITION -> TFJ_ECONFLICT (the tasks
 * disagree; permanent); OUT_OF_RANGE -> TFJ_ENUMERIC; UNAUTHENTICATED ->
 * TFJ_EAUTH; anything else -> TFJ_EINTERNAL.
 */
int tfj_clistream_err_of(grpc_status_code st);

void tfj_clistream_init(struct tfj_clistream *ps, size_t shard, const char *host,
			grpc_channel *ch, grpc_completion_queue *cq, const char *secret,
			struct tfj_wire_lease *lease, struct tfj_wire_arena *arena);
void tfj_clistream_free(struct tfj_clistream *ps);

/* Sends one request, opening the stream first when there is none (or the last one ended). */
int tfj_clistream_start(struct tfj_clistream *ps, enum tfj_rpc_method method,
			const ProtobufCMessage *req);

/*
 * Puts the parts[0..n) of one request (n >= 2) on the stream, as above;
 * borrowed until its result. applied (NULL, or n entries the caller
 * zeroed) gets 1 for every part whose answer said OK: applied by the ps,
 * whatever the request's outcome.
 */
int tfj_clistream_start_parts(struct tfj_clistream *ps, enum tfj_rpc_method method,
			      const ProtobufCMessage *const *parts, size_t n,
			      unsigned char *applied);

/* Handles a completion of one of this module's tags. */
void tfj_clistream_complete(void *tag, int success);

/* 1 when the request on the stream has its outcome: every answer in, or the stream over. */
int tfj_clistream_done(const struct tfj_clistream *ps);

/* 1 while the stream is open and has not ended, or has a batch outstanding. */
int tfj_clistream_busy(const struct tfj_clistream *ps);

/* Cancels the stream (a request past its deadline, the client closing); its status follows. */
void tfj_clistream_cancel(struct tfj_clistream *ps);

/*
 * Releases an ended stream with nothing outstanding, so the next request
 * opens another; 1 when it did (a ps went away between calls), else 0.
 */
int tfj_clistream_reap(struct tfj_clistream *ps);

/*
 * The outcome of the request, once done: 0 with its answer decoded into
 * *msg (tensors in place: *kept gets the payload, which the caller keeps
 * while it uses msg and then destroys), or a TFJ_E* error with `detail`.
 * *ended is the stream's status when it ended before the answer (never
 * GRPC_STATUS_OK then: a ps that closed without answering is UNAVAILABLE;
 * timed_out makes it DEADLINE_EXCEEDED), GRPC_STATUS_OK otherwise. Clears
 * the request (and its parts).
 */
int tfj_clistream_result(struct tfj_clistream *ps, enum tfj_rpc_method method, int timed_out,
			 grpc_byte_buffer **kept, struct tfj_wire_msg *msg,
			 grpc_status_code *ended, char *detail, size_t cap);

#endif
