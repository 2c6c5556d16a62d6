/*
 * fuzz_message.c - libFuzzer target for decoding runtime messages.
 *
 * The first byte picks the message type (its value mod 10: request or
 * response of one of the five methods) and how gRPC delivered the bytes
 * (its value / 10: 0 = one slice, k = slices of 3k-2 bytes, so varints and
 * floats straddle slice boundaries); the rest is the message. It is decoded
 * exactly as the server and the clients decode what arrives from the
 * network: protobuf-c into a capped arena, and through the split decoder
 * that leaves tensors in the slices (wire.h), and as the body of a protocol
 * v2 stream frame (frame.h: the same bytes read as a frame's header and
 * then its body). Every decoded tensor is copied
 * out, as a client does; a decoded PushRequest or InitRequest is checked
 * against a real shard's slice table and, when it fits, applied, as the ps
 * would: to an SGD shard and to an Adam shard, which also takes an Init's
 * optimizer state (InitRequest.state, checked and loaded in place).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <grpc/slice.h>

#include <tfj/err.h>

#include "task/layout.h"
#include "wire/frame.h"
#include "wire/rpcnames.h"
#include "task/rtconfig.h"
#include "ps/shard.h"
#include "wire/wire.h"
#include "wire/wiresplit.h"

static struct tfj_rtconfig cfg, acfg;
static struct tfj_layout layout, alayout;
static struct tfj_shard shard, ashard;
static struct tfj_wire_arena arena;
static int ready;

static void setup(void)
{
	char *argv[] = { "--job_name", "ps", "--ps_hosts", "p:1,p:2", "--worker_hosts",
			 "w:1,w:2", "--sync", "--optimizer", "sgd", "--min_slice", "1" };
	char *aargv[] = { "--job_name", "ps", "--ps_hosts", "p:1,p:2", "--worker_hosts",
			  "w:1,w:2", "--optimizer", "adam", "--min_slice", "1" };

	if (tfj_rtconfig_parse(&cfg, 11, argv, NULL) || tfj_layout_build(&layout, &cfg) ||
	    tfj_shard_init(&shard, &layout, &cfg, 1))
		__builtin_trap();
	if (tfj_rtconfig_parse(&acfg, 10, aargv, NULL) || tfj_layout_build(&alayout, &acfg) ||
	    tfj_shard_init(&ashard, &alayout, &acfg, 1))
		__builtin_trap();
	tfj_wire_arena_init(&arena, 4u << 20);
	ready = 1;
}

#define MAX_FUZZ_SLICES 32768

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static grpc_slice sl[MAX_FUZZ_SLICES];
	static uint8_t scratch[1 << 16];
	const ProtobufCMessageDescriptor *desc;
	ProtobufCMessage *m = NULL;
	struct tfj_wire_msg wm;
	struct tfj_frame fr;
	grpc_byte_buffer *bb;
	size_t nsl = 0, off, piece, i;
	unsigned sel;

	if (!ready)
		setup();
	if (size < 1)
		return 0;
	sel = data[0] % (2 * TFJ_RPC_NMETHODS);
	piece = data[0] / (2 * TFJ_RPC_NMETHODS) ? 3u * (data[0] / (2 * TFJ_RPC_NMETHODS)) - 2 : 0;
	desc = sel % 2 ? tfj_rpc_methods[sel / 2].resp : tfj_rpc_methods[sel / 2].req;
	data++;
	size--;
	tfj_wire_arena_reset(&arena);
	(void)tfj_wire_unpack(&m, desc, data, size, &arena);
	/* The same bytes as gRPC slices, then split-decoded. */
	for (off = 0; off < size && nsl < MAX_FUZZ_SLICES; off += piece ? piece : size) {
		size_t n = piece && size - off > piece ? piece : size - off;

		sl[nsl++] = grpc_slice_from_static_buffer(data + off, n);
	}
	if (off < size)
		return 0;
	/* The same bytes as a protocol v2 stream frame whose body is a `desc` message. */
	bb = grpc_raw_byte_buffer_create(sl, nsl);
	tfj_wire_arena_reset(&arena);
	if (bb && tfj_frame_decode(&fr, bb, &arena) == 0 &&
	    tfj_frame_body(&wm, &fr, desc, &arena) == 0)
		for (i = 0; i < wm.nt; i++)
			if (wm.t[i].data.len <= sizeof(scratch))
				tfj_wire_bytes_copy(scratch, &wm.t[i].data);
	if (bb)
		grpc_byte_buffer_destroy(bb);
	tfj_wire_arena_reset(&arena);
	if (tfj_wire_split_slices(&wm, desc, sl, nsl, &arena) != 0)
		return 0;
	for (i = 0; i < wm.nt; i++)
		if (wm.t[i].data.len <= sizeof(scratch))
			tfj_wire_bytes_copy(scratch, &wm.t[i].data);
	for (i = 0; i < wm.nst; i++)
		if (wm.st[i].data.len <= sizeof(scratch))
			tfj_wire_bytes_copy(scratch, &wm.st[i].data);
	if (desc == &tfj__runtime__v1__push_request__descriptor) {
		Tfj__Runtime__V1__PushRequest *q = (Tfj__Runtime__V1__PushRequest *)wm.head;
		Tfj__Runtime__V1__PushResult res;

		if (!shard.initialized) {
			shard.initialized = 1; /* zero parameters are fine for the fuzzer */
		}
		(void)tfj_shard_push(&shard, q, wm.t, wm.nt, &res);
		if (!ashard.initialized)
			ashard.initialized = 1;
		(void)tfj_shard_push(&ashard, q, wm.t, wm.nt, &res);
	} else if (desc == &tfj__runtime__v1__init_request__descriptor) {
		Tfj__Runtime__V1__InitRequest *q = (Tfj__Runtime__V1__InitRequest *)wm.head;

		(void)tfj_shard_load(&shard, wm.t, wm.nt, q->step, wm.st, wm.nst, q->optim_steps);
		(void)tfj_shard_load(&ashard, wm.t, wm.nt, q->step, wm.st, wm.nst, q->optim_steps);
	}
	return 0;
}
