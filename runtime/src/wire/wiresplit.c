/*
 * wiresplit.c - split decoding: tensors stay in the received slices (wiresplit.h).
 */
#include "wire/wiresplit.h"

#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>

#include <tfj/err.h>

#include "tfj_runtime.pb-c.h"
#include "wire/wire.h"

/* ---- split decoding: tensors stay in the received slices ---------------- */

/*
 * A bounded cursor over a message's slices. `left` is what the current
 * (sub-)message still holds; every read checks it first, so a corrupt length
 * can never walk past the message or the slice array.
 */
struct cur {
	const grpc_slice *sl;
	size_t nsl, idx, off, left;
};

/* Moves past exhausted slices so (idx, off) names the next byte. */
static void cur_settle(struct cur *c)
{
	while (c->idx < c->nsl && c->off >= GRPC_SLICE_LENGTH(c->sl[c->idx])) {
		c->idx++;
		c->off = 0;
	}
}

static int cur_byte(struct cur *c, uint8_t *b)
{
	if (c->left == 0)
		return -1;
	cur_settle(c);
	if (c->idx >= c->nsl)
		return -1;
	*b = GRPC_SLICE_START_PTR(c->sl[c->idx])[c->off++];
	c->left--;
	return 0;
}

static int cur_varint(struct cur *c, uint64_t *v)
{
	uint64_t r = 0;
	unsigned i;
	uint8_t b;

	/* At most 10 bytes; the 10th may only carry the top bit of 64. */
	for (i = 0; i < 10; i++) {
		if (cur_byte(c, &b))
			return -1;
		if (i == 9 && b > 1)
			return -1;
		r |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return -1;
}

/* Skips n bytes, or copies them to dst when dst is not NULL. */
static int cur_take(struct cur *c, size_t n, uint8_t *dst)
{
	if (n > c->left)
		return -1;
	c->left -= n;
	while (n > 0) {
		size_t avail, k;

		cur_settle(c);
		if (c->idx >= c->nsl)
			return -1;
		avail = GRPC_SLICE_LENGTH(c->sl[c->idx]) - c->off;
		k = avail < n ? avail : n;
		if (dst) {
			memcpy(dst, GRPC_SLICE_START_PTR(c->sl[c->idx]) + c->off, k);
			dst += k;
		}
		c->off += k;
		n -= k;
	}
	return 0;
}

/* Reads a tag and skips or measures its value; *len is set for wire type 2. */
static int cur_field(struct cur *c, uint32_t *field, unsigned *wt, uint64_t *len)
{
	uint64_t tag, v;

	if (cur_varint(c, &tag))
		return -1;
	*field = (uint32_t)(tag >> 3);
	*wt = (unsigned)(tag & 7);
	if (*field == 0 || tag >> 3 > 0x1fffffff)
		return -1;
	*len = 0;
	switch (*wt) {
	case 0: return cur_varint(c, &v);
	case 1: return cur_take(c, 8, NULL);
	case 5: return cur_take(c, 4, NULL);
	case 2:
		if (cur_varint(c, len) || *len > c->left)
			return -1;
		return 0; /* the value itself is left to the caller */
	default: return -1; /* groups (3, 4) are not used by proto3; 6, 7 are invalid */
	}
}

/* Parses one Slice message of `len` bytes at c into t, recording its data in place. */
static int parse_tensor(struct cur *c, size_t len, struct tfj_wire_tensor *t)
{
	struct cur m = *c;

	m.left = len;
	memset(t, 0, sizeof(*t));
	t->data.sl = c->sl;
	t->data.nsl = c->nsl;
	while (m.left > 0) {
		uint64_t tag, v;
		uint32_t field;
		unsigned wt;

		if (cur_varint(&m, &tag))
			return -1;
		field = (uint32_t)(tag >> 3);
		wt = (unsigned)(tag & 7);
		if (field >= 1 && field <= 3) {
			/* var, offset, count: varints; the last occurrence wins, as in protobuf. */
			if (wt != 0 || cur_varint(&m, &v))
				return -1;
			if (field == 1) {
				if (v > UINT32_MAX)
					return -1;
				t->var = (uint32_t)v;
			} else if (field == 2) {
				t->offset = v;
			} else {
				t->count = v;
			}
		} else if (field == 4) {
			if (wt != 2 || cur_varint(&m, &v) || v > m.left)
				return -1;
			cur_settle(&m);
			t->data.idx = m.idx;
			t->data.off = m.off;
			t->data.len = (size_t)v;
			if (cur_take(&m, (size_t)v, NULL))
				return -1;
		} else {
			uint64_t flen;

			/* An unknown field (a newer peer): skipped, as protobuf does. */
			if (field == 0)
				return -1;
			switch (wt) {
			case 0: if (cur_varint(&m, &v)) return -1; break;
			case 1: if (cur_take(&m, 8, NULL)) return -1; break;
			case 5: if (cur_take(&m, 4, NULL)) return -1; break;
			case 2:
				if (cur_varint(&m, &flen) || flen > m.left ||
				    cur_take(&m, (size_t)flen, NULL))
					return -1;
				break;
			default: return -1;
			}
		}
	}
	return cur_take(c, len, NULL);
}

/* The number of desc's `repeated Slice` field called name, or 0. */
static uint32_t slice_field(const ProtobufCMessageDescriptor *desc, const char *name)
{
	unsigned i;

	for (i = 0; i < desc->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &desc->fields[i];

		if (f->label == PROTOBUF_C_LABEL_REPEATED && f->type == PROTOBUF_C_TYPE_MESSAGE &&
		    f->descriptor == &tfj__runtime__v1__slice__descriptor &&
		    strcmp(f->name, name) == 0)
			return f->id;
	}
	return 0;
}

uint32_t tfj_wire_tensor_field(const ProtobufCMessageDescriptor *desc)
{
	return slice_field(desc, "slices");
}

uint32_t tfj_wire_state_field(const ProtobufCMessageDescriptor *desc)
{
	return slice_field(desc, "state");
}

int tfj_wire_split_slices(struct tfj_wire_msg *out, const ProtobufCMessageDescriptor *desc,
			  const grpc_slice *sl, size_t nsl, struct tfj_wire_arena *a)
{
	struct tfj_wire_bytes run = { sl, nsl, 0, 0, 0 };
	size_t i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < nsl; i++) {
		if (run.len + GRPC_SLICE_LENGTH(sl[i]) < run.len)
			return tfj_err_set(TFJ_ETOOBIG, "wire: message length overflows");
		run.len += GRPC_SLICE_LENGTH(sl[i]);
	}
	return tfj_wire_split_run(out, desc, &run, a);
}

int tfj_wire_split_run(struct tfj_wire_msg *out, const ProtobufCMessageDescriptor *desc,
		       const struct tfj_wire_bytes *run, struct tfj_wire_arena *a)
{
	uint32_t tfield = tfj_wire_tensor_field(desc), sfield = tfj_wire_state_field(desc), field;
	struct cur c = { run->sl, run->nsl, run->idx, run->off, run->len }, start;
	size_t n, nt = 0, ns = 0, headlen = 0, k = 0, ks = 0, h = 0;
	uint8_t *head = NULL;
	unsigned wt;
	uint64_t len;
	int rc;

	memset(out, 0, sizeof(*out));
	if (c.left > a->max)
		return tfj_err_set(TFJ_ETOOBIG, "wire: %zu-byte %s over the %zu-byte cap", c.left,
				   desc->short_name, a->max);
	start = c;
	/* Pass 1: count the tensors and the bytes of everything else. */
	while (c.left > 0) {
		size_t before = c.left;

		if (cur_field(&c, &field, &wt, &len))
			goto malformed;
		if (wt == 2 && cur_take(&c, (size_t)len, NULL))
			goto malformed;
		if (field == tfield && wt == 2)
			nt++;
		else if (sfield && field == sfield && wt == 2)
			ns++;
		else
			headlen += before - c.left;
	}
	/* Each count is below the message length, so the sum cannot overflow. */
	if (nt + ns > a->max / sizeof(*out->t))
		return tfj_err_set(TFJ_ETOOBIG, "wire: %s holds too many slices", desc->short_name);
	if (nt) {
		out->t = a->alloc.alloc(a, nt * sizeof(*out->t));
		if (!out->t)
			return tfj_err_set(TFJ_ETOOBIG, "wire: %s needs more memory than allowed",
					   desc->short_name);
	}
	if (ns) {
		out->st = a->alloc.alloc(a, ns * sizeof(*out->st));
		if (!out->st) {
			memset(out, 0, sizeof(*out));
			return tfj_err_set(TFJ_ETOOBIG, "wire: %s needs more memory than allowed",
					   desc->short_name);
		}
	}
	if (headlen) {
		head = a->alloc.alloc(a, headlen);
		if (!head) {
			memset(out, 0, sizeof(*out));
			return tfj_err_set(TFJ_ETOOBIG, "wire: %s needs more memory than allowed",
					   desc->short_name);
		}
	}
	/* Pass 2: tensors in place, the rest copied for protobuf-c (same order). */
	c = start;
	while (c.left > 0) {
		struct cur f = c;
		size_t before = c.left;

		if (cur_field(&c, &field, &wt, &len))
			goto malformed;
		if (field == tfield && wt == 2) {
			if (k >= nt || parse_tensor(&c, (size_t)len, &out->t[k]))
				goto malformed;
			k++;
			continue;
		}
		if (sfield && field == sfield && wt == 2) {
			if (ks >= ns || parse_tensor(&c, (size_t)len, &out->st[ks]))
				goto malformed;
			ks++;
			continue;
		}
		if (wt == 2 && cur_take(&c, (size_t)len, NULL))
			goto malformed;
		n = before - c.left;
		if (n > headlen - h || cur_take(&f, n, head + h))
			goto malformed;
		h += n;
	}
	out->nt = nt;
	out->nst = ns;
	rc = tfj_wire_unpack(&out->head, desc, head ? head : (const uint8_t *)"", h, a);
	if (rc)
		memset(out, 0, sizeof(*out));
	return rc;
malformed:
	memset(out, 0, sizeof(*out));
	return tfj_err_set(TFJ_EPARSE, "wire: malformed %s", desc->short_name);
}

int tfj_wire_decode_split(struct tfj_wire_msg *out, const ProtobufCMessageDescriptor *desc,
			  grpc_byte_buffer *bb, struct tfj_wire_arena *a)
{
	size_t len;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!bb)
		return tfj_wire_split_slices(out, desc, NULL, 0, a);
	if (bb->type == GRPC_BB_RAW && bb->data.raw.compression == GRPC_COMPRESS_NONE)
		return tfj_wire_split_slices(out, desc, bb->data.raw.slice_buffer.slices,
					     bb->data.raw.slice_buffer.count, a);
	/* Compressed (gRPC normally decompresses for us): flatten through the reader. */
	if ((rc = tfj_wire_flatten(&len, bb, desc->short_name, a)))
		return rc;
	a->flat_slice = grpc_slice_from_static_buffer(a->flat ? a->flat : (uint8_t *)"", len);
	return tfj_wire_split_slices(out, desc, &a->flat_slice, 1, a);
}

void tfj_wire_bytes_copy(void *dst, const struct tfj_wire_bytes *b)
{
	struct cur c = { b->sl, b->nsl, b->idx, b->off, b->len };

	/* The run was checked against the slices when it was decoded: this cannot fail. */
	(void)cur_take(&c, b->len, dst);
}

size_t tfj_wire_bytes_floats(struct tfj_wire_bytes *b, const void **p, float *tmp, size_t max)
{
	struct cur c = { b->sl, b->nsl, b->idx, b->off, b->len };
	size_t avail, k;

	if (b->len < sizeof(float) || max == 0)
		return 0;
	cur_settle(&c);
	if (c.idx >= c.nsl) /* cannot happen: the run was checked when it was decoded */
		return 0;
	avail = GRPC_SLICE_LENGTH(c.sl[c.idx]) - c.off;
	if (avail > c.left)
		avail = c.left;
	k = avail / sizeof(float);
	if (k == 0) {
		(void)cur_take(&c, sizeof(float), (uint8_t *)tmp);
		*p = tmp;
		k = 1;
	} else {
		if (k > max)
			k = max;
		*p = GRPC_SLICE_START_PTR(c.sl[c.idx]) + c.off;
		c.off += k * sizeof(float);
		c.left -= k * sizeof(float);
	}
	b->idx = c.idx;
	b->off = c.off;
	b->len = c.left;
	return k;
}

/* Moves b to where the cursor c stopped. */
static void bytes_from_cur(struct tfj_wire_bytes *b, const struct cur *c)
{
	b->idx = c->idx;
	b->off = c->off;
	b->len = c->left;
}

int tfj_wire_bytes_varint(struct tfj_wire_bytes *b, uint64_t *v)
{
	struct cur c = { b->sl, b->nsl, b->idx, b->off, b->len };

	if (cur_varint(&c, v))
		return -1;
	bytes_from_cur(b, &c);
	return 0;
}

int tfj_wire_bytes_skip(struct tfj_wire_bytes *b, uint64_t n)
{
	struct cur c = { b->sl, b->nsl, b->idx, b->off, b->len };

	if (n > b->len || cur_take(&c, (size_t)n, NULL))
		return -1;
	bytes_from_cur(b, &c);
	return 0;
}

void tfj_wire_bytes_take(struct tfj_wire_bytes *b, void *dst, size_t n)
{
	struct cur c = { b->sl, b->nsl, b->idx, b->off, b->len };

	if (n > b->len)
		n = b->len;
	(void)cur_take(&c, n, dst);
	bytes_from_cur(b, &c);
}
