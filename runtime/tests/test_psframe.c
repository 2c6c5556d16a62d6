/*
 * test_psframe.c - protocol v2's stream frames: the header in front of a
 * message whose tensors stay zero-copy, read back from slices cut
 * anywhere (the header across slice boundaries too), plain protobuf for
 * protobuf-c, answers with status and detail, and malformed frames.
 */
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/slice.h>

#include <tfj/err.h>

#include "wire/frame.h"
#include "tfj_test.h"
#include "wire/wiresplit.h"

#define N 700 /* floats per tensor: 2800 bytes, above TFJ_WIRE_ZEROCOPY_MIN */

static float vals[2][N];
static uint8_t flat[1 << 16];

/* The frame's bytes, contiguous. */
static size_t flatten(grpc_byte_buffer *bb)
{
	grpc_byte_buffer_reader rd;
	grpc_slice s;
	size_t n = 0;

	if (!grpc_byte_buffer_reader_init(&rd, bb))
		return 0;
	while (grpc_byte_buffer_reader_next(&rd, &s)) {
		size_t k = GRPC_SLICE_LENGTH(s);

		if (n + k <= sizeof(flat)) {
			memcpy(flat + n, GRPC_SLICE_START_PTR(s), k);
			n += k;
		}
		grpc_slice_unref(s);
	}
	grpc_byte_buffer_reader_destroy(&rd);
	return n;
}

/* len bytes of flat as a byte buffer cut into pieces of `piece` bytes (0: one slice). */
static grpc_byte_buffer *recut(size_t len, size_t piece)
{
	static grpc_slice sl[8192];
	grpc_byte_buffer *bb;
	size_t n = 0, off, i;

	for (off = 0; off < len && n < 8192; off += piece ? piece : len)
		sl[n++] = grpc_slice_from_copied_buffer((const char *)flat + off,
						       piece && len - off > piece ? piece : len - off);
	bb = grpc_raw_byte_buffer_create(sl, n);
	for (i = 0; i < n; i++)
		grpc_slice_unref(sl[i]);
	return bb;
}

static void test_request_round_trip(void)
{
	Tfj__Runtime__V1__PushRequest q = TFJ__RUNTIME__V1__PUSH_REQUEST__INIT;
	Tfj__Runtime__V1__Slice s[2], *ptrs[2];
	Tfj__Runtime__V1__StreamFrame *pf;
	static const size_t pieces[] = { 0, 1, 3, 7, 1000 };
	struct tfj_wire_lease lease;
	struct tfj_wire_arena a;
	struct tfj_frame f;
	struct tfj_wire_msg m;
	grpc_byte_buffer *bb;
	float got[N];
	size_t len, p;
	int i, j;

	for (i = 0; i < 2; i++) {
		for (j = 0; j < N; j++)
			vals[i][j] = (float)(i * N + j) * 0.5f;
		tfj__runtime__v1__slice__init(&s[i]);
		s[i].var = (uint32_t)i;
		s[i].count = N;
		s[i].data.data = (uint8_t *)vals[i];
		s[i].data.len = sizeof(vals[i]);
		ptrs[i] = &s[i];
	}
	q.layout_hash = 0xfeedULL;
	q.step = 77;
	q.replica = 1;
	q.n_slices = 2;
	q.slices = ptrs;
	atomic_init(&lease.refs, 0);
	TFJ_CHECK_OK(tfj_frame_encode(&bb, 300, TFJ_RPC_PUSH, 0, NULL, &q.base, &lease));
	/* Both tensors referenced, not copied. */
	TFJ_CHECK_INT(tfj_wire_lease_busy(&lease), 2);
	len = flatten(bb);
	grpc_byte_buffer_destroy(bb);
	TFJ_CHECK_INT(tfj_wire_lease_busy(&lease), 0);
	TFJ_CHECK_GT(len, sizeof(vals));
	/* Plain protobuf: protobuf-c reads the same frame. */
	pf = tfj__runtime__v1__stream_frame__unpack(NULL, len, flat);
	TFJ_CHECK_NOT_NULL(pf);
	if (pf) {
		TFJ_CHECK_EQ(pf->id, 300);
		TFJ_CHECK_EQ(pf->method, TFJ_RPC_PUSH);
		TFJ_CHECK_EQ(pf->body.len, protobuf_c_message_get_packed_size(&q.base));
		tfj__runtime__v1__stream_frame__free_unpacked(pf, NULL);
	}
	tfj_wire_arena_init(&a, 1 << 20);
	for (p = 0; p < sizeof(pieces) / sizeof(pieces[0]); p++) {
		bb = recut(len, pieces[p]);
		tfj_wire_arena_reset(&a);
		TFJ_CHECK_OK(tfj_frame_decode(&f, bb, &a));
		TFJ_CHECK_EQ(f.id, 300);
		TFJ_CHECK_EQ(f.method, TFJ_RPC_PUSH);
		TFJ_CHECK_EQ(f.status, 0);
		TFJ_CHECK_OK(tfj_frame_body(&m, &f, &tfj__runtime__v1__push_request__descriptor,
					      &a));
		TFJ_CHECK_EQ(m.nt, 2);
		if (m.nt == 2 && m.head) {
			Tfj__Runtime__V1__PushRequest *d = (Tfj__Runtime__V1__PushRequest *)m.head;

			TFJ_CHECK_EQ(d->step, 77);
			TFJ_CHECK_EQ(d->layout_hash, 0xfeedULL);
			TFJ_CHECK_EQ(m.t[1].var, 1);
			TFJ_CHECK_EQ(m.t[1].count, N);
			TFJ_CHECK_EQ(m.t[1].data.len, sizeof(vals[1]));
			tfj_wire_bytes_copy(got, &m.t[1].data);
			TFJ_CHECK(memcmp(got, vals[1], sizeof(got)) == 0);
		}
		grpc_byte_buffer_destroy(bb);
	}
	tfj_wire_arena_free(&a);
}

static void test_answer_with_status(void)
{
	char longd[600];
	struct tfj_wire_arena a;
	struct tfj_frame f;
	struct tfj_wire_msg m;
	grpc_byte_buffer *bb;
	size_t len;

	memset(longd, 'x', sizeof(longd) - 1);
	longd[sizeof(longd) - 1] = '\0';
	tfj_wire_arena_init(&a, 1 << 20);
	TFJ_CHECK_OK(tfj_frame_encode(&bb, 1ULL << 40, TFJ_RPC_PULL, GRPC_STATUS_UNAVAILABLE,
					"ps: not initialised yet", NULL, NULL));
	len = flatten(bb);
	grpc_byte_buffer_destroy(bb);
	bb = recut(len, 2);
	TFJ_CHECK_OK(tfj_frame_decode(&f, bb, &a));
	TFJ_CHECK_EQ(f.id, 1ULL << 40);
	TFJ_CHECK_EQ(f.method, TFJ_RPC_PULL);
	TFJ_CHECK_EQ(f.status, GRPC_STATUS_UNAVAILABLE);
	TFJ_CHECK_STR(f.detail, "ps: not initialised yet");
	TFJ_CHECK_EQ(f.body.len, 0);
	/* No body: the empty message. */
	TFJ_CHECK_OK(tfj_frame_body(&m, &f, &tfj__runtime__v1__pull_response__descriptor, &a));
	TFJ_CHECK_NOT_NULL(m.head);
	TFJ_CHECK_EQ(m.nt, 0);
	grpc_byte_buffer_destroy(bb);
	/* A long detail is cut, not refused. */
	TFJ_CHECK_OK(tfj_frame_encode(&bb, 2, TFJ_RPC_PUSH, GRPC_STATUS_INTERNAL, longd, NULL,
					NULL));
	TFJ_CHECK_OK(tfj_frame_decode(&f, bb, &a));
	TFJ_CHECK_EQ(strlen(f.detail), TFJ_FRAME_DETAIL_MAX - 1);
	grpc_byte_buffer_destroy(bb);
	tfj_wire_arena_free(&a);
}

static void test_malformed(void)
{
	Tfj__Runtime__V1__FinishRequest q = TFJ__RUNTIME__V1__FINISH_REQUEST__INIT;
	struct tfj_wire_arena a;
	struct tfj_frame f;
	grpc_byte_buffer *bb;
	size_t len;

	tfj_wire_arena_init(&a, 1 << 20);
	q.step = 5;
	TFJ_CHECK_OK(tfj_frame_encode(&bb, 9, TFJ_RPC_FINISH, 0, NULL, &q.base, NULL));
	len = flatten(bb);
	grpc_byte_buffer_destroy(bb);
	/* Cut short: the body is shorter than its length says. */
	bb = recut(len - 1, 0);
	TFJ_CHECK_INT(tfj_frame_decode(&f, bb, &a), TFJ_EPARSE);
	grpc_byte_buffer_destroy(bb);
	/* A field after the body: the body must end the frame. */
	flat[len] = 1 << 3;
	flat[len + 1] = 5;
	bb = recut(len + 2, 0);
	TFJ_CHECK_INT(tfj_frame_decode(&f, bb, &a), TFJ_EPARSE);
	grpc_byte_buffer_destroy(bb);
	/* A group wire type, and an overlong varint. */
	flat[0] = 1 << 3 | 3;
	bb = recut(1, 0);
	TFJ_CHECK_INT(tfj_frame_decode(&f, bb, &a), TFJ_EPARSE);
	grpc_byte_buffer_destroy(bb);
	memset(flat, 0xff, 12);
	bb = recut(12, 0);
	TFJ_CHECK_INT(tfj_frame_decode(&f, bb, &a), TFJ_EPARSE);
	grpc_byte_buffer_destroy(bb);
	TFJ_CHECK_INT(tfj_frame_decode(&f, NULL, &a), TFJ_EPARSE);
	/* An unknown field before the body is skipped (a newer peer). */
	flat[0] = 9 << 3;
	flat[1] = 1;
	flat[2] = 1 << 3;
	flat[3] = 4;
	bb = recut(4, 1);
	TFJ_CHECK_OK(tfj_frame_decode(&f, bb, &a));
	TFJ_CHECK_EQ(f.id, 4);
	grpc_byte_buffer_destroy(bb);
	tfj_wire_arena_free(&a);
}

int main(void)
{
	grpc_init();
	TFJ_RUN(test_request_round_trip);
	TFJ_RUN(test_answer_with_status);
	TFJ_RUN(test_malformed);
	grpc_shutdown();
	return tfj_test_finish();
}
