/*
 * server.h - the parameter server task: serves one shard over gRPC.
 *
 * The service is tfj.runtime.v1.ParameterServer (common/proto/
 * tfj_runtime.proto, docs/runtime-protocol.md), whose Stream is its only
 * transport: a client's requests arrive as frames (frame.h) on one
 * long-lived stream, its secret checked once on the stream's initial
 * metadata. Calls of any other method are answered UNIMPLEMENTED. One
 * thread runs a gRPC completion queue: every request is decoded, applied to
 * the shard (shard.h) and answered from that thread, so the shard needs no
 * locks.
 * A Pull that asks for a step the shard has not reached yet (sync mode) is
 * parked and answered when the step arrives, the chief finishes, or its
 * wait runs out, so waiting workers cost no polling traffic.
 *
 * Pull answers are sent from snapshots of the parameters: one copy per
 * parameter version, shared by every Pull of that version and referenced by
 * gRPC without further copies, so updates may proceed while slow readers
 * are still being sent the previous version.
 *
 * On start the server restores its slices from the newest checkpoint in
 * --checkpoint_dir when there is one (a restarted ps comes back with the
 * model, not empty); otherwise it waits for the chief's Init. After the
 * chief's Finish it keeps answering for --ps_linger seconds and exits 0.
 */
#ifndef TFJ_SERVER_H
#define TFJ_SERVER_H

#include "task/rtconfig.h"

/* Runs the ps task described by cfg; returns an exit code (tfj/exitcode.h). */
int tfj_server_main(const struct tfj_rtconfig *cfg);

#endif
