/*
 * agent_testutil.h - helpers for tests that run the whole agent as a real
 * process: the test binary re-executes itself (/proc/self/exe agent ...)
 * and that copy runs tfj_agent_main(), the same code as tfjob-agent.
 */
#ifndef TFJ_AGENT_TESTUTIL_H
#define TFJ_AGENT_TESTUTIL_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

extern char **environ;

/* Call first in main(): the re-executed copy becomes the agent. */
#define TFJ_AGENT_TEST_DISPATCH(argc, argv)                                     \
	do {                                                                    \
		if ((argc) > 1 && strcmp((argv)[1], "agent") == 0)              \
			return tfj_agent_main((argc) - 1, (argv) + 1);          \
	} while (0)

static inline double tu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Starts the agent with `args` (NULL-terminated, without the program name)
 * and extra environment entries `env` ("K=V", NULL-terminated, may be NULL)
 * on top of ours minus TF_CONFIG and TFJOB_*. Its stderr goes to
 * `stderr_path` when not NULL, stdout to `stdout_path`.
 */
static inline pid_t tu_spawn_agent(char *const *args, char *const *env, const char *stdout_path,
				   const char *stderr_path)
{
	char *argv[64], *envp[256];
	posix_spawn_file_actions_t fa;
	size_t n = 0, e = 0, i;
	pid_t pid;

	argv[n++] = "/proc/self/exe";
	argv[n++] = "agent";
	for (i = 0; args[i] && n < 63; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	for (i = 0; environ[i] && e < 200; i++) {
		if (strncmp(environ[i], "TF_CONFIG=", 10) == 0 ||
		    strncmp(environ[i], "TFJOB_", 6) == 0)
			continue;
		envp[e++] = environ[i];
	}
	for (i = 0; env && env[i] && e < 255; i++)
		envp[e++] = env[i];
	envp[e] = NULL;
	posix_spawn_file_actions_init(&fa);
	if (stdout_path)
		posix_spawn_file_actions_addopen(&fa, 1, stdout_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (stderr_path)
		posix_spawn_file_actions_addopen(&fa, 2, stderr_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, envp) != 0)
		pid = -1;
	posix_spawn_file_actions_destroy(&fa);
	return pid;
}

/* Waits up to `timeout_s`; returns the exit code (128+N for a signal) or -1. */
static inline int tu_wait(pid_t pid, double timeout_s)
{
	double end = tu_now() + timeout_s;
	int st;

	for (;;) {
		pid_t p = waitpid(pid, &st, WNOHANG);

		if (p == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (p < 0 && errno != EINTR)
			return -1;
		if (tu_now() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		usleep(10 * 1000);
	}
}

/* Reads a whole small file into buf (NUL-terminated); returns its length or -1. */
static inline long tu_read(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
	return (long)n;
}

static inline int tu_write(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

#endif
