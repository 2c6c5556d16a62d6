/*
 * guardmemo.h - which TFJobs' guards this process knows to exist, so that a
 * replica restart does not create them again. Only the ps Secret
 * (tfjob/pssecret.h) uses it now: the NetworkPolicy is observed through
 * its informer and kept by the planner (tfjob/plan.h), which needs no memo.
 *
 * The planner asks for the Secret (tfjob/plan.h's CREATE_SECRET) before a
 * plan's first pod create unless this memo knows it; app/apply.c then
 * POSTs it, and judges a 409 without reading it (secret_taken). Every
 * replica restart of a long job would pay those requests
 * (docs/bench/history.md, part 3). Now a guard that was created, or found
 * to be the job's, is noted here by the job's uid, and later plans of that
 * job skip it.
 *
 * The rule for a guard deleted behind our back (the owner reference makes
 * the garbage collector delete both with the job; anything else deleting
 * them is someone's mistake): a note is trusted for `recheck_ms` (default
 * 10 minutes) after it was made; the first pod create after that posts
 * again, which recreates a missing guard (with a new token: the pods
 * created before keep the old one mounted) and renews the note. A restart
 * storm (a crash-looping replica) thus costs the 2 requests once per
 * recheck period instead of once per restart. Noticing the deletion at
 * once would take a watch on Secrets, which needs list/watch on every
 * Secret the operator can see (read access to all of them); not worth it
 * for a mistake this rare.
 *
 * A uid is forgotten when its TFJob finishes (no pod is created after
 * that) or is deleted (the controller's informer), and a new TFJob of the
 * same name has a new uid: the memo holds about the running jobs. The memo is bounded: at
 * `max_jobs` uids the least recently used one is forgotten (which costs
 * that job only its 2 requests on its next pod create). A Secret whose
 * create failed is not noted, so it is tried again on the next pod create.
 *
 * Pure apart from its mutex: times come in as arguments (unix ms).
 * Threads: every call may come from any worker at once.
 */
#ifndef TFJ_GUARDMEMO_H
#define TFJ_GUARDMEMO_H

#include <stddef.h>
#include <stdint.h>

#define TFJ_GUARDMEMO_SECRET 1u  /* the job's ps Secret exists */
#define TFJ_GUARDMEMO_NETPOL 2u  /* the job's NetworkPolicy exists */
#define TFJ_GUARDMEMO_ALL (TFJ_GUARDMEMO_SECRET | TFJ_GUARDMEMO_NETPOL)

#define TFJ_GUARDMEMO_MAX_JOBS_DEFAULT 4096
#define TFJ_GUARDMEMO_RECHECK_MS_DEFAULT (10 * 60 * 1000)

struct tfj_guardmemo;

/* max_jobs 0 and recheck_ms <= 0 mean the defaults. */
int tfj_guardmemo_new(struct tfj_guardmemo **out, size_t max_jobs, int64_t recheck_ms);
void tfj_guardmemo_free(struct tfj_guardmemo *m);

/*
 * The guards (TFJ_GUARDMEMO_* bits) of the job with `uid` known to exist
 * at now_ms: those noted less than recheck_ms before. 0 for an unknown
 * uid, a NULL memo or uid.
 */
unsigned tfj_guardmemo_known(struct tfj_guardmemo *m, const char *uid, int64_t now_ms);

/* Notes that the guards `bits` of uid exist as of now_ms. Best effort: no
 * memory means nothing is noted (the job pays its requests again). */
void tfj_guardmemo_note(struct tfj_guardmemo *m, const char *uid, unsigned bits,
			int64_t now_ms);

/* Forgets uid (its TFJob was deleted). */
void tfj_guardmemo_forget(struct tfj_guardmemo *m, const char *uid);

/* uids remembered (tests, metrics). */
size_t tfj_guardmemo_size(struct tfj_guardmemo *m);

#endif
