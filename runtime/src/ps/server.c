/*
 * server.c - gRPC server of one parameter server shard (server.h).
 *
 * This file owns the server's life: it sets up the shard, the gRPC server
 * and its completion queue, runs the loop that drains the queue, answers
 * the calls of unknown methods, and tears everything down. Serving a
 * request once it is decoded lives in service.c and the streams in
 * srvstream.c; the state all three share, and the tags they hand to gRPC,
 * are defined in service.h.
 */
#include "ps/server.h"

#include <inttypes.h>
#include <stdlib.h>

#include <tfj/err.h>
#include <tfj/exitcode.h>
#include <tfj/grpc.h>
#include <tfj/log.h>

#include "data/checkpoint.h"
#include "data/ckptdir.h"
#include "task/layout.h"
#include "wire/psauth.h"
#include "wire/pstls.h"
#include "wire/frame.h"
#include "ps/service.h"
#include "ps/srvstream.h"
#include "wire/rpcnames.h"
#include "ps/shard.h"
#include "task/stop.h"
#include "wire/wire.h"

static int arm_unknown(struct tfj_service *s)
{
	struct tfj_service_unknown_slot *u = &s->uslot;

	u->kind = TFJ_SERVICE_TAG_NEW_UNKNOWN;
	u->call = NULL;
	grpc_call_details_init(&u->details);
	grpc_metadata_array_init(&u->md);
	if (grpc_server_request_call(s->srv, &u->call, &u->details, &u->md, s->cq, s->cq, u) !=
	    GRPC_CALL_OK)
		return tfj_err_set(TFJ_EINTERNAL, "cannot ask for unknown calls");
	return 0;
}

static void unknown_release(struct tfj_service_unknown_slot *u)
{
	grpc_call_details_destroy(&u->details);
	grpc_metadata_array_destroy(&u->md);
}

/* Answers a call of a method this ps does not serve: UNIMPLEMENTED, before anything is read. */
static void on_unknown(struct tfj_service *s, int ok)
{
	grpc_call *call = s->uslot.call;

	unknown_release(&s->uslot);
	if (!ok || !call)
		return;
	if (arm_unknown(s) != 0)
		tfj_log_error("cannot accept more calls", "detail", tfj_err_detail());
	grpc_call_cancel_with_status(call, GRPC_STATUS_UNIMPLEMENTED, "ps: unknown method", NULL);
	grpc_call_unref(call);
}

/* Every completion of the server's queue but the shutdown tag. */
static void dispatch(struct tfj_service *s, void *tag, int ok)
{
	switch (*(int *)tag) {
	case TFJ_SERVICE_TAG_NEW_STREAM:
	case TFJ_SERVICE_TAG_STREAM_RECV:
	case TFJ_SERVICE_TAG_STREAM_SEND:
	case TFJ_SERVICE_TAG_STREAM_CLOSED:
	case TFJ_SERVICE_TAG_STREAM_STATUS: tfj_srvstream_complete(s, tag, ok); break;
	case TFJ_SERVICE_TAG_NEW_UNKNOWN: on_unknown(s, ok); break;
	default: break;
	}
}

/* Restores this shard from the newest checkpoint, if any. */
static int restore(struct tfj_service *s)
{
	char path[TFJ_RT_PATH_MAX + 64];
	struct tfj_ckpt ck = { 0 };
	int64_t step;
	int rc, with_state = 0;

	if (!s->cfg->checkpoint_dir[0])
		return 0;
	rc = tfj_ckptdir_latest(path, sizeof(path), &step, s->cfg->checkpoint_dir, "model");
	if (rc == TFJ_ENOTFOUND)
		return 0;
	if (rc)
		return rc;
	rc = tfj_ckpt_load(&ck, path);
	if (rc == 0)
		rc = tfj_shard_restore(&with_state, &s->shard, &ck);
	if (rc == 0) {
		tfj_log_info("restored shard from checkpoint", "path", path);
		if (with_state)
			tfj_log_fmt(TFJ_LOG_INFO, "ps %u: optimizer state restored (%s, %" PRId64
				    " updates)", s->shard.id, tfj_optim_name(s->cfg->optim),
				    s->shard.opt_t);
		else if (tfj_shard_state_k(&s->shard))
			tfj_log_fmt(TFJ_LOG_INFO, "ps %u: checkpoint holds no %s state for this "
				    "shard (written by %s); optimizer state starts afresh",
				    s->shard.id, tfj_optim_name(s->cfg->optim),
				    tfj_optim_name((enum tfj_optim_kind)ck.optim_kind));
	}
	tfj_ckpt_free(&ck);
	return rc;
}

static void teardown(struct tfj_service *s)
{
	if (s->srv) {
		grpc_event ev;
		int done = 0;

		tfj_service_flush_parked(s, 1);
		s->shutdown_kind = TFJ_SERVICE_TAG_SHUTDOWN;
		grpc_server_shutdown_and_notify(s->srv, s->cq, &s->shutdown_kind);
		grpc_server_cancel_all_calls(s->srv);
		/* Drain until the shutdown tag; bounded so a stuck call cannot hang us. */
		while (!done) {
			ev = grpc_completion_queue_next(s->cq, tfj_grpc_deadline_ms(5000), NULL);
			if (ev.type == GRPC_QUEUE_TIMEOUT)
				break;
			if (ev.type != GRPC_OP_COMPLETE)
				continue;
			if (ev.tag == &s->shutdown_kind) {
				done = 1;
			} else if (*(int *)ev.tag == TFJ_SERVICE_TAG_NEW_UNKNOWN) {
				if (ev.success && s->uslot.call)
					grpc_call_unref(s->uslot.call);
				unknown_release(&s->uslot);
			} else if (*(int *)ev.tag == TFJ_SERVICE_TAG_NEW_STREAM) {
				tfj_srvstream_slot_discard(&s->sslot, ev.success);
			} else {
				dispatch(s, ev.tag, ev.success);
			}
		}
		grpc_server_destroy(s->srv);
	}
	tfj_grpc_cq_destroy(s->cq);
	tfj_service_pool_free(s);
	free(s->smsgs);
	free(s->sptrs);
	free(s->stmsgs);
	free(s->stptrs);
	tfj_wire_arena_free(&s->arena);
	tfj_psauth_free(&s->auth);
	tfj_shard_free(&s->shard);
	tfj_layout_free(&s->layout);
}

/*
 * The job's secret (psauth.h) and the ps certificate (pstls.h): TFJ_EXIT_OK,
 * or the exit code of the failure, logged.
 */
static int load_credentials(struct tfj_service *s, struct tfj_pstls *tls)
{
	int rc = tfj_psauth_from_env(&s->auth);

	if (rc) {
		tfj_log_error("cannot read the job's ps secret", "detail", tfj_err_detail());
		return tfj_exitcode_from_err(rc);
	}
	rc = tfj_pstls_from_env(tls, 1);
	if (rc) {
		tfj_log_error("cannot load the ps certificate", "detail", tfj_err_detail());
		return tfj_exitcode_from_err(rc);
	}
	if (tfj_psauth_on(&s->auth))
		tfj_log_info("ps calls must carry the job's secret", "file", getenv(TFJ_PSAUTH_ENV));
	else
		tfj_log_warn("ps secret check off: " TFJ_PSAUTH_ENV " not set; any caller that "
			     "reaches this port is served");
	return TFJ_EXIT_OK;
}

/* The shard, restored from a checkpoint when there is one: TFJ_EXIT_OK or the exit code. */
static int shard_setup(struct tfj_service *s)
{
	const struct tfj_rtconfig *cfg = s->cfg;
	int rc;

	rc = tfj_layout_build(&s->layout, cfg);
	if (rc == 0)
		rc = tfj_shard_init(&s->shard, &s->layout, cfg, (uint32_t)cfg->index);
	if (rc) {
		tfj_log_error("cannot set up the shard", "detail", tfj_err_detail());
		return tfj_exitcode_from_err(rc);
	}
	tfj_service_pool_adopt(s);
	rc = restore(s);
	if (rc) {
		tfj_log_error("cannot restore from checkpoint", "dir", cfg->checkpoint_dir, "detail",
			      tfj_err_detail());
		return rc == TFJ_EIO ? TFJ_EXIT_IO : TFJ_EXIT_CHECKPOINT;
	}
	s->smsgs = calloc(s->shard.nslices, sizeof(*s->smsgs));
	s->sptrs = calloc(s->shard.nslices, sizeof(*s->sptrs));
	s->stmsgs = calloc(s->shard.nslices, sizeof(*s->stmsgs));
	s->stptrs = calloc(s->shard.nslices, sizeof(*s->stptrs));
	if (!s->smsgs || !s->sptrs || !s->stmsgs || !s->stptrs)
		return TFJ_EXIT_NOMEM;
	tfj_wire_arena_init(&s->arena, 2 * cfg->max_message_bytes + (1u << 20));
	return TFJ_EXIT_OK;
}

/*
 * The gRPC server: the stream is the only method served (any other is
 * answered UNIMPLEMENTED), over TLS when tls is on, listening on --bind.
 * TFJ_EXIT_OK, or the exit code (logged).
 */
static int server_start(struct tfj_service *s, const struct tfj_pstls *tls)
{
	grpc_server_credentials *creds = NULL;
	struct tfj_grpc_args args;
	int port, code = TFJ_EXIT_OK;

	tfj_grpc_args_init(&args);
	tfj_wire_transport_args(&args, s->cfg->max_message_bytes);
	s->cq = grpc_completion_queue_create_for_next(NULL);
	if (tfj_grpc_server_new(&s->srv, &args) != 0) {
		tfj_log_error("cannot create the server", "detail", tfj_err_detail());
		return TFJ_EXIT_INTERNAL;
	}
	grpc_server_register_completion_queue(s->srv, s->cq, NULL);
	s->sslot.kind = TFJ_SERVICE_TAG_NEW_STREAM;
	s->sslot.reg = tfj_grpc_server_stream_method(s->srv, TFJ_FRAME_PATH);
	if (!s->sslot.reg) {
		tfj_log_error("cannot register a method", "method", TFJ_FRAME_PATH);
		code = TFJ_EXIT_INTERNAL;
	} else if (tls->on && !(creds = tfj_pstls_server_creds(tls))) {
		tfj_log_error("cannot use the ps certificate", "dir", getenv(TFJ_PSTLS_DIR_ENV));
		code = TFJ_EXIT_USAGE;
	} else if (tfj_grpc_server_listen(&port, s->srv, s->cfg->bind, creds) != 0) {
		tfj_log_error("cannot listen (port in use?)", "address", s->cfg->bind);
		code = TFJ_EXIT_IO;
	}
	if (code != TFJ_EXIT_OK) {
		/* Not started: nothing to shut down, teardown() skips it. */
		grpc_server_destroy(s->srv);
		s->srv = NULL;
		return code;
	}
	if (tfj_srvstream_arm(s) != 0 || arm_unknown(s) != 0)
		return TFJ_EXIT_INTERNAL;
	return TFJ_EXIT_OK;
}

/* 1 once the chief's Finish is --ps_linger old (logged with the ps's counters). */
static int lingered(const struct tfj_service *s)
{
	const struct tfj_rtconfig *cfg = s->cfg;
	gpr_timespec until;

	if (!s->shard.finished)
		return 0;
	until = gpr_time_add(s->finish_at, gpr_time_from_millis((int64_t)(cfg->ps_linger_s * 1000),
								GPR_TIMESPAN));
	if (gpr_time_cmp(tfj_grpc_now(), until) < 0)
		return 0;
	tfj_log_fmt(TFJ_LOG_INFO, "ps %d done at step %" PRId64 " (applied %" PRIu64
		    ", early parts %" PRIu64 ", stale %" PRIu64 ", duplicate %" PRIu64
		    ", refused without secret %" PRIu64 ", streams %" PRIu64
		    ", stream frames %" PRIu64 ", copies on write %" PRIu64 ")",
		    cfg->index, s->shard.step, s->shard.applied, s->shard.parts,
		    s->shard.stale, s->shard.duplicate, s->auth.refused,
		    s->streams_opened, s->stream_frames, s->cow_copies);
	return 1;
}

/* Drains the queue until the chief's Finish lingered out, or a stop: the exit code. */
static int serve(struct tfj_service *s)
{
	for (;;) {
		grpc_event ev = grpc_completion_queue_next(s->cq, tfj_grpc_deadline_ms(100), NULL);

		if (ev.type == GRPC_OP_COMPLETE)
			dispatch(s, ev.tag, ev.success);
		else if (ev.type == GRPC_QUEUE_SHUTDOWN)
			return TFJ_EXIT_OK;
		tfj_service_flush_parked(s, 0);
		if (tfj_stop_requested()) {
			tfj_log_warn("stopping on signal");
			return TFJ_EXIT_ABORTED;
		}
		if (lingered(s))
			return TFJ_EXIT_OK;
	}
}

int tfj_server_main(const struct tfj_rtconfig *cfg)
{
	struct tfj_service *s = calloc(1, sizeof(*s));
	struct tfj_pstls tls = { 0 };
	int code;

	if (!s)
		return TFJ_EXIT_NOMEM;
	s->cfg = cfg;
	if ((code = load_credentials(s, &tls)) != TFJ_EXIT_OK)
		goto out;
	if ((code = shard_setup(s)) != TFJ_EXIT_OK)
		goto out;
	if ((code = server_start(s, &tls)) != TFJ_EXIT_OK)
		goto out;
	tfj_log_fmt(TFJ_LOG_INFO, "ps %d listening on %s: %zu slices, %zu floats, %s, "
		    "pushes %s", cfg->index, cfg->bind, s->shard.nslices, s->shard.n,
		    s->shard.initialized ? "restored" : "waiting for the chief's Init",
		    cfg->sync ? "whole (sync)" : cfg->push_part_kib ? "in parts or whole" :
		    "whole (--push-part-kib 0)");
	code = serve(s);
out:
	tfj_pstls_free(&tls);
	teardown(s);
	free(s);
	return code;
}
