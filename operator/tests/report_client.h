/*
 * report_client.h - a minimal gRPC core client for the report service
 * tests (test_report.c, itest_report.c): one unary call with optional
 * bearer metadata, returning the status code. Header-only (static).
 */
#ifndef TFJ_REPORT_CLIENT_H
#define TFJ_REPORT_CLIENT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include "tfj_report.pb-c.h"

/* Calls `method` with the packed message; returns the gRPC status. *resp_len gets the size. */
static inline grpc_status_code rc_call(grpc_channel *ch, const char *method,
				       const ProtobufCMessage *req, const uint8_t *raw,
				       size_t raw_len, const char *token, size_t *resp_len)
{
	grpc_completion_queue *cq = grpc_completion_queue_create_for_next(NULL);
	grpc_metadata_array imd, tmd;
	grpc_metadata md;
	grpc_status_code status = GRPC_STATUS_UNKNOWN;
	grpc_slice details = grpc_empty_slice(), sl;
	grpc_byte_buffer *send_bb, *recv_bb = NULL;
	grpc_op ops[6];
	grpc_call *call;
	gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
					     gpr_time_from_seconds(20, GPR_TIMESPAN));
	uint8_t *buf = NULL;
	size_t len = raw_len;
	char *hdr = NULL;

	if (req) {
		len = protobuf_c_message_get_packed_size(req);
		buf = malloc(len ? len : 1);
		protobuf_c_message_pack(req, buf);
		raw = buf;
	}
	sl = grpc_slice_from_copied_buffer((const char *)raw, len);
	send_bb = grpc_raw_byte_buffer_create(&sl, 1);
	grpc_slice_unref(sl);
	grpc_metadata_array_init(&imd);
	grpc_metadata_array_init(&tmd);
	memset(&md, 0, sizeof(md));
	if (token) {
		size_t n = strlen(token) + 8;

		hdr = malloc(n);
		snprintf(hdr, n, "Bearer %s", token);
		md.key = grpc_slice_from_static_string("authorization");
		md.value = grpc_slice_from_copied_string(hdr);
	}
	call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
					grpc_slice_from_static_string(method), NULL, deadline, NULL);
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[0].data.send_initial_metadata.count = token ? 1 : 0;
	ops[0].data.send_initial_metadata.metadata = token ? &md : NULL;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = send_bb;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &imd;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &recv_bb;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &tmd;
	ops[5].data.recv_status_on_client.status = &status;
	ops[5].data.recv_status_on_client.status_details = &details;
	if (grpc_call_start_batch(call, ops, 6, call, NULL) == GRPC_CALL_OK)
		grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
	if (resp_len)
		*resp_len = recv_bb ? grpc_byte_buffer_length(recv_bb) : 0;
	grpc_call_unref(call);
	grpc_completion_queue_shutdown(cq);
	while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
	       GRPC_QUEUE_SHUTDOWN)
		;
	grpc_completion_queue_destroy(cq);
	if (token)
		grpc_slice_unref(md.value);
	grpc_slice_unref(details);
	grpc_metadata_array_destroy(&imd);
	grpc_metadata_array_destroy(&tmd);
	grpc_byte_buffer_destroy(send_bb);
	if (recv_bb)
		grpc_byte_buffer_destroy(recv_bb);
	free(buf);
	free(hdr);
	return status;
}

static inline grpc_channel *rc_channel(int port)
{
	char target[64];
	grpc_channel_credentials *creds = grpc_insecure_credentials_create();
	grpc_channel *ch;

	snprintf(target, sizeof(target), "127.0.0.1:%d", port);
	ch = grpc_channel_create(target, creds, NULL);
	grpc_channel_credentials_release(creds);
	return ch;
}

static inline void rc_ref(Tfj__Report__V1__ReplicaRef *r, const char *ns, const char *job,
			  const char *uid, const char *type, int idx, const char *pod)
{
	tfj__report__v1__replica_ref__init(r);
	r->namespace_ = (char *)ns;
	r->job_name = (char *)job;
	r->job_uid = (char *)uid;
	r->replica_type = (char *)type;
	r->replica_index = idx;
	r->pod_name = (char *)pod;
}

#endif
