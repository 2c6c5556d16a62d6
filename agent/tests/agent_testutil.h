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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "tfj_testutil.h"

/* Call first in main(): the re-executed copy becomes the agent. */
#define TFJ_AGENT_TEST_DISPATCH(argc, argv)                                     \
	do {                                                                    \
		if ((argc) > 1 && strcmp((argv)[1], "agent") == 0)              \
			return tfj_agent_main((argc) - 1, (argv) + 1);          \
	} while (0)

/*
 * Starts the agent with `args` (NULL-terminated, without the program name)
 * and extra environment entries `env` ("K=V", NULL-terminated, may be NULL)
 * on top of ours minus TF_CONFIG and TFJOB_*. Its stderr goes to
 * `stderr_path` when not NULL, stdout to `stdout_path`. Wait for it with
 * tfj_testutil_wait().
 */
static inline pid_t tu_spawn_agent(char *const *args, char *const *env, const char *stdout_path,
				   const char *stderr_path)
{
	static char *const drop[] = { "TF_CONFIG=", "TFJOB_", NULL };
	char *argv[64];
	struct tfj_testutil_spawn s = { 0 };
	size_t n = 0, i;

	argv[n++] = "agent";
	for (i = 0; args[i] && n < 63; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	s.args = argv;
	s.drop = drop;
	s.set = env;
	s.stdout_path = stdout_path;
	s.stderr_path = stderr_path;
	return tfj_testutil_spawn(&s);
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
