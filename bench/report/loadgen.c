/*
 * loadgen.c - see loadgen.h. Calls are paced on an absolute schedule (token
 * i's n-th call is due at start + n * period + i * period / tokens), so a
 * slow reply delays the thread's next calls instead of thinning the load;
 * how late calls started is reported next to the latencies.
 */
#include "loadgen.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include <tfj/clock.h>

#include "jwt_sign.h"
#include "report/jwtclaims.h"
#include "report/reportmsg.h"
#include "report_client.h"

#define AUD_FOR_FORGE "tfjob-report"
#define LINE_MAX_BYTES 16384
#define NSTATUS 17

struct agent {
	char job[32], job_uid[64], pod[64];
	int idx;
	char *tok;
};

struct run {
	const struct tfj_loadgen_opts *o;
	struct agent *ag;
	int port;
	char ns[64];
	uint64_t t0, end, steady;
	EVP_PKEY *other;
};

struct worker {
	struct run *r;
	int id;
	pthread_t th;
	long by_status[NSTATUS];
	long calls, late, steady_n;
	uint64_t max_late;
	double *lat_ms;           /* steady phase only */
	size_t lat_cap;
};

static void sleep_until(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
		;
}

static grpc_status_code beat(grpc_channel *ch, const char *ns, const struct agent *a,
			     const char *tok)
{
	Tfj__Report__V1__ReplicaRef ref;
	Tfj__Report__V1__HeartbeatRequest hb = TFJ__REPORT__V1__HEARTBEAT_REQUEST__INIT;

	rc_ref(&ref, ns, a->job, a->job_uid, "worker", a->idx, a->pod);
	hb.replica = &ref;
	hb.child_running = 1;
	return rc_call(ch, TFJ_REPORT_PATH_HEARTBEAT, &hb.base, NULL, 0, tok, NULL);
}

static void *valid_main(void *arg)
{
	struct worker *w = arg;
	const struct tfj_loadgen_opts *o = w->r->o;
	uint64_t period = (uint64_t)o->period_s * 1000000000u, due, t1, t2;
	char target[64];
	grpc_channel *ch = NULL;
	int n, i;

	snprintf(target, sizeof(target), "127.0.0.1:%d", w->r->port);
	if (tfj_grpc_channel_new(&ch, target, NULL, NULL))
		return NULL;
	for (n = 0;; n++) {
		for (i = w->id; i < o->tokens; i += o->threads) {
			due = w->r->t0 + (uint64_t)n * period + (uint64_t)i * period / (uint64_t)o->tokens;
			if (due >= w->r->end)
				goto out;
			sleep_until(due);
			t1 = tfj_clock_mono_ns();
			w->by_status[beat(ch, w->r->ns, &w->r->ag[i], w->r->ag[i].tok) % NSTATUS]++;
			t2 = tfj_clock_mono_ns();
			w->calls++;
			if (t1 - due > w->max_late)
				w->max_late = t1 - due;
			w->late += t1 - due > 100000000u;
			if (due >= w->r->steady && (size_t)w->steady_n < w->lat_cap)
				w->lat_ms[w->steady_n++] = (double)(t2 - t1) / 1e6;
		}
	}
out:
	grpc_channel_destroy(ch);
	return NULL;
}

/* The real token's claims with a jti of its own, signed by r->other under the real kid. */
static char *forge(const struct run *r, const char *real, long serial)
{
	struct tfj_jwtclaims c;
	unsigned char *payload = NULL;
	size_t len = 0;
	const char *d1 = strchr(real, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
	char hdr[256], jti[64], *body = NULL, *t = NULL;
	cJSON *p = NULL;

	if (tfj_jwtclaims_check(&c, real, AUD_FOR_FORGE, tfj_clock_unix_ms()) != TFJ_JWT_OK ||
	    !d2 || tfj_jwtclaims_b64url(&payload, &len, d1 + 1, (size_t)(d2 - d1 - 1)))
		goto out;
	p = cJSON_ParseWithLength((const char *)payload, len);
	snprintf(jti, sizeof(jti), "forged-%ld", serial);
	if (!p || !cJSON_ReplaceItemInObject(p, "jti", cJSON_CreateString(jti)) ||
	    !(body = cJSON_PrintUnformatted(p)))
		goto out;
	snprintf(hdr, sizeof(hdr), "{\"alg\":\"RS256\",\"kid\":\"%s\"}", c.kid);
	t = js_sign(r->other, hdr, body);
out:
	cJSON_Delete(p);
	free(body);
	free(payload);
	return t;
}

static void *forger_main(void *arg)
{
	struct worker *w = arg;
	const struct tfj_loadgen_opts *o = w->r->o;
	const struct agent *a = &w->r->ag[(size_t)w->id * (size_t)o->tokens / (size_t)o->forgers];
	uint64_t gap = (uint64_t)(1e9 / o->forger_qps), due;
	char target[64];
	grpc_channel *ch = NULL;
	long k;

	if (o->shared_peer)
		snprintf(target, sizeof(target), "127.0.0.1:%d", w->r->port);
	else
		snprintf(target, sizeof(target), "ipv6:[::1]:%d", w->r->port);
	if (tfj_grpc_channel_new(&ch, target, NULL, NULL))
		return NULL;
	for (k = 0;; k++) {
		char *tok;

		due = w->r->t0 + (uint64_t)k * gap + (uint64_t)w->id * gap / (uint64_t)o->forgers;
		if (due >= w->r->end)
			break;
		tok = forge(w->r, a->tok, (long)w->id * 1000000 + k);
		sleep_until(due);
		w->by_status[(tok ? beat(ch, w->r->ns, a, tok) : GRPC_STATUS_INTERNAL) % NSTATUS]++;
		w->calls++;
		free(tok);
	}
	grpc_channel_destroy(ch);
	return NULL;
}

/* "T job uid idx token" into *a (the token malloc'd); 0 on success. */
static int parse_agent(struct agent *a, char *line)
{
	char *f[4], *p = line + 2, *end = NULL;
	long idx;
	int i;

	for (i = 0; i < 4; i++) {
		f[i] = p;
		p = strchr(p, i < 3 ? ' ' : '\n');
		if (!p)
			return -1;
		*p++ = '\0';
	}
	idx = strtol(f[2], &end, 10);
	if (*end || idx < 0 || idx > 100000 || strlen(f[0]) >= sizeof(a->job) ||
	    strlen(f[1]) >= sizeof(a->job_uid))
		return -1;
	snprintf(a->job, sizeof(a->job), "%s", f[0]);
	snprintf(a->job_uid, sizeof(a->job_uid), "%s", f[1]);
	snprintf(a->pod, sizeof(a->pod), "%s-worker-%ld", f[0], idx);
	a->idx = (int)idx;
	a->tok = strdup(f[3]);
	return a->tok ? 0 : -1;
}

static int read_input(struct run *r, FILE *in)
{
	char *line = NULL, *end = NULL;
	size_t cap = 0;
	ssize_t n;
	int got = 0, rc = -1;

	while ((n = getline(&line, &cap, in)) > 0 && n < LINE_MAX_BYTES) {
		if (line[0] == 'P') {
			long port = strtol(line + 2, &end, 10);
			size_t nl = strlen(end);

			if (*end != ' ' || port < 1 || port > 65535 || nl < 3 || nl > sizeof(r->ns))
				break;
			r->port = (int)port;
			memcpy(r->ns, end + 1, nl - 2);
			r->ns[nl - 2] = '\0';
		} else if (line[0] == 'T' && got < r->o->tokens) {
			if (parse_agent(&r->ag[got], line))
				break;
			got++;
		} else {
			rc = line[0] == 'E' && got == r->o->tokens && r->port ? 0 : -1;
			break;
		}
	}
	free(line);
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void print_status(FILE *out, const char *name, const long *st, int skip_ok)
{
	int i, first = 1;

	fprintf(out, "\"%s\":{", name);
	for (i = skip_ok ? 1 : 0; i < NSTATUS; i++)
		if (st[i]) {
			fprintf(out, "%s\"%d\":%ld", first ? "" : ",", i, st[i]);
			first = 0;
		}
	fprintf(out, "}");
}

/* The JSON line of the run's counts (w: threads valid workers, then the forgers). */
static int report(FILE *out, const struct run *r, struct worker *w)
{
	const struct tfj_loadgen_opts *o = r->o;
	long vst[NSTATUS] = { 0 }, fst[NSTATUS] = { 0 }, calls = 0, late = 0, fcalls = 0;
	size_t n = 0, i;
	uint64_t max_late = 0;
	double *all;
	int t, s;

	for (t = 0; t < o->threads; t++)
		n += (size_t)w[t].steady_n;
	all = malloc((n ? n : 1) * sizeof(*all));
	if (!all)
		return -1;
	for (n = 0, t = 0; t < o->threads + o->forgers; t++) {
		for (s = 0; s < NSTATUS; s++)
			(t < o->threads ? vst : fst)[s] += w[t].by_status[s];
		if (t >= o->threads) {
			fcalls += w[t].calls;
			continue;
		}
		calls += w[t].calls;
		late += w[t].late;
		max_late = w[t].max_late > max_late ? w[t].max_late : max_late;
		for (i = 0; i < (size_t)w[t].steady_n; i++)
			all[n++] = w[t].lat_ms[i];
	}
	qsort(all, n, sizeof(*all), cmp_double);
#define PCT(q) (n ? all[(size_t)((double)(n - 1) * (q))] : 0.0)
	fprintf(out, "{\"valid_calls\":%ld,\"valid_ok\":%ld,\"valid_refused\":%ld,", calls,
		vst[GRPC_STATUS_OK], calls - vst[GRPC_STATUS_OK]);
	print_status(out, "valid_refused_by_status", vst, 1);
	fprintf(out, ",\"started_over_100ms_late\":%ld,\"max_late_ms\":%.1f,\"steady_calls\":%zu,"
		"\"latency_ms\":{\"p50\":%.2f,\"p90\":%.2f,\"p99\":%.2f,\"max\":%.2f},"
		"\"forged_calls\":%ld,", late, (double)max_late / 1e6, n, PCT(0.5), PCT(0.9),
		PCT(0.99), n ? all[n - 1] : 0.0, fcalls);
	print_status(out, "forged_by_status", fst, 0);
	fprintf(out, "}\n");
#undef PCT
	fflush(out);
	free(all);
	return 0;
}

static int run_threads(struct run *r, struct worker *w, FILE *out)
{
	const struct tfj_loadgen_opts *o = r->o;
	size_t per = ((size_t)o->tokens / (size_t)o->threads + 1) *
		     ((size_t)o->seconds / (size_t)o->period_s + 1);
	int t, started = 0, rc = 0;

	r->t0 = tfj_clock_mono_ns() + 500000000u;
	r->end = r->t0 + (uint64_t)o->seconds * 1000000000u;
	r->steady = r->t0 + (uint64_t)o->warmup_s * 1000000000u;
	for (t = 0; t < o->threads + o->forgers; t++) {
		w[t].r = r;
		w[t].id = t < o->threads ? t : t - o->threads;
		if (t < o->threads && !(w[t].lat_ms = calloc(per, sizeof(double))))
			break;
		w[t].lat_cap = t < o->threads ? per : 0;
		if (pthread_create(&w[t].th, NULL, t < o->threads ? valid_main : forger_main, &w[t]))
			break;
		started++;
	}
	sleep_until(r->steady);
	fprintf(out, "S\n");
	fflush(out);
	for (t = 0; t < started; t++)
		pthread_join(w[t].th, NULL);
	if (started < o->threads + o->forgers)
		rc = -1;
	return rc ? rc : report(out, r, w);
}

int tfj_loadgen_run(const struct tfj_loadgen_opts *o, FILE *in, FILE *out)
{
	struct run r;
	struct worker *w = NULL;
	int i, rc = 1;

	memset(&r, 0, sizeof(r));
	r.o = o;
	r.ag = calloc((size_t)o->tokens, sizeof(*r.ag));
	if (!in || !out || !r.ag || read_input(&r, in))
		goto out;
	grpc_init();
	r.other = js_key("RSA");
	w = calloc((size_t)(o->threads + o->forgers), sizeof(*w));
	if (r.other && w && !run_threads(&r, w, out))
		rc = 0;
	for (i = 0; w && i < o->threads; i++)
		free(w[i].lat_ms);
	EVP_PKEY_free(r.other);
	grpc_shutdown();
out:
	for (i = 0; r.ag && i < o->tokens; i++) {
		if (r.ag[i].tok)
			explicit_bzero(r.ag[i].tok, strlen(r.ag[i].tok));
		free(r.ag[i].tok);
	}
	free(r.ag);
	free(w);
	return rc;
}
