/*
 * guardmemo.c - the TFJobs whose ps Secret is known to exist, by name.
 */
#include "app/guardmemo.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

#include "kube/strmap.h"

struct note {
	int64_t at;      /* when the Secret was noted */
	char name[TFJ_GUARDMEMO_NAME_MAX];
	uint64_t used;   /* LRU clock: the least recently used uid goes first */
};

struct tfj_guardmemo {
	pthread_mutex_t mu;
	struct tfj_strmap by_uid;  /* uid -> struct note* */
	size_t max_jobs;
	int64_t recheck_ms;
	uint64_t tick;
};

int tfj_guardmemo_new(struct tfj_guardmemo **out, size_t max_jobs, int64_t recheck_ms)
{
	struct tfj_guardmemo *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (!m)
		return tfj_err_set(TFJ_ENOMEM, "guard memo");
	pthread_mutex_init(&m->mu, NULL);
	m->max_jobs = max_jobs ? max_jobs : TFJ_GUARDMEMO_MAX_JOBS_DEFAULT;
	m->recheck_ms = recheck_ms > 0 ? recheck_ms : TFJ_GUARDMEMO_RECHECK_MS_DEFAULT;
	*out = m;
	return 0;
}

void tfj_guardmemo_free(struct tfj_guardmemo *m)
{
	if (!m)
		return;
	tfj_strmap_free(&m->by_uid, free);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

int tfj_guardmemo_secret(struct tfj_guardmemo *m, char *name, size_t namelen, const char *uid,
			 int64_t now_ms)
{
	struct note *n;
	int fresh = 0;

	if (namelen)
		name[0] = '\0';
	if (!m || !uid || !*uid)
		return 0;
	pthread_mutex_lock(&m->mu);
	n = tfj_strmap_get(&m->by_uid, uid);
	if (n) {
		n->used = ++m->tick;
		if (strlen(n->name) < namelen) {
			memcpy(name, n->name, strlen(n->name) + 1);
			fresh = now_ms - n->at < m->recheck_ms;
		}
	}
	pthread_mutex_unlock(&m->mu);
	return fresh;
}

struct lru {
	const char *key;
	uint64_t used;
};

static int find_lru(void *ud, const char *key, void *val)
{
	struct lru *l = ud;
	const struct note *n = val;

	if (!l->key || n->used < l->used) {
		l->key = key;
		l->used = n->used;
	}
	return 0;
}

void tfj_guardmemo_note(struct tfj_guardmemo *m, const char *uid, const char *name,
			int64_t now_ms)
{
	struct note *n;

	if (!m || !uid || !*uid || !name || !*name || strlen(name) >= TFJ_GUARDMEMO_NAME_MAX)
		return;
	pthread_mutex_lock(&m->mu);
	n = tfj_strmap_get(&m->by_uid, uid);
	if (!n) {
		if (m->by_uid.n >= m->max_jobs) {
			struct lru l = { NULL, 0 };

			tfj_strmap_each(&m->by_uid, find_lru, &l);
			if (l.key)
				free(tfj_strmap_del(&m->by_uid, l.key));
		}
		n = calloc(1, sizeof(*n));
		if (n && tfj_strmap_put(&m->by_uid, uid, n, NULL)) {
			free(n);
			n = NULL;
		}
	}
	if (n) {
		n->at = now_ms;
		memcpy(n->name, name, strlen(name) + 1);
		n->used = ++m->tick;
	}
	pthread_mutex_unlock(&m->mu);
}

void tfj_guardmemo_forget(struct tfj_guardmemo *m, const char *uid)
{
	if (!m || !uid)
		return;
	pthread_mutex_lock(&m->mu);
	free(tfj_strmap_del(&m->by_uid, uid));
	pthread_mutex_unlock(&m->mu);
}

size_t tfj_guardmemo_size(struct tfj_guardmemo *m)
{
	size_t n;

	if (!m)
		return 0;
	pthread_mutex_lock(&m->mu);
	n = m->by_uid.n;
	pthread_mutex_unlock(&m->mu);
	return n;
}
