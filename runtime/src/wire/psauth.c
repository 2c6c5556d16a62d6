/*
 * psauth.c - the per-job ps secret check (psauth.h).
 */
#include "wire/psauth.h"

#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>
#include <tfj/file.h>
#include <tfj/grpc.h>

#define BEARER "Bearer "

int tfj_psauth_load(struct tfj_psauth *a, const char *path)
{
	char *s = NULL;
	size_t len = 0, i;
	int rc;

	memset(a, 0, sizeof(*a));
	if (!path || !path[0])
		return 0;
	rc = tfj_file_read_secret(&s, &len, path, TFJ_PSAUTH_MAX_BYTES);
	if (rc)
		goto out;
	if (len < TFJ_PSAUTH_MIN_BYTES) {
		rc = tfj_err_set(TFJ_EINVAL, "ps secret %s: %zu bytes, at least %d expected", path,
				 len, TFJ_PSAUTH_MIN_BYTES);
		goto out;
	}
	/* It is sent as a header value: printable ASCII, no spaces. */
	for (i = 0; i < len; i++)
		if (s[i] <= ' ' || s[i] > '~') {
			rc = tfj_err_set(TFJ_EINVAL, "ps secret %s: not printable ASCII", path);
			goto out;
		}
	a->secret = s;
	a->len = len;
	s = NULL;
out:
	tfj_file_secret_free(s);
	return rc;
}

int tfj_psauth_from_env(struct tfj_psauth *a)
{
	return tfj_psauth_load(a, getenv(TFJ_PSAUTH_ENV));
}

void tfj_psauth_free(struct tfj_psauth *a)
{
	tfj_file_secret_free(a->secret);
	memset(a, 0, sizeof(*a));
}

int tfj_psauth_on(const struct tfj_psauth *a)
{
	return a->secret != NULL;
}

/*
 * 1 when got (glen bytes) equals want (wlen bytes). Runs over all of want
 * whatever got holds, without an early exit, so the time says nothing about
 * where the first difference is.
 */
static int ct_equal(const char *got, size_t glen, const char *want, size_t wlen)
{
	unsigned d = glen != wlen;
	size_t i;

	for (i = 0; i < wlen; i++)
		d |= (unsigned char)((i < glen ? (unsigned char)got[i] : 0u) ^ (unsigned char)want[i]);
	return d == 0;
}

int tfj_psauth_check(struct tfj_psauth *a, const char *val, size_t len)
{
	const size_t pl = sizeof(BEARER) - 1;

	if (!a->secret)
		return 0;
	if (val && len > pl && memcmp(val, BEARER, pl) == 0 &&
	    ct_equal(val + pl, len - pl, a->secret, a->len)) {
		a->accepted++;
		return 0;
	}
	a->refused++;
	return TFJ_EAUTH;
}

int tfj_psauth_check_md(struct tfj_psauth *a, const grpc_metadata_array *md)
{
	const char *v = NULL;
	size_t n = 0;

	if (!md || tfj_grpc_incoming_md(&v, &n, md, "authorization") != 0)
		v = NULL;
	return tfj_psauth_check(a, v, n);
}
