/*
 * test_wire.c - messages through gRPC byte buffers: zero-copy slices for
 * tensors, decode into a reused arena, malformed and oversize input.
 */
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc.h>
#include <grpc/slice.h>

#include <tfj/err.h>

#include "wire/rpcnames.h"
#include "tfj_test.h"
#include "wire/wire.h"
#include "wire/wiresplit.h"

#define N 5000

static float vals[2][N];

static void build_pull(Tfj__Runtime__V1__PullResponse *r, Tfj__Runtime__V1__Slice *s,
		       Tfj__Runtime__V1__Slice **ptrs)
{
	int i;

	tfj__runtime__v1__pull_response__init(r);
	for (i = 0; i < 2; i++) {
		tfj__runtime__v1__slice__init(&s[i]);
		s[i].var = (uint32_t)i;
		s[i].offset = (uint64_t)i * 7;
		s[i].count = N;
		s[i].data.data = (uint8_t *)vals[i];
		s[i].data.len = sizeof(vals[i]);
		ptrs[i] = &s[i];
	}
	r->step = 42;
	r->finished = 1;
	r->n_slices = 2;
	r->slices = ptrs;
}

static void test_roundtrip_zero_copy(void)
{
	Tfj__Runtime__V1__PullResponse r, *d;
	Tfj__Runtime__V1__Slice s[2], *ptrs[2];
	struct tfj_wire_lease lease;
	struct tfj_wire_arena a;
	grpc_byte_buffer *bb = NULL;
	ProtobufCMessage *m = NULL;
	int i, j, found = 0;

	for (i = 0; i < 2; i++)
		for (j = 0; j < N; j++)
			vals[i][j] = (float)(i * N + j) * 0.5f;
	atomic_init(&lease.refs, 0);
	build_pull(&r, s, ptrs);
	TFJ_CHECK_INT(tfj_wire_encode(&bb, &r.base, &lease), 0);
	/* Both tensors are referenced, not copied. */
	TFJ_CHECK_INT(tfj_wire_lease_busy(&lease), 2);
	for (i = 0; i < (int)bb->data.raw.slice_buffer.count; i++) {
		grpc_slice sl = bb->data.raw.slice_buffer.slices[i];

		if (GRPC_SLICE_START_PTR(sl) == (uint8_t *)vals[0] ||
		    GRPC_SLICE_START_PTR(sl) == (uint8_t *)vals[1])
			found++;
	}
	TFJ_CHECK_INT(found, 2);
	TFJ_CHECK_INT(grpc_byte_buffer_length(bb), protobuf_c_message_get_packed_size(&r.base));
	tfj_wire_arena_init(&a, 1 << 20);
	TFJ_CHECK_INT(tfj_wire_decode(&m, &tfj__runtime__v1__pull_response__descriptor, bb, &a), 0);
	d = (Tfj__Runtime__V1__PullResponse *)m;
	TFJ_CHECK(d != NULL);
	if (d) {
		TFJ_CHECK_INT(d->step, 42);
		TFJ_CHECK_INT(d->finished, 1);
		TFJ_CHECK_INT(d->n_slices, 2);
		TFJ_CHECK_INT(d->slices[1]->offset, 7);
		TFJ_CHECK(d->slices[1]->data.len == sizeof(vals[1]) &&
			  memcmp(d->slices[1]->data.data, vals[1], sizeof(vals[1])) == 0);
	}
	grpc_byte_buffer_destroy(bb);
	/* Destroying the buffer gives the tensors back. */
	TFJ_CHECK_INT(tfj_wire_lease_wait(&lease, 1000), 0);
	TFJ_CHECK_INT(tfj_wire_lease_busy(&lease), 0);
	/* The arena is reused: after a reset, a second decode needs no new chunk. */
	tfj_wire_arena_reset(&a);
	{
		struct tfj_wire_chunk *head = a.head;

		TFJ_CHECK_INT(tfj_wire_encode(&bb, &r.base, NULL), 0); /* copying mode */
		TFJ_CHECK_INT(tfj_wire_decode(&m, &tfj__runtime__v1__pull_response__descriptor, bb,
					      &a), 0);
		TFJ_CHECK(head != NULL && a.head == head);
	}
	grpc_byte_buffer_destroy(bb);
	tfj_wire_arena_free(&a);
}

static void test_malformed(void)
{
	struct tfj_wire_arena a;
	ProtobufCMessage *m;
	static const uint8_t bad1[] = { 0x1a, 0x05, 0x01 };           /* length past the end */
	static const uint8_t bad2[] = { 0x08 };                       /* varint missing */
	static const uint8_t bad3[] = { 0x0f, 0x00 };                 /* wire type 7 */
	static const uint8_t big_len[] = { 0x1a, 0xff, 0xff, 0xff, 0xff, 0x0f };
	uint8_t *many;
	size_t i;

	tfj_wire_arena_init(&a, 64 << 10);
	TFJ_CHECK_INT(tfj_wire_unpack(&m, &tfj__runtime__v1__pull_response__descriptor, bad1,
				      sizeof(bad1), &a), TFJ_EPARSE);
	TFJ_CHECK_INT(tfj_wire_unpack(&m, &tfj__runtime__v1__push_request__descriptor, bad2,
				      sizeof(bad2), &a), TFJ_EPARSE);
	TFJ_CHECK_INT(tfj_wire_unpack(&m, &tfj__runtime__v1__status_request__descriptor, bad3,
				      sizeof(bad3), &a), TFJ_EPARSE);
	TFJ_CHECK_INT(tfj_wire_unpack(&m, &tfj__runtime__v1__pull_response__descriptor, big_len,
				      sizeof(big_len), &a), TFJ_EPARSE);
	TFJ_CHECK(m == NULL);
	/* Many tiny slices would take far more memory decoded than encoded: capped. */
	many = malloc(60000);
	for (i = 0; i + 2 <= 60000; i += 2) {
		many[i] = 0x1a; /* field 3, length-delimited: an empty Slice */
		many[i + 1] = 0x00;
	}
	tfj_wire_arena_reset(&a);
	TFJ_CHECK_INT(tfj_wire_unpack(&m, &tfj__runtime__v1__pull_response__descriptor, many, 60000,
				      &a), TFJ_ETOOBIG);
	tfj_wire_arena_reset(&a);
	TFJ_CHECK_INT(tfj_wire_unpack(&m, &tfj__runtime__v1__pull_response__descriptor, many,
				      128 << 10, &a), TFJ_ETOOBIG);
	free(many);
	/* An empty payload is a valid all-defaults message. */
	tfj_wire_arena_reset(&a);
	TFJ_CHECK_INT(tfj_wire_decode(&m, &tfj__runtime__v1__status_request__descriptor, NULL, &a), 0);
	tfj_wire_arena_free(&a);
}

static void test_multislice_decode(void)
{
	Tfj__Runtime__V1__PushRequest q = TFJ__RUNTIME__V1__PUSH_REQUEST__INIT, *d;
	uint8_t packed[64];
	size_t n, i;
	grpc_slice sl[3];
	grpc_byte_buffer *bb;
	struct tfj_wire_arena a;
	ProtobufCMessage *m = NULL;

	q.step = 123456789;
	q.replica = 3;
	q.layout_hash = 0x1122334455667788ULL;
	n = protobuf_c_message_pack(&q.base, packed);
	/* gRPC may deliver one message in several slices. */
	sl[0] = grpc_slice_from_copied_buffer((const char *)packed, 3);
	sl[1] = grpc_slice_from_copied_buffer((const char *)packed + 3, 4);
	sl[2] = grpc_slice_from_copied_buffer((const char *)packed + 7, n - 7);
	bb = grpc_raw_byte_buffer_create(sl, 3);
	for (i = 0; i < 3; i++)
		grpc_slice_unref(sl[i]);
	tfj_wire_arena_init(&a, 1 << 16);
	TFJ_CHECK_INT(tfj_wire_decode(&m, &tfj__runtime__v1__push_request__descriptor, bb, &a), 0);
	d = (Tfj__Runtime__V1__PushRequest *)m;
	TFJ_CHECK(d && d->step == 123456789 && d->replica == 3 &&
		  d->layout_hash == 0x1122334455667788ULL);
	grpc_byte_buffer_destroy(bb);
	tfj_wire_arena_free(&a);
}

static void test_method_table(void)
{
	int i;

	for (i = 0; i < TFJ_RPC_NMETHODS; i++) {
		TFJ_CHECK(strncmp(tfj_rpc_methods[i].path, "/tfj.runtime.v1.ParameterServer/", 32) == 0);
		TFJ_CHECK(tfj_rpc_methods[i].req != NULL && tfj_rpc_methods[i].resp != NULL);
	}
	TFJ_CHECK_STR(tfj_rpc_methods[TFJ_RPC_PUSH].path, "/tfj.runtime.v1.ParameterServer/Push");
}

/* Cuts buf into pieces of `piece` bytes (0 = one slice); returns the count. */
static size_t cut(grpc_slice *sl, size_t max, const uint8_t *buf, size_t len, size_t piece)
{
	size_t n = 0, off;

	for (off = 0; off < len && n < max; off += piece ? piece : len)
		sl[n++] = grpc_slice_from_static_buffer(buf + off,
						       piece && len - off > piece ? piece : len - off);
	return off < len ? 0 : n;
}

static int split(struct tfj_wire_msg *m, const ProtobufCMessageDescriptor *d, const uint8_t *buf,
		 size_t len, size_t piece, struct tfj_wire_arena *a)
{
	static grpc_slice sl[64];
	size_t n = cut(sl, 64, buf, len, piece);

	tfj_wire_arena_reset(a);
	return tfj_wire_split_slices(m, d, sl, n, a);
}

/*
 * Reads a run as floats in place, the way the ps applies a push: every
 * element comes out once and in order, runs never pass max or a slice end,
 * and only a float cut by a slice boundary goes through tmp.
 */
static void check_floats(const struct tfj_wire_bytes *run, const float *want, size_t piece)
{
	struct tfj_wire_bytes b = *run;
	size_t got = 0, k, runs = 0, viatmp = 0;
	const void *p;
	float tmp, f;

	while ((k = tfj_wire_bytes_floats(&b, &p, &tmp, 1000)) > 0) {
		TFJ_CHECK_LE(k, 1000);
		TFJ_CHECK_LE(got + k, N);
		if (p == &tmp) {
			TFJ_CHECK_INT(k, 1);
			viatmp++;
		}
		memcpy(&f, (const uint8_t *)p + (k - 1) * sizeof(float), sizeof(f));
		TFJ_CHECK(memcmp(p, want + got, k * sizeof(float)) == 0 && f == want[got + k - 1]);
		got += k;
		runs++;
	}
	TFJ_CHECK_INT(got, N);
	TFJ_CHECK_INT(b.len, 0);
	TFJ_CHECK(tfj_wire_bytes_floats(&b, &p, &tmp, 1000) == 0);
	/* Slices of 1 or 3 bytes never hold a whole float; 0 = one slice, runs of 1000. */
	if (piece == 1 || piece == 3)
		TFJ_CHECK_INT(viatmp, N);
	if (piece == 0)
		TFJ_CHECK(runs == (N + 999) / 1000 && viatmp == 0);
	if (piece == 997) { /* 997 is odd: some floats straddle two slices */
		TFJ_CHECK_GT(viatmp, 0);
		TFJ_CHECK_GT(runs, viatmp);
	}
}

static void test_split_roundtrip(void)
{
	static const size_t pieces[] = { 0, 1, 3, 997, 4096 };
	static float out[N];
	Tfj__Runtime__V1__PullResponse r, *h;
	Tfj__Runtime__V1__Slice s[2], *ptrs[2];
	struct tfj_wire_arena a;
	struct tfj_wire_msg m;
	grpc_byte_buffer *bb = NULL;
	struct tfj_wire_lease lease;
	struct tfj_wire_bytes b;
	uint8_t *buf;
	size_t len, k, i;

	for (i = 0; i < N; i++) {
		vals[0][i] = (float)i * 0.25f;
		vals[1][i] = -(float)i;
	}
	build_pull(&r, s, ptrs);
	len = protobuf_c_message_get_packed_size(&r.base);
	buf = malloc(len);
	TFJ_CHECK(buf != NULL);
	protobuf_c_message_pack(&r.base, buf);
	tfj_wire_arena_init(&a, 1 << 20);
	TFJ_CHECK_INT(tfj_wire_tensor_field(&tfj__runtime__v1__pull_response__descriptor), 3);
	TFJ_CHECK_INT(tfj_wire_tensor_field(&tfj__runtime__v1__push_request__descriptor), 4);
	TFJ_CHECK_INT(tfj_wire_tensor_field(&tfj__runtime__v1__init_request__descriptor), 3);
	TFJ_CHECK_INT(tfj_wire_tensor_field(&tfj__runtime__v1__status_response__descriptor), 0);
	for (k = 0; k < sizeof(pieces) / sizeof(pieces[0]); k++) {
		if (pieces[k] && len / pieces[k] >= 64)
			continue; /* more slices than the test keeps */
		TFJ_CHECK_INT(split(&m, &tfj__runtime__v1__pull_response__descriptor, buf, len,
				    pieces[k], &a), 0);
		h = (Tfj__Runtime__V1__PullResponse *)m.head;
		TFJ_CHECK(h && h->step == 42 && h->finished == 1 && h->n_slices == 0);
		TFJ_CHECK_INT(m.nt, 2);
		TFJ_CHECK(m.t[1].var == 1 && m.t[1].offset == 7 && m.t[1].count == N);
		TFJ_CHECK_INT(m.t[0].data.len, sizeof(vals[0]));
		memset(out, 0, sizeof(out));
		tfj_wire_bytes_copy(out, &m.t[1].data);
		TFJ_CHECK(memcmp(out, vals[1], sizeof(out)) == 0);
		/* Taken in uneven pieces, the run reads the same bytes. */
		memset(out, 0, sizeof(out));
		b = m.t[0].data;
		for (i = 0; b.len > 0; i += 4099)
			tfj_wire_bytes_take(&b, (uint8_t *)out + i, b.len < 4099 ? b.len : 4099);
		TFJ_CHECK(memcmp(out, vals[0], sizeof(out)) == 0);
		check_floats(&m.t[1].data, vals[1], pieces[k]);
	}
	/* Straight from a zero-copy byte buffer, as the client receives it. */
	atomic_init(&lease.refs, 0);
	TFJ_CHECK_INT(tfj_wire_encode(&bb, &r.base, &lease), 0);
	tfj_wire_arena_reset(&a);
	TFJ_CHECK_INT(tfj_wire_decode_split(&m, &tfj__runtime__v1__pull_response__descriptor, bb,
					    &a), 0);
	TFJ_CHECK_INT(m.nt, 2);
	tfj_wire_bytes_copy(out, &m.t[0].data);
	TFJ_CHECK(memcmp(out, vals[0], sizeof(out)) == 0);
	grpc_byte_buffer_destroy(bb);
	TFJ_CHECK_INT(tfj_wire_lease_busy(&lease), 0);
	/* Messages without tensors decode whole. */
	tfj_wire_arena_reset(&a);
	TFJ_CHECK_INT(tfj_wire_decode_split(&m, &tfj__runtime__v1__status_request__descriptor, NULL,
					    &a), 0);
	TFJ_CHECK(m.head != NULL && m.nt == 0);
	tfj_wire_arena_free(&a);
	free(buf);
}

/*
 * PullResponse.state (optimizer state) is split-decoded like the values:
 * its own tensor list, interleaved on the wire with the values, in place.
 */
static void test_split_state(void)
{
	static const size_t pieces[] = { 0, 5, 1001 };
	static float out[N];
	Tfj__Runtime__V1__PullResponse r, *h;
	Tfj__Runtime__V1__Slice s[2], *ptrs[2], st[1], *sptrs[1];
	struct tfj_wire_arena a;
	struct tfj_wire_msg m;
	uint8_t *buf;
	size_t len, k, i;

	for (i = 0; i < N; i++) {
		vals[0][i] = (float)i;
		vals[1][i] = 0.5f * (float)i;
	}
	build_pull(&r, s, ptrs);
	/* The state of slice 1 only (one state per slice is the ps's job, not the decoder's). */
	tfj__runtime__v1__slice__init(&st[0]);
	st[0].var = 1;
	st[0].offset = 7;
	st[0].count = N / 2;
	st[0].data.data = (uint8_t *)vals[1];
	st[0].data.len = sizeof(vals[1]);
	sptrs[0] = &st[0];
	r.n_state = 1;
	r.state = sptrs;
	r.optim_steps = 99;
	len = protobuf_c_message_get_packed_size(&r.base);
	buf = malloc(len);
	TFJ_CHECK(buf != NULL);
	if (!buf)
		return;
	protobuf_c_message_pack(&r.base, buf);
	TFJ_CHECK_INT(tfj_wire_state_field(&tfj__runtime__v1__pull_response__descriptor), 4);
	TFJ_CHECK_INT(tfj_wire_state_field(&tfj__runtime__v1__init_request__descriptor), 5);
	TFJ_CHECK_INT(tfj_wire_state_field(&tfj__runtime__v1__push_request__descriptor), 0);
	tfj_wire_arena_init(&a, 1 << 20);
	for (k = 0; k < sizeof(pieces) / sizeof(pieces[0]); k++) {
		if (pieces[k] && len / pieces[k] >= 64)
			continue;
		TFJ_CHECK_INT(split(&m, &tfj__runtime__v1__pull_response__descriptor, buf, len,
				    pieces[k], &a), 0);
		h = (Tfj__Runtime__V1__PullResponse *)m.head;
		TFJ_CHECK(h && h->step == 42 && h->optim_steps == 99 && h->n_state == 0);
		TFJ_CHECK_INT(m.nt, 2);
		TFJ_CHECK_INT(m.nst, 1);
		TFJ_CHECK(m.st[0].var == 1 && m.st[0].offset == 7 && m.st[0].count == N / 2);
		memset(out, 0, sizeof(out));
		tfj_wire_bytes_copy(out, &m.st[0].data);
		TFJ_CHECK(memcmp(out, vals[1], sizeof(out)) == 0);
		tfj_wire_bytes_copy(out, &m.t[0].data);
		TFJ_CHECK(memcmp(out, vals[0], sizeof(out)) == 0);
	}
	/* A state entry cut short is malformed, not read past. */
	TFJ_CHECK_INT(split(&m, &tfj__runtime__v1__pull_response__descriptor, buf, len - 5, 0, &a),
		      TFJ_EPARSE);
	TFJ_CHECK(m.nt == 0 && m.nst == 0 && m.head == NULL);
	/* An old peer's decoder (plain protobuf-c) reads the message, state included. */
	tfj_wire_arena_reset(&a);
	{
		ProtobufCMessage *pm = NULL;

		TFJ_CHECK_INT(tfj_wire_unpack(&pm, &tfj__runtime__v1__pull_response__descriptor, buf,
					      len, &a), 0);
		TFJ_CHECK(pm && ((Tfj__Runtime__V1__PullResponse *)pm)->n_state == 1);
	}
	tfj_wire_arena_free(&a);
	free(buf);
}

static void test_split_malformed(void)
{
	const ProtobufCMessageDescriptor *pr = &tfj__runtime__v1__pull_response__descriptor;
	/* A Slice with unknown fields (9: varint, 10: bytes, 11: fixed32) is fine. */
	static const uint8_t unknown[] = { 0x1a, 0x0e, 0x08, 0x02, 0x48, 0x05, 0x52, 0x01, 0xaa,
					   0x5d, 1, 2, 3, 4, 0x22, 0x00 };
	static const uint8_t trunc_data[] = { 0x1a, 0x06, 0x22, 0x08, 1, 2, 3, 4 };
	static const uint8_t var_bytes[] = { 0x1a, 0x03, 0x0a, 0x01, 0x00 }; /* var as bytes */
	static const uint8_t group[] = { 0x1a, 0x02, 0x4b, 0x4c };
	static const uint8_t field0[] = { 0x00, 0x01 };
	static const uint8_t var_big[] = { 0x1a, 0x06, 0x08, 0x80, 0x80, 0x80, 0x80, 0x10 };
	static const uint8_t long_varint[] = { 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					       0xff, 0xff, 0x7f };
	static const uint8_t slice_past[] = { 0x1a, 0x10, 0x08, 0x01 };
	static const uint8_t tensor_varint[] = { 0x18, 0x01 }; /* field 3 as a varint */
	struct tfj_wire_arena a;
	struct tfj_wire_msg m;
	uint8_t *many;
	size_t i;

	tfj_wire_arena_init(&a, 64 << 10);
	TFJ_CHECK_INT(split(&m, pr, unknown, sizeof(unknown), 1, &a), 0);
	TFJ_CHECK(m.nt == 1 && m.t[0].var == 2 && m.t[0].data.len == 0);
	TFJ_CHECK_INT(split(&m, pr, trunc_data, sizeof(trunc_data), 0, &a), TFJ_EPARSE);
	TFJ_CHECK_INT(split(&m, pr, var_bytes, sizeof(var_bytes), 0, &a), TFJ_EPARSE);
	TFJ_CHECK_INT(split(&m, pr, group, sizeof(group), 0, &a), TFJ_EPARSE);
	TFJ_CHECK_INT(split(&m, pr, field0, sizeof(field0), 0, &a), TFJ_EPARSE);
	TFJ_CHECK_INT(split(&m, pr, var_big, sizeof(var_big), 2, &a), TFJ_EPARSE);
	TFJ_CHECK_INT(split(&m, pr, long_varint, sizeof(long_varint), 1, &a), TFJ_EPARSE);
	TFJ_CHECK_INT(split(&m, pr, slice_past, sizeof(slice_past), 0, &a), TFJ_EPARSE);
	TFJ_CHECK_INT(split(&m, pr, tensor_varint, sizeof(tensor_varint), 0, &a), TFJ_EPARSE);
	TFJ_CHECK(m.head == NULL && m.nt == 0);
	/* Tensor headers are capped by the arena like everything else. */
	many = malloc(60000);
	TFJ_CHECK(many != NULL);
	for (i = 0; i + 2 <= 60000; i += 2) {
		many[i] = 0x1a;
		many[i + 1] = 0x00;
	}
	TFJ_CHECK_INT(split(&m, pr, many, 60000, 0, &a), TFJ_ETOOBIG);
	/* So is the message itself. */
	tfj_wire_arena_free(&a);
	tfj_wire_arena_init(&a, 1000);
	TFJ_CHECK_INT(split(&m, pr, many, 2000, 0, &a), TFJ_ETOOBIG);
	free(many);
	tfj_wire_arena_free(&a);
}

int main(void)
{
	grpc_init();
	TFJ_RUN(test_roundtrip_zero_copy);
	TFJ_RUN(test_malformed);
	TFJ_RUN(test_multislice_decode);
	TFJ_RUN(test_split_roundtrip);
	TFJ_RUN(test_split_state);
	TFJ_RUN(test_split_malformed);
	TFJ_RUN(test_method_table);
	grpc_shutdown();
	return tfj_test_finish();
}
