/*
 * expect.c - pending-write bookkeeping per TFJob.
 */
#include "kube/expect.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/clock.h>
#include <tfj/err.h>

#include "kube/ratelimit.h"
#include "kube/strmap.h"

#define RV_MAX 64

struct rec {
	struct tfj_strmap items;   /* "c:pod/name" or "d:pod/name" -> deadline (ns) */
	char status_rv[RV_MAX];    /* "" when no status write is pending */
	char seen_rv[RV_MAX];      /* the newest version of the job the informer showed */
	uint64_t status_deadline;
};

struct tfj_expect {
	pthread_mutex_t mu;
	struct tfj_strmap jobs;    /* key -> struct rec* */
	uint64_t ttl_ns;
};

#define U2P(u) ((void *)(uintptr_t)(u))
#define P2U(p) ((uint64_t)(uintptr_t)(p))

int tfj_expect_new(struct tfj_expect **out, uint64_t ttl_ms)
{
	struct tfj_expect *e = calloc(1, sizeof(*e));
	*out = NULL;
	if (!e)
		return tfj_err_set(TFJ_ENOMEM, "expectations");
	pthread_mutex_init(&e->mu, NULL);
	e->ttl_ns = (ttl_ms ? ttl_ms : TFJ_EXPECT_TTL_MS_DEFAULT) * 1000000ull;
	*out = e;
	return 0;
}

static void rec_free(void *p)
{
	struct rec *r = p;
	if (!r)
		return;
	tfj_strmap_free(&r->items, NULL);
	free(r);
}

void tfj_expect_free(struct tfj_expect *e)
{
	if (!e)
		return;
	tfj_strmap_free(&e->jobs, rec_free);
	pthread_mutex_destroy(&e->mu);
	free(e);
}

static int item_key(char *out, size_t outlen, char op, const char *kind, const char *name)
{
	int n = snprintf(out, outlen, "%c:%s/%s", op, kind, name);
	return n < 0 || (size_t)n >= outlen ? tfj_err_set(TFJ_EINVAL, "expectation name too long")
					    : 0;
}

static struct rec *get_rec(struct tfj_expect *e, const char *key, int create)
{
	struct rec *r = tfj_strmap_get(&e->jobs, key);
	if (r || !create)
		return r;
	r = calloc(1, sizeof(*r));
	if (!r || tfj_strmap_put(&e->jobs, key, r, NULL)) {
		free(r);
		return NULL;
	}
	return r;
}

static void drop_if_empty(struct tfj_expect *e, const char *key, struct rec *r)
{
	if (r && r->items.n == 0 && !r->status_rv[0] && !r->seen_rv[0]) {
		tfj_strmap_del(&e->jobs, key);
		rec_free(r);
	}
}

static int expect_op(struct tfj_expect *e, const char *key, char op, const char *kind,
		     const char *name)
{
	char ik[512];
	struct rec *r;
	int rc;

	if ((rc = item_key(ik, sizeof(ik), op, kind, name)))
		return rc;
	pthread_mutex_lock(&e->mu);
	r = get_rec(e, key, 1);
	rc = r ? tfj_strmap_put(&r->items, ik, U2P(tfj_clock_mono_ns() + e->ttl_ns), NULL)
	       : tfj_err_set(TFJ_ENOMEM, "expectation");
	pthread_mutex_unlock(&e->mu);
	return rc;
}

static void clear_op(struct tfj_expect *e, const char *key, char op, const char *kind,
		     const char *name)
{
	char ik[512];
	struct rec *r;

	if (item_key(ik, sizeof(ik), op, kind, name))
		return;
	pthread_mutex_lock(&e->mu);
	r = get_rec(e, key, 0);
	if (r) {
		tfj_strmap_del(&r->items, ik);
		drop_if_empty(e, key, r);
	}
	pthread_mutex_unlock(&e->mu);
}

int tfj_expect_create(struct tfj_expect *e, const char *key, const char *kind, const char *name)
{
	return expect_op(e, key, 'c', kind, name);
}

int tfj_expect_delete(struct tfj_expect *e, const char *key, const char *kind, const char *name)
{
	return expect_op(e, key, 'd', kind, name);
}

void tfj_expect_observe_create(struct tfj_expect *e, const char *key, const char *kind,
			       const char *name)
{
	clear_op(e, key, 'c', kind, name);
}

void tfj_expect_observe_delete(struct tfj_expect *e, const char *key, const char *kind,
			       const char *name)
{
	clear_op(e, key, 'd', kind, name);
}

void tfj_expect_cancel_create(struct tfj_expect *e, const char *key, const char *kind,
			      const char *name)
{
	clear_op(e, key, 'c', kind, name);
}

void tfj_expect_cancel_delete(struct tfj_expect *e, const char *key, const char *kind,
			      const char *name)
{
	clear_op(e, key, 'd', kind, name);
}

int tfj_expect_rv_reached(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int da = la > 0 && strspn(a, "0123456789") == la;
	int db = lb > 0 && strspn(b, "0123456789") == lb;

	if (!da || !db)
		return strcmp(a, b) == 0;
	while (la > 1 && *a == '0') {
		a++;
		la--;
	}
	while (lb > 1 && *b == '0') {
		b++;
		lb--;
	}
	if (la != lb)
		return la > lb;
	return strcmp(a, b) >= 0;
}

int tfj_expect_status(struct tfj_expect *e, const char *key, const char *new_rv)
{
	struct rec *r;
	int rc = 0;

	if (!new_rv || !*new_rv || strlen(new_rv) >= RV_MAX)
		return 0; /* nothing we could wait for */
	pthread_mutex_lock(&e->mu);
	r = get_rec(e, key, 1);
	if (!r) {
		rc = tfj_err_set(TFJ_ENOMEM, "expectation");
	} else if (r->seen_rv[0] && tfj_expect_rv_reached(r->seen_rv, new_rv)) {
		/* The watch event beat the HTTP response: already observed. */
	} else {
		snprintf(r->status_rv, sizeof(r->status_rv), "%s", new_rv);
		r->status_deadline = tfj_clock_mono_ns() + e->ttl_ns;
	}
	pthread_mutex_unlock(&e->mu);
	return rc;
}

void tfj_expect_observe_job(struct tfj_expect *e, const char *key, const char *rv)
{
	struct rec *r;

	if (!rv || strlen(rv) >= RV_MAX)
		return;
	pthread_mutex_lock(&e->mu);
	/* Remember the version even with nothing pending: a status write whose
	 * response arrives after its own watch event must not wait for it. */
	r = get_rec(e, key, 1);
	if (r) {
		snprintf(r->seen_rv, sizeof(r->seen_rv), "%s", rv);
		if (r->status_rv[0] && tfj_expect_rv_reached(rv, r->status_rv))
			r->status_rv[0] = '\0';
	}
	pthread_mutex_unlock(&e->mu);
}

struct exp_ctx {
	uint64_t now;
	size_t live;
	char **dead;
	size_t ndead;
};

static int count_live(void *ud, const char *k, void *val)
{
	struct exp_ctx *c = ud;
	if (P2U(val) > c->now)
		c->live++;
	return 0;
}

static size_t pending_locked(struct tfj_expect *e, const char *key)
{
	struct rec *r = get_rec(e, key, 0);
	struct exp_ctx c = { tfj_clock_mono_ns(), 0, NULL, 0 };

	if (!r)
		return 0;
	tfj_strmap_each(&r->items, count_live, &c);
	if (r->status_rv[0] && r->status_deadline > c.now)
		c.live++;
	if (c.live == 0 && !r->seen_rv[0]) {
		/* Everything expired: forget it so the table does not grow. */
		tfj_strmap_del(&e->jobs, key);
		rec_free(r);
	}
	return c.live;
}

size_t tfj_expect_pending(struct tfj_expect *e, const char *key)
{
	size_t n;
	pthread_mutex_lock(&e->mu);
	n = pending_locked(e, key);
	pthread_mutex_unlock(&e->mu);
	return n;
}

int tfj_expect_satisfied(struct tfj_expect *e, const char *key)
{
	return tfj_expect_pending(e, key) == 0;
}

void tfj_expect_forget(struct tfj_expect *e, const char *key)
{
	pthread_mutex_lock(&e->mu);
	rec_free(tfj_strmap_del(&e->jobs, key));
	pthread_mutex_unlock(&e->mu);
}
