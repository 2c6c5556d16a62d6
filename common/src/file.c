/*
 * file.c - bounded whole-file reads and secret reads (see file.h).
 */
#include <tfj/file.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tfj/err.h>

#define FIRST_CHUNK 4096

/*
 * Moves the buffer to one of ncap + 1 bytes (room for the NUL). A secret
 * is copied by hand so that the old block can be wiped first: realloc()
 * would leave a copy of the bytes in freed memory.
 */
static int grow(char **buf, size_t used, size_t ncap, int secret)
{
	char *nb;

	if (!secret) {
		nb = realloc(*buf, ncap + 1);
		if (!nb)
			return TFJ_ENOMEM;
		*buf = nb;
		return 0;
	}
	nb = malloc(ncap + 1);
	if (!nb)
		return TFJ_ENOMEM;
	if (*buf) {
		memcpy(nb, *buf, used);
		explicit_bzero(*buf, used);
		free(*buf);
	}
	*buf = nb;
	return 0;
}

static int read_all(char **out, size_t *len, const char *path, size_t max, unsigned flags,
		    int secret)
{
	struct stat st;
	char *buf = NULL;
	size_t used = 0, cap = 0;
	int fd = -1, rc = 0;

	if (!out || !len || !path)
		return tfj_err_set(TFJ_EINVAL, "file read: NULL argument");
	*out = NULL;
	*len = 0;
	/* cap + 2 bytes are allocated below; keep that sum far from overflow. */
	if (max > SIZE_MAX / 2)
		return tfj_err_set(TFJ_EINVAL, "%s: cap of %zu bytes is too large", path, max);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return tfj_err_set(errno == ENOENT ? TFJ_ENOTFOUND : TFJ_EIO, "open %s: %s", path,
				   strerror(errno));
	if (fstat(fd, &st) != 0) {
		rc = tfj_err_set(TFJ_EIO, "stat %s: %s", path, strerror(errno));
		goto out;
	}
	if ((flags & TFJ_FILE_REGULAR) && !S_ISREG(st.st_mode)) {
		rc = tfj_err_set(TFJ_EINVAL, "%s is not a regular file", path);
		goto out;
	}
	/*
	 * The size of a regular file is only a hint for the first buffer (one
	 * byte more, so that the read proving EOF has room); the loop reads
	 * to EOF either way and the cap holds even if the file grows.
	 */
	if (S_ISREG(st.st_mode) && st.st_size > 0) {
		if ((uint64_t)st.st_size > max) {
			rc = tfj_err_set(TFJ_ETOOBIG, "%s: larger than %zu bytes", path, max);
			goto out;
		}
		cap = (size_t)st.st_size + 1;
	} else {
		cap = max + 1 < FIRST_CHUNK ? max + 1 : FIRST_CHUNK;
	}
	if (grow(&buf, 0, cap, secret)) {
		rc = tfj_err_set(TFJ_ENOMEM, "reading %s", path);
		goto out;
	}
	for (;;) {
		ssize_t n;

		if (used == cap) {
			size_t ncap = cap > (max + 1) / 2 ? max + 1 : cap * 2;

			if (grow(&buf, used, ncap, secret)) {
				rc = tfj_err_set(TFJ_ENOMEM, "reading %s", path);
				goto out;
			}
			cap = ncap;
		}
		n = read(fd, buf + used, cap - used);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = tfj_err_set(TFJ_EIO, "read %s: %s", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		used += (size_t)n;
		if (used > max) {
			rc = tfj_err_set(TFJ_ETOOBIG, "%s: larger than %zu bytes", path, max);
			goto out;
		}
	}
	buf[used] = '\0';
	*out = buf;
	*len = used;
	buf = NULL;
out:
	if (buf && secret)
		explicit_bzero(buf, cap + 1);
	free(buf);
	if (fd >= 0)
		close(fd);
	return rc;
}

int tfj_file_read(char **out, size_t *len, const char *path, size_t max, unsigned flags)
{
	return read_all(out, len, path, max, flags, 0);
}

int tfj_file_read_secret(char **out, size_t *len, const char *path, size_t max)
{
	char *s;
	size_t n;
	int rc;

	rc = read_all(out, len, path, max, 0, 1);
	if (rc)
		return rc;
	s = *out;
	n = *len;
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' ||
			 s[n - 1] == '\n'))
		s[--n] = '\0';
	*len = n;
	return 0;
}

void tfj_file_secret_free(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}
