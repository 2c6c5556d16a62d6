/*
 * wire.c - protobuf-c <-> gRPC byte buffers without copying tensors (wire.h).
 */
#include "wire.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>

#include <tfj/err.h>

#include "tfj_runtime.pb-c.h"

/* ---- encoding ---------------------------------------------------------- */

/* A ProtobufCBuffer that collects slices. */
struct slice_sink {
	ProtobufCBuffer base;
	grpc_slice *slices;
	size_t n, cap;
	uint8_t small[4096]; /* framing bytes waiting to become one slice */
	size_t small_len;
	struct tfj_wire_lease *lease;
	int err;
};

static void lease_release(void *user)
{
	struct tfj_wire_lease *l = user;

	atomic_fetch_sub(&l->refs, 1);
}

static int sink_push(struct slice_sink *s, grpc_slice sl)
{
	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 16;
		grpc_slice *ns;

		if (ncap > TFJ_WIRE_MAX_SLICES) {
			grpc_slice_unref(sl);
			return TFJ_ETOOBIG;
		}
		ns = realloc(s->slices, ncap * sizeof(*ns));
		if (!ns) {
			grpc_slice_unref(sl);
			return TFJ_ENOMEM;
		}
		s->slices = ns;
		s->cap = ncap;
	}
	s->slices[s->n++] = sl;
	return 0;
}

static void sink_flush_small(struct slice_sink *s)
{
	if (s->small_len && !s->err) {
		int rc = sink_push(s, grpc_slice_from_copied_buffer((const char *)s->small,
								    s->small_len));
		if (rc)
			s->err = rc;
	}
	s->small_len = 0;
}

static void sink_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
	struct slice_sink *s = (struct slice_sink *)b;

	if (s->err || len == 0)
		return;
	if (len >= TFJ_WIRE_ZEROCOPY_MIN && s->lease) {
		int rc;

		sink_flush_small(s);
		atomic_fetch_add(&s->lease->refs, 1);
		/* The cast drops const: gRPC never writes into a slice it was handed to send. */
		rc = sink_push(s, grpc_slice_new_with_user_data((void *)data, len, lease_release,
							     s->lease));
		if (rc)
			s->err = rc;
		return;
	}
	if (s->small_len + len > sizeof(s->small))
		sink_flush_small(s);
	if (len > sizeof(s->small)) {
		int rc = sink_push(s, grpc_slice_from_copied_buffer((const char *)data, len));
		if (rc)
			s->err = rc;
		return;
	}
	memcpy(s->small + s->small_len, data, len);
	s->small_len += len;
}

int tfj_wire_encode(grpc_byte_buffer **out, const ProtobufCMessage *msg,
		    struct tfj_wire_lease *lease)
{
	struct slice_sink *s;
	size_t i;
	int rc = 0;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return tfj_err_set(TFJ_ENOMEM, "wire: out of memory");
	s->base.append = sink_append;
	s->lease = lease;
	protobuf_c_message_pack_to_buffer(msg, &s->base);
	sink_flush_small(s);
	if (s->err) {
		rc = tfj_err_set(s->err, "wire: cannot build the message slices");
		goto out;
	}
	/* grpc_raw_byte_buffer_create takes its own reference on every slice. */
	*out = grpc_raw_byte_buffer_create(s->slices, s->n);
	if (!*out)
		rc = tfj_err_set(TFJ_ENOMEM, "wire: byte buffer");
out:
	for (i = 0; i < s->n; i++)
		grpc_slice_unref(s->slices[i]);
	free(s->slices);
	free(s);
	return rc;
}

int tfj_wire_lease_wait(struct tfj_wire_lease *l, int timeout_ms)
{
	struct timespec ts = { 0, 200000 };
	int spins = 0, waited_us = 0;

	/*
	 * gRPC normally lets go of the slices as the call completes, so spin
	 * (yielding) briefly before falling back to 200 us sleeps.
	 */
	while (atomic_load(&l->refs) > 0) {
		if (spins < 200) {
			spins++;
			sched_yield();
			continue;
		}
		if (waited_us / 1000 >= timeout_ms)
			return tfj_err_set(TFJ_ETIMEOUT, "wire: gRPC still holds %d tensor slices",
					   atomic_load(&l->refs));
		nanosleep(&ts, NULL);
		waited_us += 200;
	}
	return 0;
}

size_t tfj_wire_transport_args(grpc_arg *out, size_t max_message)
{
	static const struct {
		const char *key;
		int value; /* -1: the message cap */
	} a[TFJ_WIRE_NARGS] = {
		{ GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, -1 },
		{ GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, -1 },
		{ GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 8 << 20 },
		{ GRPC_ARG_HTTP2_MAX_FRAME_SIZE, (1 << 24) - 1 },
		{ GRPC_ARG_HTTP2_WRITE_BUFFER_SIZE, 8 << 20 },
		{ GRPC_ARG_TCP_MAX_READ_CHUNK_SIZE, 4 << 20 },
	};
	size_t i;
	int cap = max_message > (size_t)INT32_MAX ? INT32_MAX : (int)max_message;

	for (i = 0; i < TFJ_WIRE_NARGS; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		out[i].type = GRPC_ARG_INTEGER;
		out[i].key = (char *)a[i].key;
		out[i].value.integer = a[i].value < 0 ? cap : a[i].value;
	}
	return TFJ_WIRE_NARGS;
}

/* ---- decoding ---------------------------------------------------------- */

struct tfj_wire_chunk {
	struct tfj_wire_chunk *next;
	size_t cap, used;
	max_align_t data[];
};

#define ARENA_MIN_CHUNK (64u << 10)

static void *arena_alloc(void *ud, size_t size)
{
	struct tfj_wire_arena *a = ud;
	struct tfj_wire_chunk *c = a->head;
	size_t need = (size + 15) & ~(size_t)15;
	void *p;

	if (need < size || a->total + need > a->max || a->total + need < a->total) {
		a->failed = 1;
		return NULL;
	}
	if (!c || c->cap - c->used < need) {
		size_t cap = need > ARENA_MIN_CHUNK ? need : ARENA_MIN_CHUNK;

		c = malloc(sizeof(*c) + cap);
		if (!c) {
			a->failed = 1;
			return NULL;
		}
		c->cap = cap;
		c->used = 0;
		c->next = a->head;
		a->head = c;
	}
	p = (uint8_t *)c->data + c->used;
	c->used += need;
	a->total += need;
	return p;
}

static void arena_free(void *ud, void *p)
{
	(void)ud;
	(void)p; /* released in bulk by tfj_wire_arena_reset() */
}

int tfj_wire_arena_init(struct tfj_wire_arena *a, size_t max)
{
	memset(a, 0, sizeof(*a));
	a->alloc.alloc = arena_alloc;
	a->alloc.free = arena_free;
	a->alloc.allocator_data = a;
	a->max = max;
	return 0;
}

void tfj_wire_arena_reset(struct tfj_wire_arena *a)
{
	struct tfj_wire_chunk *c = a->head, *next;
	size_t total = 0;

	if (!c)
		return;
	/* Keep one chunk big enough for everything the last message needed. */
	for (; c; c = c->next)
		total += c->cap;
	if (a->head->next) {
		for (c = a->head; c; c = next) {
			next = c->next;
			free(c);
		}
		a->head = malloc(sizeof(*a->head) + total);
		if (a->head) {
			a->head->cap = total;
			a->head->next = NULL;
		}
	}
	if (a->head)
		a->head->used = 0;
	a->total = 0;
	a->failed = 0;
}

void tfj_wire_arena_free(struct tfj_wire_arena *a)
{
	struct tfj_wire_chunk *c, *next;

	if (!a)
		return;
	for (c = a->head; c; c = next) {
		next = c->next;
		free(c);
	}
	free(a->flat);
	memset(a, 0, sizeof(*a));
}

int tfj_wire_unpack(ProtobufCMessage **out, const ProtobufCMessageDescriptor *desc,
		    const uint8_t *data, size_t len, struct tfj_wire_arena *a)
{
	ProtobufCMessage *m;

	*out = NULL;
	if (len > a->max)
		return tfj_err_set(TFJ_ETOOBIG, "wire: %zu-byte %s over the %zu-byte cap", len,
				   desc->short_name, a->max);
	m = protobuf_c_message_unpack(desc, &a->alloc, len, data);
	if (!m) {
		if (a->failed)
			return tfj_err_set(TFJ_ETOOBIG, "wire: %s needs more memory than allowed",
					   desc->short_name);
		return tfj_err_set(TFJ_EPARSE, "wire: malformed %s (%zu bytes)", desc->short_name,
				   len);
	}
	*out = m;
	return 0;
}

int tfj_wire_decode(ProtobufCMessage **out, const ProtobufCMessageDescriptor *desc,
		    grpc_byte_buffer *bb, struct tfj_wire_arena *a)
{
	grpc_byte_buffer_reader rd;
	grpc_slice sl;
	size_t len, off = 0;
	int rc;

	*out = NULL;
	if (!bb)
		return tfj_wire_unpack(out, desc, (const uint8_t *)"", 0, a);
	len = grpc_byte_buffer_length(bb);
	if (len > a->max)
		return tfj_err_set(TFJ_ETOOBIG, "wire: %zu-byte %s over the %zu-byte cap", len,
				   desc->short_name, a->max);
	/* A single uncompressed slice is decoded in place. */
	if (bb->type == GRPC_BB_RAW && bb->data.raw.compression == GRPC_COMPRESS_NONE &&
	    bb->data.raw.slice_buffer.count == 1) {
		grpc_slice s0 = bb->data.raw.slice_buffer.slices[0];

		return tfj_wire_unpack(out, desc, GRPC_SLICE_START_PTR(s0), GRPC_SLICE_LENGTH(s0), a);
	}
	if (len > a->flat_cap) {
		uint8_t *nf = realloc(a->flat, len);

		if (!nf)
			return tfj_err_set(TFJ_ENOMEM, "wire: out of memory");
		a->flat = nf;
		a->flat_cap = len;
	}
	if (!grpc_byte_buffer_reader_init(&rd, bb))
		return tfj_err_set(TFJ_EPARSE, "wire: cannot read the payload");
	while (grpc_byte_buffer_reader_next(&rd, &sl)) {
		size_t n = GRPC_SLICE_LENGTH(sl);

		if (n > len - off) {
			grpc_slice_unref(sl);
			grpc_byte_buffer_reader_destroy(&rd);
			return tfj_err_set(TFJ_EPARSE, "wire: payload longer than announced");
		}
		memcpy(a->flat + off, GRPC_SLICE_START_PTR(sl), n);
		off += n;
		grpc_slice_unref(sl);
	}
	grpc_byte_buffer_reader_destroy(&rd);
	rc = tfj_wire_unpack(out, desc, a->flat, off, a);
	return rc;
}

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

uint32_t tfj_wire_tensor_field(const ProtobufCMessageDescriptor *desc)
{
	unsigned i;

	for (i = 0; i < desc->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &desc->fields[i];

		if (f->label == PROTOBUF_C_LABEL_REPEATED && f->type == PROTOBUF_C_TYPE_MESSAGE &&
		    f->descriptor == &tfj__runtime__v1__slice__descriptor)
			return f->id;
	}
	return 0;
}

int tfj_wire_split_slices(struct tfj_wire_msg *out, const ProtobufCMessageDescriptor *desc,
			  const grpc_slice *sl, size_t nsl, struct tfj_wire_arena *a)
{
	uint32_t tfield = tfj_wire_tensor_field(desc), field;
	struct cur c = { sl, nsl, 0, 0, 0 }, start;
	size_t i, n, nt = 0, headlen = 0, k = 0, h = 0;
	uint8_t *head = NULL;
	unsigned wt;
	uint64_t len;
	int rc;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < nsl; i++) {
		if (c.left + GRPC_SLICE_LENGTH(sl[i]) < c.left)
			return tfj_err_set(TFJ_ETOOBIG, "wire: message length overflows");
		c.left += GRPC_SLICE_LENGTH(sl[i]);
	}
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
		else
			headlen += before - c.left;
	}
	if (nt > a->max / sizeof(*out->t))
		return tfj_err_set(TFJ_ETOOBIG, "wire: %s holds too many slices", desc->short_name);
	if (nt) {
		out->t = a->alloc.alloc(a, nt * sizeof(*out->t));
		if (!out->t)
			return tfj_err_set(TFJ_ETOOBIG, "wire: %s needs more memory than allowed",
					   desc->short_name);
	}
	if (headlen) {
		head = a->alloc.alloc(a, headlen);
		if (!head)
			return tfj_err_set(TFJ_ETOOBIG, "wire: %s needs more memory than allowed",
					   desc->short_name);
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
		if (wt == 2 && cur_take(&c, (size_t)len, NULL))
			goto malformed;
		n = before - c.left;
		if (n > headlen - h || cur_take(&f, n, head + h))
			goto malformed;
		h += n;
	}
	out->nt = nt;
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
	grpc_byte_buffer_reader rd;
	grpc_slice sl;
	size_t len, off = 0;

	memset(out, 0, sizeof(*out));
	if (!bb)
		return tfj_wire_split_slices(out, desc, NULL, 0, a);
	if (bb->type == GRPC_BB_RAW && bb->data.raw.compression == GRPC_COMPRESS_NONE)
		return tfj_wire_split_slices(out, desc, bb->data.raw.slice_buffer.slices,
					     bb->data.raw.slice_buffer.count, a);
	/* Compressed (gRPC normally decompresses for us): flatten through the reader. */
	len = grpc_byte_buffer_length(bb);
	if (len > a->max)
		return tfj_err_set(TFJ_ETOOBIG, "wire: %zu-byte %s over the %zu-byte cap", len,
				   desc->short_name, a->max);
	if (len > a->flat_cap) {
		uint8_t *nf = realloc(a->flat, len);

		if (!nf)
			return tfj_err_set(TFJ_ENOMEM, "wire: out of memory");
		a->flat = nf;
		a->flat_cap = len;
	}
	if (!grpc_byte_buffer_reader_init(&rd, bb))
		return tfj_err_set(TFJ_EPARSE, "wire: cannot read the payload");
	while (grpc_byte_buffer_reader_next(&rd, &sl)) {
		size_t n = GRPC_SLICE_LENGTH(sl);

		if (n > len - off) {
			grpc_slice_unref(sl);
			grpc_byte_buffer_reader_destroy(&rd);
			return tfj_err_set(TFJ_EPARSE, "wire: payload longer than announced");
		}
		memcpy(a->flat + off, GRPC_SLICE_START_PTR(sl), n);
		off += n;
		grpc_slice_unref(sl);
	}
	grpc_byte_buffer_reader_destroy(&rd);
	a->flat_slice = grpc_slice_from_static_buffer(a->flat ? a->flat : (uint8_t *)"", off);
	return tfj_wire_split_slices(out, desc, &a->flat_slice, 1, a);
}

void tfj_wire_bytes_copy(void *dst, const struct tfj_wire_bytes *b)
{
	struct cur c = { b->sl, b->nsl, b->idx, b->off, b->len };

	/* The run was checked against the slices when it was decoded: this cannot fail. */
	(void)cur_take(&c, b->len, dst);
}

void tfj_wire_bytes_take(struct tfj_wire_bytes *b, void *dst, size_t n)
{
	struct cur c = { b->sl, b->nsl, b->idx, b->off, b->len };

	if (n > b->len)
		n = b->len;
	(void)cur_take(&c, n, dst);
	b->idx = c.idx;
	b->off = c.off;
	b->len = c.left;
}
