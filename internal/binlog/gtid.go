package binlog

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// UUID is a server UUID (the SID of a GTID).
type UUID [16]byte

// ParseUUID parses the 36-character textual form.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	h := strings.ReplaceAll(s, "-", "")
	if len(h) != 32 || len(s) != 36 {
		return u, fmt.Errorf("invalid UUID %q", s)
	}
	if _, err := hex.Decode(u[:], []byte(h)); err != nil {
		return u, fmt.Errorf("invalid UUID %q", s)
	}
	return u, nil
}

func (u UUID) String() string {
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// Interval is a half-open range [Start, End) of transaction numbers.
type Interval struct{ Start, End uint64 }

// GTIDSet is a set of GTIDs: for each source UUID, sorted disjoint
// non-adjacent intervals. The zero value is empty. Not safe for concurrent
// mutation.
type GTIDSet struct {
	m map[UUID][]Interval
}

// ParseGTIDSet parses MySQL's text form ("uuid:1-5:7,uuid2:3"). The
// intervals may come in any order and overlap: they are collected, then
// sorted and merged once, so the cost is O(n log n) in the text's size
// whatever its order (the text can come from any account, through
// WAIT_FOR_EXECUTED_GTID_SET, or from a replica before it logs in).
func ParseGTIDSet(s string) (GTIDSet, error) {
	var g GTIDSet
	s = strings.TrimSpace(s)
	if s == "" {
		return g, nil
	}
	raw := map[UUID][]Interval{}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		fields := strings.Split(part, ":")
		if len(fields) < 2 {
			return g, fmt.Errorf("invalid GTID set element %q", part)
		}
		u, err := ParseUUID(fields[0])
		if err != nil {
			return g, err
		}
		for _, iv := range fields[1:] {
			lo, hi, ok := strings.Cut(iv, "-")
			a, err := strconv.ParseUint(lo, 10, 63)
			if err != nil || a == 0 {
				return g, fmt.Errorf("invalid GTID interval %q", iv)
			}
			b := a
			if ok {
				if b, err = strconv.ParseUint(hi, 10, 63); err != nil || b < a {
					return g, fmt.Errorf("invalid GTID interval %q", iv)
				}
			}
			raw[u] = append(raw[u], Interval{a, b + 1})
		}
	}
	for u, ivs := range raw {
		g.setMerged(u, ivs)
	}
	return g, nil
}

// setMerged sets u's intervals to the union of ivs (in any order; ivs is
// reordered).
func (g *GTIDSet) setMerged(u UUID, ivs []Interval) {
	if len(ivs) == 0 {
		return
	}
	slices.SortFunc(ivs, func(a, b Interval) int { return cmp.Compare(a.Start, b.Start) })
	out := ivs[:1]
	for _, iv := range ivs[1:] {
		if last := &out[len(out)-1]; iv.Start <= last.End {
			last.End = max(last.End, iv.End)
		} else {
			out = append(out, iv)
		}
	}
	if g.m == nil {
		g.m = make(map[UUID][]Interval)
	}
	g.m[u] = slices.Clip(out)
}

// Add adds one GTID.
func (g *GTIDSet) Add(u UUID, n uint64) { g.AddRange(u, n, n+1) }

// AddRange adds [start, end).
func (g *GTIDSet) AddRange(u UUID, start, end uint64) {
	if start >= end {
		return
	}
	if g.m == nil {
		g.m = make(map[UUID][]Interval)
	}
	ivs := g.m[u]
	// Fast path: appending at the end (the common case for our own GTIDs).
	if n := len(ivs); n > 0 && ivs[n-1].End == start {
		ivs[n-1].End = end
		return
	}
	if n := len(ivs); n == 0 || ivs[n-1].End < start {
		g.m[u] = append(ivs, Interval{start, end})
		return
	}
	i := sort.Search(len(ivs), func(i int) bool { return ivs[i].End >= start })
	j := i
	for j < len(ivs) && ivs[j].Start <= end {
		start = min(start, ivs[j].Start)
		end = max(end, ivs[j].End)
		j++
	}
	ivs = slices.Replace(ivs, i, j, Interval{start, end})
	g.m[u] = ivs
}

// AddSet adds every GTID of o.
func (g *GTIDSet) AddSet(o GTIDSet) {
	for u, ivs := range o.m {
		for _, iv := range ivs {
			g.AddRange(u, iv.Start, iv.End)
		}
	}
}

// Contains reports whether the GTID is in the set.
func (g GTIDSet) Contains(u UUID, n uint64) bool {
	ivs := g.m[u]
	i := sort.Search(len(ivs), func(i int) bool { return ivs[i].End > n })
	return i < len(ivs) && ivs[i].Start <= n
}

// MaxGNO is the highest transaction number of u in the set (0 if none).
func (g GTIDSet) MaxGNO(u UUID) uint64 {
	ivs := g.m[u]
	if len(ivs) == 0 {
		return 0
	}
	return ivs[len(ivs)-1].End - 1
}

// Of returns the set's transactions of server u.
func (g GTIDSet) Of(u UUID) GTIDSet {
	var o GTIDSet
	if ivs := g.m[u]; len(ivs) > 0 {
		o.m = map[UUID][]Interval{u: slices.Clone(ivs)}
	}
	return o
}

// Clone returns a deep copy.
func (g GTIDSet) Clone() GTIDSet {
	c := GTIDSet{m: make(map[UUID][]Interval, len(g.m))}
	for u, ivs := range g.m {
		c.m[u] = slices.Clone(ivs)
	}
	return c
}

// Subtract returns g minus o.
func (g GTIDSet) Subtract(o GTIDSet) GTIDSet {
	var r GTIDSet
	for u, ivs := range g.m {
		// Both lists are sorted and disjoint: one pass over each.
		xs, j := o.m[u], 0
		for _, iv := range ivs {
			cur := iv.Start
			for j < len(xs) && xs[j].End <= cur {
				j++
			}
			for k := j; k < len(xs) && xs[k].Start < iv.End; k++ {
				if xs[k].Start > cur {
					r.AddRange(u, cur, xs[k].Start)
				}
				cur = max(cur, xs[k].End)
			}
			if cur < iv.End {
				r.AddRange(u, cur, iv.End)
			}
		}
	}
	return r
}

// IsEmpty reports whether the set has no GTIDs.
func (g GTIDSet) IsEmpty() bool {
	for _, ivs := range g.m {
		if len(ivs) > 0 {
			return false
		}
	}
	return true
}

// Equal reports whether two sets hold the same GTIDs.
func (g GTIDSet) Equal(o GTIDSet) bool {
	return g.Subtract(o).IsEmpty() && o.Subtract(g).IsEmpty()
}

func (g GTIDSet) sortedUUIDs() []UUID {
	us := make([]UUID, 0, len(g.m))
	for u, ivs := range g.m {
		if len(ivs) > 0 {
			us = append(us, u)
		}
	}
	slices.SortFunc(us, func(a, b UUID) int { return strings.Compare(string(a[:]), string(b[:])) })
	return us
}

// String formats the set as MySQL does (UUIDs in order, lower case).
func (g GTIDSet) String() string {
	var sb strings.Builder
	for i, u := range g.sortedUUIDs() {
		if i > 0 {
			sb.WriteString(",\n")
		}
		sb.WriteString(u.String())
		for _, iv := range g.m[u] {
			sb.WriteByte(':')
			sb.WriteString(strconv.FormatUint(iv.Start, 10))
			if iv.End-1 > iv.Start {
				sb.WriteByte('-')
				sb.WriteString(strconv.FormatUint(iv.End-1, 10))
			}
		}
	}
	return sb.String()
}

// encodedSize is the size of the set in a Previous_gtids event body.
func (g GTIDSet) encodedSize() int {
	n := 8
	for _, ivs := range g.m {
		if len(ivs) > 0 {
			n += 16 + 8 + 16*len(ivs)
		}
	}
	return n
}

func (g GTIDSet) appendEncoded(dst []byte) []byte {
	us := g.sortedUUIDs()
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(us)))
	for _, u := range us {
		dst = append(dst, u[:]...)
		ivs := g.m[u]
		dst = binary.LittleEndian.AppendUint64(dst, uint64(len(ivs)))
		for _, iv := range ivs {
			dst = binary.LittleEndian.AppendUint64(dst, iv.Start)
			dst = binary.LittleEndian.AppendUint64(dst, iv.End)
		}
	}
	return dst
}

// decodeGTIDSet decodes the binary form. It takes bytes from peers
// (replicas' dump commands) and from files: the intervals are collected,
// then sorted and merged once, so the work is O(n log n) whatever their
// order (adding them one by one in descending order was quadratic).
func decodeGTIDSet(b []byte) (GTIDSet, error) {
	var g GTIDSet
	if len(b) < 8 {
		return g, errShort
	}
	n := binary.LittleEndian.Uint64(b)
	b = b[8:]
	raw := map[UUID][]Interval{}
	for range n {
		if len(b) < 24 {
			return g, errShort
		}
		var u UUID
		copy(u[:], b)
		k := binary.LittleEndian.Uint64(b[16:])
		b = b[24:]
		if k > uint64(len(b))/16 {
			return g, errShort
		}
		for range k {
			if s, e := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:]); s < e {
				raw[u] = append(raw[u], Interval{s, e})
			}
			b = b[16:]
		}
	}
	for u, ivs := range raw {
		g.setMerged(u, ivs)
	}
	return g, nil
}

// UUIDs returns the set's UUIDs in order.
func (g GTIDSet) UUIDs() []UUID { return g.sortedUUIDs() }

// Encode returns the set in the binary form of Previous_gtids events and
// COM_BINLOG_DUMP_GTID.
func (g GTIDSet) Encode() []byte { return g.appendEncoded(nil) }
