/*
 * expect.h - expectations: writes the cache has not shown us yet.
 *
 * The informer cache lags the API server. After the controller creates a
 * pod, a reconcile that runs before the ADD event arrives would see the pod
 * missing and plan it again; after a delete it would still see the pod; after
 * a status write it would still see the old status (and, for example, count
 * a restart twice). So every write is recorded here before it is sent, the
 * informer callbacks mark it observed, and the controller plans a job only
 * when nothing is pending for it. A write that fails (or turns out to be a
 * no-op, like 409 AlreadyExists) is withdrawn at once. Every record expires
 * after a TTL, so a lost event delays a job, never wedges it.
 *
 * Keys are TFJob keys ("ns/name"); children are named by kind ("pod",
 * "service") and name. Status expectations use the resourceVersion the
 * write returned: satisfied once the cache shows that version or a later
 * one (versions are compared as integers when both are decimal, which the
 * API server's are).
 *
 * Thread-safe.
 */
#ifndef TFJ_EXPECT_H
#define TFJ_EXPECT_H

#include <stddef.h>
#include <stdint.h>

#define TFJ_EXPECT_TTL_MS_DEFAULT (5 * 60 * 1000)

struct tfj_expect;

int tfj_expect_new(struct tfj_expect **out, uint64_t ttl_ms);
void tfj_expect_free(struct tfj_expect *e);

/* Before sending a create / delete of kind/name for job `key`. */
int tfj_expect_create(struct tfj_expect *e, const char *key, const char *kind,
		      const char *name);
int tfj_expect_delete(struct tfj_expect *e, const char *key, const char *kind,
		      const char *name);
/* The informer saw the child appear / go (or start terminating). */
void tfj_expect_observe_create(struct tfj_expect *e, const char *key, const char *kind,
			       const char *name);
void tfj_expect_observe_delete(struct tfj_expect *e, const char *key, const char *kind,
			       const char *name);
/* The request failed or changed nothing: withdraw the expectation. */
void tfj_expect_cancel_create(struct tfj_expect *e, const char *key, const char *kind,
			      const char *name);
void tfj_expect_cancel_delete(struct tfj_expect *e, const char *key, const char *kind,
			      const char *name);

/* A status write of job `key` returned resourceVersion new_rv. */
int tfj_expect_status(struct tfj_expect *e, const char *key, const char *new_rv);
/*
 * The informer saw job `key` at resourceVersion rv. The version is kept
 * (until tfj_expect_forget) because the watch event of a status write can
 * arrive before the write's own response.
 */
void tfj_expect_observe_job(struct tfj_expect *e, const char *key, const char *rv);

/* 1 when nothing is pending for key (expired records count as satisfied). */
int tfj_expect_satisfied(struct tfj_expect *e, const char *key);
/* Pending (unexpired) records for key. */
size_t tfj_expect_pending(struct tfj_expect *e, const char *key);
/* Drops everything for key (the job is gone). */
void tfj_expect_forget(struct tfj_expect *e, const char *key);

/* 1 if resourceVersion a is at or after b (decimal compare, else equality). */
int tfj_expect_rv_reached(const char *a, const char *b);

#endif
