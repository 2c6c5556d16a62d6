/*
 * test_peers.c - peer list from TF_CONFIG and the start-up wait against
 * real sockets on 127.0.0.1 (a listener that appears late, one that never
 * does, cancellation).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <tfj/err.h>
#include "peers.h"
#include "supervisor.h"
#include "tfj_test.h"
#include "tfj_testutil.h"

static int decode(struct tfj_tfconfig *c, const char *json)
{
	return tfj_tfconfig_decode(c, json, strlen(json));
}

static void test_collect(void)
{
	struct tfj_tfconfig c;
	struct tfj_peers p;

	TFJ_CHECK_INT(decode(&c, "{\"cluster\":{\"ps\":[\"ps-0.svc:2222\",\"ps-1.svc:2222\"],"
			  "\"worker\":[\"w-0.svc:2222\",\"w-1.svc:2222\",\"ps-0.svc:2222\"]},"
			  "\"task\":{\"type\":\"worker\",\"index\":1}}"), 0);
	TFJ_CHECK_INT(tfj_peers_collect(&p, &c, NULL), 0);
	/* Itself (worker 1) is skipped, and the duplicate address listed once. */
	TFJ_CHECK_INT(p.n, 3);
	if (p.n == 3) {
		TFJ_CHECK_STR(p.v[0].host, "ps-0.svc");
		TFJ_CHECK_STR(p.v[0].port, "2222");
		TFJ_CHECK_STR(p.v[0].type, "ps");
		TFJ_CHECK_STR(p.v[1].host, "ps-1.svc");
		TFJ_CHECK_INT(p.v[1].index, 1);
		TFJ_CHECK_STR(p.v[2].host, "w-0.svc");
	}
	tfj_peers_free(&p);
	TFJ_CHECK_INT(tfj_peers_collect(&p, &c, "ps"), 0);
	TFJ_CHECK_INT(p.n, 2);
	tfj_peers_free(&p);
	TFJ_CHECK_INT(tfj_peers_collect(&p, &c, "chief,evaluator"), 0);
	TFJ_CHECK_INT(p.n, 0);
	tfj_peers_free(&p);
	tfj_tfconfig_free(&c);

	/* IPv6 literals; a bad port is a parse error. */
	TFJ_CHECK_INT(decode(&c, "{\"cluster\":{\"worker\":[\"[::1]:80\",\"h:99999\"]},"
			  "\"task\":{\"type\":\"worker\",\"index\":1}}"), 0);
	TFJ_CHECK_INT(tfj_peers_collect(&p, &c, NULL), 0);
	TFJ_CHECK_INT(p.n, 1);
	if (p.n == 1)
		TFJ_CHECK_STR(p.v[0].host, "::1");
	tfj_peers_free(&p);
	tfj_tfconfig_free(&c);
	TFJ_CHECK_INT(decode(&c, "{\"cluster\":{\"worker\":[\"h:1\",\"h:99999\"]},"
			  "\"task\":{\"type\":\"worker\",\"index\":0}}"), 0);
	TFJ_CHECK_INT(tfj_peers_collect(&p, &c, NULL), TFJ_EPARSE);
	TFJ_CHECK_INT(p.n, 0);
	tfj_tfconfig_free(&c);
	TFJ_CHECK_INT(decode(&c, "{\"cluster\":{\"worker\":[\"h:1\",\"nohostport\"]},"
			  "\"task\":{\"type\":\"worker\",\"index\":0}}"), 0);
	TFJ_CHECK_INT(tfj_peers_collect(&p, &c, NULL), TFJ_EPARSE);
	tfj_tfconfig_free(&c);

	{
		enum tfj_peers_mode m;
		TFJ_CHECK_INT(tfj_peers_parse_mode(&m, "tcp"), 0);
		TFJ_CHECK_INT(m, TFJ_PEERS_TCP);
		TFJ_CHECK_LT(tfj_peers_parse_mode(&m, "udp"), 0);
	}
}

struct late {
	int fd;
	int delay_ms;
};

static void *listen_late(void *arg)
{
	struct late *l = arg;

	usleep((useconds_t)l->delay_ms * 1000);
	listen(l->fd, 8);
	return NULL;
}

static void make_peers(struct tfj_peers *p, const char *host, int port)
{
	char ps[16];

	snprintf(ps, sizeof(ps), "%d", port);
	p->n = 1;
	p->v = calloc(1, sizeof(*p->v));
	p->v[0].type = strdup("ps");
	p->v[0].host = strdup(host);
	p->v[0].port = strdup(ps);
}

static void test_late_listener(void)
{
	struct tfj_peers_wait_opts o = { TFJ_PEERS_TCP, 10.0, 0.5, -1 };
	struct tfj_peers p;
	struct late l;
	pthread_t th;
	double t0, dt;
	int port = 0, sig;

	l.fd = tfj_testutil_bind_loopback(&port);
	l.delay_ms = 700;
	TFJ_CHECK_GE(l.fd, 0);
	make_peers(&p, "127.0.0.1", port);
	pthread_create(&th, NULL, listen_late, &l);
	t0 = tfj_testutil_now_s();
	TFJ_CHECK_INT(tfj_peers_wait(&p, &o, &sig), 0);
	dt = tfj_testutil_now_s() - t0;
	pthread_join(th, NULL);
	/* It did wait for the listener, and not much longer than the max backoff. */
	TFJ_CHECK_GE(dt, 0.6);
	TFJ_CHECK_LT(dt, 6.5);
	TFJ_CHECK_INT(p.v[0].connected, 1);
	tfj_peers_free(&p);
	close(l.fd);

	/* DNS mode: a name that resolves is ready at once, no listener needed. */
	o.mode = TFJ_PEERS_DNS;
	make_peers(&p, "localhost", 1);
	t0 = tfj_testutil_now_s();
	TFJ_CHECK_INT(tfj_peers_wait(&p, &o, &sig), 0);
	TFJ_CHECK_LT(tfj_testutil_now_s() - t0, 2);
	tfj_peers_free(&p);
}

static void test_timeout_and_cancel(void)
{
	struct tfj_peers_wait_opts o = { TFJ_PEERS_TCP, 1.0, 0.2, -1 };
	struct tfj_peers p;
	double t0, dt;
	int fd, port = 0, sig, pfd[2];

	/* Bound but never listening: connection refused until the deadline. */
	fd = tfj_testutil_bind_loopback(&port);
	make_peers(&p, "127.0.0.1", port);
	t0 = tfj_testutil_now_s();
	TFJ_CHECK_INT(tfj_peers_wait(&p, &o, &sig), TFJ_ETIMEOUT);
	dt = tfj_testutil_now_s() - t0;
	TFJ_CHECK_GE(dt, 0.9);
	TFJ_CHECK_LT(dt, 3.0);
	TFJ_CHECK(strstr(tfj_err_detail(), "ps:0") != NULL);

	/* A readable cancel fd stops the wait. */
	o.timeout_s = 30;
	TFJ_CHECK_INT(pipe(pfd), 0);
	TFJ_CHECK_INT(write(pfd[1], "x", 1), 1);
	o.cancel_fd = pfd[0];
	t0 = tfj_testutil_now_s();
	TFJ_CHECK_INT(tfj_peers_wait(&p, &o, &sig), TFJ_ECANCELED);
	TFJ_CHECK_LT(tfj_testutil_now_s() - t0, 1);
	close(pfd[0]);
	close(pfd[1]);

	/* The real thing: SIGTERM through the supervisor's cancel signalfd. */
	tfj_supervisor_block_signals();
	o.cancel_fd = tfj_supervisor_cancel_fd();
	TFJ_CHECK_GE(o.cancel_fd, 0);
	kill(getpid(), SIGTERM);
	TFJ_CHECK_INT(tfj_peers_wait(&p, &o, &sig), TFJ_ECANCELED);
	TFJ_CHECK_INT(sig, SIGTERM);
	close(o.cancel_fd);

	/* Mode none never waits. */
	o.mode = TFJ_PEERS_NONE;
	o.cancel_fd = -1;
	TFJ_CHECK_INT(tfj_peers_wait(&p, &o, &sig), 0);
	tfj_peers_free(&p);
	close(fd);
}

int main(void)
{
	TFJ_RUN(test_collect);
	TFJ_RUN(test_late_listener);
	TFJ_RUN(test_timeout_and_cancel);
	return tfj_test_finish();
}
