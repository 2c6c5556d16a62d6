/*
 * events.h - core/v1 Events about TFJobs, posted off the reconcile path.
 *
 * A reconcile hands its events to tfj_events_post(), which copies them into
 * a bounded FIFO and returns at once; one sender thread posts them in order
 * through an API client of its own, so events spend their own token bucket
 * (--event-qps, --event-burst) and never the one that creates pods and
 * writes status. Kubernetes' own controllers keep events apart the same
 * way (a separate event client and rate). Before this, a reconcile that
 * created ten children waited for ten Event posts in the same bucket as
 * its creates, and about half of every job's requests were events
 * (docs/bench/history.md, part 3).
 *
 * Repeated events are aggregated as Kubernetes' event correlator does: an
 * event equal to one posted before (same TFJob, type, reason and message)
 * is not posted again; the earlier Event's count and lastTimestamp are
 * updated (merge PATCH), so a create retried a hundred times is one Event
 * with count 100, not a hundred Events ("(x100 over 5m)" in kubectl
 * describe). The sender remembers the last TFJ_EVENTS_AGGREGATE distinct
 * events (least recently used forgotten first); an Event that expired in
 * the meantime (404) is posted anew.
 *
 * Events are best effort: the TFJob's status is the record. When the queue
 * is full (the API server is slow or the event budget is spent) a new event
 * is dropped and counted, so a storm of events costs bounded memory and
 * never delays a create. A post that fails is counted and not retried.
 *
 * Ownership: the recorder borrows the client, which must outlive it, and
 * copies every event it queues. tfj_events_free() stops the sender after
 * the post in flight; what is still queued then is dropped and its number
 * logged.
 */
#ifndef TFJ_EVENTS_H
#define TFJ_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include <tfj/buf.h>

#include "kube/kube.h"

#define TFJ_EVENTS_MAX_QUEUED_DEFAULT 1024
#define TFJ_EVENTS_MAX_MESSAGE 1024 /* longer messages are cut (the API allows 1 KiB) */
#define TFJ_EVENTS_AGGREGATE 256    /* distinct recent events remembered for counting */

struct tfj_events_opts {
	const char *instance; /* reportingInstance (the host name); NULL = "tfjob-operator" */
	size_t max_queued;    /* 0 = TFJ_EVENTS_MAX_QUEUED_DEFAULT */
};

/* The object an event is about: a TFJob, named in full. */
struct tfj_events_ref {
	const char *ns;
	const char *name;
	const char *uid;
};

struct tfj_events;

/* Starts the sender thread. opts may be NULL. */
int tfj_events_new(struct tfj_events **out, struct tfj_kube *k,
		   const struct tfj_events_opts *opts);
void tfj_events_free(struct tfj_events *e);

/*
 * Queues an Event (type "Normal" or "Warning", a CamelCase reason, a
 * message) about ref and returns without waiting. Its timestamps are the
 * time of this call. NULL e, type or reason: nothing. Never fails: a full
 * queue or no memory drops the event and counts it.
 */
void tfj_events_post(struct tfj_events *e, const struct tfj_events_ref *ref, const char *type,
		     const char *reason, const char *msg);

/*
 * The same, for an event its caller repeats while its cause lasts (a pod
 * being preempted is seen by every reconcile until it is gone): when an
 * equal event is among the last TFJ_EVENTS_AGGREGATE ones, nothing is
 * posted and its count stays, so the Event says it happened once.
 */
void tfj_events_post_once(struct tfj_events *rec, const struct tfj_events_ref *ref,
			  const char *type, const char *reason, const char *msg);

/*
 * Waits until every event queued so far has been posted or has failed
 * (tests, shutdown). 0, or TFJ_ETIMEOUT after timeout_ms.
 */
int tfj_events_flush(struct tfj_events *e, long timeout_ms);

/*
 * Events posted, failed and dropped so far (result "success", "error",
 * "dropped"); "aggregated": the posted ones that raised an earlier Event's count.
 */
uint64_t tfj_events_count(struct tfj_events *e, const char *result);

/* Appends tfjob_operator_events_total and the queue length as Prometheus text. */
int tfj_events_metrics(struct tfj_events *e, struct tfj_buf *out);

#endif
