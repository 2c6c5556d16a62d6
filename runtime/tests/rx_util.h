/*
 * rx_util.h - a message as the ps receives it, for the shard and sync
 * aggregation tests: packed, cut into 1001-byte slices (so floats and
 * varints straddle slice boundaries, as in gRPC's receive buffers) and
 * split-decoded (wiresplit.h). Header-only (static).
 */
#ifndef TFJ_RX_UTIL_H
#define TFJ_RX_UTIL_H

#include <stdlib.h>
#include <string.h>

#include <grpc/slice.h>
#include <protobuf-c/protobuf-c.h>

#include "wire/wire.h"
#include "wire/wiresplit.h"

#define RX_MAX_SLICES 4096
#define RX_PIECE 1001

struct rx {
	grpc_slice sl[RX_MAX_SLICES];
	size_t nsl;
	uint8_t *buf;
	struct tfj_wire_arena a;
	struct tfj_wire_msg m;
};

/* 0, or what the split decoder returned; -1 when the message does not fit. */
static inline int rx_decode(struct rx *x, const ProtobufCMessage *msg)
{
	size_t len = protobuf_c_message_get_packed_size(msg), off;

	memset(x, 0, sizeof(*x));
	x->buf = malloc(len + 1);
	if (!x->buf)
		return -1;
	protobuf_c_message_pack(msg, x->buf);
	for (off = 0; off < len && x->nsl < RX_MAX_SLICES; off += RX_PIECE)
		x->sl[x->nsl++] = grpc_slice_from_static_buffer(
			x->buf + off, len - off < RX_PIECE ? len - off : RX_PIECE);
	if (off < len)
		return -1;
	tfj_wire_arena_init(&x->a, 8 << 20);
	return tfj_wire_split_slices(&x->m, msg->descriptor, x->sl, x->nsl, &x->a);
}

static inline void rx_free(struct rx *x)
{
	tfj_wire_arena_free(&x->a);
	free(x->buf);
}

#endif
