/*
 * leader.h - leader election on a coordination.k8s.io/v1 Lease.
 *
 * Only one operator replica reconciles at a time. The Lease names its
 * holder; the holder renews it every retry period (2 s). Others take it
 * over once it has not been renewed for the lease duration (15 s), measured
 * on their own clock from when they last saw the record change (as
 * client-go does, so clock skew between nodes does not matter). A leader
 * that cannot renew within the renew deadline (10 s) steps down and calls
 * on_stopped: it must stop writing at once (main exits and the Deployment
 * restarts it), since another replica may take over 15 s after the last
 * renewal; the fence (tfj_leader_fence) makes sure no request of its own
 * outlives that deadline. On a graceful stop the lease is released (holder cleared) so a
 * successor need not wait.
 *
 * The decision is a pure function (tfj_leader_decide), tested without an
 * API server; the loop around it does the GET/POST/PUT.
 */
#ifndef TFJ_LEADER_H
#define TFJ_LEADER_H

#include <stddef.h>
#include <stdint.h>

#include "kube/kube.h"

#define TFJ_LEADER_LEASE_MS   15000
#define TFJ_LEADER_RENEW_MS   10000
#define TFJ_LEADER_RETRY_MS    2000

struct tfj_leader_record {
	char holder[256];        /* "" when released */
	char renew_time[64];     /* as written (used only to notice changes) */
	int64_t lease_s;         /* leaseDurationSeconds */
	int64_t transitions;     /* leaseTransitions */
};

enum tfj_leader_decision {
	TFJ_LEADER_WAIT = 0,     /* another holder's lease is live */
	TFJ_LEADER_ACQUIRE,      /* free or expired: take it (transitions + 1) */
	TFJ_LEADER_RENEW         /* ours: renew it */
};

/*
 * rec: the current record (NULL when the Lease does not exist: ACQUIRE).
 * observed_ms: our monotonic time when we first saw this exact record.
 * now_ms: our monotonic time now. lease_ms: the duration to apply when the
 * record has none.
 */
enum tfj_leader_decision tfj_leader_decide(const struct tfj_leader_record *rec,
					   const char *identity, int64_t observed_ms,
					   int64_t now_ms, int64_t lease_ms);

/*
 * This process's identity for the Lease: "<host>_<16 hex digits>", the
 * digits random per process (as client-go's hostname + UUID). A pid does
 * not do: in a container it is the same after every restart, so a leader
 * SIGKILLed and restarted in place took its predecessor's Lease for its own
 * and renewed it at once (a term it never acquired, and released on its
 * next SIGTERM), instead of waiting the lease out like any candidate.
 * host NULL or "" is "tfjob-operator". TFJ_EINVAL when out is too small.
 */
int tfj_leader_identity(char *out, size_t n, const char *host);

/* Reads a Lease object into rec. TFJ_EPARSE when it has no spec. */
int tfj_leader_parse(struct tfj_leader_record *rec, const void *lease_json);

struct tfj_leader_opts {
	const char *namespace;   /* where the Lease lives */
	const char *name;        /* Lease name (default "tfjob-operator") */
	const char *identity;    /* this process (tfj_leader_identity); required */
	int64_t lease_ms, renew_ms, retry_ms; /* 0 = the defaults above */
	void (*on_started)(void *ud);
	void (*on_stopped)(void *ud);
	void *ud;
};

struct tfj_leader;

int tfj_leader_new(struct tfj_leader **out, struct tfj_kube *k, const struct tfj_leader_opts *o);
/* Starts the election thread. */
int tfj_leader_start(struct tfj_leader *l);
/* Stops the thread; releases the lease if held. */
void tfj_leader_stop(struct tfj_leader *l);
void tfj_leader_free(struct tfj_leader *l);
/*
 * Fencing: the monotonic time (ms, tfj_clock_mono_ns() / 1e6) by which this
 * replica must have stopped talking to the API server: 0 until it leads,
 * then the renew deadline (the start of the last successful renewal +
 * renew_ms, always lease_ms - renew_ms before another replica may take
 * over), then 1 once it stepped down. Hand it to tfj_kube_set_fence on every
 * client the leader writes with: each request is cut at the deadline and
 * none is sent after it. The election thread wakes at the deadline, so it
 * steps down (on_stopped) on time even when the renewals hang.
 */
const _Atomic int64_t *tfj_leader_fence(struct tfj_leader *l);

/* 1 while this replica holds the lease. */
int tfj_leader_is_leader(struct tfj_leader *l);

#endif
