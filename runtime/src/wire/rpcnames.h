/*
 * rpcnames.h - the methods of tfj.runtime.v1.ParameterServer: gRPC path,
 * request and response message types. Shared by server, client and the
 * fuzz target so the three never disagree.
 */
#ifndef TFJ_RPCNAMES_H
#define TFJ_RPCNAMES_H

#include <protobuf-c/protobuf-c.h>

#include "tfj_runtime.pb-c.h"

#define TFJ_RPC_SERVICE "tfj.runtime.v1.ParameterServer"

enum tfj_rpc_method {
	TFJ_RPC_STATUS = 0,
	TFJ_RPC_INIT,
	TFJ_RPC_PULL,
	TFJ_RPC_PUSH,
	TFJ_RPC_FINISH,
	TFJ_RPC_NMETHODS
};

struct tfj_rpc_method_info {
	const char *path; /* "/tfj.runtime.v1.ParameterServer/Pull" */
	const ProtobufCMessageDescriptor *req;
	const ProtobufCMessageDescriptor *resp;
};

static const struct tfj_rpc_method_info tfj_rpc_methods[TFJ_RPC_NMETHODS] = {
	{ "/" TFJ_RPC_SERVICE "/Status", &tfj__runtime__v1__status_request__descriptor,
	  &tfj__runtime__v1__status_response__descriptor },
	{ "/" TFJ_RPC_SERVICE "/Init", &tfj__runtime__v1__init_request__descriptor,
	  &tfj__runtime__v1__init_response__descriptor },
	{ "/" TFJ_RPC_SERVICE "/Pull", &tfj__runtime__v1__pull_request__descriptor,
	  &tfj__runtime__v1__pull_response__descriptor },
	{ "/" TFJ_RPC_SERVICE "/Push", &tfj__runtime__v1__push_request__descriptor,
	  &tfj__runtime__v1__push_response__descriptor },
	{ "/" TFJ_RPC_SERVICE "/Finish", &tfj__runtime__v1__finish_request__descriptor,
	  &tfj__runtime__v1__finish_response__descriptor },
};

#endif
