/*
 * wiresplit.h - decoding messages with tensors without copying them.
 *
 * Messages with a `repeated Slice` field (InitRequest, PullResponse,
 * PushRequest) are read by a small bounded reader straight from the slices
 * gRPC delivered: each Slice is parsed by hand and its `data` recorded as a
 * position in those slices (struct tfj_wire_bytes: slice index, offset,
 * length), while every other field is copied into a small buffer that
 * protobuf-c unpacks into the arena as usual (wire.h). A message may carry
 * two such lists: `slices` (values, gradients) and `state` (optimizer
 * state, for checkpoints); each gets its own tensor array. The caller then
 * copies each tensor once, straight into its destination. The wire format
 * is plain protobuf.
 *
 * Bounds: every length is checked against the enclosing message before it
 * is used, varints are at most 10 bytes, group wire types are refused, and
 * the number of tensors is capped by the arena's size; TFJ_EPARSE when
 * malformed, TFJ_ETOOBIG over the arena's cap. Covered by fuzz_message.
 *
 * Ownership: a decoded message lives in the arena until the next
 * tfj_wire_arena_reset(); its tensors also point into the received slices
 * (or byte buffer), which must outlive them. The API keeps the tfj_wire_
 * prefix: this is the receiving half of the wire module, split off to keep
 * files small.
 */
#ifndef TFJ_WIRESPLIT_H
#define TFJ_WIRESPLIT_H

#include <stddef.h>
#include <stdint.h>

#include <grpc/byte_buffer.h>
#include <grpc/grpc.h>
#include <protobuf-c/protobuf-c.h>

struct tfj_wire_arena;

/* A run of bytes inside a received message's slices (not copied). */
struct tfj_wire_bytes {
	const grpc_slice *sl; /* the message's slices, borrowed */
	size_t nsl;
	size_t idx;           /* slice the run starts in */
	size_t off;           /* offset in that slice */
	size_t len;
};

/* Copies the run's len bytes to dst. */
void tfj_wire_bytes_copy(void *dst, const struct tfj_wire_bytes *b);

/*
 * Reads a varint (at most 10 bytes) from the front of the run and moves b
 * past it; -1 (b unchanged) when the run ends first or it is overlong.
 */
int tfj_wire_bytes_varint(struct tfj_wire_bytes *b, uint64_t *v);

/* Moves b past n bytes; -1 (b unchanged) when the run holds fewer. */
int tfj_wire_bytes_skip(struct tfj_wire_bytes *b, uint64_t n);

/* Copies the run's next n bytes (n <= b->len) to dst and moves b past them. */
void tfj_wire_bytes_take(struct tfj_wire_bytes *b, void *dst, size_t n);

/*
 * The next floats of the run without copying them: points *p at up to max
 * (>= 1) floats that lie in one received slice, moves b past them and
 * returns how many; *p then needs no alignment (read it as bytes, like
 * tfj_optim_finite() and tfj_optim_update() do). A float split across two
 * slices is copied to *tmp and returned alone. Returns 0 when fewer than 4
 * bytes are left.
 */
size_t tfj_wire_bytes_floats(struct tfj_wire_bytes *b, const void **p, float *tmp, size_t max);

/* One Slice of a split-decoded message: header fields and its raw data. */
struct tfj_wire_tensor {
	uint32_t var;
	uint64_t offset;
	uint64_t count;
	struct tfj_wire_bytes data; /* not yet checked against count */
};

struct tfj_wire_msg {
	ProtobufCMessage *head;    /* every field but the tensors (its Slice lists are empty) */
	struct tfj_wire_tensor *t; /* nt tensors of the `slices` field, wire order, in the arena */
	size_t nt;
	struct tfj_wire_tensor *st; /* nst tensors of the `state` field (optimizer state) */
	size_t nst;
};

/*
 * The field number of desc's `repeated Slice slices` field (values,
 * gradients), or 0 when it has none (then tfj_wire_decode_split() is plain
 * decoding).
 */
uint32_t tfj_wire_tensor_field(const ProtobufCMessageDescriptor *desc);

/* The field number of desc's `repeated Slice state` field (optimizer state), or 0. */
uint32_t tfj_wire_state_field(const ProtobufCMessageDescriptor *desc);

/*
 * Decodes a message held in nsl slices (sl may be NULL when nsl is 0)
 * whose Slice entries stay in place. TFJ_EPARSE when malformed,
 * TFJ_ETOOBIG over the arena's cap.
 */
int tfj_wire_split_slices(struct tfj_wire_msg *out, const ProtobufCMessageDescriptor *desc,
			  const grpc_slice *sl, size_t nsl, struct tfj_wire_arena *a);

/*
 * Same, for a message that is the run `run` inside received slices (the
 * body of a stream frame, frame.h); its tensors point into run->sl.
 */
int tfj_wire_split_run(struct tfj_wire_msg *out, const ProtobufCMessageDescriptor *desc,
		       const struct tfj_wire_bytes *run, struct tfj_wire_arena *a);

/* Same, from a received byte buffer (NULL bb = empty message). */
int tfj_wire_decode_split(struct tfj_wire_msg *out, const ProtobufCMessageDescriptor *desc,
			  grpc_byte_buffer *bb, struct tfj_wire_arena *a);

#endif
