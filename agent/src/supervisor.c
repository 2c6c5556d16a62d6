/*
 * supervisor.c - child process, signal forwarding, reaping, grace period
 * (see supervisor.h).
 */
#define _GNU_SOURCE /* pipe2 */
#include "supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tfj/err.h>
#include <tfj/exitcode.h>
#include <tfj/log.h>

static const int handled[] = { SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2, SIGCHLD };

static void handled_set(sigset_t *set)
{
	size_t i;

	sigemptyset(set);
	for (i = 0; i < sizeof(handled) / sizeof(handled[0]); i++)
		sigaddset(set, handled[i]);
}

void tfj_supervisor_block_signals(void)
{
	struct sigaction sa;
	sigset_t set;

	handled_set(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	/* A closed stdout reader must not kill the agent; write() reports EPIPE. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

int tfj_supervisor_cancel_fd(void)
{
	sigset_t set;
	int fd;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGQUIT);
	fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		return tfj_err_set(TFJ_EIO, "signalfd: %s", strerror(errno));
	return fd;
}

int tfj_supervisor_exit_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 255;
}

/* The shell's code for a command that could not be run: 127 when it does
 * not exist, 126 for every other exec failure (permissions, bad format). */
static int exec_exit_code(int err)
{
	return err == ENOENT ? TFJ_EXIT_NOTFOUND : TFJ_EXIT_NOEXEC;
}

int tfj_supervisor_is_terminating(int sig)
{
	return sig == SIGTERM || sig == SIGINT || sig == SIGQUIT;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Finds argv[0] the way execvp would, but in the parent: the child of a
 * threaded process should do nothing but async-signal-safe calls.
 */
static int resolve(char *out, size_t outlen, const char *cmd)
{
	const char *path, *p;
	struct stat st;
	int saw_eacces = 0;

	if (strchr(cmd, '/')) {
		if (strlen(cmd) >= outlen)
			return ENAMETOOLONG;
		memcpy(out, cmd, strlen(cmd) + 1);
		return 0;
	}
	if (!*cmd)
		return ENOENT;
	path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; p;) {
		const char *colon = strchr(p, ':');
		size_t dl = colon ? (size_t)(colon - p) : strlen(p);
		int n;

		n = snprintf(out, outlen, "%.*s%s%s", (int)dl, p, dl ? "/" : "", cmd);
		if (n > 0 && (size_t)n < outlen && stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(out, X_OK) == 0)
				return 0;
			saw_eacces = 1;
		}
		p = colon ? colon + 1 : NULL;
	}
	return saw_eacces ? EACCES : ENOENT;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct pollfd pf = { .fd = fd, .events = POLLOUT };
			poll(&pf, 1, 100);
			continue;
		}
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

struct sup {
	const struct tfj_supervisor_opts *o;
	struct tfj_supervisor_result *r;
	int pipes[2];           /* read ends of stdout, stderr; -1 when closed */
	int sink_dead[2];
	int child_done;
	int64_t grace_deadline; /* 0 = not running */
	int64_t drain_deadline;
};

static void send_sig(struct sup *s, int sig)
{
	if (s->child_done)
		return;
	if (s->o->signal_group && kill(-s->r->pid, sig) == 0)
		return;
	kill(s->r->pid, sig);
}

static void reap(struct sup *s)
{
	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);

		if (p < 0 && errno == EINTR)
			continue;
		if (p <= 0)
			return;
		if (p == s->r->pid && !s->child_done) {
			s->child_done = 1;
			s->r->exit_code = tfj_supervisor_exit_code(st);
			s->r->signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
			s->drain_deadline = mono_ms() + (int64_t)(s->o->drain_s * 1000.0);
		} else if (p != s->r->pid) {
			s->r->orphans_reaped++;
		}
	}
}

static void on_signal(struct sup *s, int sfd)
{
	struct signalfd_siginfo si;

	for (;;) {
		ssize_t n = read(sfd, &si, sizeof(si));
		int sig;

		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof(si))
			return;
		sig = (int)si.ssi_signo;
		if (sig == SIGCHLD) {
			reap(s);
			continue;
		}
		if (tfj_supervisor_is_terminating(sig)) {
			if (!s->r->received)
				s->r->received = sig;
			if (!s->grace_deadline && !s->child_done) {
				s->grace_deadline = mono_ms() + (int64_t)(s->o->grace_s * 1000.0);
				tfj_log_info("forwarding signal, grace period started", "signal",
					     strsignal(sig));
			}
		}
		send_sig(s, sig);
	}
}

/* The stop fd is readable: end the command like a SIGTERM, but as asked. */
static void on_stop(struct sup *s)
{
	uint64_t v;

	if (read(s->o->stop_fd, &v, sizeof(v)) < 0 && errno != EAGAIN && errno != EINTR)
		tfj_log_debug("stop fd unreadable", "detail", strerror(errno));
	if (s->child_done || s->r->stopped)
		return;
	s->r->stopped = 1;
	if (!s->grace_deadline) {
		s->grace_deadline = mono_ms() + (int64_t)(s->o->grace_s * 1000.0);
		tfj_log_info("stopping the command (SIGTERM), grace period started");
		send_sig(s, SIGTERM);
	}
}

static void on_pipe(struct sup *s, int i)
{
	char buf[65536];
	ssize_t n = read(s->pipes[i], buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		close(s->pipes[i]);
		s->pipes[i] = -1;
		return;
	}
	if (!s->sink_dead[i] && write_all(i ? s->o->err_fd : s->o->out_fd, buf, (size_t)n) < 0)
		s->sink_dead[i] = 1; /* keep reading so the child never blocks */
	if (s->o->on_output)
		s->o->on_output(s->o->ctx, i ? TFJ_STREAM_STDERR : TFJ_STREAM_STDOUT, buf, (size_t)n);
}

static pid_t spawn(struct sup *s, const char *path, int outp[2], int errp[2], int *exec_err)
{
	int ep[2];
	pid_t pid;
	ssize_t n;
	int e = 0;

	if (pipe2(ep, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		close(ep[0]);
		close(ep[1]);
		return -1;
	}
	if (pid == 0) {
		/* Child: only async-signal-safe calls from here to exec. */
		struct sigaction sa;
		sigset_t none;

		setpgid(0, 0);
		dup2(outp[1], STDOUT_FILENO);
		dup2(errp[1], STDERR_FILENO);
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		sigaction(SIGPIPE, &sa, NULL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execv(path, s->o->argv);
		e = errno;
		if (write(ep[1], &e, sizeof(e)) < 0) {
			/* Nothing left to tell anyone. */
		}
		_exit(exec_exit_code(e));
	}
	/* Both sides set the group so a signal sent right away cannot miss it. */
	setpgid(pid, pid);
	close(ep[1]);
	do {
		n = read(ep[0], &e, sizeof(e));
	} while (n < 0 && errno == EINTR);
	close(ep[0]);
	*exec_err = n == (ssize_t)sizeof(e) ? e : 0;
	return pid;
}

int tfj_supervisor_run(struct tfj_supervisor_result *r, const struct tfj_supervisor_opts *o)
{
	char path[PATH_MAX];
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 };
	int sfd = -1, rc = 0, e, exec_err = 0;
	sigset_t set;
	struct sup s;
	int64_t next_tick;

	memset(r, 0, sizeof(*r));
	memset(&s, 0, sizeof(s));
	s.o = o;
	s.r = r;
	s.pipes[0] = s.pipes[1] = -1;
	if (!o->argv || !o->argv[0])
		return tfj_err_set(TFJ_EINVAL, "no command to run");
	e = resolve(path, sizeof(path), o->argv[0]);
	if (e) {
		r->exec_errno = e;
		r->exit_code = exec_exit_code(e);
		return 0;
	}
	tfj_supervisor_block_signals();
	handled_set(&set);
	sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0) {
		rc = tfj_err_set(TFJ_EIO, "signalfd: %s", strerror(errno));
		goto out;
	}
	/* Orphans of the command are re-parented to us, not to init. */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		rc = tfj_err_set(TFJ_EIO, "pipe: %s", strerror(errno));
		goto out;
	}
	r->pid = spawn(&s, path, outp, errp, &exec_err);
	if (r->pid < 0) {
		rc = tfj_err_set(TFJ_EIO, "fork: %s", strerror(errno));
		goto out;
	}
	close(outp[1]);
	close(errp[1]);
	outp[1] = errp[1] = -1;
	s.pipes[0] = outp[0];
	s.pipes[1] = errp[0];
	outp[0] = errp[0] = -1;
	fcntl(s.pipes[0], F_SETFL, O_NONBLOCK);
	fcntl(s.pipes[1], F_SETFL, O_NONBLOCK);
	r->exec_errno = exec_err;
	next_tick = o->tick_ms > 0 ? mono_ms() + o->tick_ms : 0;

	for (;;) {
		struct pollfd pf[4];
		int64_t now = mono_ms(), wait = -1;
		int i;

		if (s.child_done && ((s.pipes[0] < 0 && s.pipes[1] < 0) || now >= s.drain_deadline))
			break;
		if (s.grace_deadline && !s.child_done && now >= s.grace_deadline && !r->killed) {
			tfj_log_warn("grace period over, killing the command");
			r->killed = 1;
			if (kill(-r->pid, SIGKILL) < 0)
				kill(r->pid, SIGKILL);
		}
		if (next_tick && now >= next_tick) {
			if (o->on_tick)
				o->on_tick(o->ctx);
			next_tick = now + o->tick_ms;
		}
		if (next_tick)
			wait = next_tick - now;
		if (s.grace_deadline && !r->killed && !s.child_done) {
			int64_t g = s.grace_deadline - now;
			wait = wait < 0 || g < wait ? g : wait;
		}
		if (s.child_done) {
			int64_t d = s.drain_deadline - now;
			wait = wait < 0 || d < wait ? d : wait;
		}
		if (wait < 0 && (next_tick || s.child_done || (s.grace_deadline && !r->killed)))
			wait = 0;
		pf[0].fd = sfd;
		pf[0].events = POLLIN;
		for (i = 0; i < 2; i++) {
			pf[1 + i].fd = s.pipes[i];
			pf[1 + i].events = POLLIN;
		}
		/* Polled until it has fired once (an fd of -1 is skipped by poll). */
		pf[3].fd = o->use_stop_fd && !r->stopped ? o->stop_fd : -1;
		pf[3].events = POLLIN;
		pf[3].revents = 0;
		if (poll(pf, 4, wait > INT_MAX ? INT_MAX : (int)wait) < 0) {
			if (errno == EINTR)
				continue;
			rc = tfj_err_set(TFJ_EIO, "poll: %s", strerror(errno));
			break;
		}
		if (pf[0].revents)
			on_signal(&s, sfd);
		if (pf[3].fd >= 0 && pf[3].revents)
			on_stop(&s);
		for (i = 0; i < 2; i++) {
			if (s.pipes[i] >= 0 && pf[1 + i].revents)
				on_pipe(&s, i);
		}
		/* A SIGCHLD may coalesce with one already read; reap anyway. */
		if (!s.child_done)
			reap(&s);
	}
	if (!s.child_done && rc < 0) {
		/* The agent itself failed mid-run: do not leave the command behind. */
		kill(-r->pid, SIGKILL);
		waitpid(r->pid, NULL, 0);
	}
	if (r->exec_errno)
		r->exit_code = exec_exit_code(r->exec_errno);
out:
	for (e = 0; e < 2; e++) {
		if (s.pipes[e] >= 0)
			close(s.pipes[e]);
		if (outp[e] >= 0)
			close(outp[e]);
		if (errp[e] >= 0)
			close(errp[e]);
	}
	if (sfd >= 0)
		close(sfd);
	return rc;
}
