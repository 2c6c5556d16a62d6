/*
 * test_blascore.c - OpenBLAS's kernel choice: the decision table, the CPU
 * features against the kernel's /proc/cpuinfo, and the re-exec itself
 * (this program run again as a child that calls tfj_blascore_reexec and
 * prints the core OpenBLAS then runs).
 */
#define _GNU_SOURCE
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tfj_test.h>

#include "compute/blascore.h"

#define CHILD_ENV "TFJ_BLASCORE_TEST_CHILD"

static void test_choose(void)
{
	unsigned both = TFJ_BLASCORE_AVX2 | TFJ_BLASCORE_AVX512;

	TFJ_CHECK_STR(tfj_blascore_choose("Prescott", both), "SkylakeX");
	TFJ_CHECK_STR(tfj_blascore_choose("PRESCOTT", TFJ_BLASCORE_AVX2), "Haswell");
	TFJ_CHECK_NULL(tfj_blascore_choose("Prescott", 0));
	/* A core OpenBLAS recognised is its own business. */
	TFJ_CHECK_NULL(tfj_blascore_choose("Haswell", both));
	TFJ_CHECK_NULL(tfj_blascore_choose("Zen", both));
	TFJ_CHECK_NULL(tfj_blascore_choose("Nehalem", TFJ_BLASCORE_AVX2));
	TFJ_CHECK_NULL(tfj_blascore_choose(NULL, both));
	TFJ_CHECK_NULL(tfj_blascore_choose("", both));
}

/* Whether /proc/cpuinfo's first flags line lists FLAG as a whole word. */
static int cpuinfo_has(const char *flag)
{
	char line[8192], word[64];
	FILE *f = fopen("/proc/cpuinfo", "r");
	int found = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5) != 0)
			continue;
		snprintf(word, sizeof(word), " %s", flag);
		{
			char *p = line;
			size_t n = strlen(word);

			while ((p = strstr(p, word)) != NULL) {
				if (p[n] == ' ' || p[n] == '\n' || p[n] == '\0') {
					found = 1;
					break;
				}
				p += n;
			}
		}
		break;
	}
	fclose(f);
	return found;
}

static void test_features(void)
{
#if defined(__x86_64__)
	unsigned f = tfj_blascore_features();
	int avx2 = cpuinfo_has("avx2") && cpuinfo_has("fma");
	int avx512 = cpuinfo_has("avx512f") && cpuinfo_has("avx512dq") && cpuinfo_has("avx512cd") &&
		     cpuinfo_has("avx512bw") && cpuinfo_has("avx512vl");

	/* The kernel lists a flag only when it saves that state, as we check. */
	TFJ_CHECK_INT(!!(f & TFJ_BLASCORE_AVX2), avx2);
	TFJ_CHECK_INT(!!(f & TFJ_BLASCORE_AVX512), avx2 && avx512);
#else
	TFJ_CHECK_INT(tfj_blascore_features(), 0);
#endif
}

/*
 * Runs this program as a child with OPENBLAS_CORETYPE as given (NULL:
 * unset); MODE "reexec" calls tfj_blascore_reexec first, "native" does not.
 * Returns the core the child's OpenBLAS ran in OUT.
 */
static void child_core(const char *mode, const char *coretype, char *out, size_t cap)
{
	int fd[2];
	pid_t pid;
	ssize_t n;
	size_t len = 0;
	int status;

	out[0] = '\0';
	TFJ_CHECK_INT(pipe(fd), 0);
	pid = fork();
	TFJ_CHECK(pid >= 0);
	if (pid == 0) {
		char *argv[] = { (char *)"test_blascore", NULL };

		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		if (coretype)
			setenv("OPENBLAS_CORETYPE", coretype, 1);
		else
			unsetenv("OPENBLAS_CORETYPE");
		setenv(CHILD_ENV, mode, 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	close(fd[1]);
	while (len + 1 < cap && (n = read(fd[0], out + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(fd[0]);
	TFJ_CHECK_INT(waitpid(pid, &status, 0), pid);
	TFJ_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	out[strcspn(out, "\n")] = '\0';
}

static void test_reexec(void)
{
	char native[64], got[64];
	const char *want;

	/* What OpenBLAS picks on its own here. */
	child_core("native", NULL, native, sizeof(native));
	TFJ_CHECK(native[0] != '\0');
	want = tfj_blascore_choose(native, tfj_blascore_features());
	child_core("reexec", NULL, got, sizeof(got));
	printf("native core %s, chosen %s, after re-exec %s\n", native, want ? want : "-", got);
	TFJ_CHECK(strcasecmp(got, want ? want : native) == 0);
	/* A user's own choice stands. */
	child_core("reexec", "Nehalem", got, sizeof(got));
	TFJ_CHECK(strcasecmp(got, "Nehalem") == 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (getenv(CHILD_ENV)) {
		if (strcmp(getenv(CHILD_ENV), "reexec") == 0)
			tfj_blascore_reexec(argv);
		printf("%s\n", openblas_get_corename());
		return 0;
	}
	TFJ_RUN(test_choose);
	TFJ_RUN(test_features);
	TFJ_RUN(test_reexec);
	return tfj_test_finish();
}
