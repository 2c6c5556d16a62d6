/*
 * progress_regex.h - progress from a foreign command's output (a Python
 * trainer) through an extended POSIX regular expression applied to every
 * stdout and stderr line.
 *
 * Fields are taken from named groups `(?<step>...)` or mapped to group
 * numbers explicitly (tfj_progress_regex_map). `\d`, `\s`, `\w` (and `\D`,
 * `\S`, `\W`) outside bracket expressions are translated into POSIX
 * classes, so the usual `step (?<step>\d+) loss (?<loss>[0-9.]+)` works.
 * Patterns are capped at TFJ_PROGRESS_REGEX_MAX bytes.
 *
 * Ownership: a compiled regex owns its regex_t; tfj_progress_regex_free()
 * (accepts a never-compiled, zeroed struct). Trackers (progress.h) borrow it.
 */
#ifndef TFJ_PROGRESS_REGEX_H
#define TFJ_PROGRESS_REGEX_H

#include <regex.h>
#include <stddef.h>

#include "progress.h"

struct tfj_progress_regex {
	regex_t re;
	int compiled;
	size_t nsub;                 /* capturing groups in the pattern */
	int group[TFJ_PROGREC_NFIELDS];     /* 0 = field not mapped */
};

/*
 * Compiles `pattern` (at most TFJ_PROGRESS_REGEX_MAX bytes), recording the
 * named groups. TFJ_EINVAL with a detail on a bad pattern or group name.
 */
int tfj_progress_regex_compile(struct tfj_progress_regex *re, const char *pattern);
/* Maps a field to capturing group `group` (1-based). */
int tfj_progress_regex_map(struct tfj_progress_regex *re, enum tfj_progrec_field f, int group);
/* Parses "field=N". */
int tfj_progress_regex_map_spec(struct tfj_progress_regex *re, const char *spec);
/* TFJ_EINVAL unless at least one field is mapped to an existing group. */
int tfj_progress_regex_check(const struct tfj_progress_regex *re);
/*
 * Matches a NUL-terminated line. 0 with the fields found in *out,
 * TFJ_ENOTFOUND when the line does not match or yields no valid number.
 */
int tfj_progress_regex_match(struct tfj_progrec *out, const struct tfj_progress_regex *re,
			     const char *line);
void tfj_progress_regex_free(struct tfj_progress_regex *re);

#endif
