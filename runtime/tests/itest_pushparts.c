/*
 * itest_pushparts.c - large async pushes in parts (--push-part-kib),
 * pipelined on the stream, against real ps processes over gRPC on
 * 127.0.0.1 (docs/runtime-protocol.md, "Push in parts").
 *
 *  1. Two ps pairs from the same start get the same five gradients, one
 *     pair as whole pushes, the other cut into parts of 16 KiB (each
 *     shard's push of ~100 KiB in several parts, pieces of the first
 *     kernel among them): the parameters pulled back are bitwise the
 *     same. The client received one answer per part (psclient's count),
 *     and each ps counted the parts before a step's last as early parts.
 *  2. NaN in the third part of ps 0's push: the push fails with
 *     TFJ_ENUMERIC naming that part; the part is not applied, the parts
 *     before it are, and no NaN reaches the parameters. A retry of that
 *     push (the gradient mended; session.push_retry, as
 *     tfj_session_push_vars_retry sets it) sends only the parts no try
 *     had applied: the parameters end as one whole push would leave them.
 *  3. Each shard's push is decided on its own: after ps 0 refused a part
 *     and ps 1 took its push and then died, ps 0's retries still go in
 *     parts, and only the refused part goes again.
 *  4. A sync job sends whole pushes whatever --push-part-kib says: no
 *     early part on any ps; parts handed to psclient anyway fail with
 *     TFJ_EUNAVAIL, and no ps is sent any.
 *  5. ps 1 restarted empty between a pull and a push: the retries go only
 *     to the shard that has not answered, so ps 0 takes the gradient once.
 *     Pushing in parts with ps 1 back as a ps that takes no pieces
 *     (--push-part-kib 0): the next push, cut by the client's earlier
 *     negotiation, sends ps 1 nothing once it is asked again (or fails
 *     on the broken stream itself) while ps 0 takes its parts; the retry
 *     and later steps push whole to ps 1 (in parts to ps 0), and the new
 *     ps sees no part.
 *  6. Training with small parts while ps:1 is SIGKILLed mid-run: the
 *     streams break in the middle of pipelined pushes, the workers retry
 *     by the usual rules, and the job ends at max_steps with a usable model.
 */
#include "itest_util.h"

#include <inttypes.h>
#include <math.h>

#include <grpc/grpc.h>

#include <tfj/err.h>
#include <tfj/grpc.h>
#include <tfj/exitcode.h>

#include "worker/psclient.h"
#include "worker/pushparts.h"
#include "task/rtconfig.h"
#include "worker/session.h"

#define NPS 2
#define STEPS 5
#define PART_KIB 16

static char dir[128], wk[64];

/* The model every task of these jobs agrees on: ~200 KiB of parameters. */
#define MODEL_FLAGS "--model", "mlp", "--hidden", "64", "--optimizer", "sgd", \
	"--lr_schedule", "constant", "--learning_rate", "0.01", "--dataset", "synthetic"

struct pair {
	char hosts[64];
	pid_t pid[NPS];
	char out[NPS][192], err[NPS][192];
};

/*
 * Starts ps i of pair p (its outputs named after `name`); `sync` adds
 * --sync, `no_pieces` --push-part-kib 0 (the ps takes whole pushes only).
 */
static int ps_start(struct pair *p, size_t i, const char *name, int sync, int no_pieces)
{
	char idx[8];
	char *args[] = { "train", "--job_name", "ps", "--task_index", idx, "--ps_hosts", p->hosts,
			 "--worker_hosts", wk, "--bind_address", "127.0.0.1", "--ps_linger", "0.1",
			 MODEL_FLAGS, NULL, NULL, NULL, NULL };
	size_t n = sizeof(args) / sizeof(args[0]) - 4;

	if (no_pieces) {
		args[n++] = "--push-part-kib";
		args[n++] = "0";
	}
	if (sync)
		args[n++] = "--sync";
	snprintf(idx, sizeof(idx), "%zu", i);
	snprintf(p->out[i], sizeof(p->out[i]), "%s/%s-%zu.out", dir, name, i);
	snprintf(p->err[i], sizeof(p->err[i]), "%s/%s-%zu.err", dir, name, i);
	p->pid[i] = itest_spawn_env(args, NULL, p->out[i], p->err[i]);
	return p->pid[i] < 0 ? -1 : 0;
}

/* Starts NPS ps tasks on free ports; `sync` adds --sync. */
static int pair_start(struct pair *p, const char *name, int sync)
{
	size_t i;

	snprintf(p->hosts, sizeof(p->hosts), "127.0.0.1:%d,127.0.0.1:%d",
		 tfj_testutil_free_port(), tfj_testutil_free_port());
	for (i = 0; i < NPS; i++)
		p->pid[i] = -1;
	for (i = 0; i < NPS; i++)
		if (ps_start(p, i, name, sync, 0) != 0)
			return -1;
	return 0;
}

/* "early parts N" from ps i's closing line, or -1 when it has none. */
static long long early_parts(const struct pair *p, size_t i)
{
	const char *paths[2] = { p->out[i], p->err[i] };
	char line[4096];
	long long n = -1;
	size_t k;

	for (k = 0; k < 2; k++) {
		FILE *f = fopen(paths[k], "r");
		const char *q;

		while (f && fgets(line, sizeof(line), f))
			if ((q = strstr(line, "early parts ")) && sscanf(q, "early parts %lld", &n) != 1)
				n = -1;
		if (f)
			fclose(f);
	}
	return n;
}

/* Waits for both ps to end (after Finish and their linger: exit 0). */
static void pair_wait(struct pair *p, int want)
{
	size_t i;

	for (i = 0; i < NPS; i++) {
		TFJ_CHECK_INT(tfj_testutil_wait(p->pid[i], 60), want);
		p->pid[i] = -1;
	}
}

static void pair_kill(struct pair *p)
{
	size_t i;

	for (i = 0; i < NPS; i++)
		if (p->pid[i] > 0) {
			tfj_testutil_kill(p->pid[i], SIGTERM);
			tfj_testutil_wait(p->pid[i], 60);
			p->pid[i] = -1;
		}
}

/*
 * A worker-0 session (the coordinator) on pair p with --push-part-kib
 * `part_kib` (--sync when `sync`); the shards are
 * initialised with the same values for every session (waiting up to 30 s
 * for the ps to listen).
 */
static int session_start(struct tfj_session *s, struct tfj_rtconfig *cfg, const struct pair *p,
			 const char *part_kib, int sync)
{
	char *args[] = { "--job_name", "worker", "--task_index", "0", "--ps_hosts",
			 (char *)p->hosts, "--worker_hosts", wk, "--push-part-kib", (char *)part_kib,
			 MODEL_FLAGS, "--sync", NULL };
	int argc = (int)(sizeof(args) / sizeof(args[0]) - 1) - !sync;
	double t0;
	size_t v, e;
	int rc;

	rc = tfj_rtconfig_parse(cfg, argc, args, NULL);
	if (rc)
		return rc;
	rc = tfj_session_init(s, cfg);
	if (rc)
		return rc;
	for (v = 0; v < s->layout.nvars; v++)
		for (e = 0; e < s->layout.counts[v]; e++)
			s->params[v][e] = 0.001f * (float)((int)((e * 31u + v * 7u) % 199) - 99);
	t0 = tfj_testutil_now_s();
	while ((rc = tfj_session_ensure_ready(s, (const float *const *)s->params, 0)) ==
	       TFJ_EUNAVAIL && tfj_testutil_now_s() - t0 < 30)
		tfj_grpc_idle_ms(100); /* polls, so the TLS handshake goes on */
	return rc;
}

/* The gradient of step t, the same for every session. */
static void fill_grads(struct tfj_session *s, int t)
{
	size_t v, e;

	for (v = 0; v < s->layout.nvars; v++)
		for (e = 0; e < s->layout.counts[v]; e++)
			s->grads[v][e] = 0.01f * (float)((int)((e * 7919u + (size_t)t * 104729u + v) %
							       201) - 100);
}

/* Pulls, then pushes step t's gradient; 0 or the push's error. */
static int step(struct tfj_session *s, int t)
{
	int stale = 0, rc;

	rc = tfj_session_pull(s, NULL, 0);
	if (rc)
		return rc;
	fill_grads(s, t);
	rc = tfj_session_push(s, 1000, &stale);
	if (!rc && stale)
		return -1;
	return rc;
}

/* psclient's per-ps `of` query (streaming or pieces) for every ps. */
static int every_ps(int (*of)(const struct tfj_psclient *, size_t), const struct tfj_session *s)
{
	size_t j;

	for (j = 0; j < s->nps; j++)
		if (!of(s->cl, j))
			return 0;
	return 1;
}

static uint64_t frames(const struct tfj_session *s)
{
	struct tfj_psclient_stats st;

	tfj_psclient_get_stats(&st, s->cl);
	return st.frames;
}

static void test_parts_equal_whole(void)
{
	struct pair pa, pb;
	struct tfj_rtconfig ca, cb;
	struct tfj_session sa, sb;
	size_t j, v, nparts = 0, per_ps[NPS] = { 0 };
	uint64_t fa, fb, fa0, fb0;
	int t, same = 1, moved = 0, started;

	started = pair_start(&pa, "parts", 0) == 0 && pair_start(&pb, "whole", 0) == 0;
	TFJ_CHECK(started);
	if (!started)
		goto out;
	TFJ_CHECK_OK(session_start(&sa, &ca, &pa, "16", 0));
	TFJ_CHECK_OK(session_start(&sb, &cb, &pb, "0", 0));
	/* Status goes on the stream too: count from here, past the start's tries. */
	fa0 = frames(&sa);
	fb0 = frames(&sb);
	for (t = 0; t < STEPS; t++) {
		TFJ_CHECK_OK(step(&sa, t));
		TFJ_CHECK_OK(step(&sb, t));
	}
	for (j = 0; j < NPS; j++) {
		size_t want = tfj_pushparts_count(sa.layout.place.ps_size[j], PART_KIB * 256);

		printf("ps %zu: %zu floats, %zu parts per push\n", j, sa.layout.place.ps_size[j],
		       sa.push.pparts[j].n);
		TFJ_CHECK_INT((long long)sa.push.pparts[j].n, (long long)want);
		TFJ_CHECK_GE(want, 5);
		per_ps[j] = sa.push.pparts[j].n;
		nparts += sa.push.pparts[j].n;
	}
	TFJ_CHECK_OK(tfj_session_pull(&sa, NULL, 0));
	TFJ_CHECK_OK(tfj_session_pull(&sb, NULL, 0));
	for (v = 0; v < sa.layout.nvars; v++) {
		size_t e;

		same &= memcmp(sa.params[v], sb.params[v], sa.layout.counts[v] * sizeof(float)) == 0;
		for (e = 0; e < sa.layout.counts[v]; e++)
			moved |= sa.params[v][e] !=
				 0.001f * (float)((int)((e * 31u + v * 7u) % 199) - 99);
	}
	TFJ_CHECK(same);
	TFJ_CHECK(moved);
	/* One answer per part: the parts client got STEPS * (parts - shards) more. */
	fa = frames(&sa) - fa0;
	fb = frames(&sb) - fb0;
	printf("answers: parts %" PRIu64 ", whole %" PRIu64 "\n", fa, fb);
	TFJ_CHECK_INT((long long)(fa - fb), (long long)(STEPS * (nparts - NPS)));
	TFJ_CHECK_OK(tfj_session_finish(&sa));
	TFJ_CHECK_OK(tfj_session_finish(&sb));
	tfj_session_free(&sa);
	tfj_session_free(&sb);
	tfj_rtconfig_free(&ca);
	tfj_rtconfig_free(&cb);
	pair_wait(&pa, 0);
	pair_wait(&pb, 0);
	/* Every part but a step's last had more to come. */
	for (j = 0; j < NPS; j++) {
		TFJ_CHECK_INT(early_parts(&pa, j), STEPS * ((long long)per_ps[j] - 1));
		TFJ_CHECK_INT(early_parts(&pb, j), 0);
	}
out:
	pair_kill(&pa);
	pair_kill(&pb);
}

/* Copies of every variable's values (NULL when out of memory). */
static float **copy_params(const struct tfj_session *s)
{
	float **c = calloc(s->layout.nvars, sizeof(*c));
	size_t v;

	for (v = 0; c && v < s->layout.nvars; v++) {
		c[v] = malloc(s->layout.counts[v] * sizeof(float));
		if (!c[v]) {
			while (v-- > 0)
				free(c[v]);
			free(c);
			return NULL;
		}
		memcpy(c[v], s->params[v], s->layout.counts[v] * sizeof(float));
	}
	return c;
}

static void free_params(float **c, size_t nvars)
{
	size_t v;

	for (v = 0; c && v < nvars; v++)
		free(c[v]);
	free(c);
}

/* `before` as one whole SGD push of s's gradients would leave it. */
static void apply_whole(float **before, const struct tfj_session *s, const struct tfj_rtconfig *c)
{
	size_t v;

	for (v = 0; v < s->layout.nvars; v++)
		TFJ_CHECK_OK(tfj_optim_apply(TFJ_OPTIM_SGD, &c->hp, before[v], s->grads[v], NULL,
					     s->layout.counts[v], 0));
}

/* Finish, then the session gone and both ps ended by their own Finish. */
static void session_end(struct tfj_session *s, struct tfj_rtconfig *c, struct pair *p)
{
	TFJ_CHECK_OK(tfj_session_finish(s));
	tfj_session_free(s);
	tfj_rtconfig_free(c);
	pair_wait(p, 0);
}

/*
 * A clean step 0 (s->push.pparts[0] then shows how ps 0's push is cut),
 * *before = the values pulled after it, and step 1's gradient with NaN in
 * the third part of ps 0's push; 0 when set up.
 */
static int nan_in_part3(struct tfj_session *s, float ***before)
{
	const Tfj__Runtime__V1__PushRequest *q;

	*before = NULL;
	TFJ_CHECK_OK(step(s, 0));
	TFJ_CHECK_GE((long long)s->push.pparts[0].n, 4);
	TFJ_CHECK_OK(tfj_session_pull(s, NULL, 0));
	*before = copy_params(s);
	TFJ_CHECK_NOT_NULL(*before);
	if (!*before || s->push.pparts[0].n < 4)
		return -1;
	fill_grads(s, 1);
	q = &s->push.pparts[0].reqs[2];
	s->grads[q->slices[0]->var][q->slices[0]->offset + 1] = NAN;
	return 0;
}

static void test_nan_part(void)
{
	struct pair p;
	struct tfj_rtconfig c;
	struct tfj_session s;
	float **before = NULL;
	const Tfj__Runtime__V1__PushRequest *q;
	size_t v, k, i, nvars = 0;
	int nan_seen = 0, kept = 1, moved = 0;

	if (pair_start(&p, "nan", 0) != 0) {
		TFJ_CHECK_OK(-1);
		goto out;
	}
	TFJ_CHECK_OK(session_start(&s, &c, &p, "16", 0));
	nvars = s.layout.nvars;
	if (nan_in_part3(&s, &before) != 0)
		goto done;
	{
		int stale = 0;

		TFJ_CHECK_INT(tfj_session_push(&s, 1000, &stale), TFJ_ENUMERIC);
		printf("refused: %s\n", tfj_err_detail());
		TFJ_CHECK(strstr(tfj_err_detail(), "part 3 of ") != NULL);
	}
	TFJ_CHECK_OK(tfj_session_pull(&s, NULL, 0));
	for (v = 0; v < s.layout.nvars; v++)
		for (i = 0; i < s.layout.counts[v]; i++)
			nan_seen |= !isfinite(s.params[v][i]);
	TFJ_CHECK(!nan_seen);
	/* The refused part changed nothing; the two before it were applied. */
	for (k = 0; k < 3; k++) {
		q = &s.push.pparts[0].reqs[k];
		for (i = 0; i < q->n_slices; i++) {
			const Tfj__Runtime__V1__Slice *m = q->slices[i];
			int same = memcmp(before[m->var] + m->offset, s.params[m->var] + m->offset,
					  m->count * sizeof(float)) == 0;

			if (k == 2)
				kept &= same;
			else
				moved |= !same;
		}
	}
	TFJ_CHECK(kept);
	TFJ_CHECK(moved);
	/*
	 * A retry of the same push (the gradient mended) sends only the parts
	 * no try had applied: in the end every part was applied once, as by
	 * one whole push from `before`.
	 */
	fill_grads(&s, 1);
	{
		uint64_t f0 = frames(&s);
		int stale = 0, same = 1;

		s.push_retry = 1;
		TFJ_CHECK_OK(tfj_session_push(&s, 1000, &stale));
		s.push_retry = 0;
		printf("the retry sent %llu of %zu parts\n", (unsigned long long)(frames(&s) - f0),
		       s.push.pparts[0].n + s.push.pparts[1].n);
		TFJ_CHECK_GE((long long)(frames(&s) - f0), 1);
		/* Parts 1 and 2 of ps 0 and every part of ps 1 had been applied. */
		TFJ_CHECK_LE((long long)(frames(&s) - f0), (long long)s.push.pparts[0].n - 2);
		TFJ_CHECK_OK(tfj_session_pull(&s, NULL, 0));
		apply_whole(before, &s, &c);
		for (v = 0; v < nvars; v++)
			same &= memcmp(before[v], s.params[v], s.layout.counts[v] * sizeof(float)) == 0;
		TFJ_CHECK(same);
	}
done:
	session_end(&s, &c, &p);
	free_params(before, nvars);
out:
	pair_kill(&p);
}

/*
 * Each shard's push is decided on its own. ps 0 refuses part 3 of a push
 * in parts (NaN) while ps 1 takes its push (done); then ps 1 dies and
 * stays down, and a Pull fails on it, so the client no longer streams to
 * ps 1. The push's retries go to ps 0 only, still in parts (its stream is
 * fine): the second try (NaN still there) is refused again, and the third
 * (mended) sends part 3 alone. ps 0's values end as one whole push would
 * leave them. Had ps 1's state decided for ps 0 too, the tries would have
 * gone whole and applied parts 1 and 2 a second time.
 */
static void test_other_shard_down(void)
{
	struct pair p;
	struct tfj_rtconfig c;
	struct tfj_session s;
	float **before = NULL;
	size_t k, nvars = 0;
	int stale = 0, same = 1, t;
	uint64_t f0;

	if (pair_start(&p, "down", 0) != 0) {
		TFJ_CHECK_OK(-1);
		goto out;
	}
	TFJ_CHECK_OK(session_start(&s, &c, &p, "16", 0));
	nvars = s.layout.nvars;
	if (nan_in_part3(&s, &before) != 0)
		goto done;
	TFJ_CHECK_INT(tfj_session_push(&s, 1000, &stale), TFJ_ENUMERIC);
	TFJ_CHECK(!tfj_pushtrack_done(&s.push, 0));
	TFJ_CHECK(tfj_pushtrack_done(&s.push, 1));

	TFJ_CHECK_OK(tfj_testutil_kill(p.pid[1], SIGKILL));
	tfj_testutil_wait(p.pid[1], 60);
	p.pid[1] = -1;
	{
		int rc = tfj_session_pull(&s, NULL, 0);

		printf("pull with ps 1 down: %s\n", rc ? tfj_err_detail() : "ok");
		TFJ_CHECK_INT(rc, TFJ_EUNAVAIL);
	}
	s.push_retry = 1;
	f0 = frames(&s);
	TFJ_CHECK_INT(tfj_session_push(&s, 1000, &stale), TFJ_ENUMERIC);
	printf("second try: %s (%llu answers)\n", tfj_err_detail(),
	       (unsigned long long)(frames(&s) - f0));
	TFJ_CHECK(strstr(tfj_err_detail(), "ps 0 (") != NULL);
	TFJ_CHECK(strstr(tfj_err_detail(), "NaN") != NULL);
	TFJ_CHECK_INT((long long)(frames(&s) - f0), 1);
	fill_grads(&s, 1);
	f0 = frames(&s);
	TFJ_CHECK_OK(tfj_session_push(&s, 1000, &stale));
	printf("third try: %llu answers\n", (unsigned long long)(frames(&s) - f0));
	TFJ_CHECK_INT((long long)(frames(&s) - f0), 1);
	s.push_retry = 0;

	/* ps 1 back and refilled, so that a pull can read ps 0's values. */
	TFJ_CHECK_OK(ps_start(&p, 1, "down-again", 0, 0));
	for (t = 0; t < 300; t++) {
		if (tfj_session_ensure_ready(&s, (const float *const *)before, 0) == 0 &&
		    tfj_session_pull(&s, NULL, 0) == 0)
			break;
		tfj_grpc_idle_ms(100);
	}
	TFJ_CHECK(t < 300);
	apply_whole(before, &s, &c);
	for (k = s.first_slice[0]; k < s.first_slice[1]; k++) {
		const Tfj__Runtime__V1__Slice *m = &s.slice_msgs[k];

		same &= memcmp(before[m->var] + m->offset, s.params[m->var] + m->offset,
			       m->count * sizeof(float)) == 0;
	}
	TFJ_CHECK(same);
done:
	session_end(&s, &c, &p);
	free_params(before, nvars);
out:
	pair_kill(&p);
}

/* Three steps of a client that must send whole pushes; no ps sees an early part. */
static void check_whole(const char *name, int sync)
{
	struct pair p;
	struct tfj_rtconfig c;
	struct tfj_session s;
	int t;

	if (pair_start(&p, name, sync) != 0) {
		TFJ_CHECK_OK(-1);
		pair_kill(&p);
		return;
	}
	TFJ_CHECK_OK(session_start(&s, &c, &p, "16", sync));
	for (t = 0; t < 3; t++)
		TFJ_CHECK_OK(step(&s, t));
	printf("%s: parts_ok %d, streaming %d, answers over streams %" PRIu64 "\n", name,
	       s.parts_ok, every_ps(tfj_psclient_streaming_of, &s), frames(&s));
	TFJ_CHECK_INT(s.parts_ok, 0);
	/* Parts handed to psclient all the same fail before anything is sent. */
	{
		Tfj__Runtime__V1__PushRequest q[2] = { TFJ__RUNTIME__V1__PUSH_REQUEST__INIT,
						       TFJ__RUNTIME__V1__PUSH_REQUEST__INIT };
		const ProtobufCMessage *two[2] = { &q[0].base, &q[1].base };
		const ProtobufCMessage *const *lists[NPS] = { two, two };
		size_t counts[NPS] = { 2, 2 };
		ProtobufCMessage *resps[NPS];
		struct tfj_psclient_stats a, b;

		q[0].more = 1;
		tfj_psclient_get_stats(&a, s.cl);
		TFJ_CHECK_INT(tfj_psclient_call_parts(s.cl, TFJ_RPC_PUSH, lists, counts, NULL, resps,
						      10), TFJ_EUNAVAIL);
		printf("%s: %s\n", name, tfj_err_detail());
		TFJ_CHECK(strstr(tfj_err_detail(), "takes no push in pieces") != NULL);
		tfj_psclient_get_stats(&b, s.cl);
		TFJ_CHECK_INT((long long)b.frames, (long long)a.frames);
	}
	session_end(&s, &c, &p);
	TFJ_CHECK_INT(early_parts(&p, 0), 0);
	TFJ_CHECK_INT(early_parts(&p, 1), 0);
	pair_kill(&p);
}

static void test_whole_in_sync(void)
{
	check_whole("sync", 1);
}

/* Whether ps i's output holds `needle`, waiting up to timeout_s for it. */
static int wait_output(const struct pair *p, size_t i, const char *needle, double timeout_s)
{
	const char *paths[2] = { p->out[i], p->err[i] };
	double t0 = tfj_testutil_now_s();
	char line[4096];
	size_t k;

	do {
		for (k = 0; k < 2; k++) {
			FILE *f = fopen(paths[k], "r");
			int found = 0;

			while (f && !found && fgets(line, sizeof(line), f))
				found = strstr(line, needle) != NULL;
			if (f)
				fclose(f);
			if (found)
				return 1;
		}
		usleep(50 * 1000);
	} while (tfj_testutil_now_s() - t0 < timeout_s);
	return 0;
}

/*
 * ps 1 dies after a push and comes back on its port, empty (the
 * coordinator refills it, as tfj_session_push_vars_retry does), between
 * the pull and the push of the next step; ps 0 stays up. The push fails
 * on ps 1 at least once, while ps 0 takes it in the first try. The
 * retries go only to the shards that have not answered OK: ps 0 takes
 * step 1's gradient once, and its step ends at 3 after steps 0, 1 and 2
 * (4 or more when a retry sent the push to it again).
 *
 * With `pieces`, pushes go in parts of 16 KiB and ps 1 comes back with
 * --push-part-kib 0, as a ps that takes no pieces (an older build, or the
 * ps side turning parts off). The client still holds ps 1's earlier "yes"
 * when the next push is cut. Which of two ways it learns better depends
 * on when gRPC reports the broken stream:
 *  - at the start of that push's call: ps 1 is asked again, says no, and
 *    is sent nothing (the try fails with TFJ_EUNAVAIL, the detail says
 *    why; ps 0 gets its parts), or
 *  - only when the try sends on it: the try fails on the broken stream,
 *    and the next one is cut after ps 1 was asked again.
 * Either way the retries and every later step push whole to ps 1, while
 * ps 0 still gets its pushes in parts: no part ever reaches the restarted
 * ps (a part it got before its refill would fail as "not initialised",
 * one after would show in its early parts).
 */
static void restart_between_pushes(const char *name, int pieces)
{
	struct pair p;
	struct tfj_rtconfig c;
	struct tfj_session s;
	int rc = TFJ_EUNAVAIL, t, refused = 0, part_reached = 0, stale = 0;
	char again[64];
	uint64_t f0;

	if (pair_start(&p, name, 0) != 0) {
		TFJ_CHECK_OK(-1);
		goto out;
	}
	TFJ_CHECK_OK(session_start(&s, &c, &p, pieces ? "16" : "0", 0));
	f0 = frames(&s);
	TFJ_CHECK_OK(step(&s, 0));
	/* A pull (one answer per ps) and a push (one answer per part). */
	if (pieces) {
		TFJ_CHECK_GE((long long)s.push.pparts[1].n, 2);
		TFJ_CHECK_INT((long long)(frames(&s) - f0),
			      (long long)(NPS + s.push.pparts[0].n + s.push.pparts[1].n));
	} else {
		TFJ_CHECK_INT((long long)(frames(&s) - f0), 2 * NPS);
	}
	TFJ_CHECK_OK(tfj_session_pull(&s, NULL, 0));
	TFJ_CHECK_INT(every_ps(tfj_psclient_pieces_of, &s), 1);

	TFJ_CHECK_OK(tfj_testutil_kill(p.pid[1], SIGKILL));
	tfj_testutil_wait(p.pid[1], 60);
	p.pid[1] = -1;
	snprintf(again, sizeof(again), "%s-again", name);
	TFJ_CHECK_OK(ps_start(&p, 1, again, 0, pieces));
	TFJ_CHECK(wait_output(&p, 1, pieces ? "whole (--push-part-kib 0)" : "listening on", 30));

	fill_grads(&s, 1);
	for (t = 0; t < 100 && rc == TFJ_EUNAVAIL; t++) {
		const char *d;

		rc = tfj_session_push(&s, 1000, &stale);
		if (rc != TFJ_EUNAVAIL)
			break;
		d = tfj_err_detail();
		printf("%s: try %d: %s\n", name, t, d);
		/* The failure was ps 1's: ps 0 took its push (in parts or whole) at once. */
		if (t == 0)
			TFJ_CHECK(tfj_pushtrack_done(&s.push, 0));
		refused |= strstr(d, "takes no push in pieces now (it announced no piece_parts)") !=
			   NULL;
		part_reached |= strstr(d, "over the stream, part ") && strstr(d, "not initialised");
		s.push_retry = 1;
		(void)tfj_session_ensure_ready(&s, (const float *const *)s.params, 0);
		tfj_grpc_idle_ms(100);
	}
	s.push_retry = 0;
	TFJ_CHECK_OK(rc);
	TFJ_CHECK_GE(t, 1);
	TFJ_CHECK_INT(part_reached, 0);
	if (pieces) {
		printf("%s: the client learned at %s\n", name, refused ?
		       "the call's start (refused before sending)" :
		       "a try that failed on the broken stream");
		TFJ_CHECK_INT(every_ps(tfj_psclient_pieces_of, &s), 0);
	}
	/*
	 * Later steps push whole to ps 1 (and to ps 0 without pieces): one
	 * answer per ps for the pull, one per part for the push.
	 */
	f0 = frames(&s);
	TFJ_CHECK_OK(step(&s, 2));
	TFJ_CHECK_INT((long long)(frames(&s) - f0),
		      (long long)(NPS + (pieces ? s.push.pparts[0].n : 1) + 1));
	/* Each ps took each push once: ps 1 since its refill at step 0. */
	TFJ_CHECK_OK(tfj_session_pull(&s, NULL, 0));
	printf("%s: steps: ps 0 %" PRId64 ", ps 1 %" PRId64 "\n", name, s.shard_step[0],
	       s.shard_step[1]);
	TFJ_CHECK_INT(s.shard_step[0], 3);
	TFJ_CHECK_INT(s.shard_step[1], 2);
	session_end(&s, &c, &p);
	printf("%s: early parts: ps 0 %lld, restarted ps 1 %lld\n", name, early_parts(&p, 0),
	       early_parts(&p, 1));
	if (pieces)
		TFJ_CHECK_GT(early_parts(&p, 0), 0);
	TFJ_CHECK_INT(early_parts(&p, 1), 0);
out:
	pair_kill(&p);
}

static void test_ps_restarted_between_pushes(void)
{
	restart_between_pushes("restart-whole", 0);
	restart_between_pushes("restart-pieces", 1);
}

/* "early parts N" of `task`'s closing line in a launch's output, or -1. */
static long long launch_early_parts(FILE *out, const char *task)
{
	char line[4096];
	const char *q;
	long long n = -1;

	rewind(out);
	while (fgets(line, sizeof(line), out))
		if (strncmp(line, task, strlen(task)) == 0 && (q = strstr(line, "early parts ")) &&
		    sscanf(q, "early parts %lld", &n) != 1)
			n = -1;
	return n;
}

static void test_ps_killed_mid_parts(void)
{
	char *flags[] = { "--model", "mlp", "--hidden", "32", "--max_steps", "2000",
			  "--push-part-kib", "8", "--peer_timeout", "60", NULL };
	struct tfj_launch_result r;
	FILE *out = tmpfile();

	TFJ_CHECK_NOT_NULL(out);
	if (!out)
		return;
	TFJ_CHECK_INT(itest_launch_to(&r, out, 2, 2, 1, 0, "ps:1", 600, flags), 0);
	printf("exit %d, restarts %d, step %lld, accuracy %.4f, %.0f examples/s, %.1f s\n",
	       r.exit_code, r.restarts, (long long)r.step, r.test_accuracy, r.examples_per_sec,
	       r.wall_s);
	TFJ_CHECK_INT(r.exit_code, 0);
	TFJ_CHECK(r.have_final);
	TFJ_CHECK_GE(r.restarts, 1);
	TFJ_CHECK_GE(r.step, 2000);
	TFJ_CHECK_GT(r.test_accuracy, 0.7);
	/* ps:0 lived through the run: every push reached it in parts. */
	printf("ps:0 early parts %lld\n", launch_early_parts(out, "[ps:0]"));
	TFJ_CHECK_GT(launch_early_parts(out, "[ps:0]"), 2000);
	fclose(out);
}

int main(int argc, char **argv)
{
	ITEST_DISPATCH(argc, argv);
	if (tfj_testutil_tmpdir(dir, sizeof(dir), "tfj-itest-pushparts") != 0)
		return 1;
	snprintf(wk, sizeof(wk), "127.0.0.1:%d", tfj_testutil_free_port());
	grpc_init();
	TFJ_RUN(test_parts_equal_whole);
	TFJ_RUN(test_nan_part);
	TFJ_RUN(test_other_shard_down);
	TFJ_RUN(test_whole_in_sync);
	TFJ_RUN(test_ps_restarted_between_pushes);
	grpc_shutdown();
	itest_require_data();
	TFJ_RUN(test_ps_killed_mid_parts);
	tfj_testutil_rmtree(dir);
	return tfj_test_finish();
}
