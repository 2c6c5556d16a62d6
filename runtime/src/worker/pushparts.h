/*
 * pushparts.h - cutting one shard's push into parts of a bounded size, so
 * that a large gradient goes out as several frames the ps applies one
 * after the other while the next ones arrive (PushRequest.more, "Push in
 * parts" in docs/runtime-protocol.md; psclient.h's tfj_psclient_call_parts).
 *
 * Pure: no transport. A cut reads a run of slice messages whose data points
 * at the gradient and a header request (hash, step, replica, max_steps,
 * more), and fills part requests whose slices point into the same memory:
 * nothing is copied. A part is a run of the shard's buffer, so a part may
 * begin or end inside a slice.
 *
 * A push whose parts were refused in part is tried again without the parts
 * the ps already applied: the cut keeps, over the tries of one push, which
 * parts the ps answered OK (`applied`), and tfj_pushparts_pending() lists
 * the others (`send`) for the next try; tfj_pushparts_record() takes in
 * what that try's answers said (`now`, filled by psclient).
 *
 * Ownership: a struct tfj_pushparts owns its arrays; tfj_pushparts_free().
 * The requests of a cut borrow the gradient memory the slices pointed at
 * and are valid until the next cut.
 */
#ifndef TFJ_PUSHPARTS_H
#define TFJ_PUSHPARTS_H

#include <stddef.h>

#include "tfj_runtime.pb-c.h"

struct tfj_pushparts {
	size_t cap, cap_slices;              /* room: parts, slice pieces */
	size_t part_elems;                   /* most floats per part */
	Tfj__Runtime__V1__PushRequest *reqs; /* cap */
	Tfj__Runtime__V1__Slice *msgs;       /* cap_slices */
	Tfj__Runtime__V1__Slice **ptrs;      /* cap_slices */
	const ProtobufCMessage **list;       /* reqs[0..n) as messages (psclient) */
	size_t n;                            /* parts of the last cut */
	/* The tries of one push (all cap entries). */
	unsigned char *applied;              /* part k: the ps answered OK in some try */
	const ProtobufCMessage **send;       /* this try's parts: those not applied */
	size_t *idx;                         /* send[c] is part idx[c] of the cut */
	unsigned char *now;                  /* send[c] answered OK in this try */
	size_t nsend;
};

/* Parts a run of `elems` floats is cut into, at most part_elems (> 0) each. */
size_t tfj_pushparts_count(size_t elems, size_t part_elems);

/*
 * Room for cutting runs of up to `elems` floats in up to `nslices` slices
 * into parts of at most part_elems floats (> 0).
 */
int tfj_pushparts_init(struct tfj_pushparts *pp, size_t elems, size_t nslices, size_t part_elems);
void tfj_pushparts_free(struct tfj_pushparts *pp);

/*
 * Cuts the run src[0..n) (slice messages of one shard, in its order, data
 * pointing at count floats each) into pp->n parts of part_elems floats,
 * the last one shorter. Every part copies *head but for its slices; all
 * but the last have more = 1, the last head->more. TFJ_ERANGE when the run
 * is larger than init made room for; TFJ_EINVAL for an empty run.
 */
int tfj_pushparts_cut(struct tfj_pushparts *pp, const Tfj__Runtime__V1__PushRequest *head,
		      Tfj__Runtime__V1__Slice *const *src, size_t n);

/* A new push: no part applied yet. */
void tfj_pushparts_forget(struct tfj_pushparts *pp);

/*
 * Lists the parts of the last cut that no try has applied (send, idx),
 * clears `now` for them and returns how many (pp->nsend).
 */
size_t tfj_pushparts_pending(struct tfj_pushparts *pp);

/* Marks applied the parts that this try's answers said OK (now[c] = 1). */
void tfj_pushparts_record(struct tfj_pushparts *pp);

#endif
