/*
 * launch.c - a local training cluster of processes (launch.h).
 */
#define _GNU_SOURCE /* pipe2 */
#include "cli/launch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tfj/buf.h>
#include <tfj/err.h>
#include <tfj/json.h>
#include <tfj/log.h>
#include <tfj/progrec.h>
#include <tfj/tfconfig.h>

#include <tfj/exitcode.h>
#include "task/stop.h"
#include "wire/pstls.h"
#include "task/rtconfig.h"

#define LINE_MAX_BYTES (64u << 10)
#define GRACE_S 30.0

struct task {
	char type[12];
	int index;
	char name[32];       /* "worker:1" */
	int port;
	char *tf_config;
	pid_t pid;           /* 0 when not running */
	int fd;              /* read end of its stdout/stderr, -1 when closed */
	struct tfj_buf line;
	int exited, code, restarts;
	double restart_at;   /* > 0: restart pending at this time */
	int coordinator;
};

struct run {
	const struct tfj_launch_opts *o;
	FILE *out;
	struct task tasks[TFJ_LAUNCH_MAX_TASKS];
	int ntasks;
	struct tfj_launch_result *res;
	int coord_done;
	double coord_done_at;
	int64_t coord_step;      /* latest global step in the coordinator's records */
	/* The supervision loop's state (run_cluster). */
	double t0, timeout;      /* start, and how long the run may take */
	int failed;              /* the exit code of the run's failure, 0 while none */
	int chaos_done;          /* --kill-task done (or none asked for) */
	int term_sent;           /* every task was sent SIGTERM ... */
	double term_at;          /* ... at this time */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* arg is `flag` ("--max-restarts"), or its old spelling with underscores. */
static int is_flag(const char *arg, const char *flag)
{
	return strncmp(arg, "--", 2) == 0 && tfj_parse_flag_eq(arg + 2, strlen(arg + 2), flag + 2);
}

int tfj_launch_parse(struct tfj_launch_opts *o, int argc, char **argv)
{
	int i, rc;
	int64_t v;
	double d;
	char **fwd;

	memset(o, 0, sizeof(*o));
	o->nps = 1;
	o->nworkers = 2;
	o->max_restarts = 3;
	o->timeout_s = 1800;
	if (argc > TFJ_RT_MAX_ARGS)
		return tfj_err_set(TFJ_EINVAL, "too many arguments");
	fwd = calloc((size_t)argc + 1, sizeof(*fwd));
	if (!fwd)
		return tfj_err_set(TFJ_ENOMEM, "launch: out of memory");
	o->fwd = fwd;
	for (i = 0; i < argc; i++) {
		const char *a = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;

#define TAKES(flag) (is_flag(a, flag) && (val || (rc = tfj_err_set(TFJ_EINVAL, \
		"flag %s needs a value", flag), 0)))
		rc = 0;
		if (TAKES("--ps")) {
			if ((rc = tfj_parse_i64(&v, val, 1, 16, "--ps")) != 0)
				return rc;
			o->nps = (int)v;
			i++;
		} else if (TAKES("--workers")) {
			if ((rc = tfj_parse_i64(&v, val, 0, 32, "--workers")) != 0)
				return rc;
			o->nworkers = (int)v;
			i++;
		} else if (TAKES("--timeout")) {
			if ((rc = tfj_parse_double(&d, val, 1, 86400, "--timeout")) != 0)
				return rc;
			o->timeout_s = d;
			i++;
		} else if (TAKES("--max-restarts")) {
			if ((rc = tfj_parse_i64(&v, val, 0, 100, "--max-restarts")) != 0)
				return rc;
			o->max_restarts = (int)v;
			i++;
		} else if (TAKES("--chaos-kill")) {
			if (strlen(val) >= sizeof(o->kill_task))
				return tfj_err_set(TFJ_EINVAL, "--chaos-kill: task name too long");
			memcpy(o->kill_task, val, strlen(val) + 1);
			i++;
		} else if (TAKES("--chaos-at-step")) {
			if ((rc = tfj_parse_i64(&v, val, 1, (int64_t)1 << 40, "--chaos-at-step")) != 0)
				return rc;
			o->kill_at_step = v;
			i++;
		} else if (TAKES("--chaos-after")) {
			if ((rc = tfj_parse_double(&d, val, 0, 86400, "--chaos-after")) != 0)
				return rc;
			o->kill_after_s = d;
			i++;
		} else if (is_flag(a, "--chief")) {
			o->chief = 1;
		} else if (is_flag(a, "--evaluator")) {
			o->evaluator = 1;
		} else if (is_flag(a, "--quiet")) {
			o->quiet = 1;
		} else if (rc) {
			return rc;
		} else {
			fwd[o->nfwd++] = argv[i];
		}
#undef TAKES
	}
	if (o->nworkers + o->chief < 1)
		return tfj_err_set(TFJ_EINVAL, "launch: need at least one worker or --chief");
	if (o->nps + o->nworkers + o->chief + o->evaluator > TFJ_LAUNCH_MAX_TASKS)
		return tfj_err_set(TFJ_EINVAL, "launch: more than %d tasks", TFJ_LAUNCH_MAX_TASKS);
	return 0;
}

void tfj_launch_opts_free(struct tfj_launch_opts *o)
{
	if (!o)
		return;
	free((void *)o->fwd);
	o->fwd = NULL;
}

/* Reserves n distinct free loopback ports (held open until all are chosen). */
static int free_ports(int *ports, int n)
{
	int fds[TFJ_LAUNCH_MAX_TASKS], i, rc = 0;

	for (i = 0; i < n; i++)
		fds[i] = -1;
	for (i = 0; i < n && !rc; i++) {
		struct sockaddr_in a;
		socklen_t len = sizeof(a);

		memset(&a, 0, sizeof(a));
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&a, sizeof(a)) != 0 ||
		    getsockname(fds[i], (struct sockaddr *)&a, &len) != 0)
			rc = tfj_err_set(TFJ_EIO, "launch: cannot reserve a port: %s", strerror(errno));
		else
			ports[i] = ntohs(a.sin_port);
	}
	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return rc;
}

static int build_configs(struct run *r)
{
	struct tfj_tfconfig tc;
	char host[64];
	int i, rc = 0;
	static const char *const order[] = { "chief", "worker", "ps", "evaluator" };
	size_t k;

	memset(&tc, 0, sizeof(tc));
	for (k = 0; k < 4 && !rc; k++) {
		int any = 0;

		for (i = 0; i < r->ntasks && !rc; i++) {
			if (strcmp(r->tasks[i].type, order[k]) != 0)
				continue;
			if (!any && (rc = tfj_tfconfig_add_job(&tc, order[k])) != 0)
				break;
			any = 1;
			snprintf(host, sizeof(host), "127.0.0.1:%d", r->tasks[i].port);
			rc = tfj_tfconfig_add_host(&tc, order[k], host);
		}
	}
	for (i = 0; i < r->ntasks && !rc; i++) {
		rc = tfj_tfconfig_set_task(&tc, r->tasks[i].type, r->tasks[i].index);
		if (!rc)
			rc = tfj_tfconfig_encode(&r->tasks[i].tf_config, &tc);
	}
	tfj_tfconfig_free(&tc);
	return rc;
}

static int spawn(struct run *r, struct task *t)
{
	int fds[2];
	char *argv[TFJ_RT_MAX_ARGS + 8];
	int n = 0, i;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) != 0)
		return tfj_err_set(TFJ_EIO, "launch: pipe: %s", strerror(errno));
	argv[n++] = (char *)r->o->exe;
	argv[n++] = "train";
	for (i = 0; i < r->o->nfwd && n < TFJ_RT_MAX_ARGS; i++)
		argv[n++] = r->o->fwd[i];
	argv[n++] = "--bind-address";
	argv[n++] = "127.0.0.1";
	argv[n] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return tfj_err_set(TFJ_EIO, "launch: fork: %s", strerror(errno));
	}
	if (pid == 0) {
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		setenv("TF_CONFIG", t->tf_config, 1);
		/*
		 * The tasks share this machine's cores: one BLAS thread each unless
		 * the user chose otherwise (measured: 2 workers + 1 ps on 2 cores
		 * train ~25% faster than with OpenBLAS's default thread count).
		 */
		setenv("OPENBLAS_NUM_THREADS", "1", 0);
		execv(r->o->exe, argv);
		_exit(TFJ_EXIT_NOTFOUND);
	}
	close(fds[1]);
	t->pid = pid;
	t->fd = fds[0];
	t->exited = 0;
	t->restart_at = 0;
	tfj_buf_clear(&t->line);
	return 0;
}

/* The coordinator's final record carries the figures. */
static void parse_record(struct run *r, struct task *t, const char *json, size_t len)
{
	cJSON *doc = NULL;
	int fin = 0;
	double d;
	int64_t step;

	if (tfj_json_parse(&doc, json, len, TFJ_PROGREC_MAX) != 0)
		return;
	if (t->coordinator &&
	    tfj_json_get_int64(&step, doc, TFJ_PROGREC_KEY_STEP, 0, TFJ_JSON_INT_MAX) == 0 &&
	    step > r->coord_step)
		r->coord_step = step;
	if (t->coordinator && tfj_json_opt_bool(&fin, doc, TFJ_PROGREC_KEY_FINAL, 0) == 0 && fin) {
		r->res->have_final = 1;
		if (tfj_json_get_number(&d, doc, TFJ_PROGREC_KEY_TEST_ACCURACY) == 0)
			r->res->test_accuracy = d;
		if (tfj_json_get_number(&d, doc, TFJ_PROGREC_KEY_EXAMPLES_PER_SEC) == 0)
			r->res->examples_per_sec = d;
		if (tfj_json_get_int64(&step, doc, TFJ_PROGREC_KEY_STEP, 0, TFJ_JSON_INT_MAX) == 0)
			r->res->step = step;
	}
	if (strcmp(t->type, "evaluator") == 0 &&
	    tfj_json_get_number(&d, doc, TFJ_PROGREC_KEY_ACCURACY) == 0)
		r->res->eval_accuracy = d;
	cJSON_Delete(doc);
}

static void emit_line(struct run *r, struct task *t, const char *line, size_t len)
{
	size_t plen = strlen(TFJ_PROGREC_PREFIX);
	int is_progress = len > plen && memcmp(line, TFJ_PROGREC_PREFIX, plen) == 0;

	if (is_progress)
		parse_record(r, t, line + plen, len - plen);
	if (!r->o->quiet || is_progress || memmem(line, len, "level=error", 11))
		fprintf(r->out, "[%s] %.*s\n", t->name, (int)len, line);
}

/* Reads what is available; returns 1 at EOF. */
static int drain(struct run *r, struct task *t)
{
	char buf[8192];
	ssize_t n = read(t->fd, buf, sizeof(buf));
	size_t i, start = 0;

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0) {
		if (t->line.len)
			emit_line(r, t, tfj_buf_cstr(&t->line), t->line.len);
		tfj_buf_clear(&t->line);
		close(t->fd);
		t->fd = -1;
		return 1;
	}
	for (i = 0; i < (size_t)n; i++) {
		if (buf[i] != '\n')
			continue;
		/* Over the cap the append fails and the line is cut at LINE_MAX_BYTES. */
		(void)tfj_buf_append(&t->line, buf + start, i - start);
		emit_line(r, t, tfj_buf_cstr(&t->line), t->line.len);
		tfj_buf_clear(&t->line);
		start = i + 1;
	}
	if (start < (size_t)n && tfj_buf_append(&t->line, buf + start, (size_t)n - start) != 0) {
		emit_line(r, t, tfj_buf_cstr(&t->line), t->line.len);
		tfj_buf_clear(&t->line);
	}
	return 0;
}

static void kill_all(struct run *r, int sig)
{
	int i;

	for (i = 0; i < r->ntasks; i++)
		if (r->tasks[i].pid > 0 && !r->tasks[i].exited)
			kill(r->tasks[i].pid, sig);
}

static int running(struct run *r)
{
	int i, n = 0;

	for (i = 0; i < r->ntasks; i++)
		if ((r->tasks[i].pid > 0 && !r->tasks[i].exited) || r->tasks[i].fd >= 0 ||
		    r->tasks[i].restart_at > 0)
			n++;
	return n;
}

static struct task *by_pid(struct run *r, pid_t pid)
{
	int i;

	for (i = 0; i < r->ntasks; i++)
		if (r->tasks[i].pid == pid)
			return &r->tasks[i];
	return NULL;
}

static void add_task(struct run *r, const char *type, int index, int coordinator)
{
	struct task *t = &r->tasks[r->ntasks++];

	snprintf(t->type, sizeof(t->type), "%s", type);
	t->index = index;
	snprintf(t->name, sizeof(t->name), "%s:%d", type, index);
	t->fd = -1;
	t->coordinator = coordinator;
	tfj_buf_init(&t->line, LINE_MAX_BYTES);
}

/* Appends "127.0.0.1:1,127.0.0.1:2,..." (n hosts) to b. */
static void fake_hosts(struct tfj_buf *b, int n, int base)
{
	int i;

	for (i = 0; i < n; i++)
		tfj_buf_printf(b, "%s127.0.0.1:%d", i ? "," : "", base + i);
}

/*
 * Checks the forwarded flags once against a cluster of the same shape, so
 * a typo or an impossible setting fails fast with exit 2.
 */
static int prevalidate(const struct tfj_launch_opts *o)
{
	char *argv[TFJ_RT_MAX_ARGS + 8];
	struct tfj_buf ps = TFJ_BUF_INIT(4096), wk = TFJ_BUF_INIT(4096);
	struct tfj_rtconfig cfg;
	int n = 0, i, rc;

	fake_hosts(&ps, o->nps, 1000);
	fake_hosts(&wk, o->nworkers, 2000);
	for (i = 0; i < o->nfwd && n < TFJ_RT_MAX_ARGS; i++)
		argv[n++] = o->fwd[i];
	argv[n++] = "--job-name";
	argv[n++] = o->chief ? "chief" : "worker";
	argv[n++] = "--ps-hosts";
	argv[n++] = (char *)tfj_buf_cstr(&ps);
	if (o->nworkers) {
		argv[n++] = "--worker-hosts";
		argv[n++] = (char *)tfj_buf_cstr(&wk);
	}
	if (o->chief) {
		argv[n++] = "--chief-host";
		argv[n++] = "127.0.0.1:3000";
	}
	rc = tfj_rtconfig_parse(&cfg, n, argv, NULL);
	if (rc == 0)
		tfj_rtconfig_free(&cfg);
	tfj_buf_free(&ps);
	tfj_buf_free(&wk);
	return rc;
}

/* The tasks of the cluster, their ports and TF_CONFIGs, started: 0 or the error. */
static int cluster_start(struct run *r)
{
	const struct tfj_launch_opts *o = r->o;
	int ports[TFJ_LAUNCH_MAX_TASKS];
	int i, rc;

	rc = prevalidate(o);
	if (rc)
		return rc;
	for (i = 0; i < o->nps; i++)
		add_task(r, "ps", i, 0);
	if (o->chief)
		add_task(r, "chief", 0, 1);
	for (i = 0; i < o->nworkers; i++)
		add_task(r, "worker", i, !o->chief && i == 0);
	if (o->evaluator)
		add_task(r, "evaluator", 0, 0);
	rc = free_ports(ports, r->ntasks);
	if (rc)
		return rc;
	for (i = 0; i < r->ntasks; i++)
		r->tasks[i].port = ports[i];
	rc = build_configs(r);
	if (rc)
		return rc;
	for (i = 0; i < r->ntasks && !rc; i++)
		rc = spawn(r, &r->tasks[i]);
	if (rc) {
		kill_all(r, SIGKILL);
		r->failed = TFJ_EXIT_IO;
	}
	return 0;
}

/* Copies what the tasks wrote to the run's output (waits up to 100 ms for it). */
static void poll_output(struct run *r)
{
	struct pollfd pfd[TFJ_LAUNCH_MAX_TASKS];
	int map[TFJ_LAUNCH_MAX_TASKS], np = 0, i;

	for (i = 0; i < r->ntasks; i++) {
		if (r->tasks[i].fd < 0)
			continue;
		pfd[np].fd = r->tasks[i].fd;
		pfd[np].events = POLLIN;
		map[np++] = i;
	}
	if (poll(pfd, (nfds_t)np, 100) > 0)
		for (i = 0; i < np; i++)
			if (pfd[i].revents)
				drain(r, &r->tasks[map[i]]);
}

/* Stops the whole cluster (SIGTERM now, SIGKILL 10 s later). */
static void stop_all(struct run *r, double now)
{
	kill_all(r, SIGTERM);
	r->term_sent = 1;
	r->term_at = now;
}

/* What task t's exit means: done, nothing, a restart, or the run's failure. */
static void on_exit_of(struct run *r, struct task *t, double now)
{
	fprintf(r->out, "[launch] %s exited with %d (%s)\n", t->name, t->code,
		t->code == 0 ? "ok" : tfj_exitcode_retryable(t->code) ? "retryable" : "permanent");
	if (t->code == 0) {
		if (t->coordinator) {
			r->coord_done = 1;
			r->coord_done_at = now;
		}
	} else if (r->term_sent || r->failed) {
		/* Exits after our own SIGTERM are not failures. */
	} else if (r->coord_done && tfj_exitcode_retryable(t->code) &&
		   strcmp(t->type, "evaluator") == 0) {
		/*
		 * Training is over; an evaluator that lost the ps tasks
		 * after they finished has nothing left to evaluate.
		 */
	} else if (tfj_exitcode_retryable(t->code) && t->restarts < r->o->max_restarts &&
		   !r->coord_done) {
		t->restarts++;
		r->res->restarts++;
		t->restart_at = now + 1.0;
	} else {
		r->failed = t->code;
		stop_all(r, now);
	}
}

/* Reaps the tasks that exited. */
static void reap_exits(struct run *r, double now)
{
	pid_t pid;
	int status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		struct task *t = by_pid(r, pid);

		if (!t)
			continue;
		t->exited = 1;
		t->code = WIFEXITED(status) ? WEXITSTATUS(status)
			  : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		on_exit_of(r, t, now);
	}
}

/* Starts again the tasks whose restart is due (none once the run failed). */
static void restart_due(struct run *r, double now)
{
	int i;

	for (i = 0; i < r->ntasks; i++) {
		struct task *t = &r->tasks[i];

		if (t->restart_at > 0 && now >= t->restart_at && t->fd < 0 && !r->failed) {
			fprintf(r->out, "[launch] restarting %s (restart %d)\n", t->name, t->restarts);
			if (spawn(r, t) != 0) {
				r->failed = TFJ_EXIT_IO;
				t->restart_at = 0;
			}
		} else if (t->restart_at > 0 && r->failed) {
			t->restart_at = 0;
		}
	}
}

/* --kill-task: once, at its step or time. */
static void chaos(struct run *r, double now)
{
	const struct tfj_launch_opts *o = r->o;
	int i;

	/* The step form lands mid-run however fast (or slow) the machine trains. */
	if (r->chaos_done || (o->kill_at_step > 0 ? r->coord_step < o->kill_at_step
						  : now - r->t0 < o->kill_after_s))
		return;
	for (i = 0; i < r->ntasks; i++)
		if (strcmp(r->tasks[i].name, o->kill_task) == 0 && r->tasks[i].pid > 0 &&
		    !r->tasks[i].exited) {
			fprintf(r->out, "[launch] chaos: killing %s\n", r->tasks[i].name);
			kill(r->tasks[i].pid, SIGKILL);
		}
	r->chaos_done = 1;
}

/* Ends the run once the coordinator is done (after a grace), on timeout or on a signal. */
static void stop_when_due(struct run *r, double now)
{
	if (!r->term_sent && ((r->coord_done && now - r->coord_done_at > GRACE_S) ||
			      now - r->t0 > r->timeout || tfj_stop_requested())) {
		if (!r->coord_done) {
			fprintf(r->out, "[launch] %s: stopping the cluster\n",
				tfj_stop_requested() ? "interrupted" : "timed out");
			r->failed = TFJ_EXIT_ABORTED;
		}
		stop_all(r, now);
	}
	if (r->term_sent && now - r->term_at > 10.0)
		kill_all(r, SIGKILL);
}

static int run_cluster(const struct tfj_launch_opts *o, struct tfj_launch_result *res)
{
	struct run *r = calloc(1, sizeof(*r));
	int i, rc;

	memset(res, 0, sizeof(*res));
	res->eval_accuracy = -1;
	if (!r)
		return tfj_err_set(TFJ_ENOMEM, "launch: out of memory");
	r->o = o;
	r->out = o->out ? o->out : stdout;
	r->res = res;
	r->t0 = now_s();
	r->timeout = o->timeout_s > 0 ? o->timeout_s : 1800;
	r->chaos_done = o->kill_task[0] == '\0';
	rc = cluster_start(r);
	if (rc)
		goto out;
	while (running(r)) {
		double now = now_s();

		poll_output(r);
		reap_exits(r, now);
		restart_due(r, now);
		chaos(r, now);
		stop_when_due(r, now);
	}
	res->wall_s = now_s() - r->t0;
	if (r->failed)
		res->exit_code = r->failed;
	else if (!r->coord_done || !res->have_final)
		res->exit_code = TFJ_EXIT_INTERNAL;
out:
	for (i = 0; i < r->ntasks; i++) {
		free(r->tasks[i].tf_config);
		tfj_buf_free(&r->tasks[i].line);
		if (r->tasks[i].fd >= 0)
			close(r->tasks[i].fd);
	}
	free(r);
	return rc;
}

/*
 * Secure by default, locally too: unless the caller named a certificate
 * directory or turned TLS off (pstls.h), the cluster gets a throwaway CA
 * whose files the tasks inherit through TFJOB_PS_TLS_DIR and which is
 * removed when the run ends.
 */
int tfj_launch_run(const struct tfj_launch_opts *o, struct tfj_launch_result *res)
{
	const char *dir = getenv(TFJ_PSTLS_DIR_ENV), *mode = getenv(TFJ_PSTLS_MODE_ENV), *tmp;
	char local[4096] = "";
	int n, rc;

	if ((!dir || !*dir) && !(mode && !strcmp(mode, "off"))) {
		tmp = getenv("TMPDIR");
		n = snprintf(local, sizeof(local), "%s/tfjob-tls-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (n < 0 || (size_t)n >= sizeof(local))
			return tfj_err_set(TFJ_ETOOBIG, "launch: TMPDIR too long");
		if ((rc = tfj_pstls_local(local)))
			return rc;
		if (setenv(TFJ_PSTLS_DIR_ENV, local, 1) != 0) {
			tfj_pstls_local_remove(local);
			return tfj_err_set(TFJ_ENOMEM, "launch: setenv");
		}
	}
	rc = run_cluster(o, res);
	if (local[0]) {
		unsetenv(TFJ_PSTLS_DIR_ENV);
		tfj_pstls_local_remove(local);
	}
	return rc;
}
