/*
 * peers.c - peer discovery from TF_CONFIG and the start-up wait (see peers.h).
 */
#include "peers.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <tfj/err.h>
#include <tfj/log.h>
#include <tfj/parse.h>

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define LOG_EVERY_MS 15000

int tfj_peers_parse_mode(enum tfj_peers_mode *out, const char *s)
{
	if (strcmp(s, "none") == 0)
		*out = TFJ_PEERS_NONE;
	else if (strcmp(s, "dns") == 0)
		*out = TFJ_PEERS_DNS;
	else if (strcmp(s, "tcp") == 0)
		*out = TFJ_PEERS_TCP;
	else
		return tfj_err_set(TFJ_EINVAL, "peer wait mode '%s': expected none, dns or tcp", s);
	return 0;
}

static int type_listed(const char *types, const char *type)
{
	size_t tl = strlen(type);
	const char *p = types;

	if (!types)
		return 1;
	while (*p) {
		const char *comma = strchr(p, ',');
		size_t l = comma ? (size_t)(comma - p) : strlen(p);

		if (l == tl && memcmp(p, type, tl) == 0)
			return 1;
		if (!comma)
			break;
		p = comma + 1;
	}
	return 0;
}

static int split_hostport(char **host, char **port, const char *hp)
{
	char h[TFJ_TFCONFIG_MAX_HOSTLEN], p[8];
	int pn, rc;

	rc = tfj_parse_hostport(h, sizeof(h), &pn, hp, 0, "peer");
	if (rc)
		return tfj_err_set(TFJ_EPARSE, "%s", tfj_err_detail());
	snprintf(p, sizeof(p), "%d", pn);
	*host = strdup(h);
	*port = strdup(p);
	if (!*host || !*port) {
		free(*host);
		free(*port);
		*host = *port = NULL;
		return tfj_err_set(TFJ_ENOMEM, "peer list");
	}
	return 0;
}

int tfj_peers_collect(struct tfj_peers *out, const struct tfj_tfconfig *cfg, const char *types)
{
	size_t j, k, total = 0;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	for (j = 0; j < cfg->njobs; j++)
		total += cfg->jobs[j].nhosts;
	if (total == 0)
		return 0;
	out->v = calloc(total, sizeof(*out->v));
	if (!out->v)
		return tfj_err_set(TFJ_ENOMEM, "peer list");
	for (j = 0; j < cfg->njobs; j++) {
		const struct tfj_tfconfig_job *job = &cfg->jobs[j];

		for (k = 0; k < job->nhosts; k++) {
			struct tfj_peer *p = &out->v[out->n];
			size_t m;
			int dup = 0;

			if (cfg->has_task && strcmp(cfg->task_type, job->name) == 0 &&
			    cfg->task_index == tfj_tfconfig_host_index(job, k))
				continue; /* ourselves: our server starts inside the child */
			if (!type_listed(types, job->name))
				continue;
			rc = split_hostport(&p->host, &p->port, job->hosts[k]);
			if (rc < 0)
				goto out;
			for (m = 0; m < out->n; m++) {
				if (strcmp(out->v[m].host, p->host) == 0 &&
				    strcmp(out->v[m].port, p->port) == 0)
					dup = 1;
			}
			p->type = strdup(job->name);
			p->index = tfj_tfconfig_host_index(job, k);
			if (!p->type) {
				rc = tfj_err_set(TFJ_ENOMEM, "peer list");
				out->n++;
				goto out;
			}
			out->n++;
			if (dup) {
				out->n--;
				free(p->host);
				free(p->port);
				free(p->type);
				memset(p, 0, sizeof(*p));
			}
		}
	}
out:
	if (rc < 0)
		tfj_peers_free(out);
	return rc;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64*: jitter only, no need for quality beyond spreading retries. */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

static int tcp_check(const struct addrinfo *ai, int timeout_ms)
{
	for (; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
				ai->ai_protocol);
		int ok = 0;

		if (fd < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			ok = 1;
		} else if (errno == EINPROGRESS) {
			struct pollfd pf = { .fd = fd, .events = POLLOUT };
			int err = 0;
			socklen_t el = sizeof(err);

			if (poll(&pf, 1, timeout_ms) == 1 &&
			    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0)
				ok = 1;
		}
		close(fd);
		if (ok)
			return 1;
	}
	return 0;
}

/* 1 when the peer is ready for the mode. */
static int check_peer(struct tfj_peer *p, const struct tfj_peers_wait_opts *o)
{
	struct addrinfo hints, *res = NULL;
	int ok;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	if (getaddrinfo(p->host, p->port, &hints, &res) != 0)
		return 0;
	p->resolved = 1;
	ok = 1;
	if (o->mode == TFJ_PEERS_TCP) {
		int ms = (int)(o->connect_timeout_s * 1000.0);
		ok = tcp_check(res, ms > 0 ? ms : 1);
		p->connected = ok;
	}
	freeaddrinfo(res);
	return ok;
}

/* Sleeps up to ms, returning TFJ_ECANCELED if the cancel fd fires. */
static int nap(const struct tfj_peers_wait_opts *o, int64_t ms, int *cancel_sig)
{
	struct pollfd pf = { .fd = o->cancel_fd, .events = POLLIN };
	int n;

	if (ms <= 0)
		ms = 0;
	n = poll(&pf, o->cancel_fd >= 0 ? 1 : 0, (int)ms);
	if (n > 0 && o->cancel_fd >= 0) {
		struct signalfd_siginfo si;
		if (cancel_sig && read(o->cancel_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			*cancel_sig = (int)si.ssi_signo;
		return tfj_err_set(TFJ_ECANCELED, "peer wait interrupted by a signal");
	}
	return 0;
}

int tfj_peers_wait(struct tfj_peers *p, const struct tfj_peers_wait_opts *o, int *cancel_sig)
{
	int64_t start = mono_ms(), deadline, last_log = start;
	int64_t backoff = BACKOFF_MIN_MS;
	uint64_t rng = (uint64_t)start * 0x9E3779B97F4A7C15ULL ^ (uint64_t)getpid();
	size_t i, attempt = 0;
	int rc;

	if (cancel_sig)
		*cancel_sig = 0;
	if (o->mode == TFJ_PEERS_NONE || p->n == 0)
		return 0;
	deadline = start + (int64_t)(o->timeout_s * 1000.0);
	if (rng == 0)
		rng = 1;
	for (;;) {
		struct tfj_peer *missing = NULL;
		int64_t now, sleep_ms;

		if ((rc = nap(o, 0, cancel_sig)) < 0)
			return rc;
		attempt++;
		for (i = 0; i < p->n; i++) {
			int ready = o->mode == TFJ_PEERS_TCP ? p->v[i].connected : p->v[i].resolved;

			if (!ready && !check_peer(&p->v[i], o) && !missing)
				missing = &p->v[i];
		}
		if (!missing) {
			tfj_log_info("all peers ready");
			return 0;
		}
		now = mono_ms();
		if (now >= deadline)
			return tfj_err_set(TFJ_ETIMEOUT, "peer %s:%d (%s:%s) not %s after %.0f s",
					   missing->type, missing->index, missing->host, missing->port,
					   o->mode == TFJ_PEERS_TCP ? (missing->resolved ? "accepting TCP"
								       : "resolvable")
								    : "resolvable",
					   o->timeout_s);
		if (attempt == 1 || now - last_log >= LOG_EVERY_MS) {
			tfj_log_info("waiting for peer", "type", missing->type, "host", missing->host,
				     "port", missing->port);
			last_log = now;
		}
		/* Full jitter in the upper half: spreads restarts of many pods. */
		sleep_ms = backoff / 2 + (int64_t)(rng_next(&rng) % (uint64_t)(backoff / 2 + 1));
		if (sleep_ms > deadline - now)
			sleep_ms = deadline - now;
		if ((rc = nap(o, sleep_ms, cancel_sig)) < 0)
			return rc;
		backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
	}
}

void tfj_peers_free(struct tfj_peers *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->n; i++) {
		free(p->v[i].type);
		free(p->v[i].host);
		free(p->v[i].port);
	}
	free(p->v);
	p->v = NULL;
	p->n = 0;
}
