/*
 * guardmemo.h - which TFJobs' ps Secrets (tfjob/pssecret.h) this process
 * knows to exist, by name, so that a replica restart does not post them
 * again, and a Secret whose name could not be recorded yet is not made
 * twice.
 *
 * The planner asks for the Secret (tfjob/plan.h's CREATE_SECRET) before a
 * plan's first pod create unless this memo knows the job's recorded one
 * exists; app/apply.c then POSTs it under its recorded name, without
 * reading it (a 409 means it is there). Every replica restart of a long
 * job would pay that request (docs/bench/history.md, part 3). Now a
 * Secret that was created, or found present, is noted here by the job's
 * uid with its name, and later plans of that job skip it.
 *
 * A job's first Secret is posted with generateName and its name then
 * written into the job's status; the name is noted here between the two,
 * so when the status write fails the retry writes the same name instead
 * of making another Secret (tfj_guardmemo_secret gives the name however
 * old the note is). Across a restart or a new leader that note is lost:
 * the Secret made then is left unused, owned by the TFJob and deleted
 * with it, and the next attempt makes another.
 *
 * The rule for a Secret deleted behind our back (the owner reference makes
 * the garbage collector delete it with the job; anything else deleting it
 * is someone's mistake): a note is trusted for `recheck_ms` (default 10
 * minutes) after it was made; the first pod create after that posts the
 * Secret again under its name, which recreates a missing one (with a new
 * token: the pods created before keep the old one mounted) and renews the
 * note. A restart storm (a crash-looping replica) thus costs the request
 * once per recheck period instead of once per restart. Noticing the
 * deletion at once would take a watch on Secrets, which needs list/watch
 * on every Secret the operator can see (read access to all of them); not
 * worth it for a mistake this rare.
 *
 * A uid is forgotten when its TFJob finishes (no pod is created after
 * that) or is deleted (the controller's informer), and a new TFJob of the
 * same name has a new uid: the memo holds about the running jobs. The
 * memo is bounded: at `max_jobs` uids the least recently used one is
 * forgotten (which costs that job only a request on its next pod create).
 * A Secret whose create failed is not noted, so it is tried again on the
 * next pod create.
 *
 * Pure apart from its mutex: times come in as arguments (unix ms).
 * Threads: every call may come from any worker at once.
 */
#ifndef TFJ_GUARDMEMO_H
#define TFJ_GUARDMEMO_H

#include <stddef.h>
#include <stdint.h>

/* Longest Secret name noted, NUL included (a DNS-1123 subdomain). */
#define TFJ_GUARDMEMO_NAME_MAX 254
#define TFJ_GUARDMEMO_MAX_JOBS_DEFAULT 4096
#define TFJ_GUARDMEMO_RECHECK_MS_DEFAULT (10 * 60 * 1000)

struct tfj_guardmemo;

/* max_jobs 0 and recheck_ms <= 0 mean the defaults. */
int tfj_guardmemo_new(struct tfj_guardmemo **out, size_t max_jobs, int64_t recheck_ms);
void tfj_guardmemo_free(struct tfj_guardmemo *m);

/*
 * The Secret noted for the job with `uid`: its name into name (namelen
 * bytes; "" when nothing is noted, a NULL memo or uid), and 1 when the
 * note is less than recheck_ms old at now_ms (the Secret is known to
 * exist), else 0.
 */
int tfj_guardmemo_secret(struct tfj_guardmemo *m, char *name, size_t namelen, const char *uid,
			 int64_t now_ms);

/* Notes that uid's Secret `name` exists as of now_ms. Best effort: no
 * memory, or a name over TFJ_GUARDMEMO_NAME_MAX, means nothing is noted
 * (the job pays its request again). */
void tfj_guardmemo_note(struct tfj_guardmemo *m, const char *uid, const char *name,
			int64_t now_ms);

/* Forgets uid (its TFJob was deleted). */
void tfj_guardmemo_forget(struct tfj_guardmemo *m, const char *uid);

/* uids remembered (tests, metrics). */
size_t tfj_guardmemo_size(struct tfj_guardmemo *m);

#endif
