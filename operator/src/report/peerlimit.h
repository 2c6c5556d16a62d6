/*
 * peerlimit.h - a token bucket per peer address for report calls that fail
 * authentication.
 *
 * Only refusals cost: every call whose token is missing, malformed, forged
 * or of another pod takes a token from its peer's bucket, and a peer with
 * an empty bucket is refused before its token is even looked at. An agent
 * with a valid token never fails, so it never pays; a flood from one
 * address is cut to `qps` looks per second after `burst` (report.h,
 * docs/security.md "Report authentication").
 *
 * The table is fixed-size (sets of 4 peers, keyed by address): however many
 * addresses call, memory stays bounded. A new peer takes the slot in its set
 * whose bucket is fullest (the one that failed least lately), so a flood
 * from many addresses can only push out peers that have nothing to forgive.
 *
 * The key is any short string: the reviewer (tokenreview.c) keeps a second
 * table keyed by namespace, each namespace's share of the TokenReview
 * budget, charged for every review it sends.
 *
 * Times are passed in (monotonic ns), so the arithmetic is testable without
 * sleeping. Threads: one lock per table.
 */
#ifndef TFJ_PEERLIMIT_H
#define TFJ_PEERLIMIT_H

#include <stddef.h>
#include <stdint.h>

#define TFJ_PEERLIMIT_ADDR_MAX 64

struct tfj_peerlimit;

/* qps <= 0 or burst < 1: no limit (allowed always 1). entries 0 = 4096. */
int tfj_peerlimit_new(struct tfj_peerlimit **out, double qps, int burst, size_t entries);
void tfj_peerlimit_free(struct tfj_peerlimit *p);

/* 1 when `peer` may be looked at now (its bucket holds a whole token). */
int tfj_peerlimit_allowed(struct tfj_peerlimit *p, const char *peer, uint64_t now_ns);

/* A refusal of `peer`: takes one token (the bucket never goes below zero). */
void tfj_peerlimit_charge(struct tfj_peerlimit *p, const char *peer, uint64_t now_ns);

/*
 * The address part of a gRPC peer string ("ipv4:10.1.2.3:5555" ->
 * "10.1.2.3", "ipv6:[fd00::1]:5555" -> "fd00::1"); the whole string when it
 * has no recognised form. Always NUL-terminated, truncated to cap.
 */
void tfj_peerlimit_addr(char *out, size_t cap, const char *grpc_peer);

#endif
