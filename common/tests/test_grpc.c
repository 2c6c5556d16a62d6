/*
 * test_grpc.c - the gRPC layer (tfj/grpc.h) with a real server on
 * 127.0.0.1 (port 0) and real clients: a unary call with a bearer token,
 * status details, a deadline that runs out, a reply over the cap refused,
 * parallel calls on one completion queue with the replies left in gRPC's
 * buffers, and the argument, byte-buffer and deadline helpers.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/clock.h>
#include <tfj/err.h>
#include <tfj/grpc.h>

#include "tfj_test.h"

enum method { M_ECHO, M_SLOW, M_BIG, M_FAIL, M_COUNT };

static const char *const paths[M_COUNT] = {
	"/tfj.test.T/Echo", "/tfj.test.T/Slow", "/tfj.test.T/Big", "/tfj.test.T/Fail"
};

#define BIG_LEN 4096

enum tag_kind { TAG_NEW = 1, TAG_DONE };

struct slot {
	int kind; /* TAG_NEW */
	enum method m;
	void *reg;
	struct tfj_grpc_incoming in;
};

/* One call being answered (or, for Slow, waited out). */
struct ctx {
	int kind; /* TAG_DONE */
	grpc_call *call;
	grpc_byte_buffer *resp;
	int cancelled;
};

struct server {
	grpc_server *srv;
	grpc_completion_queue *cq;
	struct slot slots[M_COUNT];
	int port;
	int shut_tag;
	int shut_seen;        /* the server's shutdown tag has come out of the queue */
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char auth[128];       /* the last Echo's authorization value */
	int slow_cancelled;   /* Slow calls the client gave up on */
};

/* Answers a new call of sl's method; the call is handed to a ctx. */
static void answer(struct server *s, struct slot *sl)
{
	struct ctx *c = calloc(1, sizeof(*c));
	const char *v;
	size_t n;
	uint8_t *body = NULL;
	size_t len = 0;
	grpc_op op;

	if (!c) {
		tfj_grpc_incoming_release(&sl->in);
		return;
	}
	c->kind = TAG_DONE;
	c->call = sl->in.call;
	sl->in.call = NULL;
	switch (sl->m) {
	case M_ECHO:
		pthread_mutex_lock(&s->mu);
		if (tfj_grpc_incoming_md(&v, &n, &sl->in.md, "authorization") == 0)
			snprintf(s->auth, sizeof(s->auth), "%.*s", (int)n, v);
		else
			snprintf(s->auth, sizeof(s->auth), "(none)");
		pthread_mutex_unlock(&s->mu);
		if (tfj_grpc_bb_read(&body, &len, sl->in.payload, 1u << 20) == 0)
			c->resp = tfj_grpc_bb_new(body, len);
		free(body);
		tfj_grpc_reply(c->call, GRPC_STATUS_OK, NULL, c->resp, &c->cancelled, c);
		break;
	case M_SLOW:
		/* No answer: only wait for the client to go away. */
		memset(&op, 0, sizeof(op));
		op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
		op.data.recv_close_on_server.cancelled = &c->cancelled;
		grpc_call_start_batch(c->call, &op, 1, c, NULL);
		break;
	case M_BIG:
		body = calloc(1, BIG_LEN);
		c->resp = tfj_grpc_bb_new(body, BIG_LEN);
		free(body);
		tfj_grpc_reply(c->call, GRPC_STATUS_OK, NULL, c->resp, &c->cancelled, c);
		break;
	default:
		/* A refusal carries details and never a message, even when given one. */
		c->resp = tfj_grpc_bb_new("x", 1);
		tfj_grpc_reply(c->call, GRPC_STATUS_FAILED_PRECONDITION, "nope: layout", c->resp,
			       &c->cancelled, c);
	}
	tfj_grpc_incoming_release(&sl->in);
}

static void *serve(void *arg)
{
	struct server *s = arg;

	for (;;) {
		grpc_event ev = grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC),
							   NULL);

		/*
		 * Every event is handled until the queue itself is shut down, also
		 * those after the server's shutdown tag: a call finishing late still
		 * owns a ctx that must be freed, or LeakSanitizer sees it.
		 */
		if (ev.type != GRPC_OP_COMPLETE)
			break;
		if (ev.tag == &s->shut_tag) {
			pthread_mutex_lock(&s->mu);
			s->shut_seen = 1;
			pthread_cond_signal(&s->cv);
			pthread_mutex_unlock(&s->mu);
			continue;
		}
		if (*(int *)ev.tag == TAG_NEW) {
			struct slot *sl = ev.tag;

			if (!ev.success || s->shut_seen) {
				tfj_grpc_incoming_release(&sl->in);
				continue;
			}
			answer(s, sl);
			tfj_grpc_incoming_request(&sl->in, s->srv, sl->reg, s->cq, sl);
		} else {
			struct ctx *c = ev.tag;

			if (c->cancelled) {
				pthread_mutex_lock(&s->mu);
				s->slow_cancelled++;
				pthread_mutex_unlock(&s->mu);
			}
			if (c->resp)
				grpc_byte_buffer_destroy(c->resp);
			grpc_call_unref(c->call);
			free(c);
		}
	}
	return NULL;
}

static void server_start(struct server *s)
{
	struct tfj_grpc_args a;
	int i;

	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	tfj_grpc_args_init(&a);
	TFJ_CHECK_INT(tfj_grpc_args_msg_caps(&a, 1u << 20, 1u << 20), 0);
	TFJ_CHECK_INT(tfj_grpc_server_new(&s->srv, &a), 0);
	s->cq = grpc_completion_queue_create_for_next(NULL);
	grpc_server_register_completion_queue(s->srv, s->cq, NULL);
	for (i = 0; i < M_COUNT; i++) {
		s->slots[i].kind = TAG_NEW;
		s->slots[i].m = (enum method)i;
		s->slots[i].reg = tfj_grpc_server_method(s->srv, paths[i]);
		TFJ_CHECK(s->slots[i].reg != NULL);
	}
	TFJ_CHECK_INT(tfj_grpc_server_listen(&s->port, s->srv, "127.0.0.1:0", NULL), 0);
	TFJ_CHECK(s->port > 0);
	for (i = 0; i < M_COUNT; i++)
		TFJ_CHECK_INT(tfj_grpc_incoming_request(&s->slots[i].in, s->srv, s->slots[i].reg,
							s->cq, &s->slots[i]), 0);
	pthread_create(&s->th, NULL, serve, s);
}

static void server_stop(struct server *s)
{
	grpc_server_shutdown_and_notify(s->srv, s->cq, &s->shut_tag);
	grpc_server_cancel_all_calls(s->srv);
	pthread_mutex_lock(&s->mu);
	while (!s->shut_seen)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
	grpc_server_destroy(s->srv);
	/* The serve thread drains what is left and ends at GRPC_QUEUE_SHUTDOWN. */
	grpc_completion_queue_shutdown(s->cq);
	pthread_join(s->th, NULL);
	grpc_completion_queue_destroy(s->cq);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
}

static grpc_channel *client(const struct server *s)
{
	struct tfj_grpc_args a;
	grpc_channel *ch = NULL;
	char target[64];

	snprintf(target, sizeof(target), "127.0.0.1:%d", s->port);
	tfj_grpc_args_init(&a);
	TFJ_CHECK_INT(tfj_grpc_args_msg_caps(&a, 1u << 20, 1u << 20), 0);
	TFJ_CHECK_INT(tfj_grpc_args_reconnect(&a, 100, 100, 1000), 0);
	TFJ_CHECK_INT(tfj_grpc_channel_new(&ch, target, NULL, &a), 0);
	return ch;
}

/* A unary call: the request arrives with its token, the reply comes back whole. */
static void test_unary(void)
{
	struct server s;
	struct tfj_grpc_result res;
	grpc_channel *ch;

	server_start(&s);
	ch = client(&s);
	TFJ_CHECK_INT(tfj_grpc_unary(&res, ch, paths[M_ECHO], "sekret", "hello", 5,
				     tfj_grpc_deadline_ms(10000), 64), 0);
	TFJ_CHECK_INT(res.status, GRPC_STATUS_OK);
	TFJ_CHECK_INT(res.reply_len, 5);
	TFJ_CHECK(res.reply && memcmp(res.reply, "hello", 5) == 0);
	TFJ_CHECK_STR(res.details, "");
	pthread_mutex_lock(&s.mu);
	TFJ_CHECK_STR(s.auth, "Bearer sekret");
	pthread_mutex_unlock(&s.mu);
	tfj_grpc_result_free(&res);

	/* No token: no authorization entry; an empty message comes back empty. */
	TFJ_CHECK_INT(tfj_grpc_unary(&res, ch, paths[M_ECHO], NULL, NULL, 0,
				     tfj_grpc_deadline_ms(10000), 64), 0);
	TFJ_CHECK_INT(res.status, GRPC_STATUS_OK);
	TFJ_CHECK_INT(res.reply_len, 0);
	TFJ_CHECK(res.reply != NULL);
	pthread_mutex_lock(&s.mu);
	TFJ_CHECK_STR(s.auth, "(none)");
	pthread_mutex_unlock(&s.mu);
	tfj_grpc_result_free(&res);

	/* A refusal: the status and its details, no reply. */
	TFJ_CHECK_INT(tfj_grpc_unary(&res, ch, paths[M_FAIL], NULL, "q", 1,
				     tfj_grpc_deadline_ms(10000), 64), 0);
	TFJ_CHECK_INT(res.status, GRPC_STATUS_FAILED_PRECONDITION);
	TFJ_CHECK_STR(res.details, "nope: layout");
	TFJ_CHECK(res.reply == NULL);
	tfj_grpc_result_free(&res);
	tfj_grpc_result_free(&res); /* twice is harmless */

	grpc_channel_destroy(ch);
	server_stop(&s);
}

/* A call the server never answers ends at its deadline, not later. */
static void test_deadline(void)
{
	struct server s;
	struct tfj_grpc_result res;
	grpc_channel *ch;
	uint64_t t0, ms;
	int i, cancelled = 0;

	server_start(&s);
	ch = client(&s);
	t0 = tfj_clock_mono_ns();
	TFJ_CHECK_INT(tfj_grpc_unary(&res, ch, paths[M_SLOW], NULL, "q", 1,
				     tfj_grpc_deadline_ms(300), 64), 0);
	ms = (tfj_clock_mono_ns() - t0) / 1000000u;
	TFJ_CHECK_INT(res.status, GRPC_STATUS_DEADLINE_EXCEEDED);
	TFJ_CHECK(res.reply == NULL);
	if (ms < 250 || ms > 4000)
		TFJ_CHECK(!"the call did not end at its 300 ms deadline");
	tfj_grpc_result_free(&res);
	/* The server saw the client go away. */
	for (i = 0; i < 200 && !cancelled; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		pthread_mutex_lock(&s.mu);
		cancelled = s.slow_cancelled;
		pthread_mutex_unlock(&s.mu);
		if (!cancelled)
			nanosleep(&ts, NULL);
	}
	TFJ_CHECK_INT(cancelled, 1);
	grpc_channel_destroy(ch);
	server_stop(&s);
}

/* A reply over the caller's cap is refused; one exactly at the cap is not. */
static void test_reply_cap(void)
{
	struct server s;
	struct tfj_grpc_result res;
	grpc_channel *ch;

	server_start(&s);
	ch = client(&s);
	TFJ_CHECK_INT(tfj_grpc_unary(&res, ch, paths[M_BIG], NULL, "q", 1,
				     tfj_grpc_deadline_ms(10000), 1024), TFJ_ETOOBIG);
	TFJ_CHECK(res.reply == NULL);
	TFJ_CHECK(strstr(tfj_err_detail(), paths[M_BIG]) != NULL);
	tfj_grpc_result_free(&res);
	TFJ_CHECK_INT(tfj_grpc_unary(&res, ch, paths[M_BIG], NULL, "q", 1,
				     tfj_grpc_deadline_ms(10000), BIG_LEN), 0);
	TFJ_CHECK_INT(res.status, GRPC_STATUS_OK);
	TFJ_CHECK_INT(res.reply_len, BIG_LEN);
	tfj_grpc_result_free(&res);
	grpc_channel_destroy(ch);
	server_stop(&s);
}

/*
 * The runtime's way: several calls on one queue at once, each reply left in
 * gRPC's buffer for the caller to read in place and to keep.
 */
static void test_parallel_calls(void)
{
	struct server s;
	struct tfj_grpc_call calls[3];
	grpc_byte_buffer *req[3], *kept;
	grpc_completion_queue *cq = grpc_completion_queue_create_for_next(NULL);
	gpr_timespec deadline = tfj_grpc_deadline_ms(10000);
	grpc_channel *ch;
	char msg[3][8];
	int i, pending = 0;

	server_start(&s);
	ch = client(&s);
	for (i = 0; i < 3; i++) {
		snprintf(msg[i], sizeof(msg[i]), "call-%d", i);
		req[i] = tfj_grpc_bb_new(msg[i], strlen(msg[i]));
		TFJ_CHECK_INT(tfj_grpc_call_start(&calls[i], ch, cq, paths[M_ECHO], NULL, req[i],
						  deadline, &calls[i]), 0);
		pending++;
	}
	while (pending) {
		grpc_event ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC),
							   NULL);

		TFJ_CHECK_INT(ev.type, GRPC_OP_COMPLETE);
		if (ev.type != GRPC_OP_COMPLETE)
			break;
		pending--;
	}
	for (i = 0; i < 3; i++) {
		uint8_t *b;
		size_t n;

		TFJ_CHECK_INT(calls[i].status, GRPC_STATUS_OK);
		TFJ_CHECK_INT(GRPC_SLICE_LENGTH(calls[i].details), 0);
		TFJ_CHECK(calls[i].reply != NULL);
		TFJ_CHECK_INT(grpc_byte_buffer_length(calls[i].reply), strlen(msg[i]));
		TFJ_CHECK_INT(tfj_grpc_bb_read(&b, &n, calls[i].reply, 64), 0);
		TFJ_CHECK(n == strlen(msg[i]) && memcmp(b, msg[i], n) == 0);
		free(b);
	}
	/* The caller may take a reply and keep it past the call. */
	kept = calls[0].reply;
	calls[0].reply = NULL;
	for (i = 0; i < 3; i++) {
		tfj_grpc_call_end(&calls[i]);
		TFJ_CHECK(calls[i].call == NULL && calls[i].reply == NULL);
		grpc_byte_buffer_destroy(req[i]);
	}
	tfj_grpc_call_end(&calls[0]); /* again: harmless */
	TFJ_CHECK_INT(grpc_byte_buffer_length(kept), 6);
	grpc_byte_buffer_destroy(kept);
	tfj_grpc_cq_destroy(cq);
	grpc_channel_destroy(ch);
	server_stop(&s);
}

/* Nobody listens: the call fails with a status, it does not hang. */
static void test_unreachable(void)
{
	struct tfj_grpc_result res;
	grpc_channel *ch = NULL;
	grpc_server *srv = NULL;
	int port = -1;

	TFJ_CHECK_INT(tfj_grpc_channel_new(&ch, "127.0.0.1:1", NULL, NULL), 0);
	TFJ_CHECK_INT(tfj_grpc_unary(&res, ch, paths[M_ECHO], NULL, "q", 1,
				     tfj_grpc_deadline_ms(5000), 64), 0);
	TFJ_CHECK(res.status == GRPC_STATUS_UNAVAILABLE ||
		  res.status == GRPC_STATUS_DEADLINE_EXCEEDED);
	tfj_grpc_result_free(&res);
	grpc_channel_destroy(ch);
	/* A server that cannot bind says so and is not started. */
	TFJ_CHECK_INT(tfj_grpc_server_new(&srv, NULL), 0);
	TFJ_CHECK_INT(tfj_grpc_server_listen(&port, srv, "256.0.0.1:0", NULL), TFJ_EIO);
	TFJ_CHECK(port <= 0);
	grpc_server_destroy(srv);
}

static void test_args(void)
{
	struct tfj_grpc_args a;
	grpc_channel *ch = (grpc_channel *)&a;
	grpc_server *srv = (grpc_server *)&a;
	int i;

	tfj_grpc_args_init(&a);
	TFJ_CHECK_INT(tfj_grpc_args_msg_caps(&a, SIZE_MAX, 65536), 0);
	TFJ_CHECK_INT(a.n, 2);
	TFJ_CHECK_STR(a.arg[0].key, GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH);
	TFJ_CHECK_INT(a.arg[0].value.integer, INT32_MAX); /* clamped, not wrapped */
	TFJ_CHECK_STR(a.arg[1].key, GRPC_ARG_MAX_SEND_MESSAGE_LENGTH);
	TFJ_CHECK_INT(a.arg[1].value.integer, 65536);
	TFJ_CHECK_INT(tfj_grpc_args_reconnect(&a, 1000, 500, 10000), 0);
	TFJ_CHECK_INT(a.n, 6);
	TFJ_CHECK_STR(a.arg[2].key, GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS);
	TFJ_CHECK_INT(a.arg[2].value.integer, 1000);
	TFJ_CHECK_STR(a.arg[3].key, GRPC_ARG_MIN_RECONNECT_BACKOFF_MS);
	TFJ_CHECK_INT(a.arg[3].value.integer, 500);
	TFJ_CHECK_STR(a.arg[4].key, GRPC_ARG_MAX_RECONNECT_BACKOFF_MS);
	TFJ_CHECK_INT(a.arg[4].value.integer, 10000);
	TFJ_CHECK_STR(a.arg[5].key, GRPC_ARG_ENABLE_RETRIES);
	TFJ_CHECK_INT(a.arg[5].value.integer, 0);
	/* Past the cap: refused when added, and by whoever would use the list. */
	for (i = 6; i < TFJ_GRPC_ARGS_MAX; i++)
		TFJ_CHECK_INT(tfj_grpc_args_int(&a, GRPC_ARG_MAX_CONCURRENT_STREAMS, i), 0);
	TFJ_CHECK_INT(tfj_grpc_args_int(&a, GRPC_ARG_MAX_CONCURRENT_STREAMS, 99), TFJ_ETOOBIG);
	TFJ_CHECK_INT(a.n, TFJ_GRPC_ARGS_MAX);
	TFJ_CHECK_INT(tfj_grpc_channel_new(&ch, "127.0.0.1:1", NULL, &a), TFJ_EINVAL);
	TFJ_CHECK(ch == NULL);
	TFJ_CHECK_INT(tfj_grpc_server_new(&srv, &a), TFJ_EINVAL);
	TFJ_CHECK(srv == NULL);
}

static void test_byte_buffers(void)
{
	grpc_slice parts[3];
	grpc_byte_buffer *bb;
	uint8_t *out = (uint8_t *)"x";
	size_t len = 99;

	parts[0] = grpc_slice_from_copied_string("abc");
	parts[1] = grpc_slice_from_copied_string("");
	parts[2] = grpc_slice_from_copied_string("defg");
	bb = grpc_raw_byte_buffer_create(parts, 3);
	grpc_slice_unref(parts[0]);
	grpc_slice_unref(parts[1]);
	grpc_slice_unref(parts[2]);
	/* Several slices come out as one block, bounded by the cap. */
	TFJ_CHECK_INT(tfj_grpc_bb_read(&out, &len, bb, 7), 0);
	TFJ_CHECK(len == 7 && memcmp(out, "abcdefg", 7) == 0);
	free(out);
	TFJ_CHECK_INT(tfj_grpc_bb_read(&out, &len, bb, 6), TFJ_ETOOBIG);
	TFJ_CHECK(out == NULL && len == 0);
	grpc_byte_buffer_destroy(bb);
	/* No buffer reads as an empty message. */
	TFJ_CHECK_INT(tfj_grpc_bb_read(&out, &len, NULL, 0), 0);
	TFJ_CHECK(out != NULL && len == 0);
	free(out);
	/* And back: a copy, so the source may change afterwards. */
	{
		char src[4] = "wxyz";

		bb = tfj_grpc_bb_new(src, 4);
		memset(src, 0, sizeof(src));
		TFJ_CHECK_INT(tfj_grpc_bb_read(&out, &len, bb, 4), 0);
		TFJ_CHECK(len == 4 && memcmp(out, "wxyz", 4) == 0);
		free(out);
		grpc_byte_buffer_destroy(bb);
	}
	bb = tfj_grpc_bb_new(NULL, 0);
	TFJ_CHECK_INT(grpc_byte_buffer_length(bb), 0);
	grpc_byte_buffer_destroy(bb);
}

static void test_helpers(void)
{
	gpr_timespec now = tfj_grpc_now(), d;

	TFJ_CHECK_INT(now.clock_type, GPR_CLOCK_MONOTONIC);
	d = tfj_grpc_deadline_ms(50);
	TFJ_CHECK_INT(d.clock_type, GPR_CLOCK_MONOTONIC);
	TFJ_CHECK(gpr_time_cmp(d, gpr_time_add(now, gpr_time_from_millis(50, GPR_TIMESPAN))) >= 0);
	TFJ_CHECK(gpr_time_cmp(d, gpr_time_add(now, gpr_time_from_seconds(10, GPR_TIMESPAN))) < 0);
	/* A negative delay is now, never the past. */
	TFJ_CHECK(gpr_time_cmp(tfj_grpc_deadline_ms(-1000), now) >= 0);
	TFJ_CHECK_STR(tfj_grpc_status_name(GRPC_STATUS_OK), "OK");
	TFJ_CHECK_STR(tfj_grpc_status_name(GRPC_STATUS_UNAVAILABLE), "UNAVAILABLE");
	TFJ_CHECK_STR(tfj_grpc_status_name(GRPC_STATUS_UNAUTHENTICATED), "UNAUTHENTICATED");
	TFJ_CHECK_STR(tfj_grpc_status_name((grpc_status_code)99), "UNKNOWN");
	TFJ_CHECK_STR(tfj_grpc_status_name((grpc_status_code)-1), "UNKNOWN");
	tfj_grpc_cq_destroy(NULL);
	tfj_grpc_result_free(NULL);
}

int main(void)
{
	grpc_init();
	TFJ_RUN(test_args);
	TFJ_RUN(test_byte_buffers);
	TFJ_RUN(test_helpers);
	TFJ_RUN(test_unary);
	TFJ_RUN(test_deadline);
	TFJ_RUN(test_reply_cap);
	TFJ_RUN(test_parallel_calls);
	TFJ_RUN(test_unreachable);
	grpc_shutdown();
	return tfj_test_finish();
}
