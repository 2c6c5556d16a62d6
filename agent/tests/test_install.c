/*
 * test_install.c - `tfjob-agent --install DIR` copying the bundle
 * (install.c): files and lib/ copied with their modes, a rerun over an
 * existing copy, and refusals (missing bundle, a symlink in it).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tfj/err.h>
#include <tfj/file.h>

#include "install.h"
#include "tfj_test.h"
#include "tfj_testutil.h"

static void put(const char *dir, const char *name, const char *text, mode_t mode)
{
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
	TFJ_CHECK(fd >= 0);
	if (fd < 0)
		return;
	TFJ_CHECK_EQ(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	chmod(p, mode);
}

static void check_file(const char *dir, const char *name, const char *text, mode_t mode)
{
	char p[512], *data = NULL;
	size_t len = 0;
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	TFJ_CHECK_OK(tfj_file_read(&data, &len, p, 4096, TFJ_FILE_REGULAR));
	TFJ_CHECK_STR(data ? data : "", text);
	TFJ_CHECK_INT(stat(p, &st), 0);
	TFJ_CHECK_INT(st.st_mode & 0777, mode);
	free(data);
}

static void test_copy_and_rerun(void)
{
	char tmp[256], src[300], lib[320], dst[300];
	int n = -1;

	TFJ_CHECK_INT(tfj_testutil_tmpdir(tmp, sizeof(tmp), "tfj-install"), 0);
	snprintf(src, sizeof(src), "%s/bundle", tmp);
	snprintf(lib, sizeof(lib), "%s/lib", src);
	snprintf(dst, sizeof(dst), "%s/out", tmp);
	TFJ_CHECK_INT(mkdir(src, 0755), 0);
	TFJ_CHECK_INT(mkdir(lib, 0755), 0);
	put(src, "tfjob-agent", "ELF agent", 0755);
	put(src, "ld.so", "ELF loader", 0755);
	put(lib, "libc.so.6", "libc", 0644);
	TFJ_CHECK_OK(tfj_install_copy(&n, src, dst));
	TFJ_CHECK_INT(n, 3);
	check_file(dst, "tfjob-agent", "ELF agent", 0755);
	check_file(dst, "ld.so", "ELF loader", 0755);
	check_file(dst, "lib/libc.so.6", "libc", 0644);
	/* A restarted init container copies again over what is there. */
	put(src, "tfjob-agent", "ELF agent v2", 0755);
	TFJ_CHECK_OK(tfj_install_copy(&n, src, dst));
	TFJ_CHECK_INT(n, 3);
	check_file(dst, "tfjob-agent", "ELF agent v2", 0755);
	tfj_testutil_rmtree(tmp);
}

static void test_refusals(void)
{
	char tmp[256], src[300], dst[300], link[320];
	int n;

	TFJ_CHECK_INT(tfj_testutil_tmpdir(tmp, sizeof(tmp), "tfj-install"), 0);
	snprintf(src, sizeof(src), "%s/bundle", tmp);
	snprintf(dst, sizeof(dst), "%s/out", tmp);
	TFJ_CHECK_INT(tfj_install_copy(&n, src, dst), TFJ_ENOTFOUND);
	TFJ_CHECK(strstr(tfj_err_detail(), "bundle") != NULL);
	TFJ_CHECK_INT(mkdir(src, 0755), 0);
	put(src, "tfjob-agent", "x", 0755);
	snprintf(link, sizeof(link), "%s/ld.so", src);
	TFJ_CHECK_INT(symlink("/lib64/ld-linux-x86-64.so.2", link), 0);
	TFJ_CHECK_INT(tfj_install_copy(&n, src, dst), TFJ_EINVAL);
	TFJ_CHECK(strstr(tfj_err_detail(), "not a regular file") != NULL);
	tfj_testutil_rmtree(tmp);
}

int main(void)
{
	TFJ_RUN(test_copy_and_rerun);
	TFJ_RUN(test_refusals);
	return tfj_test_finish();
}
