/*
 * frame.h - the envelope of the transport: requests and answers as frames
 * on one bidirectional stream per client and ps
 * (/tfj.runtime.v1.ParameterServer/Stream, docs/runtime-protocol.md).
 *
 * A frame is a StreamFrame message (common/proto/tfj_runtime.proto): a
 * request id, the method, for answers a gRPC status code and message, and
 * the method's own request or response as the last field `body`, encoded
 * as a plain message of its type. Because `body` comes last, the
 * header is a few bytes written in front of the message's slices
 * (tfj_wire_encode_after): the tensors travel zero-copy. A
 * received body is decoded in place (tfj_wire_split_run), so its tensors
 * are copied once, straight to where they belong.
 *
 * Bounds: the header's fields are read with a bounded cursor (varints at
 * most 10 bytes, detail cut at TFJ_FRAME_DETAIL_MAX), unknown fields are
 * skipped, and a body that is not the last field is TFJ_EPARSE.
 *
 * Ownership: a decoded frame points into the received byte buffer (and,
 * for a compressed one, into the arena's flat buffer), which must outlive
 * it and its decoded body.
 */
#ifndef TFJ_FRAME_H
#define TFJ_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include <grpc/byte_buffer.h>
#include <protobuf-c/protobuf-c.h>

#include "wire/rpcnames.h"
#include "wire/wire.h"
#include "wire/wiresplit.h"

/* The stream's gRPC method. */
#define TFJ_FRAME_PATH "/" TFJ_RPC_SERVICE "/Stream"
/* The highest protocol this build speaks (StatusRequest/Response.protocol). */
#define TFJ_FRAME_PROTOCOL 2
#define TFJ_FRAME_DETAIL_MAX 256

struct tfj_frame {
	uint64_t id;
	uint32_t method;                     /* enum tfj_rpc_method */
	uint32_t status;                     /* grpc_status_code of an answer */
	char detail[TFJ_FRAME_DETAIL_MAX]; /* NUL-terminated, cut when longer */
	struct tfj_wire_bytes body;          /* the message's run; len 0 when none */
};

/*
 * Builds a frame: header (zero fields left out, detail may be NULL) and
 * `body` (NULL: none) with its large bytes fields referenced under `lease`
 * (NULL: copied). The caller owns *out.
 */
int tfj_frame_encode(grpc_byte_buffer **out, uint64_t id, uint32_t method, uint32_t status,
		       const char *detail, const ProtobufCMessage *body,
		       struct tfj_wire_lease *lease);

/* Reads a received frame's header (bb NULL: TFJ_EPARSE). TFJ_EPARSE when malformed. */
int tfj_frame_decode(struct tfj_frame *f, grpc_byte_buffer *bb, struct tfj_wire_arena *a);

/*
 * Decodes the frame's body as a `desc` message with its tensors left in
 * place (wiresplit.h) into the arena. An absent body is the empty message.
 */
int tfj_frame_body(struct tfj_wire_msg *out, const struct tfj_frame *f,
		     const ProtobufCMessageDescriptor *desc, struct tfj_wire_arena *a);

#endif
