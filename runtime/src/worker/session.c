/*
 * session.c - parameters and gradients to and from all ps tasks (session.h).
 */
#include "worker/session.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tfj/err.h>
#include <tfj/grpc.h>
#include <tfj/log.h>

#include <tfj/exitcode.h>
#include "task/stop.h"
#include "wire/wiresplit.h"

double tfj_session_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * The pause between retries polls gRPC rather than sleeping, so that the
 * channel's reconnection (with TLS, a handshake of several round trips)
 * goes on meanwhile (tfj_grpc_idle_ms).
 */
static void sleep_s(double s)
{
	if (s <= 0)
		return;
	tfj_grpc_idle_ms((int64_t)(s * 1000));
}

void tfj_session_free(struct tfj_session *s)
{
	size_t i;

	if (s->params)
		for (i = 0; i < s->layout.nvars; i++)
			free(s->params[i]);
	if (s->grads)
		for (i = 0; i < s->layout.nvars; i++)
			free(s->grads[i]);
	if (s->state)
		for (i = 0; i < s->layout.nvars; i++)
			free(s->state[i]);
	free(s->state);
	free(s->params);
	free(s->grads);
	free(s->shard_step);
	free(s->finish_acked);
	free(s->pullq);
	free(s->pushq);
	free(s->slice_ptrs);
	free(s->slice_msgs);
	free(s->first_slice);
	free(s->reqs);
	free(s->resps);
	tfj_pushtrack_free(&s->push);
	tfj_model_free(s->model);
	tfj_compute_free(s->comp);
	tfj_psclient_free(s->cl);
	tfj_layout_free(&s->layout);
}

int tfj_session_init(struct tfj_session *s, const struct tfj_rtconfig *cfg)
{
	size_t i, np;
	int rc;

	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	s->t0 = tfj_session_now();
	snprintf(s->task, sizeof(s->task), "%s:%d", tfj_role_name(cfg->role), cfg->index);
	rc = tfj_layout_build(&s->layout, cfg);
	if (rc)
		return rc;
	rc = tfj_compute_open(&s->comp, cfg->device, 0);
	if (rc) {
		s->exit_hint = TFJ_EXIT_DEVICE;
		return rc;
	}
	rc = tfj_model_new(&s->model, &cfg->spec, s->comp);
	if (rc)
		return rc;
	rc = tfj_psclient_new(&s->cl, cfg);
	if (rc)
		return rc;
	s->nps = cfg->nps;
	np = s->layout.place.nslices;
	s->params = calloc(s->layout.nvars, sizeof(*s->params));
	s->grads = calloc(s->layout.nvars, sizeof(*s->grads));
	s->shard_step = calloc(s->nps, sizeof(*s->shard_step));
	s->pullq = calloc(s->nps, sizeof(*s->pullq));
	s->pushq = calloc(s->nps, sizeof(*s->pushq));
	s->slice_ptrs = calloc(np, sizeof(*s->slice_ptrs));
	s->slice_msgs = calloc(np, sizeof(*s->slice_msgs));
	s->first_slice = calloc(s->nps + 1, sizeof(*s->first_slice));
	s->reqs = calloc(s->nps, sizeof(*s->reqs));
	s->resps = calloc(s->nps, sizeof(*s->resps));
	if (!s->params || !s->grads || !s->shard_step || !s->pullq || !s->pushq ||
	    !s->slice_ptrs || !s->slice_msgs || !s->first_slice || !s->reqs || !s->resps)
		return tfj_err_set(TFJ_ENOMEM, "trainer: out of memory");
	for (i = 0; i < s->layout.nvars; i++) {
		s->params[i] = calloc(s->layout.counts[i], sizeof(float));
		s->grads[i] = calloc(s->layout.counts[i], sizeof(float));
		if (!s->params[i] || !s->grads[i])
			return tfj_err_set(TFJ_ENOMEM, "trainer: out of memory");
	}
	s->state_k = tfj_optim_state_size(cfg->optim, 1);
	if (s->state_k && cfg->is_coordinator) {
		s->state = calloc(s->layout.nvars, sizeof(*s->state));
		if (!s->state)
			return tfj_err_set(TFJ_ENOMEM, "trainer: out of memory");
		/* Only the coordinator checkpoints; the pages are touched only then. */
		for (i = 0; i < s->layout.nvars; i++) {
			s->state[i] = calloc(s->layout.counts[i], s->state_k * sizeof(float));
			if (!s->state[i])
				return tfj_err_set(TFJ_ENOMEM, "trainer: out of memory");
		}
	}
	/*
	 * Group the slice messages by shard so that shard j's slices are a
	 * contiguous pointer array, in the order the ps holds them.
	 */
	{
		size_t j, k = 0;

		for (j = 0; j < s->nps; j++) {
			s->first_slice[j] = k;
			for (i = 0; i < np; i++) {
				const struct tfj_place_slice *p = &s->layout.place.slices[i];

				if (p->ps != j)
					continue;
				tfj__runtime__v1__slice__init(&s->slice_msgs[k]);
				s->slice_msgs[k].var = p->var;
				s->slice_msgs[k].offset = p->offset;
				s->slice_msgs[k].count = p->count;
				s->slice_msgs[k].data.len = p->count * sizeof(float);
				s->slice_ptrs[k] = &s->slice_msgs[k];
				k++;
			}
		}
		s->first_slice[s->nps] = k;
	}
	/* Room to follow a push over its tries; parts of --push-part-kib where async. */
	return tfj_pushtrack_init(&s->push, s->nps, s->layout.place.ps_size, s->first_slice,
				  cfg->sync ? 0 : cfg->push_part_kib * (1024 / sizeof(float)));
}

/* Points shard j's slice messages at `arrays` (params or grads). */
static void point_slices(struct tfj_session *s, size_t j, float **arrays)
{
	size_t k;

	for (k = s->first_slice[j]; k < s->first_slice[j + 1]; k++) {
		Tfj__Runtime__V1__Slice *m = &s->slice_msgs[k];

		m->data.data = (uint8_t *)(arrays[m->var] + m->offset);
	}
}

/*
 * The Init's optimizer state, one Slice per placement slice (grouped by
 * shard like slice_msgs). A slice's state is state_k blocks of its count,
 * which in the per-variable layout lie apart, so it is gathered into one
 * buffer per slice (Init is rare; the copy is cheap next to the send).
 */
struct init_state {
	Tfj__Runtime__V1__Slice *msgs;
	Tfj__Runtime__V1__Slice **ptrs;
	float *buf;
};

static void init_state_free(struct init_state *is)
{
	free(is->msgs);
	free(is->ptrs);
	free(is->buf);
	memset(is, 0, sizeof(*is));
}

static int init_state_build(struct init_state *is, const struct tfj_session *s)
{
	size_t np = s->first_slice[s->nps], i, b, total = 0, off = 0;

	for (i = 0; i < np; i++)
		total += s->slice_msgs[i].count;
	is->msgs = calloc(np, sizeof(*is->msgs));
	is->ptrs = calloc(np, sizeof(*is->ptrs));
	is->buf = malloc(total * s->state_k * sizeof(float));
	if (!is->msgs || !is->ptrs || !is->buf) {
		init_state_free(is);
		return tfj_err_set(TFJ_ENOMEM, "trainer: out of memory");
	}
	for (i = 0; i < np; i++) {
		const Tfj__Runtime__V1__Slice *e = &s->slice_msgs[i];
		size_t cnt = (size_t)e->count, vc = s->layout.counts[e->var];

		for (b = 0; b < s->state_k; b++)
			memcpy(is->buf + off + b * cnt, s->init_state[e->var] + b * vc + e->offset,
			       cnt * sizeof(float));
		tfj__runtime__v1__slice__init(&is->msgs[i]);
		is->msgs[i].var = e->var;
		is->msgs[i].offset = e->offset;
		is->msgs[i].count = e->count;
		is->msgs[i].data.data = (uint8_t *)(is->buf + off);
		is->msgs[i].data.len = s->state_k * cnt * sizeof(float);
		is->ptrs[i] = &is->msgs[i];
		off += s->state_k * cnt;
	}
	return 0;
}

/* Status of every shard; initialises empty shards when we coordinate. */
int tfj_session_ensure_ready(struct tfj_session *s, const float *const *init_vals,
			     int64_t init_step)
{
	Tfj__Runtime__V1__StatusRequest *sq;
	Tfj__Runtime__V1__InitRequest *iq;
	struct init_state is = { 0 };
	size_t j, need = 0;
	int rc;

	sq = calloc(s->nps, sizeof(*sq));
	iq = calloc(s->nps, sizeof(*iq));
	if (!sq || !iq) {
		rc = tfj_err_set(TFJ_ENOMEM, "trainer: out of memory");
		goto out;
	}
	for (j = 0; j < s->nps; j++) {
		tfj__runtime__v1__status_request__init(&sq[j]);
		sq[j].task = s->task;
		s->reqs[j] = &sq[j].base;
	}
	rc = tfj_psclient_call(s->cl, TFJ_RPC_STATUS, s->reqs, s->resps, s->cfg->rpc_timeout_s);
	if (rc)
		goto out;
	/* Pushes in parts only when every ps takes them (an older ps says nothing). */
	s->parts_ok = 1;
	for (j = 0; j < s->nps; j++)
		if (!((Tfj__Runtime__V1__StatusResponse *)s->resps[j])->partial_push)
			s->parts_ok = 0;
	for (j = 0; j < s->nps; j++) {
		Tfj__Runtime__V1__StatusResponse *r = (Tfj__Runtime__V1__StatusResponse *)s->resps[j];

		if (r->layout_hash != s->layout.layout_hash || r->shard != j ||
		    r->num_shards != s->nps) {
			rc = tfj_err_set(TFJ_ECONFLICT, "ps %zu disagrees on the layout (shard %u of %u, "
					 "hash %016" PRIx64 " vs ours %016" PRIx64 "): every task "
					 "needs the same training flags", j, r->shard, r->num_shards,
					 r->layout_hash, s->layout.layout_hash);
			goto out;
		}
		s->reqs[j] = NULL;
		if (r->initialized)
			continue;
		if (!init_vals) {
			rc = tfj_err_set(TFJ_EUNAVAIL, "ps %zu is waiting for the chief's Init", j);
			goto out;
		}
		tfj__runtime__v1__init_request__init(&iq[j]);
		iq[j].layout_hash = s->layout.layout_hash;
		iq[j].step = init_step;
		point_slices(s, j, (float **)init_vals);
		iq[j].n_slices = s->first_slice[j + 1] - s->first_slice[j];
		iq[j].slices = &s->slice_ptrs[s->first_slice[j]];
		if (s->init_state && s->state_k) {
			if (!is.msgs && (rc = init_state_build(&is, s)) != 0)
				goto out;
			iq[j].n_state = iq[j].n_slices;
			iq[j].state = &is.ptrs[s->first_slice[j]];
			iq[j].optim_steps = s->init_optim_steps;
		}
		s->reqs[j] = &iq[j].base;
		need++;
	}
	if (need) {
		rc = tfj_psclient_call(s->cl, TFJ_RPC_INIT, s->reqs, s->resps, s->cfg->rpc_timeout_s);
		if (rc == 0)
			tfj_log_fmt(TFJ_LOG_INFO, "%s initialised %zu ps task(s) at step %" PRId64
				    "%s", s->task, need, init_step,
				    is.msgs ? " with optimizer state" : "");
	}
out:
	init_state_free(&is);
	free(sq);
	free(iq);
	return rc;
}

/*
 * Pulls every shard into s->params. min_step[j] < 0 means "now". Checks
 * that each answer holds exactly the slices the placement says.
 */
/*
 * Checks shard j's state answer: none at all (a ps that keeps none or does
 * not know the field) -> 0, else one matching Slice per slice -> 1.
 */
static int state_fits(const struct tfj_session *s, size_t j, const struct tfj_wire_msg *tm)
{
	size_t want = s->first_slice[j + 1] - s->first_slice[j], k;

	if (tm->nst == 0 || !s->state)
		return 0;
	if (tm->nst != want)
		return tfj_err_set(TFJ_ECONFLICT, "ps %zu sent %zu state slices, want %zu", j,
				   tm->nst, want);
	for (k = 0; k < want; k++) {
		const struct tfj_wire_tensor *a = &tm->st[k];
		const Tfj__Runtime__V1__Slice *e = &s->slice_msgs[s->first_slice[j] + k];

		if (a->var != e->var || a->offset != e->offset || a->count != e->count ||
		    a->data.len != s->state_k * e->count * sizeof(float))
			return tfj_err_set(TFJ_ECONFLICT, "ps %zu sent optimizer state that does "
					   "not match the placement", j);
	}
	return 1;
}

/* Copies shard j's state slices into the per-variable blocks of s->state. */
static void take_state(struct tfj_session *s, size_t j, const struct tfj_wire_msg *tm)
{
	size_t want = s->first_slice[j + 1] - s->first_slice[j], k, b;

	for (k = 0; k < want; k++) {
		const Tfj__Runtime__V1__Slice *e = &s->slice_msgs[s->first_slice[j] + k];
		struct tfj_wire_bytes d = tm->st[k].data;
		size_t vc = s->layout.counts[e->var];

		for (b = 0; b < s->state_k; b++)
			tfj_wire_bytes_take(&d, s->state[e->var] + b * vc + e->offset,
					    (size_t)e->count * sizeof(float));
	}
}

static int pull(struct tfj_session *s, const int64_t *min_step, uint32_t wait_ms,
		int with_state)
{
	size_t j, k;
	int rc, all_state = 1;

	for (j = 0; j < s->nps; j++) {
		tfj__runtime__v1__pull_request__init(&s->pullq[j]);
		s->pullq[j].layout_hash = s->layout.layout_hash;
		s->pullq[j].min_step = min_step ? min_step[j] : 0;
		s->pullq[j].max_wait_ms = min_step ? wait_ms : 0;
		s->pullq[j].task = s->task;
		s->pullq[j].with_state = with_state;
		s->reqs[j] = &s->pullq[j].base;
	}
	rc = tfj_psclient_call(s->cl, TFJ_RPC_PULL, s->reqs, s->resps,
			       s->cfg->rpc_timeout_s + wait_ms / 1000.0);
	if (rc)
		return rc;
	for (j = 0; j < s->nps; j++) {
		Tfj__Runtime__V1__PullResponse *r = (Tfj__Runtime__V1__PullResponse *)s->resps[j];
		const struct tfj_wire_msg *tm = tfj_psclient_tensors(s->cl, j);
		size_t want = s->first_slice[j + 1] - s->first_slice[j];

		if (tm->nt != want)
			return tfj_err_set(TFJ_ECONFLICT, "ps %zu sent %zu slices, want %zu", j,
					   tm->nt, want);
		/* Check every slice before copying any, so a bad answer changes nothing. */
		for (k = 0; k < want; k++) {
			const struct tfj_wire_tensor *a = &tm->t[k];
			const Tfj__Runtime__V1__Slice *e = &s->slice_msgs[s->first_slice[j] + k];

			if (a->var != e->var || a->offset != e->offset || a->count != e->count ||
			    a->data.len != e->count * sizeof(float))
				return tfj_err_set(TFJ_ECONFLICT, "ps %zu sent a slice that does not "
						   "match the placement", j);
		}
		if (with_state) {
			int st = state_fits(s, j, tm);

			if (st < 0)
				return st;
			if (!st)
				all_state = 0;
		}
		/* The one copy of the tensor: from gRPC's slices into the parameters. */
		for (k = 0; k < want; k++) {
			const Tfj__Runtime__V1__Slice *e = &s->slice_msgs[s->first_slice[j] + k];

			tfj_wire_bytes_copy(s->params[e->var] + e->offset, &tm->t[k].data);
		}
		s->shard_step[j] = r->step;
		if (r->finished)
			s->finished = 1;
	}
	s->gstep = s->shard_step[0];
	if (!with_state)
		return 0;
	s->have_state = all_state && s->state != NULL;
	if (!s->have_state)
		return 0;
	for (j = 0; j < s->nps; j++)
		take_state(s, j, tfj_psclient_tensors(s->cl, j));
	s->optim_steps = ((Tfj__Runtime__V1__PullResponse *)s->resps[0])->optim_steps;
	return 0;
}

int tfj_session_pull(struct tfj_session *s, const int64_t *min_step, uint32_t wait_ms)
{
	return pull(s, min_step, wait_ms, 0);
}

int tfj_session_pull_state(struct tfj_session *s)
{
	s->have_state = 0;
	return pull(s, NULL, 0, 1);
}

/* Pushes s->grads to every shard, each tagged with the step it was pulled at. */
/*
 * Shard j's slices of the variables [lo, hi): the run [*a, *b) of its
 * slice list (ordered by variable); 1 when slices of variables below lo
 * remain, i.e. this is not the shard's last part of the step.
 */
static int shard_run(const struct tfj_session *s, size_t j, size_t lo, size_t hi, size_t *a,
		     size_t *b)
{
	size_t k = s->first_slice[j], end = s->first_slice[j + 1];

	while (k < end && s->slice_msgs[k].var < lo)
		k++;
	*a = k;
	while (k < end && s->slice_msgs[k].var < hi)
		k++;
	*b = k;
	return *a > s->first_slice[j];
}

int tfj_session_push_vars(struct tfj_session *s, size_t lo, size_t hi, int64_t max_steps,
			  int *stale)
{
	size_t j, a, b, sent = 0;
	int rc, whole = lo == 0 && hi >= s->layout.nvars;

	if (!whole && !s->parts_ok)
		return tfj_err_set(TFJ_EINVAL, "push: a ps does not take pushes in parts");
	if (!s->push_retry)
		tfj_pushtrack_begin(&s->push);
	*stale = 0;
	for (j = 0; j < s->nps; j++) {
		int more = shard_run(s, j, lo, hi, &a, &b);

		s->reqs[j] = NULL;
		/*
		 * A shard that answered an earlier try took this gradient: a
		 * retry after another shard failed must not apply it twice.
		 */
		if ((a == b && !whole) || tfj_pushtrack_done(&s->push, j))
			continue;
		tfj__runtime__v1__push_request__init(&s->pushq[j]);
		s->pushq[j].layout_hash = s->layout.layout_hash;
		s->pushq[j].step = s->shard_step[j];
		s->pushq[j].replica = (uint32_t)s->cfg->replica;
		s->pushq[j].max_steps = max_steps;
		s->pushq[j].more = more;
		point_slices(s, j, s->grads);
		s->pushq[j].n_slices = b - a;
		s->pushq[j].slices = &s->slice_ptrs[a];
		s->reqs[j] = &s->pushq[j].base;
		sent++;
	}
	rc = sent ? tfj_pushtrack_send(&s->push, s->cl, s->reqs, s->resps, s->cfg->rpc_timeout_s)
		  : 0;
	if (s->push.finished)
		s->finished = 1;
	if (rc)
		return rc;
	*stale = s->push.stale;
	return 0;
}

int tfj_session_push(struct tfj_session *s, int64_t max_steps, int *stale)
{
	return tfj_session_push_vars(s, 0, s->layout.nvars, max_steps, stale);
}

int tfj_session_finish(struct tfj_session *s)
{
	Tfj__Runtime__V1__FinishRequest *fq = calloc(s->nps, sizeof(*fq));
	size_t j;
	int rc;

	if (!fq)
		return tfj_err_set(TFJ_ENOMEM, "trainer: out of memory");
	if (!s->finish_acked) {
		s->finish_acked = calloc(s->nps, 1);
		if (!s->finish_acked) {
			free(fq);
			return tfj_err_set(TFJ_ENOMEM, "trainer: out of memory");
		}
	}
	/*
	 * A ps that acknowledged an earlier try is not asked again: it exits
	 * --ps-linger seconds later, and asking a gone ps would keep failing
	 * until --peer-timeout although training is done.
	 */
	for (j = 0; j < s->nps; j++) {
		tfj__runtime__v1__finish_request__init(&fq[j]);
		fq[j].layout_hash = s->layout.layout_hash;
		fq[j].step = s->gstep;
		s->reqs[j] = s->finish_acked[j] ? NULL : &fq[j].base;
	}
	rc = tfj_psclient_call(s->cl, TFJ_RPC_FINISH, s->reqs, s->resps, s->cfg->rpc_timeout_s);
	for (j = 0; j < s->nps; j++)
		if (s->resps[j])
			s->finish_acked[j] = 1;
	free(fq);
	return rc;
}


/*
 * Decides what to do after rc: 0 = go on, 1 = try again (after sleeping),
 * or the error to give up with. Only TFJ_EUNAVAIL is worth retrying.
 */
int tfj_session_retry(struct tfj_session *s, struct tfj_retry *r, int rc, const char *what)
{
	double now = tfj_session_now();

	if (rc == 0) {
		r->first_fail = 0;
		r->delay = 0;
		return 0;
	}
	if (rc != TFJ_EUNAVAIL || tfj_stop_requested())
		return tfj_stop_requested() ? TFJ_ECANCELED : rc;
	if (r->first_fail == 0) {
		r->first_fail = now;
		tfj_log_warn("peer not ready, retrying", "task", s->task, "during", what, "detail",
			     tfj_err_detail());
	}
	if (now - r->first_fail > s->cfg->peer_timeout_s)
		return tfj_err_set(TFJ_EUNAVAIL, "gave up after %.0fs (--peer-timeout) %s: %s",
				   now - r->first_fail, what, tfj_err_detail());
	r->delay = r->delay == 0 ? 0.1 : r->delay * 2;
	if (r->delay > 2.0)
		r->delay = 2.0;
	sleep_s(r->delay);
	return 1;
}

/* Pull with retries; ensure_ready again when a ps lost its state. */
int tfj_session_pull_retry(struct tfj_session *s, const int64_t *min_step, uint32_t wait_ms,
		      const float *const *reinit, int64_t reinit_step)
{
	struct tfj_retry r = { 0, 0 };
	int rc, d;

	for (;;) {
		rc = tfj_session_pull(s, min_step, wait_ms);
		d = tfj_session_retry(s, &r, rc, "pulling parameters");
		if (d == 0)
			return 0;
		if (d != 1)
			return d;
		/* A ps restarted without a checkpoint: the coordinator refills it. */
		if (reinit)
			(void)tfj_session_ensure_ready(s, reinit, reinit_step);
	}
}

int tfj_session_push_retry(struct tfj_session *s, int64_t max_steps, int *stale,
			   const float *const *reinit, int64_t reinit_step)
{
	return tfj_session_push_vars_retry(s, 0, s->layout.nvars, max_steps, stale, reinit,
					   reinit_step);
}

int tfj_session_push_vars_retry(struct tfj_session *s, size_t lo, size_t hi, int64_t max_steps,
				int *stale, const float *const *reinit, int64_t reinit_step)
{
	struct tfj_retry r = { 0, 0 };
	int rc, d;

	/* Tries after the first skip what an earlier one got applied (pushtrack.h). */
	s->push_retry = 0;
	for (;;) {
		rc = tfj_session_push_vars(s, lo, hi, max_steps, stale);
		d = tfj_session_retry(s, &r, rc, "pushing gradients");
		if (d != 1)
			break;
		s->push_retry = 1;
		if (reinit)
			(void)tfj_session_ensure_ready(s, reinit, reinit_step);
	}
	s->push_retry = 0;
	return d;
}
