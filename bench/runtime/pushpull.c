/*
 * pushpull.c - push/pull bandwidth of the runtime's parameter server
 * against raw loopback TCP, measured in the same run.
 *
 * For every tensor size the program starts a real ps task (tfjob-runtime
 * train --job_name ps) on a free loopback port, connects with the runtime's
 * own client (session.c over psclient.c, the code a worker runs), initialises
 * the shard and then times Pull and Push of an MLP whose parameters add up
 * to the requested size (784xH kernel + biases + Hx10 logits). Push is
 * plain SGD with a constant rate, so the ps work per push is one axpy over
 * the tensor, as it would be in training.
 *
 * The baseline is one TCP connection on 127.0.0.1 between two threads of
 * this process: the client writes the same number of bytes and the server
 * answers with one byte once it has read them all (the same round-trip shape
 * as a Push; a Pull is the mirror image). Both numbers come from the same
 * run on the same (shared, noisy) machine, so their ratio is what counts.
 *
 * Output: one JSON object per size on stdout (medians and min/max of the
 * repetitions). Usage:
 *   tfj-bench-pushpull --runtime PATH [--sizes 1,4,16,64] [--reps 20]
 *                      [--placement any|split|same] [--push-part-kib N]
 * The client talks to the ps over one stream, as every task does.
 * --push-part-kib is the client's flag of that name (the runtime's default
 * when not given; 0 sends every push whole). --tls on (the default, as in
 * a TFJob) runs the ps traffic over TLS with a throwaway CA made for the
 * run, unless TFJOB_PS_TLS_DIR names one; --tls off sets TFJOB_PS_TLS=off
 * for both ends (runtime/src/pstls.h). The raw TCP baseline is plaintext
 * either way.
 *
 * --placement pins the two ends, because on a small machine where they run
 * decides the figure: `split` puts the client on one CPU and the ps (or the
 * TCP server thread) on another, as on two nodes or two idle cores (the
 * first two CPUs allowed; where those are hyperthreads of one core, they
 * share its caches and the figure is not a two-core one); `same`
 * puts both on one CPU, where a Push is no longer a pipeline (the ps can
 * only read and apply once the client has stopped sending); `any` (the
 * default) leaves it to the scheduler, which on 2 cores picks either, run by
 * run. Threads inherit the affinity of the thread that creates them, so the
 * client side is pinned before grpc_init() starts gRPC's threads and the ps
 * is spawned from a thread pinned to its CPU.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <grpc/grpc.h>

#include <tfj/err.h>
#include <tfj/grpc.h>

#include "wire/pstls.h"

#include "task/rtconfig.h"
#include "worker/session.h"
#include "wire/wire.h"
#include "tfj_testutil.h"

#define MAX_SIZES 16
#define MAX_REPS 1000

/* CPUs of --placement: the client's and the server's; -1 when not pinned. */
static int client_cpu = -1, server_cpu = -1;

/* Pins the calling thread to cpu (no-op for -1); threads it creates inherit it. */
static int pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* Picks client_cpu/server_cpu for placement among the CPUs we may run on. */
static int choose_cpus(const char *placement)
{
	cpu_set_t set;
	int cpus[2], n = 0, i, split = strcmp(placement, "split") == 0;

	if (strcmp(placement, "any") == 0)
		return 0;
	if (!split && strcmp(placement, "same") != 0)
		return -1;
	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	for (i = 0; i < CPU_SETSIZE && n < 2; i++)
		if (CPU_ISSET(i, &set))
			cpus[n++] = i;
	if (n < 1 + split)
		return -1;
	client_cpu = cpus[0];
	server_cpu = cpus[split];
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Sorts v in place and returns its median. */
static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- raw TCP baseline ---------------------------------------------------- */

struct tcp_srv {
	int lfd;
	size_t bytes;
	int reps;
	char *buf;
};

static int read_full(int fd, char *p, size_t n)
{
	while (n > 0) {
		ssize_t r = read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static int write_full(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void *tcp_server(void *arg)
{
	struct tcp_srv *s = arg;
	int fd = accept(s->lfd, NULL, NULL), i, one = 1;
	char ack = 1;

	if (fd < 0)
		return NULL;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (i = 0; i < s->reps; i++)
		if (read_full(fd, s->buf, s->bytes) || write_full(fd, &ack, 1))
			break;
	close(fd);
	return NULL;
}

/* Fills t[reps] with the seconds of one "send bytes, get a 1-byte ack". */
static int tcp_bench(double *t, int reps, size_t bytes)
{
	struct tcp_srv srv = { .bytes = bytes, .reps = reps };
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	pthread_t th;
	char *out = NULL, ack;
	int cfd = -1, one = 1, rc = -1, i, started = 0;

	srv.lfd = socket(AF_INET, SOCK_STREAM, 0);
	srv.buf = malloc(bytes);
	out = calloc(1, bytes);
	if (srv.lfd < 0 || !srv.buf || !out)
		goto out;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(srv.lfd, (struct sockaddr *)&a, sizeof(a)) || listen(srv.lfd, 1) ||
	    getsockname(srv.lfd, (struct sockaddr *)&a, &len))
		goto out;
	/* The server thread inherits this thread's CPU, as the ps does (ps_bench). */
	if (pin(server_cpu))
		goto out;
	started = !pthread_create(&th, NULL, tcp_server, &srv);
	if (pin(client_cpu) || !started)
		goto out;
	cfd = socket(AF_INET, SOCK_STREAM, 0);
	if (cfd < 0 || connect(cfd, (struct sockaddr *)&a, sizeof(a)))
		goto out;
	setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (i = 0; i < reps; i++) {
		double t0 = tfj_testutil_now_s();

		if (write_full(cfd, out, bytes) || read_full(cfd, &ack, 1))
			goto out;
		t[i] = tfj_testutil_now_s() - t0;
	}
	rc = 0;
out:
	if (cfd >= 0)
		close(cfd);
	if (started)
		pthread_join(th, NULL);
	if (srv.lfd >= 0)
		close(srv.lfd);
	free(srv.buf);
	free(out);
	return rc;
}

/* ---- the runtime's ps ---------------------------------------------------- */

/* Training flags shared by the ps and our client (they must match). */
static int model_args(char **argv, char *hidden, size_t hlen, size_t h)
{
	snprintf(hidden, hlen, "%zu", h);
	argv[0] = "--model";
	argv[1] = "mlp";
	argv[2] = "--hidden";
	argv[3] = hidden;
	argv[4] = "--optimizer";
	argv[5] = "sgd";
	argv[6] = "--lr_schedule";
	argv[7] = "constant";
	argv[8] = "--learning_rate";
	argv[9] = "0.0001";
	argv[10] = "--dataset";
	argv[11] = "synthetic";
	return 12;
}

static pid_t start_ps(const char *runtime, const char *ps_hosts, size_t h)
{
	char hidden[32];
	struct tfj_testutil_spawn sp = { 0 };
	char *argv[40];
	int n = 0;

	argv[n++] = (char *)runtime;
	argv[n++] = "train";
	argv[n++] = "--job_name";
	argv[n++] = "ps";
	argv[n++] = "--task_index";
	argv[n++] = "0";
	argv[n++] = "--ps_hosts";
	argv[n++] = (char *)ps_hosts;
	argv[n++] = "--worker_hosts";
	argv[n++] = "127.0.0.1:1";
	n += model_args(argv + n, hidden, sizeof(hidden), h);
	argv[n] = NULL;
	sp.exe = runtime;
	sp.args = argv + 1;
	return tfj_testutil_spawn(&sp);
}

struct result {
	double pull[MAX_REPS], push[MAX_REPS], tcp[MAX_REPS];
};

static const char *placement = "any";
/* --push-part-kib for the client (NULL: the runtime's default). */
static const char *push_part;

static int ps_bench(struct result *res, const char *runtime, size_t h, int reps,
		    size_t *bytes_out)
{
	struct tfj_rtconfig cfg;
	struct tfj_session s;
	char ps_hosts[64], hidden[32];
	char *argv[40];
	int port = tfj_testutil_free_port(), n = 0, rc, i, stale, have_cfg = 0, have_s = 0;
	pid_t pid;
	double t0;

	if (port < 0)
		return tfj_err_set(TFJ_EIO, "no free port");
	snprintf(ps_hosts, sizeof(ps_hosts), "127.0.0.1:%d", port);
	/* The ps inherits this thread's CPU at spawn; then back to the client's. */
	if (pin(server_cpu))
		return tfj_err_set(TFJ_EIO, "cannot pin to CPU %d", server_cpu);
	pid = start_ps(runtime, ps_hosts, h);
	if (pin(client_cpu) && pid >= 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
		return tfj_err_set(TFJ_EIO, "cannot pin to CPU %d", client_cpu);
	}
	if (pid < 0)
		return tfj_err_set(TFJ_EIO, "could not start %s", runtime);
	argv[n++] = "--job_name";
	argv[n++] = "worker";
	argv[n++] = "--task_index";
	argv[n++] = "0";
	argv[n++] = "--ps_hosts";
	argv[n++] = ps_hosts;
	argv[n++] = "--worker_hosts";
	argv[n++] = "127.0.0.1:1";
	if (push_part) {
		argv[n++] = "--push-part-kib";
		argv[n++] = (char *)push_part;
	}
	n += model_args(argv + n, hidden, sizeof(hidden), h);
	rc = tfj_rtconfig_parse(&cfg, n, argv, NULL);
	if (rc)
		goto out;
	have_cfg = 1;
	rc = tfj_session_init(&s, &cfg);
	have_s = 1;
	if (rc)
		goto out;
	/* The ps needs a moment to listen: retry Status/Init for up to 30 s. */
	t0 = tfj_testutil_now_s();
	while ((rc = tfj_session_ensure_ready(&s, (const float *const *)s.params, 0)) ==
	       TFJ_EUNAVAIL && tfj_testutil_now_s() - t0 < 30)
		tfj_grpc_idle_ms(100); /* polls, so the TLS handshake goes on */
	if (rc)
		goto out;
	*bytes_out = s.layout.total * sizeof(float);
	/* Two warm-up rounds (connection, HTTP/2 windows, page faults). */
	for (i = 0; i < 2; i++)
		if ((rc = tfj_session_pull(&s, NULL, 0)) ||
		    (rc = tfj_session_push(&s, 1000000, &stale)))
			goto out;
	for (i = 0; i < reps; i++) {
		t0 = tfj_testutil_now_s();
		if ((rc = tfj_session_pull(&s, NULL, 0)))
			goto out;
		res->pull[i] = tfj_testutil_now_s() - t0;
		t0 = tfj_testutil_now_s();
		if ((rc = tfj_session_push(&s, 1000000, &stale)))
			goto out;
		res->push[i] = tfj_testutil_now_s() - t0;
	}
out:
	if (have_s)
		tfj_session_free(&s);
	if (have_cfg)
		tfj_rtconfig_free(&cfg);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	return rc;
}

static void summary(FILE *f, const char *name, double *v, int reps, size_t bytes)
{
	double med = median(v, (size_t)reps);

	fprintf(f, "\"%s_ms\":%.3f,\"%s_ms_min\":%.3f,\"%s_ms_max\":%.3f,\"%s_mib_s\":%.1f", name,
		med * 1e3, name, v[0] * 1e3, name, v[reps - 1] * 1e3, name,
		(double)bytes / med / (1024.0 * 1024.0));
}

int main(int argc, char **argv)
{
	const char *runtime = NULL, *sizes = "1,4,16,64";
	double mib[MAX_SIZES];
	size_t nsizes = 0, k;
	int reps = 20, i, rc = 0;
	static struct result res;
	char *end;

	const char *tls = "on";
	char tls_dir[] = "/tmp/tfj-bench-tls-XXXXXX";
	int own_ca = 0;

	/* This process is the worker side: the same malloc settings as a task. */
	tfj_wire_tune_malloc();
	for (i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--runtime") == 0) {
			runtime = argv[i + 1];
		} else if (strcmp(argv[i], "--placement") == 0) {
			placement = argv[i + 1];
		} else if (strcmp(argv[i], "--push-part-kib") == 0) {
			push_part = argv[i + 1];
		} else if (strcmp(argv[i], "--tls") == 0) {
			tls = argv[i + 1];
		} else if (strcmp(argv[i], "--sizes") == 0) {
			sizes = argv[i + 1];
		} else if (strcmp(argv[i], "--reps") == 0) {
			long v = strtol(argv[i + 1], &end, 10);

			if (*end || v < 3 || v > MAX_REPS) {
				fprintf(stderr, "--reps: 3..%d\n", MAX_REPS);
				return 2;
			}
			reps = (int)v;
		} else {
			break;
		}
	}
	if (i != argc || !runtime || (strcmp(tls, "on") && strcmp(tls, "off"))) {
		fprintf(stderr, "usage: %s --runtime PATH [--sizes 1,4,16,64] [--reps N] "
			"[--placement any|split|same] [--push-part-kib N] "
			"[--tls on|off]\n", argv[0]);
		return 2;
	}
	/* The ps child inherits the environment: both ends agree. */
	if (!strcmp(tls, "off")) {
		setenv(TFJ_PSTLS_MODE_ENV, "off", 1);
	} else if (!getenv(TFJ_PSTLS_DIR_ENV)) {
		unsetenv(TFJ_PSTLS_MODE_ENV);
		if (tfj_pstls_local(tls_dir) || setenv(TFJ_PSTLS_DIR_ENV, tls_dir, 1)) {
			fprintf(stderr, "local CA: %s\n", tfj_err_detail());
			return 1;
		}
		own_ca = 1;
	}
	if (choose_cpus(placement) || pin(client_cpu)) {
		fprintf(stderr, "--placement %s: any, split (needs 2 CPUs) or same\n", placement);
		return 2;
	}
	for (const char *p = sizes; *p && nsizes < MAX_SIZES;) {
		double v = strtod(p, &end);

		if (end == p || v <= 0 || v > 200 || (*end && *end != ',')) {
			fprintf(stderr, "--sizes: comma-separated MiB values in (0, 200]\n");
			return 2;
		}
		mib[nsizes++] = v;
		p = *end ? end + 1 : end;
	}
	signal(SIGPIPE, SIG_IGN);
	grpc_init();
	for (k = 0; k < nsizes; k++) {
		/* MLP parameters: 784*H + H + 10*H + 10 floats. */
		size_t want = (size_t)(mib[k] * 1024 * 1024 / 4), h = (want - 10) / 795, bytes = 0;

		if (h < 1)
			h = 1;
		rc = ps_bench(&res, runtime, h, reps, &bytes);
		if (rc) {
			fprintf(stderr, "ps bench %.0f MiB: %s: %s\n", mib[k], tfj_err_name(rc),
				tfj_err_detail());
			break;
		}
		if (tcp_bench(res.tcp, reps, bytes)) {
			fprintf(stderr, "tcp bench: %s\n", strerror(errno));
			rc = 1;
			break;
		}
		printf("{\"size_mib\":%.2f,\"bytes\":%zu,\"reps\":%d,"
		       "\"placement\":\"%s\",\"tls\":\"%s\",",
		       (double)bytes / 1048576.0, bytes, reps, placement, tls);
		summary(stdout, "pull", res.pull, reps, bytes);
		putchar(',');
		summary(stdout, "push", res.push, reps, bytes);
		putchar(',');
		summary(stdout, "tcp", res.tcp, reps, bytes);
		/* Sorted by summary(): index reps/2 region is the median. */
		printf(",\"pull_ratio\":%.3f,\"push_ratio\":%.3f}\n",
		       median(res.tcp, (size_t)reps) / median(res.pull, (size_t)reps),
		       median(res.tcp, (size_t)reps) / median(res.push, (size_t)reps));
		fflush(stdout);
	}
	grpc_shutdown();
	if (own_ca)
		tfj_pstls_local_remove(tls_dir);
	return rc ? 1 : 0;
}
