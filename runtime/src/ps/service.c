/*
 * service.c - serving one request on the ps, whichever transport brought it
 * (service.h).
 */
#include "ps/service.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/support/alloc.h>

#include <tfj/err.h>
#include <tfj/grpc.h>
#include <tfj/log.h>

#include "wire/frame.h"
#include "wire/wiresplit.h"

#define MAX_PULL_WAIT_MS 30000

/* Every answer leaves the way its request came (a frame on its stream). */
void tfj_service_respond(struct tfj_service *s, struct tfj_service_call *c, grpc_status_code code,
		       const char *detail, const ProtobufCMessage *msg)
{
	(void)s;
	c->respond(c, code, detail, msg);
}

/* The pool entry holding the live parameters (NULL before the pool adopted them). */
static struct tfj_service_snapshot *live_buf(struct tfj_service *s)
{
	size_t i;

	for (i = 0; i < TFJ_SERVICE_MAX_SNAPSHOTS; i++)
		if (s->snaps[i].data && s->snaps[i].data == s->shard.param)
			return &s->snaps[i];
	return NULL;
}

static int buf_free(struct tfj_service_snapshot *sn)
{
	return sn->users == 0 && tfj_wire_lease_busy(&sn->lease) == 0;
}

/* The shard's prewrite hook: copy on write when a Pull still sends the live buffer. */
static int cow(struct tfj_shard *sh, void *ud)
{
	struct tfj_service *s = ud;
	struct tfj_service_snapshot *cur = live_buf(s), *fr = NULL;
	size_t i;

	if (!cur || buf_free(cur))
		return 0;
	for (i = 0; i < TFJ_SERVICE_MAX_SNAPSHOTS; i++) {
		struct tfj_service_snapshot *sn = &s->snaps[i];

		if (sn == cur || !buf_free(sn))
			continue;
		if (!fr || (!fr->data && sn->data))
			fr = sn;
	}
	if (!fr)
		return tfj_err_set(TFJ_EUNAVAIL, "ps: too many pulls in flight to apply an update");
	if (!fr->data) {
		fr->data = malloc(sh->n * sizeof(float));
		if (!fr->data)
			return tfj_err_set(TFJ_ENOMEM, "ps: out of memory");
	}
	memcpy(fr->data, sh->param, sh->n * sizeof(float));
	sh->param = fr->data;
	s->cow_copies++;
	return 0;
}

void tfj_service_pool_adopt(struct tfj_service *s)
{
	s->snaps[0].data = s->shard.param;
	s->shard.prewrite = cow;
	s->shard.prewrite_ud = s;
}

void tfj_service_pool_free(struct tfj_service *s)
{
	size_t i;

	/* The pool owns the live parameters once it adopted them (see shard.h). */
	if (live_buf(s))
		s->shard.param = NULL;
	for (i = 0; i < TFJ_SERVICE_MAX_SNAPSHOTS; i++)
		free(s->snaps[i].data);
}

static void answer_pull(struct tfj_service *s, struct tfj_service_call *c)
{
	Tfj__Runtime__V1__PullResponse r = TFJ__RUNTIME__V1__PULL_RESPONSE__INIT;
	struct tfj_service_snapshot *sn = live_buf(s);

	if (!sn) {
		tfj_service_respond(s, c, GRPC_STATUS_INTERNAL, "ps: parameters not in the buffer pool", NULL);
		return;
	}
	tfj_shard_describe(&s->shard, s->smsgs, s->sptrs, sn->data);
	r.step = s->shard.step;
	r.finished = s->shard.finished;
	r.n_slices = s->shard.nslices;
	r.slices = s->sptrs;
	if (c->with_state) {
		/*
		 * A checkpoint's Pull (rare): the state has no copy-on-write
		 * pool, so the whole answer is copied into gRPC's slices while
		 * it is encoded (no lease) and nothing here is referenced later.
		 */
		r.n_state = tfj_shard_describe_state(&s->shard, s->stmsgs, s->stptrs);
		r.state = s->stptrs;
		r.optim_steps = s->shard.opt_t;
		tfj_service_respond(s, c, GRPC_STATUS_OK, NULL, &r.base);
		return;
	}
	sn->users++;
	c->snap = sn;
	tfj_service_respond(s, c, GRPC_STATUS_OK, NULL, &r.base);
}

void tfj_service_flush_parked(struct tfj_service *s, int force)
{
	struct tfj_service_call **pp = &s->parked;
	gpr_timespec now = tfj_grpc_now();

	while (*pp) {
		struct tfj_service_call *c = *pp;

		if (force || s->shard.finished || s->shard.step >= c->min_step ||
		    gpr_time_cmp(now, c->wait_until) >= 0) {
			*pp = c->next;
			if (force && !s->shard.initialized)
				tfj_service_respond(s, c, GRPC_STATUS_UNAVAILABLE, "ps: shutting down", NULL);
			else
				answer_pull(s, c);
		} else {
			pp = &c->next;
		}
	}
}

static grpc_status_code status_of(int rc)
{
	switch (rc) {
	case TFJ_EUNAVAIL: return GRPC_STATUS_UNAVAILABLE;
	case TFJ_ENUMERIC: return GRPC_STATUS_OUT_OF_RANGE;
	case TFJ_ECONFLICT: return GRPC_STATUS_FAILED_PRECONDITION;
	case TFJ_ENOMEM: case TFJ_ETOOBIG: return GRPC_STATUS_RESOURCE_EXHAUSTED;
	default: return GRPC_STATUS_INVALID_ARGUMENT;
	}
}

static int check_hash(struct tfj_service *s, struct tfj_service_call *c, uint64_t h)
{
	char msg[160];

	if (h == s->layout.layout_hash)
		return 0;
	snprintf(msg, sizeof(msg), "layout mismatch: ps %u has %016" PRIx64 ", caller %016" PRIx64
		 " (different model/optimizer/placement flags?)", s->shard.id, s->layout.layout_hash, h);
	tfj_service_respond(s, c, GRPC_STATUS_FAILED_PRECONDITION, msg, NULL);
	return -1;
}

/* Answers c with the error rc (its detail, the shard's refusal). */
static void refuse(struct tfj_service *s, struct tfj_service_call *c, int rc)
{
	char detail[TFJ_ERR_DETAIL_MAX];

	snprintf(detail, sizeof(detail), "%s", tfj_err_detail());
	tfj_service_respond(s, c, status_of(rc), detail, NULL);
}

static void serve_status(struct tfj_service *s, struct tfj_service_call *c)
{
	Tfj__Runtime__V1__StatusResponse r = TFJ__RUNTIME__V1__STATUS_RESPONSE__INIT;

	r.shard = s->shard.id;
	r.num_shards = (uint32_t)s->layout.place.nps;
	r.initialized = s->shard.initialized;
	r.finished = s->shard.finished;
	r.step = s->shard.step;
	r.layout_hash = s->layout.layout_hash;
	r.num_slices = (uint32_t)s->shard.nslices;
	/* Informational only: every ps serves the stream, and no client asks. */
	r.protocol = TFJ_FRAME_PROTOCOL;
	/* Parts are an async rule: a sync ps says no, and its clients push whole. */
	r.partial_push = !s->cfg->sync;
	/*
	 * --push-part-kib 0 on a ps declines pushes cut inside slices,
	 * so workers push to it whole (each ps is decided on its own):
	 * the ps side's switch to turn them off.
	 */
	r.piece_parts = r.partial_push && s->cfg->push_part_kib > 0;
	tfj_service_respond(s, c, GRPC_STATUS_OK, NULL, &r.base);
}

static void serve_init(struct tfj_service *s, struct tfj_service_call *c,
		       const struct tfj_wire_msg *wm)
{
	Tfj__Runtime__V1__InitRequest *q = (Tfj__Runtime__V1__InitRequest *)wm->head;
	Tfj__Runtime__V1__InitResponse r = TFJ__RUNTIME__V1__INIT_RESPONSE__INIT;
	int rc;

	if (check_hash(s, c, q->layout_hash))
		return;
	if (!s->shard.initialized || q->force) {
		rc = tfj_shard_load(&s->shard, wm->t, wm->nt, q->step, wm->st, wm->nst,
				    q->optim_steps);
		if (rc) {
			refuse(s, c, rc);
			return;
		}
		r.applied = 1;
		if (wm->nst)
			tfj_log_fmt(TFJ_LOG_INFO, "ps %u initialised at step %" PRId64
				    " with optimizer state (%s, %" PRId64 " updates)",
				    s->shard.id, s->shard.step,
				    tfj_optim_name(s->cfg->optim), s->shard.opt_t);
		else
			tfj_log_fmt(TFJ_LOG_INFO, "ps %u initialised at step %" PRId64
				    ", optimizer state fresh", s->shard.id, s->shard.step);
	}
	r.step = s->shard.step;
	tfj_service_respond(s, c, GRPC_STATUS_OK, NULL, &r.base);
	tfj_service_flush_parked(s, 0);
}

static void serve_pull(struct tfj_service *s, struct tfj_service_call *c,
		       const struct tfj_wire_msg *wm)
{
	Tfj__Runtime__V1__PullRequest *q = (Tfj__Runtime__V1__PullRequest *)wm->head;
	uint32_t wait = q->max_wait_ms > MAX_PULL_WAIT_MS ? MAX_PULL_WAIT_MS : q->max_wait_ms;

	if (check_hash(s, c, q->layout_hash))
		return;
	if (!s->shard.initialized) {
		tfj_service_respond(s, c, GRPC_STATUS_UNAVAILABLE, "ps: not initialised yet", NULL);
		return;
	}
	c->with_state = q->with_state;
	if (s->shard.finished || s->shard.step >= q->min_step || wait == 0) {
		answer_pull(s, c);
		return;
	}
	c->min_step = q->min_step;
	c->wait_until = tfj_grpc_deadline_ms(wait);
	c->next = s->parked;
	s->parked = c;
}

static void serve_push(struct tfj_service *s, struct tfj_service_call *c,
		       const struct tfj_wire_msg *wm)
{
	Tfj__Runtime__V1__PushRequest *q = (Tfj__Runtime__V1__PushRequest *)wm->head;
	Tfj__Runtime__V1__PushResponse r = TFJ__RUNTIME__V1__PUSH_RESPONSE__INIT;
	int64_t before = s->shard.step;
	int rc;

	if (check_hash(s, c, q->layout_hash))
		return;
	rc = tfj_shard_push(&s->shard, q, wm->t, wm->nt, &r.result);
	if (rc) {
		refuse(s, c, rc);
		return;
	}
	r.step = s->shard.step;
	r.finished = s->shard.finished;
	tfj_service_respond(s, c, GRPC_STATUS_OK, NULL, &r.base);
	if (s->shard.step != before)
		tfj_service_flush_parked(s, 0);
}

static void serve_finish(struct tfj_service *s, struct tfj_service_call *c,
			 const struct tfj_wire_msg *wm)
{
	Tfj__Runtime__V1__FinishRequest *q = (Tfj__Runtime__V1__FinishRequest *)wm->head;
	Tfj__Runtime__V1__FinishResponse r = TFJ__RUNTIME__V1__FINISH_RESPONSE__INIT;

	if (check_hash(s, c, q->layout_hash))
		return;
	if (!s->shard.finished) {
		s->shard.finished = 1;
		s->finish_at = tfj_grpc_now();
		tfj_log_fmt(TFJ_LOG_INFO, "ps %u: chief finished training at step %" PRId64
			    "; serving %.1fs more", s->shard.id, q->step, s->cfg->ps_linger_s);
	}
	r.step = s->shard.step;
	tfj_service_respond(s, c, GRPC_STATUS_OK, NULL, &r.base);
	tfj_service_flush_parked(s, 0);
}

void tfj_service_handle(struct tfj_service *s, int method, struct tfj_service_call *c, int rc,
		      const struct tfj_wire_msg *wm)
{
	char detail[TFJ_ERR_DETAIL_MAX];

	if (rc) {
		snprintf(detail, sizeof(detail), "%s", tfj_err_detail());
		tfj_service_respond(s, c, GRPC_STATUS_INVALID_ARGUMENT, detail, NULL);
		return;
	}
	switch (method) {
	case TFJ_RPC_STATUS: serve_status(s, c); break;
	case TFJ_RPC_INIT: serve_init(s, c, wm); break;
	case TFJ_RPC_PULL: serve_pull(s, c, wm); break;
	case TFJ_RPC_PUSH: serve_push(s, c, wm); break;
	case TFJ_RPC_FINISH: serve_finish(s, c, wm); break;
	default: tfj_service_respond(s, c, GRPC_STATUS_UNIMPLEMENTED, "unknown method", NULL);
	}
}

/* The first refusal and then every 1000th, so a flood cannot fill the log. */
void tfj_service_log_refused(struct tfj_service *s, grpc_call *call)
{
	if (s->auth.refused % 1000 == 1) {
		char *peer = grpc_call_get_peer(call);

		tfj_log_fmt(TFJ_LOG_WARN, "ps %u: refused a call without the job's secret "
			    "from %s (%" PRIu64 " refused so far)", s->shard.id,
			    peer ? peer : "?", s->auth.refused);
		gpr_free(peer);
	}
}
