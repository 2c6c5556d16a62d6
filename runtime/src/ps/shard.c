/*
 * shard.c - one parameter server's variables and update rule (shard.h).
 */
#include "ps/shard.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

int tfj_shard_init(struct tfj_shard *s, const struct tfj_layout *layout,
		   const struct tfj_rtconfig *cfg, uint32_t id)
{
	size_t i, k = 0, st = 0;
	int rc = 0;

	memset(s, 0, sizeof(*s));
	s->id = id;
	s->layout = layout;
	s->cfg = cfg;
	if (id >= layout->place.nps)
		return tfj_err_set(TFJ_EINVAL, "shard %u of %zu", id, layout->place.nps);
	for (i = 0; i < layout->place.nslices; i++)
		if (layout->place.slices[i].ps == id)
			s->nslices++;
	s->n = layout->place.ps_size[id];
	if (s->nslices == 0 || s->n == 0)
		return tfj_err_set(TFJ_EINVAL, "ps %u holds no variables: more ps tasks than the "
				   "model can use", id);
	s->slices = calloc(s->nslices, sizeof(*s->slices));
	s->state_off = calloc(s->nslices + 1, sizeof(*s->state_off));
	s->param = calloc(s->n, sizeof(float));
	s->grad = calloc(s->n, sizeof(float));
	if (!s->slices || !s->state_off || !s->param || !s->grad) {
		rc = tfj_err_set(TFJ_ENOMEM, "shard: out of memory");
		goto out;
	}
	for (i = 0; i < layout->place.nslices; i++) {
		if (layout->place.slices[i].ps != id)
			continue;
		s->slices[k] = &layout->place.slices[i];
		s->state_off[k] = st;
		st += tfj_optim_state_size(cfg->optim, layout->place.slices[i].count);
		k++;
	}
	s->state_off[k] = st;
	if (st) {
		s->state = calloc(st, sizeof(float));
		if (!s->state) {
			rc = tfj_err_set(TFJ_ENOMEM, "shard: out of memory");
			goto out;
		}
	}
	if (cfg->sync)
		rc = tfj_syncagg_init(&s->agg, s->n, (uint32_t)cfg->replicas_to_aggregate,
				      (uint32_t)cfg->nreplicas, 0);
out:
	if (rc)
		tfj_shard_free(s);
	return rc;
}

void tfj_shard_free(struct tfj_shard *s)
{
	if (!s)
		return;
	free(s->slices);
	free(s->state_off);
	free(s->param);
	free(s->grad);
	free(s->state);
	tfj_syncagg_free(&s->agg);
	memset(s, 0, sizeof(*s));
}

int tfj_shard_check_slices(const struct tfj_shard *s, const struct tfj_wire_tensor *t,
			   size_t n)
{
	size_t i;

	if (n != s->nslices)
		return tfj_err_set(TFJ_EINVAL, "ps %u: %zu slices sent, it holds %zu", s->id, n,
				   s->nslices);
	for (i = 0; i < n; i++) {
		const struct tfj_place_slice *p = s->slices[i];

		if (t[i].var != p->var || t[i].offset != p->offset || t[i].count != p->count)
			return tfj_err_set(TFJ_EINVAL, "ps %u: slice %zu does not match the "
					   "placement", s->id, i);
		if (t[i].data.len != p->count * sizeof(float))
			return tfj_err_set(TFJ_EINVAL, "ps %u: slice %zu carries %zu bytes, want %zu",
					   s->id, i, t[i].data.len, p->count * sizeof(float));
	}
	return 0;
}

/*
 * Where a part starts: slice k of the table, element o inside it. A part
 * is a run of the shard's buffer (the slices laid end to end in table
 * order), so a position advances from the end of one slice to the start of
 * the next.
 */
struct pos {
	size_t k, o;
};

/*
 * Checks that t[0..n) is one contiguous run of the shard's buffer: every
 * tensor lies inside one table slice (same var, an offset and count inside
 * it, count * 4 bytes) and starts where the one before ended. *at is where
 * the run starts: the slice that holds t[0] (binary search; the table is
 * ordered by var, offset). A whole slice list is the run from (0, 0) with
 * every tensor a whole slice.
 */
static int check_part(struct pos *at, const struct tfj_shard *s, const struct tfj_wire_tensor *t,
		      size_t n)
{
	size_t lo = 0, hi = s->nslices, i;
	struct pos c;

	if (n == 0)
		return tfj_err_set(TFJ_EINVAL, "ps %u: a push part without slices", s->id);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct tfj_place_slice *p = s->slices[mid];

		if (p->var < t[0].var || (p->var == t[0].var && p->offset <= t[0].offset))
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo - 1 is the last slice that starts at or before t[0]. */
	if (lo == 0 || s->slices[lo - 1]->var != t[0].var ||
	    t[0].offset - s->slices[lo - 1]->offset >= s->slices[lo - 1]->count)
		return tfj_err_set(TFJ_EINVAL, "ps %u: it holds no element %llu of variable %u",
				   s->id, (unsigned long long)t[0].offset, t[0].var);
	c.k = lo - 1;
	c.o = (size_t)(t[0].offset - s->slices[c.k]->offset);
	*at = c;
	for (i = 0; i < n; i++) {
		const struct tfj_place_slice *p = c.k < s->nslices ? s->slices[c.k] : NULL;

		if (!p || t[i].var != p->var || t[i].offset != p->offset + c.o)
			return tfj_err_set(TFJ_EINVAL, "ps %u: slice %zu of the push (variable %u "
					   "from %llu) does not continue the run%s", s->id, i,
					   t[i].var, (unsigned long long)t[i].offset,
					   p ? "" : ": it ran past the shard's last slice");
		if (t[i].count == 0 || t[i].count > p->count - c.o)
			return tfj_err_set(TFJ_EINVAL, "ps %u: slice %zu of the push (variable %u "
					   "from %llu) has %llu elements, %zu fit", s->id, i,
					   t[i].var, (unsigned long long)t[i].offset,
					   (unsigned long long)t[i].count, p->count - c.o);
		if (t[i].data.len != t[i].count * sizeof(float))
			return tfj_err_set(TFJ_EINVAL, "ps %u: slice %zu of the push carries %zu "
					   "bytes, want %llu", s->id, i, t[i].data.len,
					   (unsigned long long)t[i].count * sizeof(float));
		c.o += (size_t)t[i].count;
		if (c.o == p->count) {
			c.k++;
			c.o = 0;
		}
	}
	return 0;
}

/* Copies a whole slice list's tensors into the gradient scratch, in shard order (checked first). */
static void gather(struct tfj_shard *s, const struct tfj_wire_tensor *t, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		tfj_wire_bytes_copy(s->grad + s->slices[i]->shard_off, &t[i].data);
}

/*
 * 1 when every gradient of the push is finite, read in place from the
 * received slices (branch-free and vectorised, optim.c).
 */
static int tensors_finite(const struct tfj_wire_tensor *t, size_t n)
{
	size_t i, k;

	for (i = 0; i < n; i++) {
		struct tfj_wire_bytes b = t[i].data;
		const void *p;
		float tmp;

		while ((k = tfj_wire_bytes_floats(&b, &p, &tmp, TFJ_SHARD_CHUNK)) > 0)
			if (!tfj_optim_finite(p, k))
				return 0;
	}
	return 1;
}

static int prewrite(struct tfj_shard *s)
{
	return s->prewrite ? s->prewrite(s, s->prewrite_ud) : 0;
}

static void reset_optimizer(struct tfj_shard *s, int64_t step)
{
	if (s->state)
		memset(s->state, 0, s->state_off[s->nslices] * sizeof(float));
	s->opt_t = 0;
	s->step = step;
	if (s->cfg->sync)
		tfj_syncagg_reset(&s->agg, step);
}

size_t tfj_shard_state_k(const struct tfj_shard *s)
{
	return tfj_optim_state_size(s->cfg->optim, 1);
}

/* 1 when none of n floats at v (any alignment) is negative; -0.0 is fine. */
static int nonneg_n(const void *v, size_t n)
{
	const unsigned char *b = v;
	uint32_t bad = 0, u;
	size_t i;

	for (i = 0; i < n; i++) {
		memcpy(&u, b + i * sizeof(u), sizeof(u));
		bad |= (u >> 31) & ((u & 0x7fffffffu) != 0);
	}
	return !bad;
}

/*
 * Checks state tensors against the slice table and their values (finite;
 * Adam's second moment, the second block, not negative: its square root
 * is taken), reading them in place from the received slices.
 */
static int check_state(struct tfj_shard *s, const struct tfj_wire_tensor *st, size_t nst)
{
	size_t k = tfj_shard_state_k(s), i, b;

	if (k == 0)
		return tfj_err_set(TFJ_EINVAL, "ps %u: optimizer state sent for %s, which has none",
				   s->id, tfj_optim_name(s->cfg->optim));
	if (nst != s->nslices)
		return tfj_err_set(TFJ_EINVAL, "ps %u: %zu state slices sent, it holds %zu", s->id,
				   nst, s->nslices);
	for (i = 0; i < nst; i++) {
		const struct tfj_place_slice *p = s->slices[i];
		struct tfj_wire_bytes d = st[i].data;

		if (st[i].var != p->var || st[i].offset != p->offset || st[i].count != p->count)
			return tfj_err_set(TFJ_EINVAL, "ps %u: state slice %zu does not match the "
					   "placement", s->id, i);
		if (d.len != k * p->count * sizeof(float))
			return tfj_err_set(TFJ_EINVAL, "ps %u: state slice %zu carries %zu bytes, "
					   "want %zu", s->id, i, d.len, k * p->count * sizeof(float));
		for (b = 0; b < k; b++) {
			size_t left = p->count, c;
			const void *v;
			float tmp;

			/* Block b ends exactly at a float boundary: c never runs past it. */
			while (left && (c = tfj_wire_bytes_floats(&d, &v, &tmp, left)) > 0) {
				if (!tfj_optim_finite(v, c))
					return tfj_err_set(TFJ_ENUMERIC, "ps %u: optimizer state not "
							   "finite", s->id);
				if (s->cfg->optim == TFJ_OPTIM_ADAM && b == 1 && !nonneg_n(v, c))
					return tfj_err_set(TFJ_ENUMERIC, "ps %u: negative Adam second "
							   "moment", s->id);
				left -= c;
			}
		}
	}
	return 0;
}

int tfj_shard_load(struct tfj_shard *s, const struct tfj_wire_tensor *t, size_t n,
		   int64_t step, const struct tfj_wire_tensor *st, size_t nst,
		   int64_t optim_steps)
{
	size_t i;
	int rc;

	if (step < 0 || optim_steps < 0)
		return tfj_err_set(TFJ_EINVAL, "ps %u: negative step", s->id);
	rc = tfj_shard_check_slices(s, t, n);
	if (rc)
		return rc;
	if (nst && (rc = check_state(s, st, nst)) != 0)
		return rc;
	/* Through the scratch buffer, so a bad value leaves the parameters as they were. */
	gather(s, t, n);
	/* The slices lie end to end in the buffer: its n floats are all of them. */
	if (!tfj_optim_finite(s->grad, s->n))
		return tfj_err_set(TFJ_ENUMERIC, "ps %u: initial value not finite", s->id);
	rc = prewrite(s);
	if (rc)
		return rc;
	memcpy(s->param, s->grad, s->n * sizeof(float));
	reset_optimizer(s, step);
	/* Checked above: the state goes straight from the slices into place. */
	for (i = 0; i < nst; i++)
		tfj_wire_bytes_copy(s->state + s->state_off[i], &st[i].data);
	if (nst)
		s->opt_t = optim_steps;
	s->initialized = 1;
	s->finished = 0;
	s->version++;
	return 0;
}

/* 1 when ck holds this optimizer's state for every variable of the shard. */
static int ckpt_has_state(const struct tfj_shard *s, const struct tfj_ckpt *ck)
{
	size_t k = tfj_shard_state_k(s), i;

	if (k == 0 || ck->optim_kind != (uint32_t)s->cfg->optim)
		return 0;
	for (i = 0; i < s->nslices; i++) {
		const struct tfj_place_slice *p = s->slices[i];
		int vi = tfj_ckpt_find(ck, s->layout->vars[p->var].name);

		if (vi < 0 || ck->vars[vi].count != s->layout->vars[p->var].count ||
		    ck->vars[vi].count > SIZE_MAX / k ||
		    ck->vars[vi].state_count != k * ck->vars[vi].count || !ck->vars[vi].state)
			return 0;
		/* Adam's second moment feeds a square root: a negative one is no state. */
		if (s->cfg->optim == TFJ_OPTIM_ADAM &&
		    !nonneg_n(ck->vars[vi].state + ck->vars[vi].count + p->offset, p->count))
			return 0;
	}
	return 1;
}

int tfj_shard_restore(int *with_state, struct tfj_shard *s, const struct tfj_ckpt *ck)
{
	size_t i, b, k = tfj_shard_state_k(s);
	int rc, use_state;

	*with_state = 0;
	for (i = 0; i < s->nslices; i++) {
		const struct tfj_place_slice *p = s->slices[i];
		int vi = tfj_ckpt_find(ck, s->layout->vars[p->var].name);

		if (vi < 0)
			return tfj_err_set(TFJ_EPARSE, "checkpoint lacks variable %s",
					   s->layout->vars[p->var].name);
		if (ck->vars[vi].count != s->layout->vars[p->var].count)
			return tfj_err_set(TFJ_EPARSE, "checkpoint variable %s has %zu elements, "
					   "model %zu", s->layout->vars[p->var].name,
					   ck->vars[vi].count, s->layout->vars[p->var].count);
	}
	use_state = ckpt_has_state(s, ck);
	rc = prewrite(s);
	if (rc)
		return rc;
	reset_optimizer(s, ck->global_step);
	for (i = 0; i < s->nslices; i++) {
		const struct tfj_place_slice *p = s->slices[i];
		const struct tfj_ckpt_var *v = &ck->vars[tfj_ckpt_find(ck, s->layout->vars[p->var].name)];

		memcpy(s->param + p->shard_off, v->value + p->offset, p->count * sizeof(float));
		/* Block b of the slice's state is block b of the variable's, cut the same way. */
		for (b = 0; use_state && b < k; b++)
			memcpy(s->state + s->state_off[i] + b * p->count,
			       v->state + b * v->count + p->offset, p->count * sizeof(float));
	}
	if (use_state)
		s->opt_t = ck->optim_steps;
	*with_state = use_state;
	s->initialized = 1;
	s->finished = 0;
	s->version++;
	return 0;
}

/* The learning rate of this update under --lr-schedule. */
static void rate_for(const struct tfj_shard *s, struct tfj_optim_hparams *hp, int64_t max_steps)
{
	*hp = s->cfg->hp;
	if (s->cfg->lr_cosine && max_steps > 0) {
		double f = (double)(s->step < max_steps ? s->step : max_steps) / (double)max_steps;
		float scale = (float)(0.5 * (1.0 + cos(3.14159265358979323846 * f)));

		/* optim.h wants lr > 0: the last steps keep a sliver of the rate. */
		hp->lr *= scale > 1e-3f ? scale : 1e-3f;
	}
}

/*
 * Counts one applied update; a part with more to come (`more`) changes
 * the parameters but leaves the step and the optimizer's count to the
 * step's last part, so every part of a step sees the same rate and t.
 */
static void updated(struct tfj_shard *s, int more)
{
	s->version++;
	if (more) {
		s->parts++;
		return;
	}
	s->opt_t++;
	s->step++;
	s->applied++;
}

/*
 * What every update does before it touches anything: the rate for this
 * step, validated, and the gradient's finiteness (checked by the caller,
 * `finite`), so a refused update changes nothing; then the prewrite hook.
 */
static int begin_update(struct tfj_shard *s, struct tfj_optim_hparams *hp, int64_t max_steps,
			int finite)
{
	int rc;

	rate_for(s, hp, max_steps);
	rc = tfj_optim_validate(s->cfg->optim, hp);
	if (rc)
		return rc;
	if (!finite)
		return tfj_err_set(TFJ_ENUMERIC, "ps %u: gradient holds NaN/Inf", s->id);
	return prewrite(s);
}

/* One update of every slice from grad, laid out like param (sync: the replicas' mean). */
static int apply(struct tfj_shard *s, const float *grad, int64_t max_steps)
{
	struct tfj_optim_hparams hp;
	size_t i;
	int rc;

	rc = begin_update(s, &hp, max_steps, tfj_optim_finite(grad, s->n));
	if (rc)
		return rc;
	for (i = 0; i < s->nslices; i++) {
		const struct tfj_place_slice *p = s->slices[i];

		float *m = s->state ? s->state + s->state_off[i] : NULL;

		tfj_optim_update(s->cfg->optim, &hp, s->param + p->shard_off, grad + p->shard_off,
				 m, m && s->cfg->optim == TFJ_OPTIM_ADAM ? m + p->count : NULL,
				 p->count, s->opt_t);
	}
	updated(s, 0);
	return 0;
}

/*
 * Applies a push or a part of one (the run of the buffer that starts at
 * `at`, checked by check_part) in place from the received slices (gRPC's
 * receive buffers; no copy of the gradient), after a first pass refused
 * NaN/Inf: two reads of the gradient in all. Every optimizer updates
 * element by element, so each run of floats is a complete update of its
 * elements; a slice's state is its blocks of count floats (momentum's
 * velocity; Adam's m, then v), addressed at the run's offset in each.
 */
static int apply_tensors(struct tfj_shard *s, const struct tfj_wire_tensor *t, size_t n,
			 struct pos at, int64_t max_steps, int more)
{
	struct tfj_optim_hparams hp;
	size_t i, k;
	int rc;

	rc = begin_update(s, &hp, max_steps, tensors_finite(t, n));
	if (rc)
		return rc;
	for (i = 0; i < n; i++) {
		const struct tfj_place_slice *p = s->slices[at.k];
		float *m = s->state ? s->state + s->state_off[at.k] : NULL;
		/* Adam's second block; momentum keeps one block only. */
		float *v = m && s->cfg->optim == TFJ_OPTIM_ADAM ? m + p->count : NULL;
		struct tfj_wire_bytes b = t[i].data;
		const void *g;
		float tmp;

		while ((k = tfj_wire_bytes_floats(&b, &g, &tmp, TFJ_SHARD_CHUNK)) > 0) {
			tfj_optim_update(s->cfg->optim, &hp, s->param + p->shard_off + at.o, g,
					 m ? m + at.o : NULL, v ? v + at.o : NULL, k,
					 s->opt_t);
			at.o += k;
		}
		if (at.o == p->count) {
			at.k++;
			at.o = 0;
		}
	}
	updated(s, more);
	return 0;
}

/*
 * An async push: the whole slice list, or a part of a step's push
 * (PushRequest.more, or any run of the buffer that is not the whole slice
 * list, down to a piece of one slice). The last part of a step (more
 * false) counts the step, whichever run it carries.
 */
static int push_async(struct tfj_shard *s, const Tfj__Runtime__V1__PushRequest *req,
		      const struct tfj_wire_tensor *t, size_t n,
		      Tfj__Runtime__V1__PushResult *result)
{
	struct pos at = { 0, 0 };
	int rc;

	rc = check_part(&at, s, t, n);
	if (rc)
		return rc;
	rc = apply_tensors(s, t, n, at, req->max_steps, req->more);
	if (rc)
		return rc;
	*result = TFJ__RUNTIME__V1__PUSH_RESULT__PUSH_APPLIED;
	return 0;
}

int tfj_shard_push(struct tfj_shard *s, const Tfj__Runtime__V1__PushRequest *req,
		   const struct tfj_wire_tensor *t, size_t n,
		   Tfj__Runtime__V1__PushResult *result)
{
	size_t i;
	int rc;

	if (!s->initialized)
		return tfj_err_set(TFJ_EUNAVAIL, "ps %u: not initialised", s->id);
	if (s->finished) {
		*result = TFJ__RUNTIME__V1__PUSH_RESULT__PUSH_FINISHED;
		return 0;
	}
	if (req->replica >= (uint32_t)s->cfg->nreplicas)
		return tfj_err_set(TFJ_EINVAL, "ps %u: replica %u of %d", s->id, req->replica,
				   s->cfg->nreplicas);
	if (!s->cfg->sync)
		return push_async(s, req, t, n, result);
	/* The aggregator takes one whole gradient per replica and step. */
	if (req->more || n != s->nslices)
		return tfj_err_set(TFJ_EINVAL, "ps %u: a push in parts (%zu of %zu slices%s) in "
				   "sync training; sync pushes carry every slice", s->id, n,
				   s->nslices, req->more ? ", more to come" : "");
	rc = tfj_shard_check_slices(s, t, n);
	if (rc)
		return rc;
	switch (tfj_syncagg_check(&s->agg, req->step, req->replica)) {
	case TFJ_SYNCAGG_STALE:
		s->stale++;
		*result = TFJ__RUNTIME__V1__PUSH_RESULT__PUSH_STALE;
		return 0;
	case TFJ_SYNCAGG_DUPLICATE:
		s->duplicate++;
		*result = TFJ__RUNTIME__V1__PUSH_RESULT__PUSH_DUPLICATE;
		return 0;
	case TFJ_SYNCAGG_ACCEPT:
		break;
	}
	/* Reject non-finite input before it pollutes the accumulator. */
	if (!tensors_finite(t, n))
		return tfj_err_set(TFJ_ENUMERIC, "ps %u: gradient holds NaN/Inf", s->id);
	for (i = 0; i < s->nslices; i++) {
		struct tfj_wire_bytes b = t[i].data;
		size_t done = 0, k;
		const void *g;
		float tmp;

		while ((k = tfj_wire_bytes_floats(&b, &g, &tmp, TFJ_SHARD_CHUNK)) > 0) {
			tfj_syncagg_add(&s->agg, s->slices[i]->shard_off + done, g, k);
			done += k;
		}
	}
	*result = TFJ__RUNTIME__V1__PUSH_RESULT__PUSH_AGGREGATED;
	if (tfj_syncagg_commit(&s->agg, req->replica)) {
		rc = apply(s, tfj_syncagg_mean(&s->agg), req->max_steps);
		tfj_syncagg_reset(&s->agg, s->step);
		if (rc)
			return rc;
	}
	return 0;
}

void tfj_shard_describe(const struct tfj_shard *s, Tfj__Runtime__V1__Slice *msgs,
			Tfj__Runtime__V1__Slice **ptrs, const float *values)
{
	size_t i;

	for (i = 0; i < s->nslices; i++) {
		const struct tfj_place_slice *p = s->slices[i];

		tfj__runtime__v1__slice__init(&msgs[i]);
		msgs[i].var = p->var;
		msgs[i].offset = p->offset;
		msgs[i].count = p->count;
		msgs[i].data.data = (uint8_t *)(values + p->shard_off);
		msgs[i].data.len = p->count * sizeof(float);
		ptrs[i] = &msgs[i];
	}
}

size_t tfj_shard_describe_state(const struct tfj_shard *s, Tfj__Runtime__V1__Slice *msgs,
				Tfj__Runtime__V1__Slice **ptrs)
{
	size_t i;

	if (!s->state)
		return 0;
	for (i = 0; i < s->nslices; i++) {
		const struct tfj_place_slice *p = s->slices[i];

		tfj__runtime__v1__slice__init(&msgs[i]);
		msgs[i].var = p->var;
		msgs[i].offset = p->offset;
		msgs[i].count = p->count;
		msgs[i].data.data = (uint8_t *)(s->state + s->state_off[i]);
		msgs[i].data.len = (s->state_off[i + 1] - s->state_off[i]) * sizeof(float);
		ptrs[i] = &msgs[i];
	}
	return s->nslices;
}
