/*
 * itest_reportconns.c - the report server's connection bounds (issue 28):
 * a tenant opens thousands of TLS connections to the report port and lets
 * them sit, or opens TCP connections and never starts TLS. The server runs
 * in this process with real TLS (certgen's CA and leaf, as the operator
 * serves them); the connections come from a child process, so the memory
 * measured (this process's VmRSS) is the server's alone. Shown here:
 *
 *   1. 5,000 idle TLS connections (handshake done, HTTP/2 preface and
 *      SETTINGS sent, then nothing): the server's resident memory grows by
 *      at most CONN_RSS_BUDGET, and a real Heartbeat over a fresh verified
 *      channel is answered while they are held;
 *   2. TCP connections that never send a ClientHello are closed by the
 *      server (the handshake timeout), and so are TLS connections that stay
 *      idle (the idle timeout): both keyed on the close the client sees, in
 *      a server started with short timeouts.
 *
 * It is an integration test (not a unit test) for its cost: 5,000 TLS
 * handshakes take seconds, and ASan would make them minutes. It needs no
 * API server.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <tfj/certgen.h>
#include <tfj/clock.h>
#include <tfj/grpc.h>

#include "app/procmem.h"
#include "report/report.h"
#include "report_client.h"
#include "tfj_test.h"

#define IDLE_CONNS 5000
/*
 * What 5,000 idle connections may add to the server's resident memory with
 * the default quota (16 MiB: about 540 connections held, some 75 MiB
 * measured; without the quota about 390 MiB).
 */
#define CONN_RSS_BUDGET (112ull << 20)
#define HOST "tfjob-operator.tfjob-system.svc"

static struct tfj_certgen_pair CA, LEAF;

static enum tfj_report_code ok_auth(void *ud, const struct tfj_reportmsg *m, const char *token,
				    char *subject, size_t n, const char **reason)
{
	(void)ud;
	(void)reason;
	if (strcmp(token, "good"))
		return TFJ_REPORT_UNAUTHENTICATED;
	snprintf(subject, n, "uid-%s", m->ref.pod);
	return TFJ_REPORT_OK;
}

static struct tfj_report *start(int handshake_ms, int idle_ms)
{
	grpc_ssl_pem_key_cert_pair kp = { LEAF.key_pem, LEAF.cert_pem };
	struct tfj_report_opts o = { 0 };
	struct tfj_report *srv = NULL;

	o.addr = "127.0.0.1:0";
	o.auth = ok_auth;
	o.deliver = rc_deliver_ok;
	o.handshake_timeout_ms = handshake_ms;
	o.idle_timeout_ms = idle_ms;
	o.creds = grpc_ssl_server_credentials_create_ex(NULL, &kp, 1,
		GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE, NULL);
	TFJ_CHECK_OK(tfj_report_start(&srv, &o));
	return srv;
}

static int tcp_connect(int port)
{
	struct sockaddr_in a = { 0 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A TLS connection with ALPN h2 that sends the HTTP/2 preface and an empty SETTINGS. */
static SSL *tls_open(SSL_CTX *ctx, int port)
{
	static const unsigned char alpn[] = { 2, 'h', '2' };
	static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
				      "\0\0\0\4\0\0\0\0\0";
	int fd = tcp_connect(port);
	SSL *ssl;

	if (fd < 0)
		return NULL;
	ssl = SSL_new(ctx);
	if (!ssl) {
		close(fd);
		return NULL;
	}
	SSL_set_fd(ssl, fd);
	SSL_set_tlsext_host_name(ssl, HOST);
	SSL_set_alpn_protos(ssl, alpn, sizeof(alpn));
	if (SSL_connect(ssl) != 1 || SSL_write(ssl, preface, sizeof(preface) - 1) <= 0) {
		SSL_free(ssl);
		close(fd);
		return NULL;
	}
	return ssl;
}

/* 1 when the peer closes fd (EOF or reset) within max_ms. */
static int closed_by_peer(int fd, int max_ms)
{
	int64_t end = (int64_t)(tfj_clock_mono_ns() / 1000000) + max_ms;
	char b[4096];

	while ((int64_t)(tfj_clock_mono_ns() / 1000000) < end) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t n;

		if (poll(&p, 1, 200) <= 0)
			continue;
		n = recv(fd, b, sizeof(b), 0);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return 1;
	}
	return 0;
}

static SSL_CTX *client_ctx(void)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	/* The load needs no verification; the real channel below verifies. */
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	return ctx;
}

/*
 * The child: opens n idle connections, writes how many it holds to `out`,
 * then waits until `in` closes.
 */
static void child_hold(int port, int n, int out, int in)
{
	SSL_CTX *ctx = client_ctx();
	int held = 0;
	char c;

	for (int i = 0; i < n; i++)
		if (tls_open(ctx, port))
			held++;
	if (write(out, &held, sizeof(held)) != sizeof(held))
		_exit(1);
	while (read(in, &c, 1) > 0)
		;
	_exit(0);
}

/* This process's open descriptors: the connections the server still holds. */
static int nfds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

static int64_t rss_now(void)
{
	struct tfj_procmem pm;

	if (tfj_procmem_read(&pm))
		return -1;
	return (int64_t)pm.rss_bytes;
}

static grpc_status_code heartbeat(int port)
{
	Tfj__Report__V1__HeartbeatResponse *r = NULL;
	Tfj__Report__V1__ReplicaRef ref;
	struct tfj_grpc_args args;
	grpc_channel *ch = NULL;
	grpc_status_code st;
	char target[64];

	snprintf(target, sizeof(target), "127.0.0.1:%d", port);
	tfj_grpc_args_init(&args);
	tfj_grpc_args_str(&args, GRPC_SSL_TARGET_NAME_OVERRIDE_ARG, HOST);
	tfj_grpc_args_int(&args, GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
	if (tfj_grpc_channel_new(&ch, target, CA.cert_pem, &args))
		return GRPC_STATUS_INTERNAL;
	rc_ref(&ref, "team-a", "mnist", "uid-1", "worker", 0, "mnist-worker-0");
	st = rc_heartbeat_reply(ch, "good", &ref, &r);
	if (r)
		tfj__report__v1__heartbeat_response__free_unpacked(r, NULL);
	grpc_channel_destroy(ch);
	return st;
}

static void test_idle_connections(void)
{
	struct tfj_report *srv = start(0, 0);
	int up[2], down[2], held = 0, status;
	int64_t before, after;
	pid_t pid;

	if (!srv)
		return;
	/* The server's own steady state first: one real call, then the baseline. */
	TFJ_CHECK_INT(heartbeat(tfj_report_port(srv)), GRPC_STATUS_OK);
	before = rss_now();
	TFJ_CHECK(pipe(up) == 0 && pipe(down) == 0);
	pid = fork();
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		child_hold(tfj_report_port(srv), IDLE_CONNS, up[1], down[0]);
	}
	close(up[1]);
	close(down[0]);
	TFJ_CHECK(read(up[0], &held, sizeof(held)) == sizeof(held));
	after = rss_now();
	fprintf(stderr, "# %d idle TLS connections held of %d; server RSS %lld -> %lld KiB, %d fds\n",
		held, IDLE_CONNS, (long long)before / 1024, (long long)after / 1024, nfds());
	TFJ_CHECK(before > 0 && after > 0);
	TFJ_CHECK(after - before <= (int64_t)CONN_RSS_BUDGET);
	/* A real agent is answered while the connections are held. */
	TFJ_CHECK_INT(heartbeat(tfj_report_port(srv)), GRPC_STATUS_OK);
	close(down[1]);
	close(up[0]);
	waitpid(pid, &status, 0);
	tfj_report_stop(srv);
}

static void test_timeouts(void)
{
	struct tfj_report *srv = start(500, 1000);
	SSL_CTX *ctx = client_ctx();
	SSL *ssl;
	int fd;

	if (!srv)
		goto out;
	/* No ClientHello: closed by the handshake timeout. */
	fd = tcp_connect(tfj_report_port(srv));
	TFJ_CHECK(fd >= 0);
	TFJ_CHECK_INT(closed_by_peer(fd, 30000), 1);
	close(fd);
	/* Handshake done, then silence: closed by the idle timeout. */
	ssl = tls_open(ctx, tfj_report_port(srv));
	TFJ_CHECK_NOT_NULL(ssl);
	if (ssl) {
		TFJ_CHECK_INT(closed_by_peer(SSL_get_fd(ssl), 60000), 1);
		close(SSL_get_fd(ssl));
		SSL_free(ssl);
	}
	/* The server still answers. */
	TFJ_CHECK_INT(heartbeat(tfj_report_port(srv)), GRPC_STATUS_OK);
out:
	SSL_CTX_free(ctx);
	tfj_report_stop(srv);
}

int main(void)
{
	const char *names[] = { HOST };
	int64_t now = tfj_clock_unix_ms() / 1000;

	signal(SIGPIPE, SIG_IGN);
	grpc_init();
	TFJ_CHECK_OK(tfj_certgen_ca(&CA, "itest-report-ca", now, 86400));
	TFJ_CHECK_OK(tfj_certgen_leaf(&LEAF, &CA, names, 1, now, 86400));
	TFJ_RUN(test_timeouts);
	TFJ_RUN(test_idle_connections);
	tfj_certgen_pair_free(&LEAF);
	tfj_certgen_pair_free(&CA);
	grpc_shutdown();
	return tfj_test_finish();
}
