/*
 * install.c - copying the agent bundle into the shared volume.
 */
#include "install.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tfj/err.h>
#include <tfj/file.h>

#define PATH_MAX_LEN 4096

static int copy_file(const char *from, const char *to, mode_t mode)
{
	char tmp[PATH_MAX_LEN];
	char *data = NULL;
	size_t len;
	FILE *f = NULL;
	int fd, rc;

	if ((rc = tfj_file_read(&data, &len, from, TFJ_INSTALL_FILE_MAX, TFJ_FILE_REGULAR)))
		return rc;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", to) >= sizeof(tmp)) {
		rc = tfj_err_set(TFJ_EINVAL, "path too long: %.200s", to);
		goto out;
	}
	/* stdio finishes short writes; fclose reports a failed flush. */
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode & 0755);
	if (fd >= 0 && !(f = fdopen(fd, "wb")))
		close(fd);
	if (!f || fchmod(fileno(f), mode & 0755) || fwrite(data, 1, len, f) != len) {
		rc = tfj_err_set(TFJ_EIO, "writing %.200s: %s", tmp, strerror(errno));
		if (f)
			fclose(f);
		goto out;
	}
	if (fclose(f)) {
		rc = tfj_err_set(TFJ_EIO, "writing %.200s: %s", tmp, strerror(errno));
		goto out;
	}
	if (rename(tmp, to)) {
		rc = tfj_err_set(TFJ_EIO, "renaming %.200s: %s", tmp, strerror(errno));
		goto out;
	}
out:
	free(data);
	return rc;
}

static int copy_dir(int *nfiles, const char *src, const char *dst, int depth)
{
	char from[PATH_MAX_LEN], to[PATH_MAX_LEN];
	struct dirent *de;
	struct stat st;
	DIR *d;
	int rc = 0;

	if (mkdir(dst, 0755) && errno != EEXIST)
		return tfj_err_set(TFJ_EIO, "mkdir %.200s: %s", dst, strerror(errno));
	if (!(d = opendir(src)))
		return tfj_err_set(errno == ENOENT ? TFJ_ENOTFOUND : TFJ_EIO, "bundle %.200s: %s",
				   src, strerror(errno));
	while (!rc && (de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if ((size_t)snprintf(from, sizeof(from), "%s/%s", src, de->d_name) >= sizeof(from) ||
		    (size_t)snprintf(to, sizeof(to), "%s/%s", dst, de->d_name) >= sizeof(to)) {
			rc = tfj_err_set(TFJ_EINVAL, "path too long under %.200s", src);
			break;
		}
		if (lstat(from, &st)) {
			rc = tfj_err_set(TFJ_EIO, "%.200s: %s", from, strerror(errno));
		} else if (S_ISREG(st.st_mode)) {
			rc = copy_file(from, to, st.st_mode);
			if (!rc)
				(*nfiles)++;
		} else if (S_ISDIR(st.st_mode) && depth == 0) {
			rc = copy_dir(nfiles, from, to, depth + 1);
		} else {
			rc = tfj_err_set(TFJ_EINVAL, "%.200s: not a regular file (links are resolved "
					 "when the bundle is staged)", from);
		}
	}
	closedir(d);
	return rc;
}

int tfj_install_copy(int *nfiles, const char *src, const char *dst)
{
	*nfiles = 0;
	return copy_dir(nfiles, src, dst, 0);
}
