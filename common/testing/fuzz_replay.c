/*
 * fuzz_replay.c - runs a libFuzzer target over a seed corpus without
 * libFuzzer, so every build (gcc included) replays the corpus in ctest.
 * Arguments are files or directories; an empty corpus is a failure, since a
 * replay that ran nothing proves nothing.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REPLAY_MAX_INPUT (4u << 20)

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data;
	size_t n;

	if (!f) {
		perror(path);
		return -1;
	}
	data = malloc(REPLAY_MAX_INPUT);
	if (!data) {
		fclose(f);
		return -1;
	}
	n = fread(data, 1, REPLAY_MAX_INPUT, f);
	fclose(f);
	/* Hand the target an exact-size copy so ASan sees overreads. */
	{
		uint8_t *exact = malloc(n ? n : 1);
		if (!exact) {
			free(data);
			return -1;
		}
		memcpy(exact, data, n);
		free(data);
		LLVMFuzzerTestOneInput(exact, n);
		free(exact);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int count = 0, i;

	for (i = 1; i < argc; i++) {
		struct stat st;
		DIR *d;
		struct dirent *e;
		char path[4096];

		if (stat(argv[i], &st) != 0) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (run_file(argv[i]))
				return 1;
			count++;
			continue;
		}
		if (!(d = opendir(argv[i]))) {
			perror(argv[i]);
			return 1;
		}
		while ((e = readdir(d)) != NULL) {
			if (e->d_name[0] == '.')
				continue;
			if (snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name) >= (int)sizeof(path))
				continue;
			if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
				if (run_file(path)) {
					closedir(d);
					return 1;
				}
				count++;
			}
		}
		closedir(d);
	}
	printf("replayed %d inputs\n", count);
	return count > 0 ? 0 : 1;
}
