/*
 * termmsg.c - termination message encoding (see termmsg.h).
 */
#include "termmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <tfj/err.h>
#include <tfj/exitcode.h>

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	size_t len, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xE0) == 0xC0) {
		len = 2;
		cp = s[0] & 0x1F;
	} else if ((s[0] & 0xF0) == 0xE0) {
		len = 3;
		cp = s[0] & 0x0F;
	} else if ((s[0] & 0xF8) == 0xF0) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	/* Overlong forms, surrogates and values past U+10FFFF are invalid. */
	if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
		return 0;
	return len;
}

size_t tfj_termmsg_sanitize(char *out, size_t outlen, const char *in)
{
	const unsigned char *s = (const unsigned char *)(in ? in : "");
	size_t n = strlen((const char *)s), o = 0, i = 0;

	if (outlen == 0)
		return 0;
	while (i < n) {
		size_t l = utf8_seq(s + i, n - i);

		if (l == 0 || (l == 1 && s[i] < 0x20 && s[i] != '\n' && s[i] != '\t') || s[i] == 0x7F) {
			if (o + 1 >= outlen)
				break;
			out[o++] = '?';
			i++;
			continue;
		}
		if (l > outlen - 1 - o)
			break; /* never cut a character in half */
		memcpy(out + o, s + i, l);
		o += l;
		i += l;
	}
	out[o] = '\0';
	return o;
}

/* Encodes with the message cut to `msglen` bytes; returns malloc'd JSON. */
static char *encode_once(const struct tfj_termmsg *m, const char *reason, const char *msg,
			 size_t msglen)
{
	cJSON *o = cJSON_CreateObject();
	char *text = NULL, *cut = NULL;

	if (!o)
		return NULL;
	if (!cJSON_AddStringToObject(o, "reason", reason) ||
	    !cJSON_AddNumberToObject(o, "exitCode", m->exit_code) ||
	    !cJSON_AddBoolToObject(o, "retryable", tfj_exitcode_retryable(m->exit_code)) ||
	    (m->has_last_step && !cJSON_AddNumberToObject(o, "lastStep", (double)m->last_step)) ||
	    (m->has_loss && isfinite(m->loss) && !cJSON_AddNumberToObject(o, "loss", m->loss)) ||
	    (m->has_accuracy && isfinite(m->accuracy) &&
	     !cJSON_AddNumberToObject(o, "accuracy", m->accuracy)) ||
	    !cJSON_AddNumberToObject(o, "signal", m->signal))
		goto out;
	if (msglen > 0) {
		cut = malloc(msglen + 1);
		if (!cut)
			goto out;
		memcpy(cut, msg, msglen);
		cut[msglen] = '\0';
		if (!cJSON_AddStringToObject(o, "message", cut))
			goto out;
	}
	text = cJSON_PrintUnformatted(o);
out:
	free(cut);
	cJSON_Delete(o);
	return text;
}

int tfj_termmsg_encode(char *out, size_t outlen, const struct tfj_termmsg *m)
{
	char reason[128];
	char *msg = NULL;
	size_t limit, msglen, mcap;
	int rc;

	if (outlen < 2)
		return tfj_err_set(TFJ_ETOOBIG, "termination message: no room");
	limit = outlen - 1 < TFJ_TERMMSG_MAX ? outlen - 1 : TFJ_TERMMSG_MAX;
	tfj_termmsg_sanitize(reason, sizeof(reason), m->reason ? m->reason : "Unknown");
	mcap = TFJ_TERMMSG_MAX + 1;
	msg = malloc(mcap);
	if (!msg)
		return tfj_err_set(TFJ_ENOMEM, "termination message");
	/* Keep the end of the message: the last lines say why it died. */
	{
		const char *src = m->message ? m->message : "";
		size_t sl = strlen(src);
		if (sl > TFJ_TERMMSG_MAX) {
			src += sl - TFJ_TERMMSG_MAX;
			while (((unsigned char)*src & 0xC0) == 0x80)
				src++;
		}
		msglen = tfj_termmsg_sanitize(msg, mcap, src);
	}
	for (;;) {
		char *text = encode_once(m, reason, msg, msglen);
		size_t tl;

		if (!text) {
			rc = tfj_err_set(TFJ_ENOMEM, "termination message");
			goto out;
		}
		tl = strlen(text);
		if (tl <= limit) {
			memcpy(out, text, tl + 1);
			free(text);
			rc = (int)tl;
			goto out;
		}
		free(text);
		if (msglen == 0) {
			rc = tfj_err_set(TFJ_ETOOBIG, "termination message: %zu bytes do not fit in %zu",
					 tl, limit);
			goto out;
		}
		/*
		 * Escaping can grow a byte up to six, so cut by the excess
		 * (at least by one) and try again; drop from the front so the
		 * newest text survives.
		 */
		{
			size_t excess = tl - limit, drop = excess < msglen ? excess : msglen;
			size_t keep = msglen - drop;
			size_t start = msglen - keep;

			while (start < msglen && ((unsigned char)msg[start] & 0xC0) == 0x80)
				start++;
			memmove(msg, msg + start, msglen - start);
			msglen -= start;
			msg[msglen] = '\0';
		}
	}
out:
	free(msg);
	return rc;
}

int tfj_termmsg_write(const char *path, const struct tfj_termmsg *m)
{
	char text[TFJ_TERMMSG_MAX + 1];
	size_t off = 0, len;
	int fd, rc;

	rc = tfj_termmsg_encode(text, sizeof(text), m);
	if (rc < 0)
		return rc;
	len = (size_t)rc;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
	if (fd < 0)
		return tfj_err_set(TFJ_EIO, "termination message %s: %s", path, strerror(errno));
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = tfj_err_set(TFJ_EIO, "termination message %s: %s", path, strerror(errno));
			close(fd);
			return rc;
		}
		off += (size_t)w;
	}
	if (close(fd) != 0)
		return tfj_err_set(TFJ_EIO, "termination message %s: %s", path, strerror(errno));
	return 0;
}
