/*
 * certgen.h - CA and serving certificates, made with OpenSSL's libcrypto
 * (library tfj_certgen): a self-signed CA and a serving certificate it
 * signs for a list of names, and the checks the operator runs on any
 * certificate it is handed (a Secret made by another replica, an older
 * version of itself, or cert-manager). Its users: the operator's report
 * channel (report/servingcert.h), each TFJob's ps certificate
 * (tfjob/pssecret.h) and the runtime's throwaway CA for a local cluster
 * (runtime/src/wire/pstls.h).
 *
 * Keys are ECDSA P-256, signatures SHA-256, serial numbers 128 random bits.
 * The CA has basicConstraints CA:TRUE (critical) and keyUsage keyCertSign;
 * the serving certificate CA:FALSE, keyUsage digitalSignature, extended key
 * usage serverAuth and one subjectAltName per name given: an IP address
 * for an IPv4 or IPv6 literal (a local cluster on 127.0.0.1), a DNS name
 * otherwise. notBefore is
 * set TFJ_CERTGEN_BACKDATE_S before `now`, so a peer whose clock is a little
 * behind still accepts a fresh certificate.
 *
 * Pure apart from the random numbers: `now` is passed in, so tests can make
 * certificates that are expired or due for renewal.
 *
 * Ownership: the PEM strings of a struct tfj_certgen_pair are malloc'd and
 * freed (wiped, the key) by tfj_certgen_pair_free().
 */
#ifndef TFJ_CERTGEN_H
#define TFJ_CERTGEN_H

#include <stddef.h>
#include <stdint.h>

#define TFJ_CERTGEN_BACKDATE_S 300
#define TFJ_CERTGEN_MAX_NAMES 8
#define TFJ_CERTGEN_PEM_MAX (64 * 1024)   /* a PEM bundle we accept, at most */

struct tfj_certgen_pair {
	char *cert_pem;
	char *key_pem;
};

/* A CA valid from now - backdate to now + lifetime_s; `cn` is its common name. */
int tfj_certgen_ca(struct tfj_certgen_pair *out, const char *cn, int64_t now_s,
		   int64_t lifetime_s);

/*
 * A serving certificate signed by `ca`, for names[0..n) (n 1..TFJ_CERTGEN_-
 * MAX_NAMES; names[0] is also the common name, or its first label when
 * longer than X.509's 64 characters), valid from now - backdate
 * to now + lifetime_s but never past the CA's own notAfter.
 */
int tfj_certgen_leaf(struct tfj_certgen_pair *out, const struct tfj_certgen_pair *ca,
		     const char *const *names, size_t n, int64_t now_s, int64_t lifetime_s);

/*
 * A CA (common name ca_cn) and a serving certificate it signed, as
 * tfj_certgen_ca then tfj_certgen_leaf would make them, in one go: the CA's
 * key is never written out (nothing further can be signed with it) and the
 * CA is not parsed back from PEM, which in the scale benchmark cost about
 * half of the pair's CPU (docs/bench/history.md, part 11). *ca_cert_pem
 * gets the CA certificate (the caller's, free()); leaf as tfj_certgen_leaf.
 */
int tfj_certgen_ca_and_leaf(struct tfj_certgen_pair *leaf, char **ca_cert_pem,
			    const char *ca_cn, const char *const *names, size_t n, int64_t now_s,
			    int64_t lifetime_s);

void tfj_certgen_pair_free(struct tfj_certgen_pair *p);

/* notBefore and notAfter (Unix seconds) of the first certificate in pem. */
int tfj_certgen_validity(int64_t *not_before, int64_t *not_after, const char *pem);

/*
 * 1 when less than a third of [not_before, not_after) is left at now (or
 * the certificate is not valid yet, or already expired): time to renew.
 */
int tfj_certgen_renew_due(int64_t not_before, int64_t not_after, int64_t now_s);

/* 0 when key_pem is the private key of the first certificate in cert_pem; TFJ_EINVAL else. */
int tfj_certgen_key_matches(const char *cert_pem, const char *key_pem);

/*
 * The checks a serving certificate must pass before it is served:
 * cert_pem verifies (X509_verify_cert) against the roots in ca_pem at time
 * now for host `name` (a DNS subjectAltName), and key_pem is its private
 * key. TFJ_EINVAL with the reason otherwise (unparsable PEM, wrong key,
 * untrusted, expired, name mismatch).
 */
int tfj_certgen_verify(const char *ca_pem, const char *cert_pem, const char *key_pem,
		       const char *name, int64_t now_s);

#endif
