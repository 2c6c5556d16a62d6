/*
 * test_wire.c - messages through gRPC byte buffers: zero-copy slices for
 * tensors, decode into a reused arena, malformed and oversize input.
 */
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc.h>
#include <grpc/slice.h>

#include <tfj/err.h>

#include "rpcnames.h"
#include "tfj_test.h"
#include "wire.h"

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

int main(void)
{
	grpc_init();
	TFJ_RUN(test_roundtrip_zero_copy);
	TFJ_RUN(test_malformed);
	TFJ_RUN(test_multislice_decode);
	TFJ_RUN(test_method_table);
	grpc_shutdown();
	return tfj_test_finish();
}
