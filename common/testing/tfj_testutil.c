/*
 * tfj_testutil.c - the helpers behind tfj_testutil.h.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tfj_testutil.h"

extern char **environ;

#define SPAWN_MAX_ARGS 64
#define SPAWN_MAX_ENV 256

double tfj_testutil_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int tfj_testutil_tmpdir(char *buf, size_t cap, const char *prefix)
{
	int n;

	if (!buf || cap == 0)
		return -1;
	n = snprintf(buf, cap, "/tmp/%s-XXXXXX", prefix);
	if (n < 0 || (size_t)n >= cap || !mkdtemp(buf)) {
		buf[0] = '\0';
		return -1;
	}
	return 0;
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

void tfj_testutil_rmtree(const char *dir)
{
	if (dir && dir[0])
		nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int tfj_testutil_bind_loopback(int *port)
{
	struct sockaddr_in a;
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &al) < 0) {
		close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

int tfj_testutil_free_port(void)
{
	int port = -1, fd = tfj_testutil_bind_loopback(&port);

	if (fd < 0)
		return -1;
	close(fd);
	return port;
}

int tfj_testutil_exe_dir(char *buf, size_t cap)
{
	ssize_t n;
	char *slash;

	if (!buf || cap < 2)
		return -1;
	n = readlink("/proc/self/exe", buf, cap - 1);
	if (n <= 0 || (size_t)n >= cap - 1)
		return -1;
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	return 0;
}

/* Whether `entry` ("K=V") starts with one of the NULL-terminated prefixes. */
static int starts_with_any(const char *entry, char *const *prefixes)
{
	for (size_t i = 0; prefixes && prefixes[i]; i++)
		if (strncmp(entry, prefixes[i], strlen(prefixes[i])) == 0)
			return 1;
	return 0;
}

/* Whether `entry` names a variable that one of `set` ("K=V") assigns. */
static int overridden(const char *entry, char *const *set)
{
	size_t klen = strcspn(entry, "=");

	for (size_t i = 0; set && set[i]; i++)
		if (strncmp(entry, set[i], klen) == 0 && set[i][klen] == '=')
			return 1;
	return 0;
}

pid_t tfj_testutil_spawn(const struct tfj_testutil_spawn *s)
{
	const char *exe = s->exe ? s->exe : "/proc/self/exe";
	char *argv[SPAWN_MAX_ARGS], *envp[SPAWN_MAX_ENV];
	posix_spawn_file_actions_t fa;
	size_t n = 0, e = 0, i;
	pid_t pid = -1;

	argv[n++] = (char *)exe;
	for (i = 0; s->args && s->args[i]; i++) {
		if (n >= SPAWN_MAX_ARGS - 1)
			return -1;
		argv[n++] = s->args[i];
	}
	argv[n] = NULL;
	for (i = 0; environ[i]; i++) {
		if (starts_with_any(environ[i], s->drop) || overridden(environ[i], s->set))
			continue;
		if (e >= SPAWN_MAX_ENV - 1)
			return -1;
		envp[e++] = environ[i];
	}
	for (i = 0; s->set && s->set[i]; i++) {
		if (e >= SPAWN_MAX_ENV - 1)
			return -1;
		envp[e++] = s->set[i];
	}
	envp[e] = NULL;
	if (posix_spawn_file_actions_init(&fa) != 0)
		return -1;
	if (s->stdout_path &&
	    posix_spawn_file_actions_addopen(&fa, 1, s->stdout_path, O_WRONLY | O_CREAT | O_TRUNC,
					     0600) != 0)
		goto out;
	if (s->stderr_path &&
	    posix_spawn_file_actions_addopen(&fa, 2, s->stderr_path, O_WRONLY | O_CREAT | O_TRUNC,
					     0600) != 0)
		goto out;
	fflush(NULL);
	if (posix_spawn(&pid, exe, &fa, NULL, argv, envp) != 0)
		pid = -1;
out:
	posix_spawn_file_actions_destroy(&fa);
	return pid;
}

int tfj_testutil_wait(pid_t pid, double timeout_s)
{
	double end = tfj_testutil_now_s() + timeout_s;
	int st;

	/* A failed spawn's -1 would wait for any child, and kill(-1) everything. */
	if (pid <= 0)
		return -1;
	for (;;) {
		pid_t p = waitpid(pid, &st, timeout_s > 0 ? WNOHANG : 0);

		if (p == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (p < 0 && errno != EINTR)
			return -1;
		if (timeout_s > 0 && tfj_testutil_now_s() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		if (timeout_s > 0)
			usleep(10 * 1000);
	}
}

int tfj_testutil_kill(pid_t pid, int sig)
{
	if (pid <= 0) {
		errno = ESRCH;
		return -1;
	}
	return kill(pid, sig);
}
