/*
 * report_client.h - a minimal client for the report service tests
 * (test_report.c, itest_report.c): one unary call (common's tfj_grpc_unary)
 * with optional bearer metadata, returning the status code. Header-only
 * (static).
 */
#ifndef TFJ_REPORT_CLIENT_H
#define TFJ_REPORT_CLIENT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/grpc.h>

#include "report/report.h"
#include "tfj_report.pb-c.h"

/*
 * Calls `method` with the packed message (or `raw`); returns the gRPC
 * status. *resp_len gets the reply's size; with `reply`, up to `cap` of its
 * bytes are copied there.
 */
/* A `deliver` callback that takes every report (tests about the transport). */
static inline enum tfj_report_code rc_deliver_ok(void *ud, const struct tfj_reportmsg *m,
						 const char *subject, const char **reason)
{
	(void)ud;
	(void)m;
	(void)subject;
	(void)reason;
	return TFJ_REPORT_OK;
}

static inline grpc_status_code rc_call_reply(grpc_channel *ch, const char *method,
					     const ProtobufCMessage *req, const uint8_t *raw,
					     size_t raw_len, const char *token, size_t *resp_len,
					     uint8_t *reply, size_t cap)
{
	struct tfj_grpc_result res;
	grpc_status_code status;
	uint8_t *buf = NULL;
	size_t len = raw_len;

	if (req) {
		len = protobuf_c_message_get_packed_size(req);
		buf = malloc(len ? len : 1);
		protobuf_c_message_pack(req, buf);
		raw = buf;
	}
	tfj_grpc_unary(&res, ch, method, token, raw, len, tfj_grpc_deadline_ms(20000), 1u << 20);
	status = res.status;
	if (resp_len)
		*resp_len = res.reply_len;
	if (reply && res.reply)
		memcpy(reply, res.reply, res.reply_len < cap ? res.reply_len : cap);
	tfj_grpc_result_free(&res);
	free(buf);
	return status;
}

static inline grpc_status_code rc_call(grpc_channel *ch, const char *method,
				       const ProtobufCMessage *req, const uint8_t *raw,
				       size_t raw_len, const char *token, size_t *resp_len)
{
	return rc_call_reply(ch, method, req, raw, raw_len, token, resp_len, NULL, 0);
}

/*
 * A Heartbeat for `ref` (no progress) and its decoded reply in *out (caller
 * frees with tfj__report__v1__heartbeat_response__free_unpacked; NULL
 * unless the status is OK).
 */
static inline grpc_status_code rc_heartbeat_reply(grpc_channel *ch, const char *token,
						  Tfj__Report__V1__ReplicaRef *ref,
						  Tfj__Report__V1__HeartbeatResponse **out)
{
	Tfj__Report__V1__HeartbeatRequest hb = TFJ__REPORT__V1__HEARTBEAT_REQUEST__INIT;
	uint8_t reply[1024];
	size_t len = 0;
	grpc_status_code st;

	hb.replica = ref;
	hb.child_running = 1;
	st = rc_call_reply(ch, "/tfj.report.v1.Report/Heartbeat", &hb.base, NULL, 0, token, &len,
			   reply, sizeof(reply));
	*out = st == GRPC_STATUS_OK && len <= sizeof(reply) ?
	       tfj__report__v1__heartbeat_response__unpack(NULL, len, reply) : NULL;
	return st;
}

static inline grpc_channel *rc_channel(int port)
{
	char target[64];
	grpc_channel *ch = NULL;

	snprintf(target, sizeof(target), "127.0.0.1:%d", port);
	tfj_grpc_channel_new(&ch, target, NULL, NULL);
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
