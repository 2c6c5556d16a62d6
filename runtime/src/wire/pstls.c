/*
 * pstls.c - TLS for the ps traffic (pstls.h).
 */
#include "wire/pstls.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tfj/certgen.h>
#include <tfj/clock.h>
#include <tfj/err.h>
#include <tfj/file.h>
#include <tfj/log.h>

/* Reads dir/name into *out (a secret read when secret: no copy left behind). */
static int read_pem(char **out, const char *dir, const char *name, int secret)
{
	char path[4096];
	size_t len;
	int n = snprintf(path, sizeof(path), "%s/%s", dir, name), rc;

	if (n < 0 || (size_t)n >= sizeof(path))
		return tfj_err_set(TFJ_ETOOBIG, "ps TLS: path %s too long", dir);
	rc = secret ? tfj_file_read_secret(out, &len, path, TFJ_PSTLS_PEM_MAX)
		    : tfj_file_read(out, &len, path, TFJ_PSTLS_PEM_MAX, TFJ_FILE_REGULAR);
	if (rc == TFJ_ENOTFOUND)
		return tfj_err_set(TFJ_ENOTFOUND, "ps TLS: no %s (the job's ps Secret has no "
				   "certificate: a TFJob from an older operator; recreate it, or set "
				   TFJ_PSTLS_MODE_ENV "=off to run in clear)", path);
	return rc;
}

int tfj_pstls_load(struct tfj_pstls *t, const char *dir, const char *mode, int server)
{
	int rc;

	memset(t, 0, sizeof(*t));
	if (mode && !strcmp(mode, "off"))
		return 0;
	if (mode && *mode && strcmp(mode, "on"))
		return tfj_err_set(TFJ_EINVAL, TFJ_PSTLS_MODE_ENV "=%.20s: 'on' or 'off'", mode);
	if (!dir || !*dir)
		return tfj_err_set(TFJ_EINVAL, "ps TLS: " TFJ_PSTLS_DIR_ENV " is not set (the "
				   "operator sets it; `tfjob-runtime launch` makes a local CA); set "
				   TFJ_PSTLS_MODE_ENV "=off to run the ps traffic in clear");
	t->on = 1;
	if (server) {
		if ((rc = read_pem(&t->cert_pem, dir, TFJ_PSTLS_CERT_FILE, 0)) == 0)
			rc = read_pem(&t->key_pem, dir, TFJ_PSTLS_KEY_FILE, 1);
		/* Caught here rather than as handshakes that fail for every client. */
		if (rc == 0 && tfj_certgen_key_matches(t->cert_pem, t->key_pem) != 0)
			rc = tfj_err_set(TFJ_EINVAL, "ps TLS: %s/" TFJ_PSTLS_KEY_FILE " is not the key of "
					 TFJ_PSTLS_CERT_FILE, dir);
	} else {
		rc = read_pem(&t->ca_pem, dir, TFJ_PSTLS_CA_FILE, 0);
	}
	if (rc)
		tfj_pstls_free(t);
	return rc;
}

int tfj_pstls_from_env(struct tfj_pstls *t, int server)
{
	const char *dir = getenv(TFJ_PSTLS_DIR_ENV), *name = getenv(TFJ_PSTLS_NAME_ENV);
	int rc = tfj_pstls_load(t, dir, getenv(TFJ_PSTLS_MODE_ENV), server);

	if (rc)
		return rc;
	if (t->on && !server && name && *name) {
		if (strlen(name) > 253 || !(t->server_name = strdup(name))) {
			tfj_pstls_free(t);
			return tfj_err_set(TFJ_EINVAL, TFJ_PSTLS_NAME_ENV ": a host name of 1-253 "
					   "characters");
		}
		tfj_log_info("ps certificate checked for a name of its own", "name", name);
	}
	if (t->on)
		tfj_log_info(server ? "ps serves TLS" : "ps calls over TLS, the ps verified",
			     "dir", dir);
	else
		tfj_log_warn("ps traffic in clear: " TFJ_PSTLS_MODE_ENV "=off; the job's secret "
			     "and the tensors can be read by anyone on the path");
	return 0;
}

void tfj_pstls_free(struct tfj_pstls *t)
{
	free(t->ca_pem);
	free(t->cert_pem);
	free(t->server_name);
	tfj_file_secret_free(t->key_pem);
	memset(t, 0, sizeof(*t));
}

grpc_server_credentials *tfj_pstls_server_creds(const struct tfj_pstls *t)
{
	grpc_ssl_pem_key_cert_pair pair;

	if (!t->on || !t->cert_pem || !t->key_pem)
		return NULL;
	pair.private_key = t->key_pem;
	pair.cert_chain = t->cert_pem;
	/* Clients prove themselves with the job's secret inside TLS (psauth.h). */
	return grpc_ssl_server_credentials_create_ex(NULL, &pair, 1,
						     GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE, NULL);
}

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[4096];
	size_t len = strlen(text), done = 0;
	ssize_t w;
	int n = snprintf(path, sizeof(path), "%s/%s", dir, name), fd, rc = 0;

	if (n < 0 || (size_t)n >= sizeof(path))
		return tfj_err_set(TFJ_ETOOBIG, "local CA: path too long");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return tfj_err_set(TFJ_EIO, "local CA: cannot create %s", path);
	while (done < len && rc == 0) {
		w = write(fd, text + done, len - done);
		if (w <= 0)
			rc = tfj_err_set(TFJ_EIO, "local CA: cannot write %s", path);
		else
			done += (size_t)w;
	}
	if (close(fd) != 0 && rc == 0)
		rc = tfj_err_set(TFJ_EIO, "local CA: cannot write %s", path);
	return rc;
}

int tfj_pstls_local(char *templ)
{
	static const char *const names[] = { "127.0.0.1", "localhost" };
	struct tfj_certgen_pair ca = { 0 }, leaf = { 0 };
	int64_t now = tfj_clock_unix_ms() / 1000;
	int rc;

	if (!mkdtemp(templ))
		return tfj_err_set(TFJ_EIO, "local CA: cannot make a directory from %s", templ);
	/* A day: a local run that outlives it can make another. */
	if ((rc = tfj_certgen_ca(&ca, "tfjob-runtime-local-ca", now, 86400)) ||
	    (rc = tfj_certgen_leaf(&leaf, &ca, names, 2, now, 86400)) ||
	    (rc = write_file(templ, TFJ_PSTLS_CA_FILE, ca.cert_pem)) ||
	    (rc = write_file(templ, TFJ_PSTLS_CERT_FILE, leaf.cert_pem)) ||
	    (rc = write_file(templ, TFJ_PSTLS_KEY_FILE, leaf.key_pem)))
		tfj_pstls_local_remove(templ);
	tfj_certgen_pair_free(&ca);
	tfj_certgen_pair_free(&leaf);
	return rc;
}

void tfj_pstls_local_remove(const char *dir)
{
	static const char *const files[] = { TFJ_PSTLS_CA_FILE, TFJ_PSTLS_CERT_FILE,
					     TFJ_PSTLS_KEY_FILE };
	char path[4096];
	size_t i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (snprintf(path, sizeof(path), "%s/%s", dir, files[i]) < (int)sizeof(path))
			unlink(path);
	rmdir(dir);
}
