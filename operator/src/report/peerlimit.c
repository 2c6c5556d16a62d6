/*
 * peerlimit.c - per-peer token buckets for failed report calls (see
 * peerlimit.h).
 */
#include "report/peerlimit.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

#define WAYS 4

struct peer {
	char addr[TFJ_PEERLIMIT_ADDR_MAX];
	int used;
	double tokens;
	uint64_t last_ns;
};

struct tfj_peerlimit {
	pthread_mutex_t mu;
	double qps, burst;
	size_t nsets;
	struct peer *tab;
};

int tfj_peerlimit_new(struct tfj_peerlimit **out, double qps, int burst, size_t entries)
{
	struct tfj_peerlimit *p;

	*out = NULL;
	if (!entries)
		entries = 4096;
	if (entries > (1u << 20))
		return tfj_err_set(TFJ_EINVAL, "peerlimit: table too large");
	if (!(p = calloc(1, sizeof(*p))))
		return tfj_err_set(TFJ_ENOMEM, "peerlimit");
	p->qps = qps;
	p->burst = burst;
	p->nsets = (entries + WAYS - 1) / WAYS;
	if (!(p->tab = calloc(p->nsets * WAYS, sizeof(*p->tab)))) {
		free(p);
		return tfj_err_set(TFJ_ENOMEM, "peerlimit");
	}
	pthread_mutex_init(&p->mu, NULL);
	*out = p;
	return 0;
}

void tfj_peerlimit_free(struct tfj_peerlimit *p)
{
	if (!p)
		return;
	pthread_mutex_destroy(&p->mu);
	free(p->tab);
	free(p);
}

static int unlimited(const struct tfj_peerlimit *p)
{
	return p->qps <= 0 || p->burst < 1;
}

/* FNV-1a over the address: spreads peers over the sets. */
static struct peer *set_of(struct tfj_peerlimit *p, const char *addr)
{
	uint64_t h = 1469598103934665603ull;
	const unsigned char *c = (const unsigned char *)addr, *end = c + TFJ_PEERLIMIT_ADDR_MAX - 1;

	/* Longer addresses are keyed by their first ADDR_MAX - 1 bytes, as stored. */
	for (; *c && c < end; c++)
		h = (h ^ *c) * 1099511628211ull;
	return &p->tab[(h % p->nsets) * WAYS];
}

static void refill(const struct tfj_peerlimit *p, struct peer *e, uint64_t now_ns)
{
	if (now_ns > e->last_ns) {
		e->tokens += (double)(now_ns - e->last_ns) / 1e9 * p->qps;
		if (e->tokens > p->burst)
			e->tokens = p->burst;
	}
	e->last_ns = now_ns;
}

static struct peer *find(struct tfj_peerlimit *p, const char *addr)
{
	struct peer *set = set_of(p, addr);
	int i;

	for (i = 0; i < WAYS; i++)
		if (set[i].used && !strncmp(set[i].addr, addr, sizeof(set[i].addr) - 1))
			return &set[i];
	return NULL;
}

int tfj_peerlimit_allowed(struct tfj_peerlimit *p, const char *peer, uint64_t now_ns)
{
	struct peer *e;
	int ok = 1;

	if (!p || unlimited(p))
		return 1;
	pthread_mutex_lock(&p->mu);
	if ((e = find(p, peer))) {
		refill(p, e, now_ns);
		ok = e->tokens >= 1;
	}
	pthread_mutex_unlock(&p->mu);
	return ok;
}

void tfj_peerlimit_charge(struct tfj_peerlimit *p, const char *peer, uint64_t now_ns)
{
	struct peer *e, *set;
	int i;

	if (!p || unlimited(p))
		return;
	pthread_mutex_lock(&p->mu);
	if (!(e = find(p, peer))) {
		/* The slot that forgives least if lost: free, or the fullest bucket. */
		set = set_of(p, peer);
		e = &set[0];
		for (i = 0; i < WAYS; i++) {
			if (!set[i].used) {
				e = &set[i];
				break;
			}
			refill(p, &set[i], now_ns);
			if (set[i].tokens > e->tokens)
				e = &set[i];
		}
		memset(e, 0, sizeof(*e));
		strncpy(e->addr, peer, sizeof(e->addr) - 1);
		e->used = 1;
		e->tokens = p->burst;
		e->last_ns = now_ns;
	}
	refill(p, e, now_ns);
	e->tokens = e->tokens >= 1 ? e->tokens - 1 : 0;
	pthread_mutex_unlock(&p->mu);
}

void tfj_peerlimit_addr(char *out, size_t cap, const char *grpc_peer)
{
	const char *s = grpc_peer ? grpc_peer : "", *end = NULL;
	size_t n;

	if (!cap)
		return;
	if (!strncmp(s, "ipv4:", 5)) {
		s += 5;
		end = strrchr(s, ':');
	} else if (!strncmp(s, "ipv6:[", 6)) {
		s += 6;
		end = strchr(s, ']');
	}
	n = end ? (size_t)(end - s) : strlen(s);
	if (n >= cap)
		n = cap - 1;
	memcpy(out, s, n);
	out[n] = '\0';
}
