/*
 * wire.h - protobuf-c messages in and out of gRPC byte buffers.
 *
 * Sending: tfj_wire_encode() packs a message with protobuf-c's
 * pack_to_buffer, which hands every `bytes` field over as the caller's own
 * pointer. Pieces of at least TFJ_WIRE_ZEROCOPY_MIN bytes (tensor payloads)
 * become grpc_slices that point at that memory, no copy; the small framing
 * pieces in between are coalesced into copied slices. Each zero-copy slice
 * holds a reference on a struct tfj_wire_lease, dropped by gRPC when it is
 * done with the bytes (possibly on one of its own threads); the memory must
 * not change or go away until tfj_wire_lease_busy() says 0.
 *
 * Receiving: tfj_wire_decode() reads a byte buffer (flattening it only when
 * gRPC delivered it in several slices) and unpacks it with protobuf-c into
 * an arena that is reused message after message, so steady-state decoding
 * does not touch malloc. It suits the small messages.
 *
 * Messages with tensors (a `repeated Slice` field: InitRequest, PullResponse,
 * PushRequest) go through tfj_wire_decode_split() (wiresplit.h, included
 * below) instead, which leaves the tensors in the received slices so the
 * caller copies each one once, straight into its destination.
 *
 * Ownership: the caller owns the byte buffer from encode
 * (grpc_byte_buffer_destroy) and the arena; a decoded message lives in the
 * arena until the next tfj_wire_arena_reset(). Split-decoded tensors also
 * point into the received byte buffer, which must outlive them.
 */
#ifndef TFJ_WIRE_H
#define TFJ_WIRE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <grpc/byte_buffer.h>
#include <grpc/grpc.h>
#include <protobuf-c/protobuf-c.h>

#include <tfj/grpc.h>

#define TFJ_WIRE_ZEROCOPY_MIN 1024
#define TFJ_WIRE_MAX_SLICES 65536

struct tfj_wire_lease {
	atomic_int refs; /* zero-copy slices gRPC still holds */
};

static inline int tfj_wire_lease_busy(struct tfj_wire_lease *l)
{
	return atomic_load(&l->refs);
}

/* Waits (bounded, ~timeout_ms) until gRPC released every slice of the lease. */
int tfj_wire_lease_wait(struct tfj_wire_lease *l, int timeout_ms);

/* Packs msg into *out; large bytes fields are referenced under `lease` (may be NULL: copy). */
int tfj_wire_encode(grpc_byte_buffer **out, const ProtobufCMessage *msg,
		    struct tfj_wire_lease *lease);

/*
 * Same, with head_len bytes of `head` (copied) in front of the message
 * (msg NULL: the head alone): an envelope whose last field is the message
 * (frame.h) costs no copy of the message's tensors.
 */
int tfj_wire_encode_after(grpc_byte_buffer **out, const uint8_t *head, size_t head_len,
			  const ProtobufCMessage *msg, struct tfj_wire_lease *lease);

/* Keepalive ping interval and timeout of the ps transport (tfj_wire_transport_args). */
#define TFJ_WIRE_KEEPALIVE_MS 10000

/*
 * Channel arguments shared by server and clients: explicit message caps
 * (max_message bytes each way) and HTTP/2 windows and frames sized for
 * tensors, so a multi-megabyte push is not paced by 64 KiB flow-control
 * windows; keepalive, so a transport to a vanished peer is closed and its
 * pending operations end. Appends them to `a` (common's tfj_grpc layer).
 */
int tfj_wire_transport_args(struct tfj_grpc_args *a, size_t max_message);

/*
 * Process-wide malloc settings for a task that moves tensors through gRPC
 * (wire.c says why). Call once at start, before other threads exist; a
 * malloc setting in the environment (MALLOC_MMAP_THRESHOLD_,
 * MALLOC_TRIM_THRESHOLD_, GLIBC_TUNABLES) is left in charge.
 */
void tfj_wire_tune_malloc(void);

struct tfj_wire_chunk;

struct tfj_wire_arena {
	ProtobufCAllocator alloc;    /* handed to protobuf-c */
	struct tfj_wire_chunk *head; /* current chunk */
	size_t total;                /* bytes handed out since the last reset */
	size_t max;                  /* cap on one message's decoded size */
	uint8_t *flat;               /* flattening buffer for multi-slice payloads */
	size_t flat_cap;
	grpc_slice flat_slice;       /* `flat` as a slice, for split decoding */
	int failed;                  /* an allocation hit the cap */
};

/* `max` bounds the memory one decoded message may take. */
int tfj_wire_arena_init(struct tfj_wire_arena *a, size_t max);
/* Forgets every message decoded so far; keeps the memory for the next. */
void tfj_wire_arena_reset(struct tfj_wire_arena *a);
void tfj_wire_arena_free(struct tfj_wire_arena *a);

/* Unpacks len bytes as a `desc` message into the arena. TFJ_EPARSE when malformed. */
int tfj_wire_unpack(ProtobufCMessage **out, const ProtobufCMessageDescriptor *desc,
		    const uint8_t *data, size_t len, struct tfj_wire_arena *a);

/*
 * Copies a received byte buffer into the arena's `flat` buffer (reused,
 * grown up to the arena's cap) and stores its length in *len_out; `what`
 * names the message in errors. For payloads that cannot be read in place.
 */
int tfj_wire_flatten(size_t *len_out, grpc_byte_buffer *bb, const char *what,
		     struct tfj_wire_arena *a);

/* Same, from a received byte buffer (NULL bb = empty message). */
int tfj_wire_decode(ProtobufCMessage **out, const ProtobufCMessageDescriptor *desc,
		    grpc_byte_buffer *bb, struct tfj_wire_arena *a);

/* Split decoding (tensors left in the received slices) is wiresplit.h's. */

#endif
