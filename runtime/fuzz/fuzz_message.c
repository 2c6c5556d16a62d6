/*
 * fuzz_message.c - libFuzzer target for decoding runtime messages.
 *
 * The first byte picks the message type (request or response of one of the
 * five methods); the rest is decoded exactly as the server and the clients
 * decode what arrives from the network: protobuf-c into a capped arena. A
 * decoded PushRequest or InitRequest is then checked against a real shard's
 * slice table and, when it fits, applied, as the ps would.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <tfj/err.h>

#include "plan.h"
#include "rpcnames.h"
#include "rtconfig.h"
#include "shard.h"
#include "wire.h"

static struct tfj_rtconfig cfg;
static struct tfj_plan plan;
static struct tfj_shard shard;
static struct tfj_wire_arena arena;
static int ready;

static void setup(void)
{
	char *argv[] = { "--job_name", "ps", "--ps_hosts", "p:1,p:2", "--worker_hosts",
			 "w:1,w:2", "--sync", "--optimizer", "sgd", "--min_slice", "1" };

	if (tfj_rtconfig_parse(&cfg, 11, argv, NULL) || tfj_plan_build(&plan, &cfg) ||
	    tfj_shard_init(&shard, &plan, &cfg, 1))
		__builtin_trap();
	tfj_wire_arena_init(&arena, 4u << 20);
	ready = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const ProtobufCMessageDescriptor *desc;
	ProtobufCMessage *m = NULL;
	unsigned sel;

	if (!ready)
		setup();
	if (size < 1)
		return 0;
	sel = data[0] % (2 * TFJ_RPC_NMETHODS);
	desc = sel % 2 ? tfj_rpc_methods[sel / 2].resp : tfj_rpc_methods[sel / 2].req;
	tfj_wire_arena_reset(&arena);
	if (tfj_wire_unpack(&m, desc, data + 1, size - 1, &arena) != 0)
		return 0;
	if (desc == &tfj__runtime__v1__push_request__descriptor) {
		Tfj__Runtime__V1__PushRequest *q = (Tfj__Runtime__V1__PushRequest *)m;
		Tfj__Runtime__V1__PushResult res;

		if (!shard.initialized) {
			shard.initialized = 1; /* zero parameters are fine for the fuzzer */
		}
		(void)tfj_shard_push(&shard, q, &res);
	} else if (desc == &tfj__runtime__v1__init_request__descriptor) {
		Tfj__Runtime__V1__InitRequest *q = (Tfj__Runtime__V1__InitRequest *)m;

		(void)tfj_shard_load(&shard, q->slices, q->n_slices, q->step);
	}
	return 0;
}
