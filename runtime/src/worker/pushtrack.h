/*
 * pushtrack.h - one push to every shard, followed over its tries.
 *
 * A worker's push goes to every ps at once, and one ps can fail it while
 * the others take it. The tries of one push (session.c's retry loop) must
 * then neither lose nor repeat work: a shard that answered OK took the
 * gradient and is not sent it again (`done`), and a shard whose push went
 * in parts (pushparts.h) is sent again only the parts no try had applied.
 * Its stale or duplicate answer is counted once.
 *
 * Whole or in parts is decided here, and only here: a large async push
 * to a ps that takes pieces (tfj_psclient_pieces_of, asked again on every
 * try for a ps whose stream is new) is cut into parts; to any other ps it
 * goes whole. Each shard is decided on its own, so a shard that is done
 * or down does not change how the others' pushes go.
 *
 * Ownership: a struct tfj_pushtrack owns its arrays; tfj_pushtrack_free()
 * (safe on a zeroed or half-initialised one). The requests it sends are
 * the caller's and are borrowed for one try.
 */
#ifndef TFJ_PUSHTRACK_H
#define TFJ_PUSHTRACK_H

#include <stddef.h>

#include "worker/psclient.h"
#include "worker/pushparts.h"
#include "tfj_runtime.pb-c.h"

struct tfj_pushtrack {
	size_t n;                            /* shards */
	unsigned char *done;                 /* shard j answered this push OK */
	int stale;                           /* shards that answered stale or duplicate */
	int finished;                        /* a shard said training is finished */
	/* Parts (NULL when --push-part-kib is 0 or training is sync). */
	struct tfj_pushparts *pparts;        /* per shard */
	const ProtobufCMessage *const **lists;
	size_t *counts;                      /* per shard: parts this try sends */
	unsigned char **now;                 /* per shard: pparts[j].now if cut, else NULL */
};

/*
 * Room for n shards; with part_elems > 0, for cutting shard j's push of
 * elems[j] floats in its slices first[j] .. first[j + 1] (n + 1 offsets,
 * as the session groups them) into parts of part_elems floats.
 */
int tfj_pushtrack_init(struct tfj_pushtrack *t, size_t n, const size_t *elems,
		       const size_t *first, size_t part_elems);
void tfj_pushtrack_free(struct tfj_pushtrack *t);

/* A new push: no shard done, nothing applied, nothing counted. */
void tfj_pushtrack_begin(struct tfj_pushtrack *t);

/*
 * One try of the push: shard j's whole request is reqs[j] (a
 * PushRequest; NULL = nothing for shard j, which callers set for the
 * shards tfj_pushtrack_done() names). A shard's request larger than a
 * part goes, where its ps takes pieces over a stream, as the parts no
 * earlier try applied; otherwise it goes whole. Returns 0 when every
 * shard sent answered OK, else the first failing shard's error (its
 * detail names the ps). The answers that came are taken in either way
 * (tfj_pushtrack_take), so a retry skips the shards that took the push.
 */
int tfj_pushtrack_send(struct tfj_pushtrack *t, struct tfj_psclient *cl,
		       const ProtobufCMessage *const *reqs, ProtobufCMessage **resps,
		       double timeout_s);

/* Whether shard j answered this push OK in an earlier try. */
static inline int tfj_pushtrack_done(const struct tfj_pushtrack *t, size_t j)
{
	return t->done[j];
}

/*
 * Marks done the shards that answered (resps[j] set for a shard in reqs)
 * and counts their stale, duplicate and finished answers.
 */
void tfj_pushtrack_take(struct tfj_pushtrack *t, const ProtobufCMessage *const *reqs,
			ProtobufCMessage *const *resps);

#endif
