/*
 * srvstream.h - the ps side of the transport: one bidirectional stream per
 * client (/tfj.runtime.v1.ParameterServer/Stream, frame.h,
 * docs/runtime-protocol.md).
 *
 * A stream's requests arrive one frame at a time and are served by
 * tfj_service_handle (service.h); what this module adds is the transport:
 * accepting a stream (the job's secret is checked once, on its initial
 * metadata), keeping one receive outstanding, queueing the answers and
 * sending them one at a time, and ending the stream with OK once the
 * client closed its side and every answer left. The request service
 * (service.c) does not care how a request came except for how its answer
 * leaves (tfj_srvstream_respond).
 *
 * Everything runs on the ps's completion-queue thread (service.h).
 *
 * Ownership: a stream (struct tfj_srvstream, private to srvstream.c) is
 * created when a client opens it and freed when the last thing naming it
 * is done: its outstanding gRPC batches and its requests not yet answered
 * each hold a reference. A request of a stream (struct tfj_service_call with
 * `st` set) belongs to the stream once it is answered: queued, sent, and
 * freed with its answer after the send completes, or at once when the
 * stream is gone.
 */
#ifndef TFJ_SRVSTREAM_H
#define TFJ_SRVSTREAM_H

#include <grpc/grpc.h>
#include <protobuf-c/protobuf-c.h>

#include <tfj/grpc.h>

#include "ps/service.h"

struct tfj_srvstream;

/* Asks for the next stream on the server's queue. TFJ_EINTERNAL when gRPC refuses. */
int tfj_srvstream_arm(struct tfj_service *s);

/*
 * Handles a completion whose tag is a stream's: TFJ_SERVICE_TAG_NEW_STREAM
 * (the slot: a stream opened) and TFJ_SERVICE_TAG_STREAM_* (a batch of one).
 */
void tfj_srvstream_complete(struct tfj_service *s, void *tag, int ok);

/*
 * Answers a request that came on a stream (c->st set): encodes the frame
 * (msg only with GRPC_STATUS_OK; may be NULL) and queues it for sending.
 * Takes c.
 */
void tfj_srvstream_respond(struct tfj_service_call *c, grpc_status_code code, const char *detail,
			  const ProtobufCMessage *msg);

/*
 * Drops what the stream slot's completion delivered while the server shuts
 * down (ok: whether it delivered a call), without serving it.
 */
void tfj_srvstream_slot_discard(struct tfj_service_slot *sl, int ok);

#endif
