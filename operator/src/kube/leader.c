/*
 * leader.c - Lease-based leader election.
 */
#include "kube/leader.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <tfj/clock.h>
#include <tfj/err.h>
#include <tfj/json.h>
#include <tfj/log.h>

#include "kube/apipath.h"
#include "kube/ratelimit.h"

struct tfj_leader {
	struct tfj_kube *k;
	char *ns, *name, *identity;
	int64_t lease_ms, renew_ms, retry_ms;
	void (*on_started)(void *);
	void (*on_stopped)(void *);
	void *ud;

	pthread_t thread;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int stop;
	atomic_int leader;
	_Atomic int64_t deadline;  /* the fence (tfj_leader_fence): 0 until leading */

	/* thread state: the last record seen and when (monotonic ms) */
	struct tfj_leader_record seen;
	int have_seen;
	int64_t seen_ms;
};

int tfj_leader_identity(char *out, size_t n, const char *host)
{
	uint64_t r = 0;
	int len;

	/* Short reads and no entropy yet only make the nonce weaker, never equal
	 * to a predecessor's: the monotonic clock and pid are mixed in. */
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r ^= tfj_clock_mono_ns() * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
	len = snprintf(out, n, "%s_%016llx", host && *host ? host : "tfjob-operator",
		       (unsigned long long)r);
	if (len < 0 || (size_t)len >= n)
		return tfj_err_set(TFJ_EINVAL, "leader identity longer than %zu bytes", n);
	return 0;
}

static int64_t mono_ms(void)
{
	return (int64_t)(tfj_clock_mono_ns() / 1000000ull);
}

enum tfj_leader_decision tfj_leader_decide(const struct tfj_leader_record *rec,
					   const char *identity, int64_t observed_ms,
					   int64_t now_ms, int64_t lease_ms)
{
	int64_t dur;

	if (!rec)
		return TFJ_LEADER_ACQUIRE;
	if (rec->holder[0] && strcmp(rec->holder, identity) == 0)
		return TFJ_LEADER_RENEW;
	if (!rec->holder[0])
		return TFJ_LEADER_ACQUIRE; /* released */
	dur = rec->lease_s > 0 ? rec->lease_s * 1000 : lease_ms;
	return now_ms - observed_ms >= dur ? TFJ_LEADER_ACQUIRE : TFJ_LEADER_WAIT;
}

int tfj_leader_parse(struct tfj_leader_record *rec, const void *lease_json)
{
	const cJSON *spec;
	const char *h, *r;

	memset(rec, 0, sizeof(*rec));
	if (tfj_json_get_object(&spec, lease_json, "spec"))
		return tfj_err_set(TFJ_EPARSE, "lease without spec");
	if (tfj_json_opt_string(&h, spec, "holderIdentity", "") ||
	    tfj_json_opt_string(&r, spec, "renewTime", "") ||
	    tfj_json_opt_int64(&rec->lease_s, spec, "leaseDurationSeconds", 0, 86400, 0) ||
	    tfj_json_opt_int64(&rec->transitions, spec, "leaseTransitions", 0, INT32_MAX, 0))
		return tfj_err_set(TFJ_EPARSE, "lease spec: %s", tfj_err_detail());
	snprintf(rec->holder, sizeof(rec->holder), "%s", h);
	snprintf(rec->renew_time, sizeof(rec->renew_time), "%s", r);
	return 0;
}

static void micro_time(char *out, size_t outlen)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(out, outlen, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000);
}

/* Fills/updates the Lease spec for holder (NULL = release). */
static int set_spec(cJSON *lease, const char *holder, int64_t lease_s, int64_t transitions,
		    int new_term)
{
	cJSON *spec = cJSON_GetObjectItemCaseSensitive(lease, "spec");
	char now[64];

	micro_time(now, sizeof(now));
	if (!cJSON_IsObject(spec)) {
		cJSON_DeleteItemFromObjectCaseSensitive(lease, "spec");
		spec = cJSON_AddObjectToObject(lease, "spec");
		if (!spec)
			return TFJ_ENOMEM;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(spec, "holderIdentity");
	cJSON_DeleteItemFromObjectCaseSensitive(spec, "leaseDurationSeconds");
	cJSON_DeleteItemFromObjectCaseSensitive(spec, "renewTime");
	cJSON_DeleteItemFromObjectCaseSensitive(spec, "leaseTransitions");
	if (!cJSON_AddStringToObject(spec, "holderIdentity", holder ? holder : "") ||
	    !cJSON_AddNumberToObject(spec, "leaseDurationSeconds", (double)lease_s) ||
	    !cJSON_AddStringToObject(spec, "renewTime", now) ||
	    !cJSON_AddNumberToObject(spec, "leaseTransitions", (double)transitions))
		return TFJ_ENOMEM;
	if (new_term) {
		cJSON_DeleteItemFromObjectCaseSensitive(spec, "acquireTime");
		if (!cJSON_AddStringToObject(spec, "acquireTime", now))
			return TFJ_ENOMEM;
	}
	return 0;
}

static int lease_path(struct tfj_leader *l, char *out, size_t outlen, int item)
{
	return item ? tfj_apipath_obj(out, outlen, TFJ_APIPATH_COORDINATION, l->ns, "leases",
				      l->name, NULL)
		    : tfj_apipath_coll(out, outlen, TFJ_APIPATH_COORDINATION, l->ns, "leases");
}

/* One attempt to acquire or renew; 1 if we hold the lease afterwards. */
static int try_once(struct tfj_leader *l)
{
	char path[1024];
	cJSON *lease = NULL, *res = NULL;
	struct tfj_leader_record rec;
	enum tfj_leader_decision d;
	int64_t now = mono_ms();
	int rc, held = 0;

	if (lease_path(l, path, sizeof(path), 1))
		return 0;
	rc = tfj_kube_get(l->k, &lease, path);
	if (rc == TFJ_ENOTFOUND) {
		cJSON *meta;
		lease = cJSON_CreateObject();
		if (!lease || !cJSON_AddStringToObject(lease, "apiVersion", "coordination.k8s.io/v1") ||
		    !cJSON_AddStringToObject(lease, "kind", "Lease") ||
		    !(meta = cJSON_AddObjectToObject(lease, "metadata")) ||
		    !cJSON_AddStringToObject(meta, "name", l->name) ||
		    !cJSON_AddStringToObject(meta, "namespace", l->ns) ||
		    set_spec(lease, l->identity, l->lease_ms / 1000, 0, 1))
			goto out;
		if (lease_path(l, path, sizeof(path), 0))
			goto out;
		rc = tfj_kube_create(l->k, NULL, path, lease);
		held = rc == 0;
		if (rc && rc != TFJ_EEXIST)
			tfj_log_warn("lease create failed", "error", tfj_err_detail());
		goto out;
	}
	if (rc) {
		tfj_log_warn("lease read failed", "error", tfj_err_detail());
		goto out;
	}
	if (tfj_leader_parse(&rec, lease)) {
		tfj_log_warn("lease unreadable; treating as free", "error", tfj_err_detail());
		memset(&rec, 0, sizeof(rec));
	}
	if (!l->have_seen || strcmp(rec.holder, l->seen.holder) != 0 ||
	    strcmp(rec.renew_time, l->seen.renew_time) != 0) {
		l->seen = rec;
		l->have_seen = 1;
		l->seen_ms = now;
	}
	d = tfj_leader_decide(&rec, l->identity, l->seen_ms, now, l->lease_ms);
	if (d == TFJ_LEADER_WAIT)
		goto out;
	if (set_spec(lease, l->identity, l->lease_ms / 1000,
		     rec.transitions + (d == TFJ_LEADER_ACQUIRE ? 1 : 0), d == TFJ_LEADER_ACQUIRE))
		goto out;
	/* PUT carries metadata.resourceVersion: a concurrent writer gets 409. */
	rc = tfj_kube_replace(l->k, &res, path, lease);
	held = rc == 0;
	if (rc && rc != TFJ_ECONFLICT)
		tfj_log_warn("lease update failed", "error", tfj_err_detail());
out:
	cJSON_Delete(lease);
	cJSON_Delete(res);
	return held;
}

static void release(struct tfj_leader *l)
{
	char path[1024];
	cJSON *lease = NULL;
	struct tfj_leader_record rec;

	if (lease_path(l, path, sizeof(path), 1) || tfj_kube_get(l->k, &lease, path))
		goto out;
	if (tfj_leader_parse(&rec, lease) || strcmp(rec.holder, l->identity) != 0)
		goto out;
	if (set_spec(lease, NULL, 1, rec.transitions, 0) == 0 &&
	    tfj_kube_replace(l->k, NULL, path, lease) == 0)
		tfj_log_info("leader lease released");
out:
	cJSON_Delete(lease);
}

/* Waits ms or until stop; returns 1 if stopping. */
static int wait_ms(struct tfj_leader *l, int64_t ms)
{
	struct timespec ts;
	int stop;

	tfj_clock_deadline(&ts, ms > 0 ? (uint64_t)ms : 0);
	pthread_mutex_lock(&l->mu);
	while (!l->stop && pthread_cond_timedwait(&l->cond, &l->mu, &ts) != ETIMEDOUT)
		;
	stop = l->stop;
	pthread_mutex_unlock(&l->mu);
	return stop;
}

/* The renew deadline passed: fence everything, then tell the owner. */
static void step_down(struct tfj_leader *l)
{
	atomic_store(&l->deadline, 1); /* long past: nothing more is sent */
	atomic_store(&l->leader, 0);
	tfj_log_error("lost leadership: lease not renewed in time", "identity", l->identity);
	if (l->on_stopped)
		l->on_stopped(l->ud);
}

static void *run(void *arg)
{
	struct tfj_leader *l = arg;
	int64_t delay = 0;

	while (!wait_ms(l, delay)) {
		/*
		 * The lease counts from before the attempt: others time it from
		 * when they see the record, which is after the server wrote it,
		 * which is after this. So the renew deadline derived from t0
		 * always falls renew_ms - lease_ms (5 s) before any takeover.
		 */
		int64_t t0 = mono_ms(), now, left;
		int64_t deadline = atomic_load(&l->deadline);
		int ok;

		if (atomic_load(&l->leader) && t0 >= deadline) {
			step_down(l);
			break; /* a deposed leader does not campaign again; main exits */
		}
		ok = try_once(l);
		now = mono_ms();
		/* Candidates add jitter so replicas do not retry in lockstep. */
		delay = l->retry_ms + (ok ? 0 : (int64_t)(tfj_clock_mono_ns() % 500));
		if (ok)
			atomic_store(&l->deadline, t0 + l->renew_ms);
		if (!atomic_load(&l->leader)) {
			if (ok) {
				atomic_store(&l->leader, 1);
				tfj_log_info("became leader", "identity", l->identity);
				if (l->on_started)
					l->on_started(l->ud);
			}
			continue;
		}
		/* Wake at the renew deadline at the latest, to step down on time. */
		left = atomic_load(&l->deadline) - now;
		if (left < delay)
			delay = left > 0 ? left : 0;
	}
	return NULL;
}

const _Atomic int64_t *tfj_leader_fence(struct tfj_leader *l)
{
	return &l->deadline;
}

int tfj_leader_new(struct tfj_leader **out, struct tfj_kube *k, const struct tfj_leader_opts *o)
{
	struct tfj_leader *l;

	*out = NULL;
	if (!o || !o->namespace || !*o->namespace || !o->identity || !*o->identity)
		return tfj_err_set(TFJ_EINVAL, "leader election needs a namespace and an identity");
	l = calloc(1, sizeof(*l));
	if (!l)
		return tfj_err_set(TFJ_ENOMEM, "leader");
	l->k = k;
	l->ns = strdup(o->namespace);
	l->name = strdup(o->name ? o->name : "tfjob-operator");
	l->identity = strdup(o->identity);
	l->lease_ms = o->lease_ms > 0 ? o->lease_ms : TFJ_LEADER_LEASE_MS;
	l->renew_ms = o->renew_ms > 0 ? o->renew_ms : TFJ_LEADER_RENEW_MS;
	l->retry_ms = o->retry_ms > 0 ? o->retry_ms : TFJ_LEADER_RETRY_MS;
	l->on_started = o->on_started;
	l->on_stopped = o->on_stopped;
	l->ud = o->ud;
	pthread_mutex_init(&l->mu, NULL);
	tfj_clock_cond_init(&l->cond);
	if (!l->ns || !l->name || !l->identity) {
		tfj_leader_free(l);
		return tfj_err_set(TFJ_ENOMEM, "leader");
	}
	*out = l;
	return 0;
}

int tfj_leader_start(struct tfj_leader *l)
{
	if (l->started)
		return 0;
	if (pthread_create(&l->thread, NULL, run, l) != 0)
		return tfj_err_set(TFJ_ENOMEM, "leader thread");
	l->started = 1;
	return 0;
}

void tfj_leader_stop(struct tfj_leader *l)
{
	if (!l || !l->started)
		return;
	pthread_mutex_lock(&l->mu);
	l->stop = 1;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->thread, NULL);
	l->started = 0;
	if (atomic_exchange(&l->leader, 0))
		release(l);
}

void tfj_leader_free(struct tfj_leader *l)
{
	if (!l)
		return;
	tfj_leader_stop(l);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cond);
	free(l->ns);
	free(l->name);
	free(l->identity);
	free(l);
}

int tfj_leader_is_leader(struct tfj_leader *l)
{
	return l && atomic_load(&l->leader);
}
