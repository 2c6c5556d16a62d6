/*
 * ckptdir.c - finding the newest checkpoint in a directory and pruning old
 * ones. See ckptdir.h.
 */
#include "data/ckptdir.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tfj/err.h>

#include "data/checkpoint.h"

#define PRUNE_MAX_FILES 100000

/* Parses "<prefix>-<digits>.tfjc" into *step; 0 on a match. */
static int match_name(const char *name, const char *prefix, int64_t *step)
{
	size_t plen = strlen(prefix), slen = strlen(TFJ_CKPT_SUFFIX), len = strlen(name), i;
	int64_t v = 0;

	if (len <= plen + 1 + slen || strncmp(name, prefix, plen) != 0 || name[plen] != '-')
		return -1;
	if (strcmp(name + len - slen, TFJ_CKPT_SUFFIX) != 0)
		return -1;
	if (len - slen - plen - 1 > 18) /* keeps v below INT64_MAX */
		return -1;
	/* One spelling per step: "007" would not round-trip through the path. */
	if (name[plen + 1] == '0' && len - slen - plen - 1 > 1)
		return -1;
	for (i = plen + 1; i < len - slen; i++) {
		if (name[i] < '0' || name[i] > '9')
			return -1;
		v = v * 10 + (name[i] - '0');
	}
	*step = v;
	return 0;
}

int tfj_ckptdir_latest(char *path_out, size_t path_cap, int64_t *step_out, const char *dir,
		       const char *prefix)
{
	DIR *d;
	struct dirent *e;
	int64_t best = -1;

	if (!path_out || !step_out || !dir)
		return tfj_err_set(TFJ_EINVAL, "checkpoint: NULL argument");
	if (!tfj_ckpt_prefix_ok(prefix))
		return tfj_err_set(TFJ_EINVAL, "checkpoint: bad prefix");
	d = opendir(dir);
	if (!d)
		return tfj_err_set(errno == ENOENT ? TFJ_ENOTFOUND : TFJ_EIO,
				   "checkpoint: open dir %s: %s", dir, strerror(errno));
	while ((e = readdir(d)) != NULL) {
		int64_t s;

		if (match_name(e->d_name, prefix, &s) == 0 && s > best)
			best = s;
	}
	closedir(d);
	if (best < 0)
		return tfj_err_set(TFJ_ENOTFOUND, "checkpoint: none for %s in %s", prefix, dir);
	if (snprintf(path_out, path_cap, "%s/%s-%lld%s", dir, prefix, (long long)best,
		     TFJ_CKPT_SUFFIX) >= (int)path_cap)
		return tfj_err_set(TFJ_ERANGE, "checkpoint: path buffer too small");
	*step_out = best;
	return 0;
}

static int cmp_desc(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

int tfj_ckptdir_prune(const char *dir, const char *prefix, size_t keep)
{
	DIR *d;
	struct dirent *e;
	int64_t *steps = NULL;
	size_t n = 0, cap = 0, i;
	int rc = 0;

	if (!dir || keep < 1)
		return tfj_err_set(TFJ_EINVAL, "checkpoint: prune: bad arguments");
	if (!tfj_ckpt_prefix_ok(prefix))
		return tfj_err_set(TFJ_EINVAL, "checkpoint: bad prefix");
	d = opendir(dir);
	if (!d)
		return tfj_err_set(TFJ_EIO, "checkpoint: open dir %s: %s", dir, strerror(errno));
	while ((e = readdir(d)) != NULL) {
		int64_t s;

		if (match_name(e->d_name, prefix, &s) != 0)
			continue;
		if (n == cap) {
			int64_t *ns;

			if (cap >= PRUNE_MAX_FILES) {
				rc = tfj_err_set(TFJ_ETOOBIG, "checkpoint: too many files in %s", dir);
				goto out;
			}
			cap = cap ? 2 * cap : 16;
			ns = realloc(steps, cap * sizeof(*steps));
			if (!ns) {
				rc = tfj_err_set(TFJ_ENOMEM, "checkpoint: prune");
				goto out;
			}
			steps = ns;
		}
		steps[n++] = s;
	}
	qsort(steps, n, sizeof(*steps), cmp_desc);
	for (i = keep; i < n; i++) {
		char path[4096];

		if (snprintf(path, sizeof(path), "%s/%s-%lld%s", dir, prefix, (long long)steps[i],
			     TFJ_CKPT_SUFFIX) >= (int)sizeof(path))
			continue;
		if (unlink(path) != 0 && errno != ENOENT && rc == 0)
			rc = tfj_err_set(TFJ_EIO, "checkpoint: unlink %s: %s", path, strerror(errno));
	}
out:
	closedir(d);
	free(steps);
	return rc;
}
