package elle

import (
	"fmt"
	"strconv"
	"strings"
)

// Report renders r for humans: a verdict line, one line per anomaly class
// with its count, then an example of each class (the smallest cycle for
// cycle classes) with the operations that justify each edge. For example:
//
//	snapshot-isolation: INVALID (1 violation, 1 allowed) in 3 txns (3 ok, 0 fail, 0 info) over 2 keys
//	  G-single: 1 violation
//	  G2-item: 1 allowed
//	G-single: T1 -wr-> T2 -rw-> T1
//	  T1 -wr-> T2: T2 read y=[1], whose last element T1 appended
//	  T2 -rw-> T1: T2 read x=[], T1 appended 1 right after it
//	G2-item: T2 -rw-> T3 -rw-> T2
//	  ...
func (r *Result) Report() string {
	var b strings.Builder
	var nv, na int
	for _, a := range r.Anomalies {
		if a.Violation {
			nv++
		} else {
			na++
		}
	}
	verdict := "valid"
	if nv > 0 {
		verdict = "INVALID"
	}
	st := r.Stats
	fmt.Fprintf(&b, "%s: %s (%s, %d allowed) in %s (%d ok, %d fail, %d info) over %s\n",
		r.Isolation, verdict, plural(nv, "violation"), na, plural(st.Txns, "txn"), st.OK, st.Fail, st.Info, plural(st.Keys, "key"))
	counts := r.Counts()
	for _, cc := range counts {
		what := "allowed"
		if cc.Violation {
			what = plural(cc.N, "violation")
		} else {
			what = strconv.Itoa(cc.N) + " " + what
		}
		fmt.Fprintf(&b, "  %s: %s\n", cc.Class, what)
	}
	for _, c := range r.Incomplete {
		fmt.Fprintf(&b, "  %s: search stopped at the step limit; smaller or further cycles may exist\n", c)
	}
	i := 0
	for _, cc := range counts {
		a := r.Anomalies[i]
		i += cc.N
		fmt.Fprintf(&b, "%s: %s\n", a.Class, a.Text)
		for _, s := range a.Cycle {
			fmt.Fprintf(&b, "  T%d -%s-> T%d: %s\n", s.From, s.Kind, s.To, s.Why)
		}
	}
	return b.String()
}

// String returns Report().
func (r *Result) String() string { return r.Report() }

func plural(n int, one string, many ...string) string {
	if n == 1 {
		return "1 " + one
	}
	if len(many) > 0 {
		return strconv.Itoa(n) + " " + many[0]
	}
	return strconv.Itoa(n) + " " + one + "s"
}

// fmtList formats a read list, eliding the middle of long ones.
func fmtList(l []int64) string {
	const head, tail = 4, 4
	if len(l) <= head+tail+1 {
		return string(appendList(nil, l))
	}
	b := appendList(nil, l[:head])
	b = append(b[:len(b)-1], ",..."...)
	for _, v := range l[len(l)-tail:] {
		b = append(b, ',')
		b = strconv.AppendInt(b, v, 10)
	}
	b = append(b, ']')
	return fmt.Sprintf("%s (%d elements)", b, len(l))
}

// fmtValues formats a few values as "1, 2 and 3".
func fmtValues(vs []int64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.FormatInt(v, 10)
	}
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
