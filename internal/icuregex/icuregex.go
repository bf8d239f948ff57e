// Package icuregex is ICU's regular expression engine, the one MySQL 8's
// REGEXP functions use, with the limits that keep a match from holding a
// core: ICU backtracks, so a pattern such as (a+)+b takes time exponential
// in the length of the text it fails on.
//
// Every match runs under three bounds:
//   - a time limit in ICU's steps of its match engine (each about 10,000
//     steps of ICU's matching loop; MySQL's regexp_time_limit);
//   - a limit on the backtrack stack in bytes (regexp_stack_limit);
//   - the caller's context: a cancelled context stops the match within a
//     step (KILL QUERY).
//
// Texts are UTF-8 and positions are in characters (code points), 0-based.
// A Regexp is safe for concurrent use; matches on one Regexp run one at a
// time. The package knows nothing of SQL: callers map Code to their own
// errors.
package icuregex

// #cgo CXXFLAGS: -std=c++17
// #cgo LDFLAGS: -licui18n -licuuc -licudata
// #include <stdlib.h>
// #include "unicode/uregex.h"
// #include "icuregex.h"
import "C"

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"
)

// Flags are ICU's match flags.
type Flags uint32

const (
	CaseInsensitive Flags = C.UREGEX_CASE_INSENSITIVE
	Multiline       Flags = C.UREGEX_MULTILINE
	DotAll          Flags = C.UREGEX_DOTALL
	UnixLines       Flags = C.UREGEX_UNIX_LINES
)

// Limits bound each match. Zero means no limit.
type Limits struct {
	Time  int32 // ICU's steps of its match engine
	Stack int32 // bytes of backtrack stack
}

// Code is the kind of an Error.
type Code int

const (
	Other Code = iota
	IllegalArgument
	IndexOutOfBounds
	BufferOverflow
	Internal
	Syntax
	BadEscape
	Unimplemented
	MismatchedParen
	BadInterval
	MaxLessThanMin
	InvalidBackRef
	LookBehindLimit
	MissingCloseBracket
	InvalidRange
	StackOverflow
	TimeOut
	Stopped
	PatternTooBig
	InvalidCaptureGroupName
	InvalidFlag
	NumberTooBig
)

// Error is a failure from ICU. Line and Offset locate a Syntax error in
// the pattern (1-based line, 1-based character).
type Error struct {
	Code         Code
	Line, Offset int
	icu          int32
}

func (e *Error) Error() string {
	if e.Code == Syntax {
		return fmt.Sprintf("regular expression syntax error on line %d, character %d", e.Line, e.Offset)
	}
	return fmt.Sprintf("regular expression error: %s", C.GoString(C.u_errorName(C.UErrorCode(e.icu))))
}

var codes = map[C.UErrorCode]Code{
	C.U_ILLEGAL_ARGUMENT_ERROR:           IllegalArgument,
	C.U_REGEX_PROPERTY_SYNTAX:            IllegalArgument,
	C.U_INDEX_OUTOFBOUNDS_ERROR:          IndexOutOfBounds,
	C.U_BUFFER_OVERFLOW_ERROR:            BufferOverflow,
	C.U_REGEX_INTERNAL_ERROR:             Internal,
	C.U_REGEX_RULE_SYNTAX:                Syntax,
	C.U_REGEX_BAD_ESCAPE_SEQUENCE:        BadEscape,
	C.U_REGEX_UNIMPLEMENTED:              Unimplemented,
	C.U_REGEX_MISMATCHED_PAREN:           MismatchedParen,
	C.U_REGEX_BAD_INTERVAL:               BadInterval,
	C.U_REGEX_MAX_LT_MIN:                 MaxLessThanMin,
	C.U_REGEX_INVALID_BACK_REF:           InvalidBackRef,
	C.U_REGEX_LOOK_BEHIND_LIMIT:          LookBehindLimit,
	C.U_REGEX_MISSING_CLOSE_BRACKET:      MissingCloseBracket,
	C.U_REGEX_INVALID_RANGE:              InvalidRange,
	C.U_REGEX_STACK_OVERFLOW:             StackOverflow,
	C.U_REGEX_TIME_OUT:                   TimeOut,
	C.U_REGEX_STOPPED_BY_CALLER:          Stopped,
	C.U_REGEX_PATTERN_TOO_BIG:            PatternTooBig,
	C.U_REGEX_INVALID_CAPTURE_GROUP_NAME: InvalidCaptureGroupName,
	C.U_REGEX_INVALID_FLAG:               InvalidFlag,
	C.U_REGEX_NUMBER_TOO_BIG:             BadInterval,
	C.U_REGEX_SET_CONTAINS_STRING:        IllegalArgument,
	C.U_REGEX_INVALID_STATE:              Internal,
	C.U_MEMORY_ALLOCATION_ERROR:          Internal,
}

func toError(e *C.lsre_err) error {
	if e.status <= C.U_ZERO_ERROR {
		return nil
	}
	return &Error{Code: codes[C.UErrorCode(e.status)], Line: int(e.line), Offset: int(e.offset), icu: int32(e.status)}
}

// Regexp is a compiled pattern.
//
// mu holds one search at a time. A context's cancellation reaches the
// running search through a callback registered once per context (not per
// search: a search per row of a scan would register and unregister one
// each); cmu and epoch keep that callback from touching a freed pattern
// or, arriving late, stopping a search made under a later context.
type Regexp struct {
	mu      sync.Mutex
	re      *C.lsre
	cleanup runtime.Cleanup

	cmu     sync.Mutex
	epoch   uint64          // the context being watched (under cmu)
	watched context.Context // (under mu)
	unwatch func() bool     // (under mu)
}

// cstr returns s for a C call that reads it and keeps no reference.
func cstr(s string) (*C.char, C.int32_t, error) {
	if len(s) > math.MaxInt32 {
		return nil, 0, &Error{Code: BufferOverflow, icu: int32(C.U_BUFFER_OVERFLOW_ERROR)}
	}
	return (*C.char)(unsafe.Pointer(unsafe.StringData(s))), C.int32_t(len(s)), nil
}

// Compile compiles pattern.
func Compile(pattern string, flags Flags, lim Limits) (*Regexp, error) {
	p, n, err := cstr(pattern)
	if err != nil {
		return nil, err
	}
	var e C.lsre_err
	re := C.lsre_compile(p, n, C.uint32_t(flags), C.int32_t(lim.Time), C.int32_t(lim.Stack), &e)
	if re == nil {
		if err := toError(&e); err != nil {
			return nil, err
		}
		return nil, &Error{Code: Internal, icu: int32(C.U_REGEX_INTERNAL_ERROR)}
	}
	r := &Regexp{re: re}
	r.cleanup = runtime.AddCleanup(r, func(re *C.lsre) { C.lsre_free(re) }, re)
	return r, nil
}

// Close frees the pattern now rather than when it is collected.
func (r *Regexp) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unwatch != nil {
		r.unwatch()
		r.unwatch, r.watched = nil, nil
	}
	r.cmu.Lock()
	defer r.cmu.Unlock()
	r.epoch++
	if r.re != nil {
		r.cleanup.Stop()
		C.lsre_free(r.re)
		r.re = nil
	}
}

// cancel stops the running search if the context of epoch is still the
// one watched.
func (r *Regexp) cancel(epoch uint64) {
	r.cmu.Lock()
	defer r.cmu.Unlock()
	if r.re != nil && r.epoch == epoch {
		C.lsre_cancel_running(r.re)
	}
}

// watch makes ctx's end stop r's running search (under mu).
func (r *Regexp) watch(ctx context.Context) {
	if ctx == r.watched {
		return
	}
	if r.unwatch != nil {
		r.unwatch()
		r.unwatch = nil
	}
	r.cmu.Lock()
	r.epoch++ // a late callback of the context before is ignored
	epoch := r.epoch
	r.cmu.Unlock()
	r.watched = ctx
	if ctx.Done() != nil {
		r.unwatch = context.AfterFunc(ctx, func() { r.cancel(epoch) })
	}
}

// run runs f under r's lock with ctx able to stop it.
func (r *Regexp) run(ctx context.Context, f func(*C.lsre) error) error {
	if err := ctx.Err(); err != nil {
		return &Error{Code: Stopped, icu: int32(C.U_REGEX_STOPPED_BY_CALLER)}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.re == nil {
		return &Error{Code: Internal, icu: int32(C.U_REGEX_INVALID_STATE)}
	}
	r.watch(ctx)
	C.lsre_begin(r.re)
	return f(r.re)
}

// Match is a match's place in the text, in characters, and its text.
type Match struct {
	Start, End int
	Text       string
}

// Find looks for the occurrence-th match (the first for any occurrence
// below 2) starting at character start. A start past the end of text is
// an IndexOutOfBounds error. The match's text is given only with
// wantText, its place only with wantPositions.
func (r *Regexp) Find(ctx context.Context, text string, start, occurrence int, wantText, wantPositions bool) (m Match, found bool, err error) {
	t, n, err := cstr(text)
	if err != nil {
		return m, false, err
	}
	err = r.run(ctx, func(re *C.lsre) error {
		var e C.lsre_err
		var ms, me C.int64_t
		var sub *C.char
		var sublen C.int32_t
		subp := &sub
		if !wantText {
			subp = nil
		}
		msp, mep := &ms, &me
		if !wantPositions {
			msp, mep = nil, nil
		}
		ok := C.lsre_find(re, t, n, C.int64_t(start), clampOccurrence(occurrence), msp, mep, subp, &sublen, &e)
		if err := toError(&e); err != nil {
			return err
		}
		if ok == 0 {
			return nil
		}
		found = true
		m.Start, m.End = int(ms), int(me)
		if sub != nil {
			m.Text = C.GoStringN(sub, C.int(sublen))
			C.free(unsafe.Pointer(sub))
		}
		return nil
	})
	runtime.KeepAlive(text)
	return m, found, err
}

// Replace replaces, from character start, the occurrence-th match by
// repl, or every match when occurrence is 0 (a negative occurrence is the
// first). In repl, $n and ${name} are capture groups and a backslash
// quotes the next character, as in ICU. A result longer than maxBytes is
// a BufferOverflow error.
func (r *Regexp) Replace(ctx context.Context, text, repl string, start, occurrence int, maxBytes int64) (string, error) {
	t, n, err := cstr(text)
	if err != nil {
		return "", err
	}
	rp, rn, err := cstr(repl)
	if err != nil {
		return "", err
	}
	var result string
	err = r.run(ctx, func(re *C.lsre) error {
		var e C.lsre_err
		var out *C.char
		var outlen C.int32_t
		C.lsre_replace(re, t, n, rp, rn, C.int64_t(start), clampOccurrence(occurrence), C.int64_t(maxBytes), &out, &outlen, &e)
		if out != nil {
			result = C.GoStringN(out, C.int(outlen))
			C.free(unsafe.Pointer(out))
		}
		return toError(&e)
	})
	runtime.KeepAlive(text)
	runtime.KeepAlive(repl)
	return result, err
}

func clampOccurrence(n int) C.int32_t {
	switch {
	case n > math.MaxInt32:
		return math.MaxInt32
	case n < math.MinInt32:
		return math.MinInt32
	}
	return C.int32_t(n)
}
