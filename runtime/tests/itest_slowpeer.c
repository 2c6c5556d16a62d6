/*
 * itest_slowpeer.c - a worker reaches a ps whose answers are slow to come.
 *
 * gRPC gives each connection attempt only its "minimum reconnect backoff"
 * to finish (TCP connect and the server's HTTP/2 SETTINGS); an attempt not
 * done by then is abandoned and the next one starts from scratch. A worker
 * or ps throttled by a small CPU limit, or a congested path, can take a few
 * hundred milliseconds for that; with the 100 ms the client once gave, no
 * attempt ever finished and the worker never reached its ps.
 *
 * The test puts a relay between the client (psclient, the code a worker
 * runs) and a real ps on 127.0.0.1 that holds back every byte from the ps
 * for DELAY_MS after a connection opens, then relays both ways. The client
 * must get the ps's Status within its call deadline, and over few
 * connections (no storm of abandoned attempts).
 */
#include "itest_util.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include <grpc/grpc.h>

#include <tfj/err.h>
#include <tfj/exitcode.h>

#include "psclient.h"
#include "rtconfig.h"

#define DELAY_MS 400
#define MAX_CONN 64

static char ps[64], wk[64], relay_addr[64];
static int relay_lfd = -1, ps_port;
static atomic_int relay_conns, relay_stop;

struct pair {
	int cfd; /* the client's side */
};

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
	struct pair *p = arg;
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct pollfd fds[2];
	struct timespec t0, now;
	int sfd = socket(AF_INET, SOCK_STREAM, 0), one = 1, held = 1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)ps_port);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (sfd < 0 || connect(sfd, (struct sockaddr *)&a, sizeof(a)))
		goto out;
	setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(p->cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	while (!atomic_load(&relay_stop)) {
		long ms;

		clock_gettime(CLOCK_MONOTONIC, &now);
		ms = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
		held = ms < DELAY_MS;
		fds[0] = (struct pollfd){ .fd = p->cfd, .events = POLLIN };
		fds[1] = (struct pollfd){ .fd = sfd, .events = held ? 0 : POLLIN };
		if (poll(fds, 2, held ? (int)(DELAY_MS - ms) : 100) < 0 && errno != EINTR)
			break;
		if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) && pump(p->cfd, sfd))
			break;
		if (!held && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) && pump(sfd, p->cfd))
			break;
	}
out:
	if (sfd >= 0)
		close(sfd);
	close(p->cfd);
	free(p);
	return NULL;
}

static void *relay_accept(void *arg)
{
	(void)arg;
	while (!atomic_load(&relay_stop)) {
		struct pollfd pf = { .fd = relay_lfd, .events = POLLIN };
		struct pair *p;
		pthread_t th;
		int fd;

		if (poll(&pf, 1, 100) <= 0)
			continue;
		fd = accept(relay_lfd, NULL, NULL);
		if (fd < 0)
			continue;
		p = malloc(sizeof(*p));
		if (!p || atomic_fetch_add(&relay_conns, 1) >= MAX_CONN) {
			free(p);
			close(fd);
			continue;
		}
		p->cfd = fd;
		if (pthread_create(&th, NULL, relay_conn, p)) {
			close(fd);
			free(p);
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
	int rc = TFJ_EUNAVAIL, i;

	TFJ_CHECK_GT(pid, 0);
	/* Direct first: the ps listens (the relay is not in the way yet). */
	for (i = 0; i < 300 && rc == TFJ_EUNAVAIL; i++)
		if ((rc = status_via(ps, 5)) == TFJ_EUNAVAIL)
			usleep(100 * 1000);
	TFJ_CHECK_OK(rc);
	TFJ_CHECK_OK(relay_start(&th));
	/*
	 * Through the relay: every answer of the ps comes DELAY_MS late. The
	 * call's 10 s leave room for many attempts; a client that abandons
	 * each one before the ps's SETTINGS arrive never gets through.
	 */
	rc = status_via(relay_addr, 10);
	if (rc)
		fprintf(stderr, "Status through a relay delaying the ps %d ms: %s: %s\n", DELAY_MS,
			tfj_err_name(rc), tfj_err_detail());
	TFJ_CHECK_OK(rc);
	TFJ_CHECK_LE(atomic_load(&relay_conns), 3);
	atomic_store(&relay_stop, 1);
	pthread_join(th, NULL);
	close(relay_lfd);
	kill(pid, SIGTERM);
	TFJ_CHECK_INT(tfj_testutil_wait(pid, 60), TFJ_EXIT_ABORTED);
}

int main(int argc, char **argv)
{
	ITEST_DISPATCH(argc, argv);
	ps_port = tfj_testutil_free_port();
	snprintf(ps, sizeof(ps), "127.0.0.1:%d", ps_port);
	snprintf(wk, sizeof(wk), "127.0.0.1:%d", tfj_testutil_free_port());
	grpc_init();
	TFJ_RUN(test_slow_ps_answers);
	grpc_shutdown();
	return tfj_test_finish();
}
