/*
 * itest_pstls.c - the ps traffic is encrypted: a worker trains against a
 * real ps through a relay on 127.0.0.1 that forwards every byte both ways
 * and keeps a copy, as a same-node pod with CAP_NET_RAW would. With TLS
 * (the default, pstls.h) the copy holds neither the job's secret nor any
 * run of the initial weights the chief sends and the worker pulls. The
 * same run with TFJOB_PS_TLS=off shows that the relay sees both in clear,
 * so the search can fail. A worker given another CA refuses the ps.
 *
 * What the ps negotiates, checked with OpenSSL's own client: gRPC 1.51
 * hands its suite list to OpenSSL's TLS 1.2 setting only, so its client
 * offers OpenSSL's default TLS 1.3 list, and with that list the ps
 * answers TLS 1.3 with AES-256-GCM (the cipher whose cost
 * docs/benchmarks.md, "TLS on the ps traffic", measures). A TLS 1.2
 * client gets an AEAD suite and is refused when it offers only CBC ones.
 */
#include "itest_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <tfj/err.h>
#include <tfj/exitcode.h>

#include "compute/compute.h"
#include "compute/model.h"
#include "wire/psauth.h"

#define SECRET "5ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7"
#define CAPTURE_MAX (64u << 20)
#define MAX_CONNS 16
#define HIDDEN "32"
#define SEED "7"

struct relay {
	int lfd, port, to_port, stop;
	pthread_t th;
	pthread_mutex_t mu;
	unsigned char *cap;   /* every byte forwarded, both ways */
	size_t len;
};

static char dir[128], secret_path[256], env_secret[300];

static int listen_on(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	/* Non-blocking: a connection reset before accept must not stall the relay. */
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 16) ||
	    getsockname(fd, (struct sockaddr *)&a, &al)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

static int dial(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void keep(struct relay *r, const unsigned char *b, size_t n)
{
	pthread_mutex_lock(&r->mu);
	if (r->len + n <= CAPTURE_MAX) {
		memcpy(r->cap + r->len, b, n);
		r->len += n;
	}
	pthread_mutex_unlock(&r->mu);
}

/* Writes all of b to fd; -1 when the peer is gone. */
static int put_all(int fd, const unsigned char *b, size_t n)
{
	ssize_t w;

	while (n > 0) {
		w = write(fd, b, n);
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* One poll loop: accepts, dials the ps for each connection, copies both ways. */
static void *relay_main(void *arg)
{
	static unsigned char buf[1 << 16];
	struct relay *r = arg;
	struct pollfd p[1 + 2 * MAX_CONNS];
	int fds[2 * MAX_CONNS], nfds = 0, polled, i, n;
	ssize_t got;

	while (!r->stop) {
		p[0].fd = r->lfd;
		p[0].events = POLLIN;
		for (i = 0; i < nfds; i++) {
			p[1 + i].fd = fds[i];
			p[1 + i].events = POLLIN;
		}
		n = poll(p, (nfds_t)(1 + nfds), 100);
		if (n <= 0)
			continue;
		polled = nfds;  /* a pair accepted below has no poll result yet */
		if ((p[0].revents & POLLIN) && nfds + 2 <= 2 * MAX_CONNS) {
			int c = accept4(r->lfd, NULL, NULL, SOCK_CLOEXEC), s = dial(r->to_port);

			if (c >= 0 && s >= 0) {
				fds[nfds++] = c;
				fds[nfds++] = s;
			} else {
				if (c >= 0)
					close(c);
				if (s >= 0)
					close(s);
			}
		}
		for (i = 0; i < polled; i++) {
			if (!(p[1 + i].revents & (POLLIN | POLLHUP | POLLERR)) || fds[i] < 0)
				continue;
			got = read(fds[i], buf, sizeof(buf));
			if (got > 0) {
				keep(r, buf, (size_t)got);
				if (put_all(fds[i ^ 1], buf, (size_t)got) == 0)
					continue;
			}
			/* One side closed: close the pair. */
			close(fds[i]);
			close(fds[i ^ 1]);
			fds[i] = fds[i ^ 1] = -1;
		}
		/* Drop closed pairs (kept in order, pairs stay aligned). */
		for (i = n = 0; i < nfds; i += 2)
			if (fds[i] >= 0) {
				fds[n++] = fds[i];
				fds[n++] = fds[i + 1];
			}
		nfds = n;
	}
	for (i = 0; i < nfds; i++)
		close(fds[i]);
	return NULL;
}

/*
 * Listens, then picks the ps's port (r->to_port): in that order, since a
 * port picked first and released could be the relay's own.
 */
static int relay_start(struct relay *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
	if (!(r->cap = malloc(CAPTURE_MAX)) || (r->lfd = listen_on(&r->port)) < 0)
		return -1;
	r->to_port = tfj_testutil_free_port();
	return pthread_create(&r->th, NULL, relay_main, r) != 0 ? -1 : 0;
}

/* Stops forwarding; the capture stays for the checks. */
static void relay_stop(struct relay *r)
{
	r->stop = 1;
	pthread_join(r->th, NULL);
	close(r->lfd);
	r->lfd = -1;
}

static void relay_free(struct relay *r)
{
	free(r->cap);
	pthread_mutex_destroy(&r->mu);
}

/* Whether `needle` occurs in the capture. */
static int seen(const struct relay *r, const void *needle, size_t n)
{
	return memmem(r->cap, r->len, needle, n) != NULL;
}

/*
 * How many of the first layer's kernel's 64-byte runs (16 floats, at 64
 * places spread over it) occur in the capture: the initial weights of the
 * model both tasks build from --seed, as the runtime makes them.
 */
static int weight_runs_seen(const struct relay *r)
{
	struct tfj_model_spec spec;
	struct tfj_compute *c = NULL;
	struct tfj_model *m = NULL;
	float **params = NULL;
	size_t nt = 0, i, count;
	int hits = -1, k;

	if (tfj_model_spec_parse(&spec, "mlp", HIDDEN, 784, 10) || tfj_compute_open(&c, "cpu", 0) ||
	    tfj_model_new(&m, &spec, c))
		goto out;
	nt = tfj_model_num_tensors(m);
	params = calloc(nt, sizeof(*params));
	for (i = 0; params && i < nt; i++)
		if (!(params[i] = calloc(tfj_model_tensor(m, i)->count, sizeof(float))))
			goto out;
	if (!params || tfj_model_init_params(m, 7, params))
		goto out;
	count = tfj_model_tensor(m, 0)->count;
	for (hits = 0, k = 0; k < 64; k++)
		hits += seen(r, params[0] + (count - 16) * (size_t)k / 64, 16 * sizeof(float));
out:
	for (i = 0; params && i < nt; i++)
		free(params[i]);
	free(params);
	tfj_model_free(m);
	tfj_compute_free(c);
	return hits;
}

/*
 * A ps on its own port and one worker that dials it through the relay,
 * five steps of an MLP on synthetic data; the worker's exit code.
 */
static int train_through(struct relay *r)
{
	char ps[64], via[64], wk[64];
	char *ps_args[] = { "train", "--job_name", "ps", "--ps_hosts", ps, "--worker_hosts", wk,
			    "--model", "mlp", "--hidden", HIDDEN, "--dataset", "synthetic",
			    "--bind_address", "127.0.0.1", NULL };
	char *wk_args[] = { "train", "--job_name", "worker", "--ps_hosts", via, "--worker_hosts",
			    wk, "--model", "mlp", "--hidden", HIDDEN, "--dataset", "synthetic",
			    "--synthetic_examples", "512", "--max_steps", "5", "--seed", SEED,
			    "--peer_timeout", "30", NULL };
	int code, fd = -1;
	pid_t pid;

	if (relay_start(r) != 0)
		return -1;
	snprintf(ps, sizeof(ps), "127.0.0.1:%d", r->to_port);
	snprintf(wk, sizeof(wk), "127.0.0.1:%d", tfj_testutil_free_port());
	snprintf(via, sizeof(via), "127.0.0.1:%d", r->port);
	pid = itest_spawn_env(ps_args, env_secret, "/dev/null", NULL);
	if (pid <= 0)
		return -1;
	/* The worker starts once the ps listens, so the relay never dials a closed port. */
	for (code = 0; code < 600 && (fd = dial(r->to_port)) < 0; code++)
		usleep(50 * 1000);
	if (fd >= 0)
		close(fd);
	code = tfj_testutil_wait(itest_spawn_env(wk_args, env_secret, "/dev/null", NULL), 120);
	tfj_testutil_kill(pid, SIGTERM);
	tfj_testutil_wait(pid, 60);
	relay_stop(r);
	printf("relay: %zu bytes\n", r->len);
	return code;
}

/* Plaintext (the opt-out): the relay reads the secret and the weights; the check works. */
static void test_clear_text_is_seen(void)
{
	struct relay r;

	setenv(TFJ_PSTLS_MODE_ENV, "off", 1);
	TFJ_CHECK_INT(train_through(&r), TFJ_EXIT_OK);
	unsetenv(TFJ_PSTLS_MODE_ENV);
	TFJ_CHECK(seen(&r, SECRET, strlen(SECRET)));
	TFJ_CHECK_GT(weight_runs_seen(&r), 0);
	relay_free(&r);
}

/* TLS (the default): the same run shows the relay neither. */
static void test_tls_hides_secret_and_tensors(void)
{
	struct relay r;

	TFJ_CHECK_NOT_NULL(itest_tls_env());
	TFJ_CHECK_INT(train_through(&r), TFJ_EXIT_OK);
	TFJ_CHECK_GT(r.len, 100000);
	TFJ_CHECK(!seen(&r, SECRET, strlen(SECRET)));
	TFJ_CHECK(!seen(&r, SECRET + 8, 16));
	TFJ_CHECK_INT(weight_runs_seen(&r), 0);
	relay_free(&r);
}

/* A worker whose CA did not sign the ps's certificate never gets a call through. */
static void test_other_ca_is_refused(void)
{
	char ps[64], wk[64], other[64] = "/tmp/tfj-itest-other-ca-XXXXXX", env_dir[200];
	char *ps_args[] = { "train", "--job_name", "ps", "--ps_hosts", ps, "--worker_hosts", wk,
			    "--model", "softmax", "--dataset", "synthetic", "--bind_address",
			    "127.0.0.1", NULL };
	char *wk_args[] = { "train", "--job_name", "worker", "--ps_hosts", ps, "--worker_hosts",
			    wk, "--model", "softmax", "--dataset", "synthetic", "--peer_timeout", "3",
			    NULL };
	int port = tfj_testutil_free_port(), fd = -1, i, code;
	pid_t pid;

	snprintf(ps, sizeof(ps), "127.0.0.1:%d", port);
	snprintf(wk, sizeof(wk), "127.0.0.1:%d", tfj_testutil_free_port());
	TFJ_CHECK_NOT_NULL(itest_tls_env());
	TFJ_CHECK_OK(tfj_pstls_local(other));
	snprintf(env_dir, sizeof(env_dir), "%s=%s", TFJ_PSTLS_DIR_ENV, other);
	pid = itest_spawn_env(ps_args, env_secret, "/dev/null", NULL);
	TFJ_CHECK_GT(pid, 0);
	for (i = 0; i < 600 && (fd = dial(port)) < 0; i++)
		usleep(50 * 1000);
	if (fd >= 0)
		close(fd);
	code = tfj_testutil_wait(itest_spawn_env(wk_args, env_dir, "/dev/null", NULL), 60);
	TFJ_CHECK_INT(code, TFJ_EXIT_UNAVAILABLE);
	tfj_testutil_kill(pid, SIGTERM);
	tfj_testutil_wait(pid, 60);
	tfj_pstls_local_remove(other);
}

/*
 * One handshake with the ps on `port` by OpenSSL's client: the job's CA,
 * the ps checked for 127.0.0.1, ALPN h2 as gRPC asks. `max_version` 0
 * leaves OpenSSL's range; `ciphers` (TLS 1.2 and below), NULL for its
 * default. On success *version and the suite's name (cap bytes) say what
 * was agreed; -1 when the handshake or the verification failed.
 */
static int handshake(int *version, char *suite, size_t cap, int port, const char *ca_file,
		     int max_version, const char *ciphers)
{
	static const unsigned char alpn[] = { 2, 'h', '2' };
	struct timeval tv = { .tv_sec = 10 };
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *ssl = NULL;
	int fd = -1, rc = -1;

	if (!ctx || SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1 ||
	    (max_version && SSL_CTX_set_max_proto_version(ctx, max_version) != 1) ||
	    (ciphers && SSL_CTX_set_cipher_list(ctx, ciphers) != 1) ||
	    SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn)) != 0)
		goto out;
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	ssl = SSL_new(ctx);
	fd = dial(port);
	/* A ps that never answers fails the handshake instead of hanging the test. */
	if (!ssl || fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
	    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), "127.0.0.1") != 1 ||
	    SSL_set_fd(ssl, fd) != 1 || SSL_connect(ssl) != 1 ||
	    SSL_get_verify_result(ssl) != X509_V_OK)
		goto out;
	*version = SSL_version(ssl);
	snprintf(suite, cap, "%s", SSL_CIPHER_get_name(SSL_get_current_cipher(ssl)));
	rc = 0;
out:
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* TLS 1.3 with AES-256-GCM by default; TLS 1.2 only with an AEAD suite. */
static void test_negotiated_suites(void)
{
	char ps[64], wk[64], ca_file[200], suite[64] = "";
	char other[64] = "/tmp/tfj-itest-other-ca-XXXXXX";
	char *ps_args[] = { "train", "--job_name", "ps", "--ps_hosts", ps, "--worker_hosts", wk,
			    "--model", "softmax", "--dataset", "synthetic", "--bind_address",
			    "127.0.0.1", NULL };
	int port = tfj_testutil_free_port(), fd = -1, i, version = 0;
	const char *tls = itest_tls_env();
	pid_t pid;

	TFJ_CHECK_NOT_NULL(tls);
	if (!tls)
		return;
	snprintf(ps, sizeof(ps), "127.0.0.1:%d", port);
	snprintf(wk, sizeof(wk), "127.0.0.1:%d", tfj_testutil_free_port());
	snprintf(ca_file, sizeof(ca_file), "%s/%s", tls, TFJ_PSTLS_CA_FILE);
	pid = itest_spawn_env(ps_args, env_secret, "/dev/null", NULL);
	TFJ_CHECK_GT(pid, 0);
	for (i = 0; i < 600 && (fd = dial(port)) < 0; i++)
		usleep(50 * 1000);
	if (fd >= 0)
		close(fd);

	/* OpenSSL's default offer, the one gRPC's client sends. */
	TFJ_CHECK_INT(handshake(&version, suite, sizeof(suite), port, ca_file, 0, NULL), 0);
	TFJ_CHECK_INT(version, TLS1_3_VERSION);
	TFJ_CHECK_STR(suite, "TLS_AES_256_GCM_SHA384");

	/*
	 * TLS 1.2 works with a GCM suite, so the refusal below is the suite's
	 * and not the version's.
	 */
	suite[0] = '\0';
	TFJ_CHECK_INT(handshake(&version, suite, sizeof(suite), port, ca_file, TLS1_2_VERSION,
				"ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256"), 0);
	TFJ_CHECK_INT(version, TLS1_2_VERSION);
	TFJ_CHECK(strstr(suite, "-GCM-") != NULL);
	TFJ_CHECK_INT(handshake(&version, suite, sizeof(suite), port, ca_file, TLS1_2_VERSION,
				"ECDHE-ECDSA-AES128-SHA:ECDHE-RSA-AES128-SHA:ECDHE-ECDSA-AES128-SHA256:"
				"ECDHE-RSA-AES128-SHA256:AES128-SHA:AES256-SHA"), -1);

	/*
	 * The same offer trusting another job's CA fails: the handshakes above
	 * verified the ps, they did not just encrypt.
	 */
	TFJ_CHECK_OK(tfj_pstls_local(other));
	snprintf(ca_file, sizeof(ca_file), "%s/%s", other, TFJ_PSTLS_CA_FILE);
	TFJ_CHECK_INT(handshake(&version, suite, sizeof(suite), port, ca_file, 0, NULL), -1);
	tfj_pstls_local_remove(other);
	tfj_testutil_kill(pid, SIGTERM);
	tfj_testutil_wait(pid, 60);
}

int main(int argc, char **argv)
{
	FILE *f;

	ITEST_DISPATCH(argc, argv);
	if (tfj_testutil_tmpdir(dir, sizeof(dir), "tfj-itest-pstls") != 0)
		return 1;
	snprintf(secret_path, sizeof(secret_path), "%s/token", dir);
	f = fopen(secret_path, "wb");
	if (!f)
		return 1;
	fputs(SECRET, f);
	fclose(f);
	snprintf(env_secret, sizeof(env_secret), "%s=%s", TFJ_PSAUTH_ENV, secret_path);
	TFJ_RUN(test_clear_text_is_seen);
	TFJ_RUN(test_tls_hides_secret_and_tensors);
	TFJ_RUN(test_other_ca_is_refused);
	TFJ_RUN(test_negotiated_suites);
	/* The secret's directory; runs before this one left theirs in /tmp. */
	tfj_testutil_rmtree(dir);
	return tfj_test_finish();
}
