/*
 * psclient.h - calls from workers, the chief and the evaluator to every
 * parameter server.
 *
 * One channel per ps task, one completion queue for all of them: a call to
 * "all shards" starts every shard's call at once and waits for them
 * together, so a step costs one round trip, not nps. Request tensors are
 * sent zero-copy (wire.h); before returning, a call waits until gRPC has
 * released them, so the caller may overwrite its buffers right away.
 * Responses are decoded into one arena per shard, valid until that shard's
 * next call; their tensors (Pull) are left in the received gRPC slices
 * (tfj_wire_decode_split) so the caller copies each one once, straight to
 * where it belongs.
 *
 * gRPC statuses become TFJ_E* codes as tfj_clistream_err_of() says
 * (clistream.h): TFJ_EUNAVAIL means try again later.
 *
 * Transport (docs/runtime-protocol.md): every request travels as a frame
 * on one long-lived stream per ps (frame.h, clistream.h). A stream that
 * breaks fails its request with the stream's status (mapped as above, so
 * the caller retries or gives up) and is opened again by the next call; a
 * request past its deadline cancels its stream (DEADLINE_EXCEEDED). The
 * secret (psauth.h) goes with the stream's initial metadata.
 *
 * Pushes in pieces: whether a ps takes them is what its last Status
 * answer on its current stream said (tfj_psclient_pieces_of), the one
 * rule by which a caller decides to cut a push (pushtrack.h), after
 * tfj_psclient_ask() asked every ps whose stream is new since its last
 * Status. tfj_psclient_call_parts() holds to the same rule: it sends no
 * parts to a ps for which it does not hold (a stream that broke since).
 *
 * Ownership: the client owns its channels, streams and arenas;
 * tfj_psclient_free().
 */
#ifndef TFJ_PSCLIENT_H
#define TFJ_PSCLIENT_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "wire/rpcnames.h"
#include "task/rtconfig.h"
#include "wire/wire.h"
#include "wire/wiresplit.h"

struct tfj_psclient;

/* What went over the streams (logged by tfj_psclient_free, read by tests). */
struct tfj_psclient_stats {
	uint64_t frames;          /* answers received over streams */
	uint64_t streams_opened;  /* streams opened, reopenings included */
};

int tfj_psclient_new(struct tfj_psclient **out, const struct tfj_rtconfig *cfg);
void tfj_psclient_free(struct tfj_psclient *cl);

size_t tfj_psclient_nshards(const struct tfj_psclient *cl);

/*
 * Calls `method` on every shard i with reqs[i] (NULL: skip shard i) and
 * stores the decoded answers in resps[i]. timeout_s bounds the whole call.
 * Returns 0 when every call succeeded, else the error of the first failing
 * shard (its detail names the ps and the gRPC status); resps of successful
 * shards are valid either way.
 */
int tfj_psclient_call(struct tfj_psclient *cl, enum tfj_rpc_method method,
		      const ProtobufCMessage *const *reqs, ProtobufCMessage **resps,
		      double timeout_s);

/*
 * Like tfj_psclient_call() for a request that comes in parts (a Push cut
 * into pieces, docs/runtime-protocol.md): shard i gets parts[i][0..nparts[i])
 * (parts[i] NULL or nparts[i] 0: skip shard i), in order on its stream,
 * each part sent as soon as the one before has left, without waiting for
 * its answer, so the ps takes in one part while it works on the one
 * before. resps[i] is the answer to shard i's last part. A refused part
 * fails the call with that part's error; parts not sent by then are not
 * sent, those already on the wire are applied as any part is. applied
 * (NULL, or per shard NULL or nparts[i] entries the caller zeroed) gets 1
 * for every part the ps answered OK, so that a retry after a refusal need
 * not send those again. A shard with one part and no applied[i] is a
 * whole request and goes as tfj_psclient_call() would send it. Parts
 * (more than one, or one with applied[i]: what is left of a cut) go only
 * to a ps that takes pieces: a shard for which tfj_psclient_pieces_of()
 * does not hold now is sent nothing and fails the call with TFJ_EUNAVAIL,
 * so that the caller asks again and sends it the request whole; the other
 * shards get theirs.
 */
int tfj_psclient_call_parts(struct tfj_psclient *cl, enum tfj_rpc_method method,
			    const ProtobufCMessage *const *const *parts, const size_t *nparts,
			    unsigned char *const *applied, ProtobufCMessage **resps,
			    double timeout_s);

/*
 * Asks the Status, on its stream, of every ps i with want[i] set (want
 * NULL: every ps) that has not answered one on its current stream (none
 * yet, or its stream broke since): the answers set what
 * tfj_psclient_pieces_of() says. 0, or the first failing shard's error
 * (the others are asked all the same).
 */
int tfj_psclient_ask(struct tfj_psclient *cl, const ProtobufCMessage *const *want,
		     double timeout_s);

/*
 * 1 when ps i answered a Status on its current stream; 0 before the first
 * one and after its stream broke (until it is asked again).
 */
int tfj_psclient_streaming_of(const struct tfj_psclient *cl, size_t i);

/*
 * 1 when ps i announced piece_parts (an async ps that takes parts cut
 * anywhere) at its last Status on its current stream, so that
 * tfj_psclient_call_parts() may send it parts.
 */
int tfj_psclient_pieces_of(const struct tfj_psclient *cl, size_t i);

void tfj_psclient_get_stats(struct tfj_psclient_stats *out, const struct tfj_psclient *cl);

/*
 * The tensors of shard i's last answer (resps[i] itself has an empty slices
 * list); valid until shard i's next call.
 */
const struct tfj_wire_msg *tfj_psclient_tensors(const struct tfj_psclient *cl, size_t i);

#endif
