/*
 * pushparts.c - cutting a push into parts (pushparts.h).
 */
#include "worker/pushparts.h"

#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

size_t tfj_pushparts_count(size_t elems, size_t part_elems)
{
	return elems / part_elems + (elems % part_elems != 0);
}

int tfj_pushparts_init(struct tfj_pushparts *pp, size_t elems, size_t nslices, size_t part_elems)
{
	memset(pp, 0, sizeof(*pp));
	if (part_elems == 0)
		return tfj_err_set(TFJ_EINVAL, "pushparts: parts of 0 floats");
	pp->part_elems = part_elems;
	pp->cap = tfj_pushparts_count(elems, part_elems);
	if (pp->cap == 0)
		pp->cap = 1;
	/* Each cut but the last may split one slice in two: one piece more per part. */
	if (nslices > (size_t)-1 - pp->cap)
		return tfj_err_set(TFJ_ERANGE, "pushparts: %zu slices", nslices);
	pp->cap_slices = nslices + pp->cap;
	pp->reqs = calloc(pp->cap, sizeof(*pp->reqs));
	pp->list = calloc(pp->cap, sizeof(*pp->list));
	pp->msgs = calloc(pp->cap_slices, sizeof(*pp->msgs));
	pp->ptrs = calloc(pp->cap_slices, sizeof(*pp->ptrs));
	pp->applied = calloc(pp->cap, sizeof(*pp->applied));
	pp->send = calloc(pp->cap, sizeof(*pp->send));
	pp->idx = calloc(pp->cap, sizeof(*pp->idx));
	pp->now = calloc(pp->cap, sizeof(*pp->now));
	if (!pp->reqs || !pp->list || !pp->msgs || !pp->ptrs || !pp->applied || !pp->send ||
	    !pp->idx || !pp->now) {
		tfj_pushparts_free(pp);
		return tfj_err_set(TFJ_ENOMEM, "pushparts: out of memory");
	}
	return 0;
}

void tfj_pushparts_free(struct tfj_pushparts *pp)
{
	if (!pp)
		return;
	free(pp->reqs);
	free(pp->list);
	free(pp->msgs);
	free(pp->ptrs);
	free(pp->applied);
	free(pp->send);
	free(pp->idx);
	free(pp->now);
	memset(pp, 0, sizeof(*pp));
}

void tfj_pushparts_forget(struct tfj_pushparts *pp)
{
	memset(pp->applied, 0, pp->cap * sizeof(*pp->applied));
}

size_t tfj_pushparts_pending(struct tfj_pushparts *pp)
{
	size_t k;

	pp->nsend = 0;
	for (k = 0; k < pp->n; k++)
		if (!pp->applied[k]) {
			pp->send[pp->nsend] = pp->list[k];
			pp->idx[pp->nsend] = k;
			pp->now[pp->nsend] = 0;
			pp->nsend++;
		}
	return pp->nsend;
}

void tfj_pushparts_record(struct tfj_pushparts *pp)
{
	size_t c;

	for (c = 0; c < pp->nsend; c++)
		if (pp->now[c])
			pp->applied[pp->idx[c]] = 1;
}

/* Starts part k as a copy of head without slices; its slices begin at ptrs[first]. */
static void part_begin(struct tfj_pushparts *pp, size_t k, const Tfj__Runtime__V1__PushRequest *head,
		       size_t first)
{
	Tfj__Runtime__V1__PushRequest *q = &pp->reqs[k];

	*q = *head;
	q->more = 1;
	q->n_slices = 0;
	q->slices = &pp->ptrs[first];
	pp->list[k] = &q->base;
}

int tfj_pushparts_cut(struct tfj_pushparts *pp, const Tfj__Runtime__V1__PushRequest *head,
		      Tfj__Runtime__V1__Slice *const *src, size_t n)
{
	size_t i, k = 0, used = 0, room = pp->part_elems, total = 0;

	pp->n = 0;
	if (n == 0)
		return tfj_err_set(TFJ_EINVAL, "pushparts: an empty run");
	for (i = 0; i < n; i++)
		total += (size_t)src[i]->count;
	if (tfj_pushparts_count(total, pp->part_elems) > pp->cap || n + pp->cap > pp->cap_slices)
		return tfj_err_set(TFJ_ERANGE, "pushparts: %zu floats in %zu slices, room for %zu "
				   "parts", total, n, pp->cap);
	part_begin(pp, 0, head, 0);
	for (i = 0; i < n; i++) {
		size_t done = 0, count = (size_t)src[i]->count;

		while (done < count) {
			size_t take = count - done < room ? count - done : room;
			Tfj__Runtime__V1__Slice *m = &pp->msgs[used];

			if (room == 0) {
				/* The part is full: the next one starts here. */
				part_begin(pp, ++k, head, used);
				room = pp->part_elems;
				continue;
			}
			*m = *src[i];
			m->offset = src[i]->offset + done;
			m->count = take;
			m->data.data = src[i]->data.data + done * sizeof(float);
			m->data.len = take * sizeof(float);
			pp->ptrs[used++] = m;
			pp->reqs[k].n_slices++;
			done += take;
			room -= take;
		}
	}
	pp->reqs[k].more = head->more;
	pp->n = k + 1;
	return 0;
}
