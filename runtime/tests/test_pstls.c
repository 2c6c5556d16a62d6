/*
 * test_pstls.c - how a task finds its ps certificate (pstls.h): TLS unless
 * TFJOB_PS_TLS=off, no directory is an error, a missing file names the
 * opt-out, a key that is not the certificate's is refused, and what a ps
 * and a client each load from a local CA's directory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <grpc/grpc.h>

#include <tfj/err.h>

#include "wire/pstls.h"
#include "tfj_test.h"

static void test_modes(void)
{
	struct tfj_pstls t;

	TFJ_CHECK_OK(tfj_pstls_load(&t, NULL, "off", 1));
	TFJ_CHECK_INT(t.on, 0);
	TFJ_CHECK(tfj_pstls_server_creds(&t) == NULL);
	TFJ_CHECK_OK(tfj_pstls_load(&t, "/nonexistent", "off", 0));
	TFJ_CHECK_INT(t.on, 0);
	TFJ_CHECK_INT(tfj_pstls_load(&t, NULL, NULL, 1), TFJ_EINVAL);
	TFJ_CHECK(strstr(tfj_err_detail(), "TFJOB_PS_TLS=off") != NULL);
	TFJ_CHECK_INT(tfj_pstls_load(&t, "", "on", 0), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_pstls_load(&t, "/tmp", "false", 0), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_pstls_load(&t, "/nonexistent", NULL, 0), TFJ_ENOTFOUND);
	TFJ_CHECK(strstr(tfj_err_detail(), "ca.crt") != NULL);
	TFJ_CHECK(strstr(tfj_err_detail(), "TFJOB_PS_TLS=off") != NULL);
	tfj_pstls_free(&t);
}

static void test_local_ca(void)
{
	char dir[] = "/tmp/tfj-test-pstls-XXXXXX", other[] = "/tmp/tfj-test-pstls-XXXXXX";
	char from[4200], to[4200];
	grpc_server_credentials *c;
	struct tfj_pstls t;

	TFJ_CHECK_OK(tfj_pstls_local(dir));
	TFJ_CHECK_OK(tfj_pstls_load(&t, dir, NULL, 1));
	TFJ_CHECK_INT(t.on, 1);
	TFJ_CHECK(t.cert_pem && t.key_pem && !t.ca_pem);
	c = tfj_pstls_server_creds(&t);
	TFJ_CHECK(c != NULL);
	if (c)
		grpc_server_credentials_release(c);
	tfj_pstls_free(&t);
	TFJ_CHECK_OK(tfj_pstls_load(&t, dir, "on", 0));
	TFJ_CHECK(t.ca_pem && !t.cert_pem && !t.key_pem);
	tfj_pstls_free(&t);

	/* Another CA's key next to this certificate: refused at load. */
	TFJ_CHECK_OK(tfj_pstls_local(other));
	snprintf(from, sizeof(from), "%s/tls.key", other);
	snprintf(to, sizeof(to), "%s/tls.key", dir);
	TFJ_CHECK_OK(rename(from, to));
	TFJ_CHECK_INT(tfj_pstls_load(&t, dir, NULL, 1), TFJ_EINVAL);
	TFJ_CHECK(t.cert_pem == NULL && t.key_pem == NULL);
	/* A client needs only ca.crt. */
	TFJ_CHECK_OK(tfj_pstls_load(&t, dir, NULL, 0));
	tfj_pstls_free(&t);
	tfj_pstls_local_remove(other);
	tfj_pstls_local_remove(dir);
	TFJ_CHECK(access(dir, F_OK) != 0);
}

int main(void)
{
	grpc_init();
	TFJ_RUN(test_modes);
	TFJ_RUN(test_local_ca);
	grpc_shutdown();
	return tfj_test_finish();
}
