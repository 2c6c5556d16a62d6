/*
 * itest_slowpeer.c - a worker reaches a ps whose answers are slow to come.
 *
 * gRPC gives each connection attempt max(minimum reconnect backoff, the
 * current backoff) to finish (TCP connect and the server's HTTP/2
 * SETTINGS); an attempt not done by then is abandoned and the next one
 * starts from scratch. A worker or ps throttled by a small CPU limit, or a
 * congested path, can take a few hundred milliseconds for that. With the
 * 100 ms minimum the client once had, every call failed UNAVAILABLE on the
 * first abandoned attempt (calls fail fast on a channel in transient
 * failure), the attempts only grew to the 1 s maximum backoff over several
 * failed steps, and a peer slower than ~1 s was never reached.
 *
 * The test puts a relay between the client (psclient, the code a worker
 * runs) and a real ps on 127.0.0.1 that holds back every byte from the ps
 * for DELAY_MS after a connection opens, then relays both ways. The
 * client's first Status must get through, over few connections (no storm
 * of abandoned attempts), and no sooner than the relay's delay (so the
 * relay did hold the ps back).
 */
#include "itest_util.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

#include <grpc/grpc.h>

#include <tfj/err.h>
#include <tfj/exitcode.h>

#include "worker/psclient.h"
#include "task/rtconfig.h"

#define DELAY_MS 400
#define MAX_CONN 64

static char ps[64], wk[64], relay_addr[64];
static int relay_lfd = -1, ps_port;
static atomic_int relay_conns, relay_live, relay_stop;

/* Copies what is readable on `from` to `to`; -1 when `from` closed or failed. */
static int pump(int from, int to)
{
	char buf[1 << 16];
	ssize_t n = read(from, buf, sizeof(buf)), off = 0;

	if (n <= 0)
		return -1;
	while (off < n) {
		ssize_t w = write(to, buf + off, (size_t)(n - off));

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		off += w;
	}
	return 0;
}

/*
 * One relayed connection: client bytes go to the ps at once; the ps's bytes
 * wait DELAY_MS from the connection's start, as a starved peer's would.
 */
static void *relay_conn(void *arg)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct pollfd fds[2];
	double t0 = tfj_testutil_now_s();
	int cfd = (int)(intptr_t)arg, sfd = socket(AF_INET, SOCK_STREAM, 0), one = 1, held = 1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)ps_port);
	if (sfd < 0 || connect(sfd, (struct sockaddr *)&a, sizeof(a)))
		goto out;
	setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	while (!atomic_load(&relay_stop)) {
		long ms = (long)((tfj_testutil_now_s() - t0) * 1000);

		held = ms < DELAY_MS;
		fds[0] = (struct pollfd){ .fd = cfd, .events = POLLIN };
		fds[1] = (struct pollfd){ .fd = sfd, .events = held ? 0 : POLLIN };
		if (poll(fds, 2, held ? (int)(DELAY_MS - ms) : 100) < 0 && errno != EINTR)
			break;
		if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) && pump(cfd, sfd))
			break;
		/* A ps side that hung up ends the relay even while its bytes are held. */
		if (held && (fds[1].revents & (POLLHUP | POLLERR)))
			break;
		if (!held && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) && pump(sfd, cfd))
			break;
	}
out:
	if (sfd >= 0)
		close(sfd);
	close(cfd);
	atomic_fetch_sub(&relay_live, 1);
	return NULL;
}

static void *relay_accept(void *arg)
{
	(void)arg;
	while (!atomic_load(&relay_stop)) {
		struct pollfd pf = { .fd = relay_lfd, .events = POLLIN };
		pthread_t th;
		int fd;

		if (poll(&pf, 1, 100) <= 0)
			continue;
		fd = accept(relay_lfd, NULL, NULL);
		if (fd < 0)
			continue;
		if (atomic_fetch_add(&relay_conns, 1) >= MAX_CONN) {
			close(fd);
			continue;
		}
		atomic_fetch_add(&relay_live, 1);
		if (pthread_create(&th, NULL, relay_conn, (void *)(intptr_t)fd)) {
			atomic_fetch_sub(&relay_live, 1);
			close(fd);
			continue;
		}
		pthread_detach(th);
	}
	return NULL;
}

static int relay_start(pthread_t *th)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	relay_lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (relay_lfd < 0 || bind(relay_lfd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(relay_lfd, 16) || getsockname(relay_lfd, (struct sockaddr *)&a, &len))
		return -1;
	snprintf(relay_addr, sizeof(relay_addr), "127.0.0.1:%d", ntohs(a.sin_port));
	return pthread_create(th, NULL, relay_accept, NULL) ? -1 : 0;
}

/* Status of the ps behind `host`, with a call deadline of timeout_s. */
static int status_via(const char *host, double timeout_s)
{
	Tfj__Runtime__V1__StatusRequest sq = TFJ__RUNTIME__V1__STATUS_REQUEST__INIT;
	char *args[] = { "--job_name", "worker", "--ps_hosts", (char *)host, "--worker_hosts", wk,
			 "--model", "softmax", NULL };
	const ProtobufCMessage *req[1] = { &sq.base };
	ProtobufCMessage *resp[1] = { NULL };
	struct tfj_rtconfig cfg;
	struct tfj_psclient *cl = NULL;
	int rc = tfj_rtconfig_parse(&cfg, 8, args, NULL);

	if (rc)
		return rc;
	rc = tfj_psclient_new(&cl, &cfg);
	if (!rc)
		rc = tfj_psclient_call(cl, TFJ_RPC_STATUS, req, resp, timeout_s);
	tfj_psclient_free(cl);
	tfj_rtconfig_free(&cfg);
	return rc;
}

static void test_slow_ps_answers(void)
{
	char *ps_args[] = { "train", "--job_name", "ps", "--ps_hosts", ps, "--worker_hosts", wk,
			    "--model", "softmax", "--bind_address", "127.0.0.1", NULL };
	pthread_t th;
	pid_t pid = itest_spawn_env(ps_args, NULL, "/dev/null", "/dev/null");
	int rc = TFJ_EUNAVAIL, i, relaying;
	double t0;

	TFJ_CHECK_GT(pid, 0);
	if (pid <= 0)
		return;
	/* Direct first: the ps listens (the relay is not in the way yet). */
	for (i = 0; i < 300 && rc == TFJ_EUNAVAIL; i++)
		if ((rc = status_via(ps, 5)) == TFJ_EUNAVAIL)
			usleep(100 * 1000);
	TFJ_CHECK_OK(rc);
	relaying = relay_start(&th) == 0;
	TFJ_CHECK(relaying);
	if (relaying) {
		/*
		 * Through the relay: every answer of the ps comes DELAY_MS late.
		 * A client that abandons its attempt before the ps's SETTINGS
		 * arrive fails this first call at once (UNAVAILABLE).
		 */
		t0 = tfj_testutil_now_s();
		rc = status_via(relay_addr, 10);
		if (rc)
			fprintf(stderr, "Status through a relay delaying the ps %d ms: %s: %s\n",
				DELAY_MS, tfj_err_name(rc), tfj_err_detail());
		TFJ_CHECK_OK(rc);
		/* A lower bound only: a slow machine makes it longer, never shorter. */
		TFJ_CHECK_GE(tfj_testutil_now_s() - t0, DELAY_MS / 1000.0);
		TFJ_CHECK_LE(atomic_load(&relay_conns), 3);
		atomic_store(&relay_stop, 1);
		pthread_join(th, NULL);
		/* The connection threads see relay_stop within one poll (100 ms). */
		for (i = 0; i < 600 && atomic_load(&relay_live) > 0; i++)
			usleep(100 * 1000);
		TFJ_CHECK_EQ(atomic_load(&relay_live), 0);
	}
	if (relay_lfd >= 0)
		close(relay_lfd);
	tfj_testutil_kill(pid, SIGTERM);
	TFJ_CHECK_INT(tfj_testutil_wait(pid, 60), TFJ_EXIT_ABORTED);
}

int main(int argc, char **argv)
{
	ITEST_DISPATCH(argc, argv);
	/* The relay writes to sockets its peers may close at any moment. */
	signal(SIGPIPE, SIG_IGN);
	ps_port = tfj_testutil_free_port();
	snprintf(ps, sizeof(ps), "127.0.0.1:%d", ps_port);
	snprintf(wk, sizeof(wk), "127.0.0.1:%d", tfj_testutil_free_port());
	grpc_init();
	TFJ_RUN(test_slow_ps_answers);
	grpc_shutdown();
	return tfj_test_finish();
}
