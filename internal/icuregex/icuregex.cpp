// ICU's RegexMatcher behind the C interface of icuregex.h. One lsre is a
// compiled pattern, its matcher and the subject the matcher reads (ICU
// keeps a reference to it, so it lives here, in C++ memory); it is used by
// one goroutine at a time (icuregex.go holds a mutex around every call).

#include "icuregex.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "unicode/regex.h"
#include "unicode/unistr.h"

using icu::RegexMatcher;
using icu::RegexPattern;
using icu::StringPiece;
using icu::UnicodeString;

struct lsre {
	RegexPattern *pattern = nullptr;
	RegexMatcher *matcher = nullptr;
	UnicodeString subject;
	// search is the number of the running search; cancelled the number
	// of the last one cancelled. The match callback stops a search when
	// they are equal.
	std::atomic<uint64_t> search{0};
	std::atomic<uint64_t> cancelled{0};
};

static UBool keepGoing(const void *context, int32_t) {
	const lsre *re = static_cast<const lsre *>(context);
	return re->search.load(std::memory_order_relaxed) !=
	       re->cancelled.load(std::memory_order_relaxed);
}

static void setErr(lsre_err *err, UErrorCode status) {
	err->status = status;
	err->line = 0;
	err->offset = 0;
}

extern "C" lsre *lsre_compile(const char *pat, int32_t len, uint32_t flags,
                              int32_t time_limit, int32_t stack_limit,
                              lsre_err *err) {
	UErrorCode status = U_ZERO_ERROR;
	UParseError pe;
	memset(&pe, 0, sizeof pe);
	UnicodeString p = UnicodeString::fromUTF8(StringPiece(pat, len));
	RegexPattern *pattern = RegexPattern::compile(p, flags, pe, status);
	if (U_FAILURE(status)) {
		delete pattern;
		err->status = status;
		err->line = pe.line;
		err->offset = pe.offset;
		return nullptr;
	}
	RegexMatcher *matcher = pattern->matcher(status);
	if (U_FAILURE(status)) {
		delete matcher;
		delete pattern;
		setErr(err, status);
		return nullptr;
	}
	lsre *re = new lsre;
	re->pattern = pattern;
	re->matcher = matcher;
	matcher->setTimeLimit(time_limit, status);
	matcher->setStackLimit(stack_limit, status);
	matcher->setMatchCallback(keepGoing, re, status);
	if (U_FAILURE(status)) {
		lsre_free(re);
		setErr(err, status);
		return nullptr;
	}
	setErr(err, U_ZERO_ERROR);
	return re;
}

extern "C" void lsre_free(lsre *re) {
	if (re == nullptr) return;
	delete re->matcher;
	delete re->pattern;
	delete re;
}

extern "C" void lsre_begin(lsre *re) {
	re->search.fetch_add(1);
}

extern "C" void lsre_cancel_running(lsre *re) {
	re->cancelled.store(re->search.load());
}

// reset makes text the matcher's subject and returns the UTF-16 index of
// character start, or -1 with U_INDEX_OUTOFBOUNDS_ERROR when start is past
// the end.
static int32_t reset(lsre *re, const char *text, int32_t len, int64_t start,
                     UErrorCode &status) {
	re->subject = UnicodeString::fromUTF8(StringPiece(text, len));
	re->matcher->reset(re->subject);
	if (start == 0) return 0;
	if (start < 0 || start > re->subject.countChar32()) {
		status = U_INDEX_OUTOFBOUNDS_ERROR;
		return -1;
	}
	return re->subject.moveIndex32(0, static_cast<int32_t>(start));
}

static bool findOccurrence(lsre *re, int32_t from, int32_t occurrence,
                           UErrorCode &status) {
	bool found = re->matcher->find(from, status);
	for (int32_t i = 1; i < occurrence && found && U_SUCCESS(status); i++)
		found = re->matcher->find(status);
	return found && U_SUCCESS(status);
}

static char *utf8(const UnicodeString &s, int32_t *len) {
	std::string out;
	s.toUTF8String(out);
	char *p = static_cast<char *>(malloc(out.size() + 1));
	if (p == nullptr) return nullptr;
	memcpy(p, out.data(), out.size());
	p[out.size()] = 0;
	*len = static_cast<int32_t>(out.size());
	return p;
}

extern "C" int32_t lsre_find(lsre *re, const char *text, int32_t len,
                             int64_t start, int32_t occurrence,
                             int64_t *mstart, int64_t *mend, char **sub,
                             int32_t *sublen, lsre_err *err) {
	UErrorCode status = U_ZERO_ERROR;
	int32_t from = reset(re, text, len, start, status);
	if (U_FAILURE(status) || !findOccurrence(re, from, occurrence, status)) {
		setErr(err, status);
		return 0;
	}
	int32_t s = re->matcher->start(status);
	int32_t e = re->matcher->end(status);
	if (U_FAILURE(status)) {
		setErr(err, status);
		return 0;
	}
	if (mstart != nullptr) {
		*mstart = re->subject.countChar32(0, s);
		*mend = *mstart + re->subject.countChar32(s, e - s);
	}
	if (sub != nullptr) {
		*sub = utf8(re->subject.tempSubString(s, e - s), sublen);
		if (*sub == nullptr) {
			setErr(err, U_MEMORY_ALLOCATION_ERROR);
			return 0;
		}
	}
	setErr(err, U_ZERO_ERROR);
	return 1;
}

extern "C" void lsre_replace(lsre *re, const char *text, int32_t len,
                             const char *repl, int32_t rlen, int64_t start,
                             int32_t occurrence, int64_t max_bytes,
                             char **out, int32_t *outlen, lsre_err *err) {
	UErrorCode status = U_ZERO_ERROR;
	*out = nullptr;
	*outlen = 0;
	int32_t from = reset(re, text, len, start, status);
	if (U_FAILURE(status)) {
		setErr(err, status);
		return;
	}
	UnicodeString replacement = UnicodeString::fromUTF8(StringPiece(repl, rlen));
	// A match that is not the one to replace is replaced by itself ("$0"),
	// so that appendReplacement carries the text before the replaced
	// match over unchanged.
	static const UnicodeString itself = UNICODE_STRING_SIMPLE("$0");
	UnicodeString dest;
	bool found = re->matcher->find(from, status);
	for (int32_t n = 1; found && U_SUCCESS(status); n++) {
		bool target = occurrence <= 1 ? n == 1 || occurrence == 0 : n == occurrence;
		re->matcher->appendReplacement(dest, target ? replacement : itself, status);
		if (dest.length() > max_bytes) status = U_BUFFER_OVERFLOW_ERROR;
		if (target && occurrence != 0) break;
		if (U_SUCCESS(status)) found = re->matcher->find(status);
	}
	if (U_FAILURE(status)) {
		setErr(err, status);
		return;
	}
	re->matcher->appendTail(dest);
	*out = utf8(dest, outlen);
	if (*out == nullptr) {
		setErr(err, U_MEMORY_ALLOCATION_ERROR);
		return;
	}
	if (*outlen > max_bytes) {
		free(*out);
		*out = nullptr;
		*outlen = 0;
		setErr(err, U_BUFFER_OVERFLOW_ERROR);
		return;
	}
	setErr(err, U_ZERO_ERROR);
}
