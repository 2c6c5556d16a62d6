/*
 * test_certgen.c - the report channel's certificates (report/certgen.h):
 * a serving certificate chains to its CA (X509_verify_cert) for each of the
 * Service's DNS names and no other, its key matches, another CA does not
 * verify it, expiry and not-yet-valid are refused, the leaf never outlives
 * the CA, and the renewal rule (less than a third left). IP literals
 * become IP subjectAltNames that verify for that address only.
 */
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

#include <tfj/certgen.h>
#include "tfj_test.h"

#define NOW 1800000000LL   /* 2027-01-15: any fixed instant */
#define DAY 86400LL

static const char *const names[] = {
	"tfjob-operator", "tfjob-operator.tfjob-system", "tfjob-operator.tfjob-system.svc",
	"tfjob-operator.tfjob-system.svc.cluster.local"
};

static void test_chain_and_names(void)
{
	struct tfj_certgen_pair ca, leaf;
	size_t i;

	TFJ_CHECK_OK(tfj_certgen_ca(&ca, "tfjob-operator-report-ca", NOW, 3650 * DAY));
	TFJ_CHECK_OK(tfj_certgen_leaf(&leaf, &ca, names, 4, NOW, 90 * DAY));
	TFJ_CHECK_NOT_NULL(strstr(ca.cert_pem, "BEGIN CERTIFICATE"));
	TFJ_CHECK_NOT_NULL(strstr(leaf.key_pem, "PRIVATE KEY"));
	for (i = 0; i < 4; i++)
		TFJ_CHECK_OK(tfj_certgen_verify(ca.cert_pem, leaf.cert_pem, leaf.key_pem, names[i],
						NOW));
	/* A name the certificate does not carry. */
	TFJ_CHECK_INT(tfj_certgen_verify(ca.cert_pem, leaf.cert_pem, leaf.key_pem,
					 "evil.tfjob-system.svc", NOW), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_certgen_verify(ca.cert_pem, leaf.cert_pem, leaf.key_pem,
					 "tfjob-operator.other.svc", NOW), TFJ_EINVAL);
	/* The CA itself is not a serving certificate for the names. */
	TFJ_CHECK_INT(tfj_certgen_verify(ca.cert_pem, ca.cert_pem, ca.key_pem, names[2], NOW),
		      TFJ_EINVAL);
	tfj_certgen_pair_free(&leaf);
	tfj_certgen_pair_free(&ca);
	TFJ_CHECK_NULL(ca.cert_pem);
}

/*
 * The pair made in one go (the ps Secret's): the leaf chains to the CA for
 * each name and no other, until the lifetime ends; bad input is refused
 * and leaves nothing behind.
 */
static void test_ca_and_leaf(void)
{
	struct tfj_certgen_pair leaf, other;
	char *ca_pem = NULL;
	size_t i;

	TFJ_CHECK_OK(tfj_certgen_ca_and_leaf(&leaf, &ca_pem, "tfjob-ps-ca", names, 4, NOW,
					     30 * DAY));
	TFJ_CHECK_NOT_NULL(strstr(ca_pem, "BEGIN CERTIFICATE"));
	TFJ_CHECK_NULL(strstr(ca_pem, "PRIVATE KEY"));
	for (i = 0; i < 4; i++)
		TFJ_CHECK_OK(tfj_certgen_verify(ca_pem, leaf.cert_pem, leaf.key_pem, names[i], NOW));
	TFJ_CHECK_INT(tfj_certgen_verify(ca_pem, leaf.cert_pem, leaf.key_pem,
					 "evil.tfjob-system.svc", NOW), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_certgen_verify(ca_pem, leaf.cert_pem, leaf.key_pem, names[0],
					 NOW + 31 * DAY), TFJ_EINVAL);
	/* Another pair's CA does not vouch for this leaf. */
	{
		char *ca2 = NULL;

		TFJ_CHECK_OK(tfj_certgen_ca_and_leaf(&other, &ca2, "tfjob-ps-ca", names, 1, NOW,
						     30 * DAY));
		TFJ_CHECK_INT(tfj_certgen_verify(ca2, leaf.cert_pem, leaf.key_pem, names[0], NOW),
			      TFJ_EINVAL);
		tfj_certgen_pair_free(&other);
		free(ca2);
	}
	tfj_certgen_pair_free(&leaf);
	free(ca_pem);
	ca_pem = (char *)"unchanged";
	TFJ_CHECK_INT(tfj_certgen_ca_and_leaf(&leaf, &ca_pem, "ca", names, 0, NOW, DAY),
		      TFJ_EINVAL);
	TFJ_CHECK_NULL(ca_pem);
	TFJ_CHECK_INT(tfj_certgen_ca_and_leaf(&leaf, &ca_pem, "", names, 1, NOW, DAY), TFJ_EINVAL);
	TFJ_CHECK_NULL(ca_pem);
	TFJ_CHECK_NULL(leaf.cert_pem);
}

static void test_wrong_ca_and_key(void)
{
	struct tfj_certgen_pair ca, other, leaf, leaf2;
	char *bundle;
	size_t n;

	TFJ_CHECK_OK(tfj_certgen_ca(&ca, "ca-one", NOW, 3650 * DAY));
	TFJ_CHECK_OK(tfj_certgen_ca(&other, "ca-two", NOW, 3650 * DAY));
	TFJ_CHECK_OK(tfj_certgen_leaf(&leaf, &ca, names, 4, NOW, 90 * DAY));
	TFJ_CHECK_OK(tfj_certgen_leaf(&leaf2, &ca, names, 4, NOW, 90 * DAY));
	/* Another CA, even with a certificate of the same names, does not verify it. */
	TFJ_CHECK_INT(tfj_certgen_verify(other.cert_pem, leaf.cert_pem, leaf.key_pem, names[2],
					 NOW), TFJ_EINVAL);
	/* A key of another certificate. */
	TFJ_CHECK_INT(tfj_certgen_verify(ca.cert_pem, leaf.cert_pem, leaf2.key_pem, names[2], NOW),
		      TFJ_EINVAL);
	TFJ_CHECK_OK(tfj_certgen_key_matches(ca.cert_pem, ca.key_pem));
	TFJ_CHECK_INT(tfj_certgen_key_matches(ca.cert_pem, other.key_pem), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_certgen_key_matches("junk", ca.key_pem), TFJ_EINVAL);
	/* A bundle with both CAs (the one during a CA rotation) verifies. */
	n = strlen(other.cert_pem) + strlen(ca.cert_pem) + 1;
	bundle = malloc(n);
	TFJ_CHECK_NOT_NULL(bundle);
	if (bundle) {
		strcpy(bundle, other.cert_pem);
		strcat(bundle, ca.cert_pem);
		TFJ_CHECK_OK(tfj_certgen_verify(bundle, leaf.cert_pem, leaf.key_pem, names[3], NOW));
	}
	free(bundle);
	/* Garbage in every place. */
	TFJ_CHECK_INT(tfj_certgen_verify("junk", leaf.cert_pem, leaf.key_pem, names[2], NOW),
		      TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_certgen_verify(ca.cert_pem, "junk", leaf.key_pem, names[2], NOW),
		      TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_certgen_verify(ca.cert_pem, leaf.cert_pem, "junk", names[2], NOW),
		      TFJ_EINVAL);
	tfj_certgen_pair_free(&ca);
	tfj_certgen_pair_free(&other);
	tfj_certgen_pair_free(&leaf);
	tfj_certgen_pair_free(&leaf2);
}

static void test_expiry(void)
{
	struct tfj_certgen_pair ca, leaf, short_ca, capped;
	int64_t nb, na;

	TFJ_CHECK_OK(tfj_certgen_ca(&ca, "ca", NOW, 3650 * DAY));
	TFJ_CHECK_OK(tfj_certgen_leaf(&leaf, &ca, names, 4, NOW, 90 * DAY));
	TFJ_CHECK_OK(tfj_certgen_validity(&nb, &na, leaf.cert_pem));
	TFJ_CHECK_EQ(nb, NOW - TFJ_CERTGEN_BACKDATE_S);
	TFJ_CHECK_EQ(na, NOW + 90 * DAY);
	/* Valid within, refused after notAfter and before notBefore. */
	TFJ_CHECK_OK(tfj_certgen_verify(ca.cert_pem, leaf.cert_pem, leaf.key_pem, names[0],
					NOW + 89 * DAY));
	TFJ_CHECK_INT(tfj_certgen_verify(ca.cert_pem, leaf.cert_pem, leaf.key_pem, names[0],
					 NOW + 91 * DAY), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_certgen_verify(ca.cert_pem, leaf.cert_pem, leaf.key_pem, names[0],
					 NOW - DAY), TFJ_EINVAL);
	/* A leaf asked to outlive its CA ends with it. */
	TFJ_CHECK_OK(tfj_certgen_ca(&short_ca, "short", NOW, 10 * DAY));
	TFJ_CHECK_OK(tfj_certgen_leaf(&capped, &short_ca, names, 1, NOW, 90 * DAY));
	TFJ_CHECK_OK(tfj_certgen_validity(&nb, &na, capped.cert_pem));
	TFJ_CHECK_EQ(na, NOW + 10 * DAY);
	TFJ_CHECK_INT(tfj_certgen_validity(&nb, &na, "-----BEGIN CERTIFICATE-----\nAAAA\n"),
		      TFJ_EINVAL);
	tfj_certgen_pair_free(&ca);
	tfj_certgen_pair_free(&leaf);
	tfj_certgen_pair_free(&short_ca);
	tfj_certgen_pair_free(&capped);
}

static void test_renew_due(void)
{
	/* 90 days: due once fewer than 30 are left. */
	TFJ_CHECK_INT(tfj_certgen_renew_due(0, 90 * DAY, 0), 0);
	TFJ_CHECK_INT(tfj_certgen_renew_due(0, 90 * DAY, 59 * DAY), 0);
	TFJ_CHECK_INT(tfj_certgen_renew_due(0, 90 * DAY, 60 * DAY), 0);
	TFJ_CHECK_INT(tfj_certgen_renew_due(0, 90 * DAY, 60 * DAY + 1), 1);
	TFJ_CHECK_INT(tfj_certgen_renew_due(0, 90 * DAY, 90 * DAY), 1);
	TFJ_CHECK_INT(tfj_certgen_renew_due(0, 90 * DAY, -1), 1);
	TFJ_CHECK_INT(tfj_certgen_renew_due(5, 5, 5), 1);
	/* Ten years from the real epoch: no overflow. */
	TFJ_CHECK_INT(tfj_certgen_renew_due(NOW, NOW + 3650 * DAY, NOW + 100 * DAY), 0);
}

static void test_bad_input(void)
{
	struct tfj_certgen_pair ca, leaf;
	const char *bad[] = { "a,DNS:evil" };
	const char *nine[9] = { "a", "b", "c", "d", "e", "f", "g", "h", "i" };

	TFJ_CHECK_INT(tfj_certgen_ca(&ca, "", NOW, DAY), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_certgen_ca(&ca, "x", NOW, 0), TFJ_EINVAL);
	TFJ_CHECK_OK(tfj_certgen_ca(&ca, "x", NOW, DAY));
	TFJ_CHECK_INT(tfj_certgen_leaf(&leaf, &ca, bad, 1, NOW, DAY), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_certgen_leaf(&leaf, &ca, nine, 9, NOW, DAY), TFJ_EINVAL);
	TFJ_CHECK_INT(tfj_certgen_leaf(&leaf, &ca, names, 0, NOW, DAY), TFJ_EINVAL);
	TFJ_CHECK_NULL(leaf.cert_pem);
	tfj_certgen_pair_free(&ca);
	tfj_certgen_pair_free(NULL);
}

static void test_ip_names(void)
{
	static const char *const local[] = { "127.0.0.1", "localhost", "::1" };
	struct tfj_certgen_pair ca, leaf;

	TFJ_CHECK_OK(tfj_certgen_ca(&ca, "local", NOW, DAY));
	TFJ_CHECK_OK(tfj_certgen_leaf(&leaf, &ca, local, 3, NOW, DAY));
	TFJ_CHECK_OK(tfj_certgen_verify(ca.cert_pem, leaf.cert_pem, leaf.key_pem, "127.0.0.1", NOW));
	TFJ_CHECK_OK(tfj_certgen_verify(ca.cert_pem, leaf.cert_pem, leaf.key_pem, "::1", NOW));
	TFJ_CHECK_OK(tfj_certgen_verify(ca.cert_pem, leaf.cert_pem, leaf.key_pem, "localhost", NOW));
	TFJ_CHECK_INT(tfj_certgen_verify(ca.cert_pem, leaf.cert_pem, leaf.key_pem, "127.0.0.2",
					 NOW), TFJ_EINVAL);
	tfj_certgen_pair_free(&leaf);
	tfj_certgen_pair_free(&ca);
}

int main(void)
{
	TFJ_RUN(test_ip_names);
	TFJ_RUN(test_chain_and_names);
	TFJ_RUN(test_ca_and_leaf);
	TFJ_RUN(test_wrong_ca_and_key);
	TFJ_RUN(test_expiry);
	TFJ_RUN(test_renew_due);
	TFJ_RUN(test_bad_input);
	return tfj_test_finish();
}
