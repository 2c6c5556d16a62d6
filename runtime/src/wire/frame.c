/*
 * frame.c - the stream's frames (frame.h).
 */
#include "wire/frame.h"
#include "wire/wiresplit.h"

#include <string.h>

#include <tfj/err.h>

/* Header bytes: id, method, status (10 each with tags), detail, body tag + length. */
#define HEAD_MAX (3 * 11 + 2 + 2 + TFJ_FRAME_DETAIL_MAX + 1 + 10)

static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

int tfj_frame_encode(grpc_byte_buffer **out, uint64_t id, uint32_t method, uint32_t status,
		       const char *detail, const ProtobufCMessage *body,
		       struct tfj_wire_lease *lease)
{
	uint8_t head[HEAD_MAX];
	size_t n = 0, dl = detail ? strnlen(detail, TFJ_FRAME_DETAIL_MAX - 1) : 0;

	if (id) {
		head[n++] = 1 << 3;
		n += put_varint(head + n, id);
	}
	if (method) {
		head[n++] = 2 << 3;
		n += put_varint(head + n, method);
	}
	if (status) {
		head[n++] = 3 << 3;
		n += put_varint(head + n, status);
	}
	if (dl) {
		head[n++] = 4 << 3 | 2;
		n += put_varint(head + n, dl);
		memcpy(head + n, detail, dl);
		n += dl;
	}
	if (body) {
		/* Field 15, length-delimited: the message follows as its own slices. */
		head[n++] = 15 << 3 | 2;
		n += put_varint(head + n, protobuf_c_message_get_packed_size(body));
	}
	return tfj_wire_encode_after(out, head, n, body, lease);
}

/* Skips n bytes, copying up to cap of them to dst first (dst NULL: none). */
static int get_bytes(struct tfj_wire_bytes *b, uint64_t n, char *dst, size_t cap)
{
	size_t k;

	if (n > b->len)
		return -1;
	k = dst ? (n < cap ? (size_t)n : cap) : 0;
	if (k)
		tfj_wire_bytes_take(b, dst, k);
	return tfj_wire_bytes_skip(b, n - k);
}

static int parse(struct tfj_frame *f, struct tfj_wire_bytes *b)
{
	while (b->len > 0) {
		uint64_t tag, v;
		uint32_t field;

		if (tfj_wire_bytes_varint(b, &tag))
			return -1;
		field = (uint32_t)(tag >> 3);
		switch (tag & 7) {
		case 0:
			if (tfj_wire_bytes_varint(b, &v))
				return -1;
			if (field == 1)
				f->id = v;
			else if (field == 2 || field == 3) {
				if (v > UINT32_MAX)
					return -1;
				if (field == 2)
					f->method = (uint32_t)v;
				else
					f->status = (uint32_t)v;
			}
			break;
		case 1: if (get_bytes(b, 8, NULL, 0)) return -1; break;
		case 5: if (get_bytes(b, 4, NULL, 0)) return -1; break;
		case 2:
			if (tfj_wire_bytes_varint(b, &v) || v > b->len)
				return -1;
			if (field == 15) {
				/* The body ends the frame; what is left is exactly the message. */
				if (v != b->len)
					return -1;
				f->body = *b;
				b->len = 0;
				return 0;
			}
			if (field == 4) {
				memset(f->detail, 0, sizeof(f->detail));
				if (get_bytes(b, v, f->detail, sizeof(f->detail) - 1))
					return -1;
			} else if (get_bytes(b, v, NULL, 0)) {
				return -1;
			}
			break;
		default:
			return -1;
		}
		if (field == 0)
			return -1;
	}
	return 0;
}

int tfj_frame_decode(struct tfj_frame *f, grpc_byte_buffer *bb, struct tfj_wire_arena *a)
{
	struct tfj_wire_bytes b = { 0 };
	size_t len, i;
	int rc;

	memset(f, 0, sizeof(*f));
	if (!bb)
		return tfj_err_set(TFJ_EPARSE, "frame: no frame");
	if (bb->type == GRPC_BB_RAW && bb->data.raw.compression == GRPC_COMPRESS_NONE) {
		b.sl = bb->data.raw.slice_buffer.slices;
		b.nsl = bb->data.raw.slice_buffer.count;
		for (i = 0; i < b.nsl; i++)
			b.len += GRPC_SLICE_LENGTH(b.sl[i]);
	} else {
		/* Compressed (gRPC normally decompresses for us): flatten through the reader. */
		if ((rc = tfj_wire_flatten(&len, bb, "StreamFrame", a)))
			return rc;
		a->flat_slice = grpc_slice_from_static_buffer(a->flat ? a->flat : (uint8_t *)"",
							      len);
		b.sl = &a->flat_slice;
		b.nsl = 1;
		b.len = len;
	}
	if (parse(f, &b)) {
		memset(f, 0, sizeof(*f));
		return tfj_err_set(TFJ_EPARSE, "frame: malformed frame");
	}
	return 0;
}

int tfj_frame_body(struct tfj_wire_msg *out, const struct tfj_frame *f,
		     const ProtobufCMessageDescriptor *desc, struct tfj_wire_arena *a)
{
	if (f->body.len == 0)
		return tfj_wire_split_slices(out, desc, NULL, 0, a);
	return tfj_wire_split_run(out, desc, &f->body, a);
}
