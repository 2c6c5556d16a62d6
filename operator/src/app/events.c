/*
 * events.c - a bounded FIFO of Events and the thread that posts them.
 */
#include "app/events.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include <tfj/clock.h>
#include <tfj/err.h>
#include <tfj/log.h>

#include "kube/apipath.h"
#include "tfjob/jobstatus.h"
#include "tfjob/tfjob.h"

struct ev {
	struct ev *next;
	struct timespec at;   /* when it was posted (CLOCK_REALTIME) */
	uint64_t id;          /* unique per recorder: the name's suffix */
	char type[16];
	char reason[128];
	char ns[64];
	char name[254];
	char uid[64];
	int once;             /* tfj_events_post_once */
	char msg[];           /* NUL-terminated, at most TFJ_EVENTS_MAX_MESSAGE bytes */
};

/*
 * An event already posted, for aggregation: its key (a hash of the
 * involved object, type, reason and message, as the event correlator of
 * client-go keys them), the Event's name and its count. Only the sender
 * thread reads or writes these.
 */
struct seen {
	uint64_t key;         /* 0 = free slot */
	uint64_t used;        /* LRU clock: the slot least recently used goes first */
	int32_t count;
	char ns[64];
	char ev_name[256];
};

struct tfj_events {
	struct tfj_kube *k;   /* borrowed */
	char *instance;
	size_t max_queued;

	pthread_mutex_t mu;
	pthread_cond_t cond;  /* queue not empty, stop, or idle (for flush) */
	struct ev *head, *tail;
	size_t queued;
	int busy;             /* the sender holds an event it took off the queue */
	int stop;
	pthread_t th;
	int started;

	_Atomic uint64_t posted, errors, dropped, aggregated;
	_Atomic uint64_t last_id;

	struct seen seen[TFJ_EVENTS_AGGREGATE];  /* the sender's; no lock */
	uint64_t tick;
	int no_patch;         /* PATCH refused (403: RBAC without it): post every event */
};

/* Copies s into dst (cap bytes with the NUL), cut at a UTF-8 character boundary. */
static void copy_cut(char *dst, size_t cap, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n >= cap) {
		n = cap - 1;
		/* Step back over continuation bytes so no character is cut in half. */
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
	}
	if (n)
		memcpy(dst, s, n);
	dst[n] = '\0';
}

/* The Event object for e, named `name`; NULL on no memory. */
static cJSON *build(const struct tfj_events *rec, const struct ev *e, const char *name)
{
	char ts[32];
	cJSON *ev = cJSON_CreateObject(), *meta, *inv, *src;

	tfj_jobstatus_format_time(ts, sizeof(ts), (int64_t)e->at.tv_sec);
	if (!ev || !cJSON_AddStringToObject(ev, "apiVersion", "v1") ||
	    !cJSON_AddStringToObject(ev, "kind", "Event") ||
	    !(meta = cJSON_AddObjectToObject(ev, "metadata")) ||
	    !cJSON_AddStringToObject(meta, "name", name) ||
	    !cJSON_AddStringToObject(meta, "namespace", e->ns) ||
	    !(inv = cJSON_AddObjectToObject(ev, "involvedObject")) ||
	    !cJSON_AddStringToObject(inv, "apiVersion", TFJ_TFJOB_API_VERSION) ||
	    !cJSON_AddStringToObject(inv, "kind", TFJ_TFJOB_KIND) ||
	    !cJSON_AddStringToObject(inv, "name", e->name) ||
	    !cJSON_AddStringToObject(inv, "namespace", e->ns) ||
	    !cJSON_AddStringToObject(inv, "uid", e->uid) ||
	    !cJSON_AddStringToObject(ev, "type", e->type) ||
	    !cJSON_AddStringToObject(ev, "reason", e->reason) ||
	    !cJSON_AddStringToObject(ev, "message", e->msg) ||
	    !cJSON_AddStringToObject(ev, "firstTimestamp", ts) ||
	    !cJSON_AddStringToObject(ev, "lastTimestamp", ts) ||
	    !cJSON_AddNumberToObject(ev, "count", 1) ||
	    !(src = cJSON_AddObjectToObject(ev, "source")) ||
	    !cJSON_AddStringToObject(src, "component", "tfjob-operator") ||
	    !cJSON_AddStringToObject(ev, "reportingComponent", "tfjob-operator") ||
	    !cJSON_AddStringToObject(ev, "reportingInstance", rec->instance)) {
		cJSON_Delete(ev);
		return NULL;
	}
	return ev;
}

/* FNV-1a over the fields that make two events "the same", NUL-separated. */
static uint64_t event_key(const struct ev *e)
{
	const char *f[] = { e->ns, e->name, e->uid, e->type, e->reason, e->msg };
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		for (const unsigned char *p = (const unsigned char *)f[i]; ; p++) {
			h = (h ^ *p) * 1099511628211ull;
			if (!*p)
				break;
		}
	}
	return h ? h : 1; /* 0 marks a free slot */
}

static struct seen *seen_find(struct tfj_events *rec, uint64_t key)
{
	for (size_t i = 0; i < TFJ_EVENTS_AGGREGATE; i++)
		if (rec->seen[i].key == key)
			return &rec->seen[i];
	return NULL;
}

/* A free slot, else the least recently used one. */
static struct seen *seen_victim(struct tfj_events *rec)
{
	struct seen *v = &rec->seen[0];

	for (size_t i = 0; i < TFJ_EVENTS_AGGREGATE; i++) {
		if (!rec->seen[i].key)
			return &rec->seen[i];
		if (rec->seen[i].used < v->used)
			v = &rec->seen[i];
	}
	return v;
}

/*
 * The same event again: count and lastTimestamp of the Event posted before
 * are updated with a merge patch (what client-go's correlator does).
 * TFJ_ENOTFOUND when that Event is gone (events expire after an hour).
 */
static int bump(struct tfj_events *rec, const struct ev *e, struct seen *s)
{
	char path[512], ts[32], body[128];

	if (tfj_apipath_obj(path, sizeof(path), TFJ_APIPATH_CORE, s->ns, "events", s->ev_name,
			    NULL))
		return TFJ_ENOTFOUND;
	tfj_jobstatus_format_time(ts, sizeof(ts), (int64_t)e->at.tv_sec);
	snprintf(body, sizeof(body), "{\"count\":%ld,\"lastTimestamp\":\"%s\"}",
		 (long)s->count + 1, ts);
	return tfj_kube_patch(rec->k, NULL, path, TFJ_KUBE_PATCH_MERGE, body);
}

static void send_one(struct tfj_events *rec, const struct ev *e)
{
	char path[512], name[256];
	uint64_t key = event_key(e);
	struct seen *s = seen_find(rec, key);
	cJSON *obj;
	int rc;

	if (s && e->once) {
		/* Said already (tfj_events_post_once): not even a higher count. */
		s->used = ++rec->tick;
		return;
	}
	if (rec->no_patch)
		s = NULL;
	if (s) {
		rc = bump(rec, e, s);
		if (rc == 0) {
			s->count++;
			s->used = ++rec->tick;
			atomic_fetch_add(&rec->posted, 1);
			atomic_fetch_add(&rec->aggregated, 1);
			return;
		}
		if (rc == TFJ_EFORBIDDEN) {
			/* An older role without events/patch: one Event per event,
			 * as before, rather than none. */
			tfj_log_warn("events cannot be patched: not aggregating", "error",
				     tfj_err_detail());
			rec->no_patch = 1;
		} else if (rc != TFJ_ENOTFOUND) {
			atomic_fetch_add(&rec->errors, 1);
			tfj_log_debug("event not updated", "job", e->name, "reason", e->reason,
				      "error", tfj_err_detail());
			return;
		}
		s->key = 0; /* expired: post it anew */
	}
	snprintf(name, sizeof(name), "%.200s.%llx", e->name, (unsigned long long)e->id);
	if (!(obj = build(rec, e, name))) {
		atomic_fetch_add(&rec->errors, 1);
		return;
	}
	rc = tfj_apipath_coll(path, sizeof(path), TFJ_APIPATH_CORE, e->ns, "events");
	if (!rc)
		rc = tfj_kube_create(rec->k, NULL, path, obj);
	if (rc) {
		atomic_fetch_add(&rec->errors, 1);
		tfj_log_debug("event not posted", "job", e->name, "reason", e->reason, "error",
			      tfj_err_detail());
	} else {
		atomic_fetch_add(&rec->posted, 1);
		s = seen_victim(rec);
		s->key = key;
		s->used = ++rec->tick;
		s->count = 1;
		snprintf(s->ns, sizeof(s->ns), "%s", e->ns);
		snprintf(s->ev_name, sizeof(s->ev_name), "%s", name);
	}
	cJSON_Delete(obj);
}

static void *sender(void *arg)
{
	struct tfj_events *rec = arg;

	pthread_mutex_lock(&rec->mu);
	for (;;) {
		struct ev *e;

		while (!rec->stop && !rec->head)
			pthread_cond_wait(&rec->cond, &rec->mu);
		if (rec->stop)
			break;
		e = rec->head;
		rec->head = e->next;
		if (!rec->head)
			rec->tail = NULL;
		rec->queued--;
		rec->busy = 1;
		pthread_mutex_unlock(&rec->mu);
		send_one(rec, e);
		free(e);
		pthread_mutex_lock(&rec->mu);
		rec->busy = 0;
		pthread_cond_broadcast(&rec->cond);
	}
	pthread_mutex_unlock(&rec->mu);
	return NULL;
}

int tfj_events_new(struct tfj_events **out, struct tfj_kube *k,
		   const struct tfj_events_opts *opts)
{
	struct tfj_events *rec;
	const char *inst = opts && opts->instance && *opts->instance ? opts->instance
								      : "tfjob-operator";

	*out = NULL;
	if (!k)
		return tfj_err_set(TFJ_EINVAL, "events: no API client");
	rec = calloc(1, sizeof(*rec));
	if (!rec || !(rec->instance = strdup(inst))) {
		free(rec);
		return tfj_err_set(TFJ_ENOMEM, "events");
	}
	rec->k = k;
	rec->max_queued = opts && opts->max_queued ? opts->max_queued
						   : TFJ_EVENTS_MAX_QUEUED_DEFAULT;
	pthread_mutex_init(&rec->mu, NULL);
	tfj_clock_cond_init(&rec->cond);
	if (pthread_create(&rec->th, NULL, sender, rec) != 0) {
		tfj_events_free(rec);
		return tfj_err_set(TFJ_ENOMEM, "events: cannot start the sender thread");
	}
	rec->started = 1;
	*out = rec;
	return 0;
}

void tfj_events_free(struct tfj_events *rec)
{
	struct ev *e, *next;
	size_t left = 0;

	if (!rec)
		return;
	pthread_mutex_lock(&rec->mu);
	rec->stop = 1;
	pthread_cond_broadcast(&rec->cond);
	pthread_mutex_unlock(&rec->mu);
	if (rec->started)
		pthread_join(rec->th, NULL);
	for (e = rec->head; e; e = next) {
		next = e->next;
		free(e);
		left++;
	}
	if (left) {
		char n[32];

		snprintf(n, sizeof(n), "%zu", left);
		tfj_log_info("events dropped at shutdown", "count", n);
	}
	pthread_cond_destroy(&rec->cond);
	pthread_mutex_destroy(&rec->mu);
	free(rec->instance);
	free(rec);
}

/*
 * The event's name suffix: its time in nanoseconds, as client-go names
 * events, but strictly increasing per recorder, so two events of one job
 * in the same clock tick do not collide (the second would get 409 and be
 * lost).
 */
static uint64_t next_id(struct tfj_events *rec, const struct timespec *at)
{
	uint64_t id = (uint64_t)at->tv_sec * 1000000000ull + (uint64_t)at->tv_nsec;
	uint64_t prev = atomic_load(&rec->last_id);

	do {
		if (id <= prev)
			id = prev + 1;
	} while (!atomic_compare_exchange_weak(&rec->last_id, &prev, id));
	return id;
}

static void post(struct tfj_events *rec, const struct tfj_events_ref *ref, const char *type,
		 const char *reason, const char *msg, int once)
{
	size_t mlen = msg ? strlen(msg) : 0;
	struct ev *e;

	if (!rec || !ref || !type || !reason)
		return;
	if (mlen > TFJ_EVENTS_MAX_MESSAGE)
		mlen = TFJ_EVENTS_MAX_MESSAGE;
	e = calloc(1, sizeof(*e) + mlen + 1);
	if (!e) {
		atomic_fetch_add(&rec->dropped, 1);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &e->at);
	e->id = next_id(rec, &e->at);
	e->once = once;
	copy_cut(e->type, sizeof(e->type), type);
	copy_cut(e->reason, sizeof(e->reason), reason);
	copy_cut(e->ns, sizeof(e->ns), ref->ns);
	copy_cut(e->name, sizeof(e->name), ref->name);
	copy_cut(e->uid, sizeof(e->uid), ref->uid);
	copy_cut(e->msg, mlen + 1, msg);
	pthread_mutex_lock(&rec->mu);
	if (rec->stop || rec->queued >= rec->max_queued) {
		pthread_mutex_unlock(&rec->mu);
		atomic_fetch_add(&rec->dropped, 1);
		free(e);
		return;
	}
	if (rec->tail)
		rec->tail->next = e;
	else
		rec->head = e;
	rec->tail = e;
	rec->queued++;
	pthread_cond_broadcast(&rec->cond);
	pthread_mutex_unlock(&rec->mu);
}

void tfj_events_post(struct tfj_events *rec, const struct tfj_events_ref *ref, const char *type,
		     const char *reason, const char *msg)
{
	post(rec, ref, type, reason, msg, 0);
}

void tfj_events_post_once(struct tfj_events *rec, const struct tfj_events_ref *ref,
			  const char *type, const char *reason, const char *msg)
{
	post(rec, ref, type, reason, msg, 1);
}

int tfj_events_flush(struct tfj_events *rec, long timeout_ms)
{
	struct timespec ts;
	int rc = 0;

	if (!rec)
		return 0;
	tfj_clock_deadline(&ts, timeout_ms > 0 ? (uint64_t)timeout_ms : 0);
	pthread_mutex_lock(&rec->mu);
	while ((rec->head || rec->busy) && !rec->stop)
		if (pthread_cond_timedwait(&rec->cond, &rec->mu, &ts) == ETIMEDOUT) {
			rc = tfj_err_set(TFJ_ETIMEOUT, "events: %zu still queued", rec->queued);
			break;
		}
	pthread_mutex_unlock(&rec->mu);
	return rc;
}

uint64_t tfj_events_count(struct tfj_events *rec, const char *result)
{
	if (!rec || !result)
		return 0;
	if (!strcmp(result, "success"))
		return atomic_load(&rec->posted);
	if (!strcmp(result, "error"))
		return atomic_load(&rec->errors);
	if (!strcmp(result, "dropped"))
		return atomic_load(&rec->dropped);
	if (!strcmp(result, "aggregated"))
		return atomic_load(&rec->aggregated);
	return 0;
}

int tfj_events_metrics(struct tfj_events *rec, struct tfj_buf *out)
{
	size_t queued;

	if (!rec)
		return 0;
	pthread_mutex_lock(&rec->mu);
	queued = rec->queued;
	pthread_mutex_unlock(&rec->mu);
	return tfj_buf_printf(out,
		"# HELP tfjob_operator_events_total Kubernetes events: posted, failed, or dropped "
		"because the queue was full.\n"
		"# TYPE tfjob_operator_events_total counter\n"
		"tfjob_operator_events_total{result=\"success\"} %llu\n"
		"tfjob_operator_events_total{result=\"error\"} %llu\n"
		"tfjob_operator_events_total{result=\"dropped\"} %llu\n"
		"# HELP tfjob_operator_events_aggregated_total Events posted as a higher count "
		"on an identical earlier Event.\n"
		"# TYPE tfjob_operator_events_aggregated_total counter\n"
		"tfjob_operator_events_aggregated_total %llu\n"
		"# HELP tfjob_operator_events_queued Events waiting to be posted.\n"
		"# TYPE tfjob_operator_events_queued gauge\n"
		"tfjob_operator_events_queued %zu\n",
		(unsigned long long)atomic_load(&rec->posted),
		(unsigned long long)atomic_load(&rec->errors),
		(unsigned long long)atomic_load(&rec->dropped),
		(unsigned long long)atomic_load(&rec->aggregated), queued) ? TFJ_ETOOBIG : 0;
}
