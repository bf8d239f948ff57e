// The C interface to ICU's regular expressions that icuregex.go calls. All
// positions are in characters (code points); texts are UTF-8.
#ifndef LOCKSTEP_ICUREGEX_H
#define LOCKSTEP_ICUREGEX_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lsre lsre;

// lsre_err is ICU's status and, for a syntax error, where it is.
typedef struct {
	int32_t status;
	int32_t line;
	int32_t offset;
} lsre_err;

lsre *lsre_compile(const char *pat, int32_t len, uint32_t flags,
                   int32_t time_limit, int32_t stack_limit, lsre_err *err);
void lsre_free(lsre *re);

// lsre_begin starts a search (it takes the next number);
// lsre_cancel_running stops the search running now, if any (and no later
// one).
void lsre_begin(lsre *re);
void lsre_cancel_running(lsre *re);

// lsre_find matches text from character start and returns 1 if it has an
// occurrence-th match (occurrence < 2 means the first), with its start
// and end when mstart is not NULL, and its text in a malloc'ed *sub when
// sub is not NULL.
int32_t lsre_find(lsre *re, const char *text, int32_t len, int64_t start,
                  int32_t occurrence, int64_t *mstart, int64_t *mend,
                  char **sub, int32_t *sublen, lsre_err *err);

// lsre_replace replaces, from character start, the occurrence-th match
// (every match when occurrence is 0) by repl, in which $n and ${name} are
// capture groups and a backslash quotes the next character. The result,
// malloc'ed, is in *out; a result longer than max_bytes is
// U_BUFFER_OVERFLOW_ERROR.
void lsre_replace(lsre *re, const char *text, int32_t len, const char *repl,
                  int32_t rlen, int64_t start, int32_t occurrence,
                  int64_t max_bytes, char **out, int32_t *outlen,
                  lsre_err *err);

#ifdef __cplusplus
}
#endif

#endif
