/*
 * pushtrack.c - one push to every shard, followed over its tries
 * (pushtrack.h).
 */
#include "worker/pushtrack.h"

#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

#include "wire/rpcnames.h"

int tfj_pushtrack_init(struct tfj_pushtrack *t, size_t n, const size_t *elems,
		       const size_t *first, size_t part_elems)
{
	size_t j;
	int rc;

	memset(t, 0, sizeof(*t));
	t->n = n;
	t->done = calloc(n ? n : 1, 1);
	if (!t->done)
		return tfj_err_set(TFJ_ENOMEM, "push: out of memory");
	if (part_elems == 0)
		return 0;
	t->pparts = calloc(n, sizeof(*t->pparts));
	t->lists = calloc(n, sizeof(*t->lists));
	t->counts = calloc(n, sizeof(*t->counts));
	t->now = calloc(n, sizeof(*t->now));
	if (!t->pparts || !t->lists || !t->counts || !t->now)
		return tfj_err_set(TFJ_ENOMEM, "push: out of memory");
	for (j = 0; j < n; j++) {
		rc = tfj_pushparts_init(&t->pparts[j], elems[j], first[j + 1] - first[j], part_elems);
		if (rc)
			return rc;
	}
	return 0;
}

void tfj_pushtrack_free(struct tfj_pushtrack *t)
{
	size_t j;

	for (j = 0; t->pparts && j < t->n; j++)
		tfj_pushparts_free(&t->pparts[j]);
	free(t->pparts);
	free(t->lists);
	free(t->counts);
	free(t->now);
	free(t->done);
	memset(t, 0, sizeof(*t));
}

void tfj_pushtrack_begin(struct tfj_pushtrack *t)
{
	size_t j;

	memset(t->done, 0, t->n);
	t->stale = 0;
	t->finished = 0;
	for (j = 0; t->pparts && j < t->n; j++)
		tfj_pushparts_forget(&t->pparts[j]);
}

/*
 * Cuts this try's requests into parts where a shard's is larger than a
 * part and its ps takes pieces (tfj_psclient_pieces_of, as just asked): 1 when some shard's push
 * goes in parts (lists, counts: the parts no earlier try applied; now:
 * where psclient notes the answers), 0 when every one goes whole, or an
 * error. A shard whose ps takes no pieces now goes whole, and what was
 * noted of its parts is forgotten: its stream broke, and its ps may be
 * another one.
 */
static int cut(struct tfj_pushtrack *t, const struct tfj_psclient *cl,
	       const ProtobufCMessage *const *reqs)
{
	size_t j;
	int rc, any = 0;

	if (!t->pparts)
		return 0;
	for (j = 0; j < t->n; j++) {
		struct tfj_pushparts *pp = &t->pparts[j];
		const Tfj__Runtime__V1__PushRequest *q = (const void *)reqs[j];

		t->lists[j] = NULL;
		t->counts[j] = 0;
		t->now[j] = NULL;
		if (!q)
			continue;
		if (!tfj_psclient_pieces_of(cl, j)) {
			tfj_pushparts_forget(pp);
			t->lists[j] = &reqs[j];
			t->counts[j] = 1;
			continue;
		}
		/* The same gradient and layout: a retry cuts the same parts. */
		rc = tfj_pushparts_cut(pp, q, q->slices, q->n_slices);
		if (rc)
			return rc;
		t->counts[j] = tfj_pushparts_pending(pp);
		t->lists[j] = t->counts[j] ? pp->send : NULL;
		/* Every part applied, though no try ended OK for the shard: it has the push. */
		if (!t->counts[j])
			t->done[j] = 1;
		if (pp->n > 1) {
			t->now[j] = pp->now;
			any = 1;
		}
	}
	return any;
}

/*
 * A push in parts: only the parts not applied yet go. What this try's
 * answers said is kept for the next try (the ps applied those parts),
 * unless the shard's stream broke: its ps may be another one by then.
 */
static int send_parts(struct tfj_pushtrack *t, struct tfj_psclient *cl, ProtobufCMessage **resps,
		      double timeout_s)
{
	size_t j, left = 0;
	int rc;

	for (j = 0; j < t->n; j++)
		left += t->counts[j];
	if (!left)
		return 0;
	rc = tfj_psclient_call_parts(cl, TFJ_RPC_PUSH, t->lists, t->counts, t->now, resps,
				     timeout_s);
	for (j = 0; j < t->n; j++) {
		if (!t->now[j])
			continue;
		if (tfj_psclient_streaming_of(cl, j))
			tfj_pushparts_record(&t->pparts[j]);
		else
			tfj_pushparts_forget(&t->pparts[j]);
	}
	return rc;
}

int tfj_pushtrack_send(struct tfj_pushtrack *t, struct tfj_psclient *cl,
		       const ProtobufCMessage *const *reqs, ProtobufCMessage **resps,
		       double timeout_s)
{
	size_t j;
	int rc;

	for (j = 0; j < t->n; j++)
		resps[j] = NULL;
	/*
	 * What each ps takes is asked here, before the cut, where it is
	 * decided: a ps whose stream is new (it restarted, say) may not be
	 * the one that said yes. A ps that cannot be asked gets its push
	 * whole, and that push fails or not on its own.
	 */
	if (t->pparts)
		(void)tfj_psclient_ask(cl, reqs, timeout_s);
	rc = cut(t, cl, reqs);
	if (rc > 0)
		rc = send_parts(t, cl, resps, timeout_s);
	else if (rc == 0)
		rc = tfj_psclient_call(cl, TFJ_RPC_PUSH, reqs, resps, timeout_s);
	tfj_pushtrack_take(t, reqs, resps);
	return rc;
}

void tfj_pushtrack_take(struct tfj_pushtrack *t, const ProtobufCMessage *const *reqs,
			ProtobufCMessage *const *resps)
{
	size_t j;

	for (j = 0; j < t->n; j++) {
		const Tfj__Runtime__V1__PushResponse *r = (const void *)resps[j];

		/* No answer: the shard failed, or none of its parts was left to send. */
		if (!reqs[j] || !r || t->done[j])
			continue;
		t->done[j] = 1;
		if (r->result == TFJ__RUNTIME__V1__PUSH_RESULT__PUSH_STALE ||
		    r->result == TFJ__RUNTIME__V1__PUSH_RESULT__PUSH_DUPLICATE)
			t->stale++;
		if (r->finished)
			t->finished = 1;
	}
}
