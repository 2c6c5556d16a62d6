/*
 * wire.c - protobuf-c <-> gRPC byte buffers without copying tensors (wire.h).
 */
#include "wire/wire.h"

#include <malloc.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>

#include <tfj/err.h>

/* ---- encoding ---------------------------------------------------------- */

/* A ProtobufCBuffer that collects slices. */
struct slice_sink {
	ProtobufCBuffer base;
	grpc_slice *slices;
	size_t n, cap;
	uint8_t small[4096]; /* framing bytes waiting to become one slice */
	size_t small_len;
	struct tfj_wire_lease *lease;
	int err;
};

static void lease_release(void *user)
{
	struct tfj_wire_lease *l = user;

	atomic_fetch_sub(&l->refs, 1);
}

static int sink_push(struct slice_sink *s, grpc_slice sl)
{
	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 16;
		grpc_slice *ns;

		if (ncap > TFJ_WIRE_MAX_SLICES) {
			grpc_slice_unref(sl);
			return TFJ_ETOOBIG;
		}
		ns = realloc(s->slices, ncap * sizeof(*ns));
		if (!ns) {
			grpc_slice_unref(sl);
			return TFJ_ENOMEM;
		}
		s->slices = ns;
		s->cap = ncap;
	}
	s->slices[s->n++] = sl;
	return 0;
}

static void sink_flush_small(struct slice_sink *s)
{
	if (s->small_len && !s->err) {
		int rc = sink_push(s, grpc_slice_from_copied_buffer((const char *)s->small,
								    s->small_len));
		if (rc)
			s->err = rc;
	}
	s->small_len = 0;
}

static void sink_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
	struct slice_sink *s = (struct slice_sink *)b;

	if (s->err || len == 0)
		return;
	if (len >= TFJ_WIRE_ZEROCOPY_MIN && s->lease) {
		int rc;

		sink_flush_small(s);
		atomic_fetch_add(&s->lease->refs, 1);
		/* The cast drops const: gRPC never writes into a slice it was handed to send. */
		rc = sink_push(s, grpc_slice_new_with_user_data((void *)data, len, lease_release,
							     s->lease));
		if (rc)
			s->err = rc;
		return;
	}
	if (s->small_len + len > sizeof(s->small))
		sink_flush_small(s);
	if (len > sizeof(s->small)) {
		int rc = sink_push(s, grpc_slice_from_copied_buffer((const char *)data, len));
		if (rc)
			s->err = rc;
		return;
	}
	memcpy(s->small + s->small_len, data, len);
	s->small_len += len;
}

int tfj_wire_encode(grpc_byte_buffer **out, const ProtobufCMessage *msg,
		    struct tfj_wire_lease *lease)
{
	return tfj_wire_encode_after(out, NULL, 0, msg, lease);
}

int tfj_wire_encode_after(grpc_byte_buffer **out, const uint8_t *head, size_t head_len,
			  const ProtobufCMessage *msg, struct tfj_wire_lease *lease)
{
	struct slice_sink *s;
	size_t i;
	int rc = 0;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return tfj_err_set(TFJ_ENOMEM, "wire: out of memory");
	s->base.append = sink_append;
	s->lease = lease;
	/* The head is copied (it is small): it shares the first slice with the framing bytes. */
	if (head_len) {
		struct tfj_wire_lease *keep = s->lease;

		s->lease = NULL;
		sink_append(&s->base, head_len, head);
		s->lease = keep;
	}
	if (msg)
		protobuf_c_message_pack_to_buffer(msg, &s->base);
	sink_flush_small(s);
	if (s->err) {
		rc = tfj_err_set(s->err, "wire: cannot build the message slices");
		goto out;
	}
	/* grpc_raw_byte_buffer_create takes its own reference on every slice. */
	*out = grpc_raw_byte_buffer_create(s->slices, s->n);
	if (!*out)
		rc = tfj_err_set(TFJ_ENOMEM, "wire: byte buffer");
out:
	for (i = 0; i < s->n; i++)
		grpc_slice_unref(s->slices[i]);
	free(s->slices);
	free(s);
	return rc;
}

int tfj_wire_lease_wait(struct tfj_wire_lease *l, int timeout_ms)
{
	struct timespec ts = { 0, 200000 };
	int spins = 0, waited_us = 0;

	/*
	 * gRPC normally lets go of the slices as the call completes, so spin
	 * (yielding) briefly before falling back to 200 us sleeps.
	 */
	while (atomic_load(&l->refs) > 0) {
		if (spins < 200) {
			spins++;
			sched_yield();
			continue;
		}
		if (waited_us / 1000 >= timeout_ms)
			return tfj_err_set(TFJ_ETIMEOUT, "wire: gRPC still holds %d tensor slices",
					   atomic_load(&l->refs));
		nanosleep(&ts, NULL);
		waited_us += 200;
	}
	return 0;
}

int tfj_wire_transport_args(struct tfj_grpc_args *a, size_t max_message)
{
	int rc = tfj_grpc_args_msg_caps(a, max_message, max_message);

	if (!rc)
		rc = tfj_grpc_args_int(a, GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 8 << 20);
	if (!rc)
		rc = tfj_grpc_args_int(a, GRPC_ARG_HTTP2_MAX_FRAME_SIZE, (1 << 24) - 1);
	if (!rc)
		rc = tfj_grpc_args_int(a, GRPC_ARG_HTTP2_WRITE_BUFFER_SIZE, 8 << 20);
	if (!rc)
		rc = tfj_grpc_args_int(a, GRPC_ARG_TCP_MAX_READ_CHUNK_SIZE, 4 << 20);
	/*
	 * A peer whose node vanished swallows packets: a write to it never
	 * completes, and neither does a batch that holds a send to it, even
	 * after the call is cancelled (a worker then waited forever for its
	 * cancelled push). Keepalive closes such a transport: gRPC pings every
	 * TFJ_WIRE_KEEPALIVE_MS and gives up without an answer within as long,
	 * and on Linux sets TCP_USER_TIMEOUT to that timeout, so unacknowledged
	 * data fails the socket too; the transport's pending operations then
	 * complete. Both ends send pings and accept them that often.
	 */
	if (!rc)
		rc = tfj_grpc_args_int(a, GRPC_ARG_KEEPALIVE_TIME_MS, TFJ_WIRE_KEEPALIVE_MS);
	if (!rc)
		rc = tfj_grpc_args_int(a, GRPC_ARG_KEEPALIVE_TIMEOUT_MS, TFJ_WIRE_KEEPALIVE_MS);
	if (!rc)
		rc = tfj_grpc_args_int(a, GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
	if (!rc)
		rc = tfj_grpc_args_int(a, GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
	if (!rc)
		rc = tfj_grpc_args_int(a, GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
				       TFJ_WIRE_KEEPALIVE_MS / 2);
	return rc;
}

/*
 * gRPC reads a message into buffers of up to 4 MiB (the read chunk above)
 * and frees them once the message has been consumed, so every Pull and Push
 * allocates and frees the size of its tensors again. With glibc's default
 * thresholds many of those buffers are mapped and unmapped per message, and
 * freed memory at the top of the heap is handed back to the kernel, so the
 * next message faults the same amount in again as zero-filled pages: one
 * more pass over every tensor, and the largest single cost at 1 MiB.
 * A training task's working set is the same every step, so keep it:
 * allocations up to 32 MiB (glibc's largest mmap threshold) come from the
 * heap, and up to 256 MiB of freed heap stays mapped for the next message
 * (docs/bench/history.md, part 1, has the before and after).
 */
void tfj_wire_tune_malloc(void)
{
#ifdef __GLIBC__
	const char *t = getenv("GLIBC_TUNABLES");

	if (getenv("MALLOC_MMAP_THRESHOLD_") || getenv("MALLOC_TRIM_THRESHOLD_") ||
	    (t && strstr(t, "glibc.malloc.")))
		return;
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

/* ---- decoding ---------------------------------------------------------- */

struct tfj_wire_chunk {
	struct tfj_wire_chunk *next;
	size_t cap, used;
	max_align_t data[];
};

#define ARENA_MIN_CHUNK (64u << 10)

static void *arena_alloc(void *ud, size_t size)
{
	struct tfj_wire_arena *a = ud;
	struct tfj_wire_chunk *c = a->head;
	size_t need = (size + 15) & ~(size_t)15;
	void *p;

	if (need < size || a->total + need > a->max || a->total + need < a->total) {
		a->failed = 1;
		return NULL;
	}
	if (!c || c->cap - c->used < need) {
		size_t cap = need > ARENA_MIN_CHUNK ? need : ARENA_MIN_CHUNK;

		c = malloc(sizeof(*c) + cap);
		if (!c) {
			a->failed = 1;
			return NULL;
		}
		c->cap = cap;
		c->used = 0;
		c->next = a->head;
		a->head = c;
	}
	p = (uint8_t *)c->data + c->used;
	c->used += need;
	a->total += need;
	return p;
}

static void arena_free(void *ud, void *p)
{
	(void)ud;
	(void)p; /* released in bulk by tfj_wire_arena_reset() */
}

int tfj_wire_arena_init(struct tfj_wire_arena *a, size_t max)
{
	memset(a, 0, sizeof(*a));
	a->alloc.alloc = arena_alloc;
	a->alloc.free = arena_free;
	a->alloc.allocator_data = a;
	a->max = max;
	return 0;
}

void tfj_wire_arena_reset(struct tfj_wire_arena *a)
{
	struct tfj_wire_chunk *c = a->head, *next;
	size_t total = 0;

	if (!c)
		return;
	/* Keep one chunk big enough for everything the last message needed. */
	for (; c; c = c->next)
		total += c->cap;
	if (a->head->next) {
		for (c = a->head; c; c = next) {
			next = c->next;
			free(c);
		}
		a->head = malloc(sizeof(*a->head) + total);
		if (a->head) {
			a->head->cap = total;
			a->head->next = NULL;
		}
	}
	if (a->head)
		a->head->used = 0;
	a->total = 0;
	a->failed = 0;
}

void tfj_wire_arena_free(struct tfj_wire_arena *a)
{
	struct tfj_wire_chunk *c, *next;

	if (!a)
		return;
	for (c = a->head; c; c = next) {
		next = c->next;
		free(c);
	}
	free(a->flat);
	memset(a, 0, sizeof(*a));
}

int tfj_wire_unpack(ProtobufCMessage **out, const ProtobufCMessageDescriptor *desc,
		    const uint8_t *data, size_t len, struct tfj_wire_arena *a)
{
	ProtobufCMessage *m;

	*out = NULL;
	if (len > a->max)
		return tfj_err_set(TFJ_ETOOBIG, "wire: %zu-byte %s over the %zu-byte cap", len,
				   desc->short_name, a->max);
	m = protobuf_c_message_unpack(desc, &a->alloc, len, data);
	if (!m) {
		if (a->failed)
			return tfj_err_set(TFJ_ETOOBIG, "wire: %s needs more memory than allowed",
					   desc->short_name);
		return tfj_err_set(TFJ_EPARSE, "wire: malformed %s (%zu bytes)", desc->short_name,
				   len);
	}
	*out = m;
	return 0;
}

int tfj_wire_flatten(size_t *len_out, grpc_byte_buffer *bb, const char *what,
		     struct tfj_wire_arena *a)
{
	grpc_byte_buffer_reader rd;
	grpc_slice sl;
	size_t len = grpc_byte_buffer_length(bb), off = 0;

	*len_out = 0;
	if (len > a->max)
		return tfj_err_set(TFJ_ETOOBIG, "wire: %zu-byte %s over the %zu-byte cap", len,
				   what, a->max);
	if (len > a->flat_cap) {
		uint8_t *nf = realloc(a->flat, len);

		if (!nf)
			return tfj_err_set(TFJ_ENOMEM, "wire: out of memory");
		a->flat = nf;
		a->flat_cap = len;
	}
	if (!grpc_byte_buffer_reader_init(&rd, bb))
		return tfj_err_set(TFJ_EPARSE, "wire: cannot read the payload");
	while (grpc_byte_buffer_reader_next(&rd, &sl)) {
		size_t n = GRPC_SLICE_LENGTH(sl);

		if (n > len - off) {
			grpc_slice_unref(sl);
			grpc_byte_buffer_reader_destroy(&rd);
			return tfj_err_set(TFJ_EPARSE, "wire: payload longer than announced");
		}
		memcpy(a->flat + off, GRPC_SLICE_START_PTR(sl), n);
		off += n;
		grpc_slice_unref(sl);
	}
	grpc_byte_buffer_reader_destroy(&rd);
	*len_out = off;
	return 0;
}

int tfj_wire_decode(ProtobufCMessage **out, const ProtobufCMessageDescriptor *desc,
		    grpc_byte_buffer *bb, struct tfj_wire_arena *a)
{
	size_t len;
	int rc;

	*out = NULL;
	if (!bb)
		return tfj_wire_unpack(out, desc, (const uint8_t *)"", 0, a);
	len = grpc_byte_buffer_length(bb);
	if (len > a->max)
		return tfj_err_set(TFJ_ETOOBIG, "wire: %zu-byte %s over the %zu-byte cap", len,
				   desc->short_name, a->max);
	/* A single uncompressed slice is decoded in place. */
	if (bb->type == GRPC_BB_RAW && bb->data.raw.compression == GRPC_COMPRESS_NONE &&
	    bb->data.raw.slice_buffer.count == 1) {
		grpc_slice s0 = bb->data.raw.slice_buffer.slices[0];

		return tfj_wire_unpack(out, desc, GRPC_SLICE_START_PTR(s0), GRPC_SLICE_LENGTH(s0), a);
	}
	if ((rc = tfj_wire_flatten(&len, bb, desc->short_name, a)))
		return rc;
	return tfj_wire_unpack(out, desc, a->flat, len, a);
}
