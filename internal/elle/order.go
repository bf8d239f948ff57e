package elle

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// checker holds the state of one Check call.
type checker struct {
	h     History
	opts  Options
	keys  []string // sorted
	keyID map[string]int32
	// perKey is indexed like keys.
	perKey []keyState
	found  []Anomaly
}

// writeRef locates the append of one value.
type writeRef struct {
	txn int32
	// last is true when this is the writer's final append to the key.
	last bool
}

// readRef locates a read of a committed transaction.
type readRef struct {
	txn, op int32
}

// tailWrite is a committed transaction whose append to a key was not
// observed by any read, and so follows the whole version order.
type tailWrite struct {
	txn int32
	val int64 // its first unobserved append
}

type keyState struct {
	writers map[int64]writeRef
	reads   []readRef // reads of committed transactions, in history order
	// compatible is true when every read is a prefix of the longest.
	compatible bool
	// ordered is true when order is the key's version order: compatible and
	// free of duplicates.
	ordered bool
	order   []int64
	tail    []tailWrite
}

func newChecker(h History, opts Options) *checker {
	c := &checker{h: h, opts: opts, keyID: make(map[string]int32)}
	for i := range h {
		for _, op := range h[i].Ops {
			if _, ok := c.keyID[op.Key]; !ok {
				c.keyID[op.Key] = 0
				c.keys = append(c.keys, op.Key)
			}
		}
	}
	slices.Sort(c.keys)
	c.perKey = make([]keyState, len(c.keys))
	for i, k := range c.keys {
		c.keyID[k] = int32(i)
		c.perKey[i].writers = make(map[int64]writeRef)
	}
	var seen []int32 // keys already appended to, scanning a txn backwards
	for i := range h {
		t := &h[i]
		seen = seen[:0]
		for j := len(t.Ops) - 1; j >= 0; j-- {
			op := &t.Ops[j]
			if op.Kind != OpAppend {
				continue
			}
			k := c.keyID[op.Key]
			last := !slices.Contains(seen, k)
			if last {
				seen = append(seen, k)
			}
			c.perKey[k].writers[op.Value] = writeRef{txn: int32(i), last: last}
		}
		if t.Status != StatusOK {
			continue
		}
		for j := range t.Ops {
			if t.Ops[j].Kind == OpRead {
				k := c.keyID[t.Ops[j].Key]
				c.perKey[k].reads = append(c.perKey[k].reads, readRef{txn: int32(i), op: int32(j)})
			}
		}
	}
	return c
}

func (c *checker) list(r readRef) []int64 { return c.h[r.txn].Ops[r.op].List }

func (c *checker) id(txn int32) int64 { return c.h[txn].ID }

func (c *checker) add(a Anomaly) { c.found = append(c.found, a) }

// analyzeKeys infers each key's version order and reports incompatible
// orders, duplicate elements, garbage reads and aborted reads (G1a).
func (c *checker) analyzeKeys() {
	for k := range c.keys {
		c.analyzeKey(int32(k))
	}
}

func (c *checker) analyzeKey(k int32) {
	ks := &c.perKey[k]
	key := c.keys[k]
	longest := -1
	for i, r := range ks.reads {
		if longest < 0 || len(c.list(r)) > len(c.list(ks.reads[longest])) {
			longest = i
		}
	}
	var lng []int64
	if longest >= 0 {
		lng = c.list(ks.reads[longest])
	}

	// Every read must be a prefix of the longest.
	var bad []readRef
	for _, r := range ks.reads {
		if !isPrefix(c.list(r), lng) {
			bad = append(bad, r)
		}
	}
	ks.compatible = len(bad) == 0
	if !ks.compatible {
		lr, br := ks.reads[longest], bad[0]
		text := fmt.Sprintf("%s: T%d read %s and T%d read %s; neither is a prefix of the other",
			key, c.id(lr.txn), fmtList(c.list(lr)), c.id(br.txn), fmtList(c.list(br)))
		if len(bad) > 1 {
			text += fmt.Sprintf(" (%d reads disagree with the longest)", len(bad))
		}
		txns := []int64{c.id(lr.txn)}
		for _, r := range bad {
			txns = append(txns, c.id(r.txn))
		}
		c.add(Anomaly{Class: IncompatibleOrder, Key: key, Txns: txns, Text: text})
	}

	// Duplicates. If the reads agree and the longest has no duplicate, no
	// read has one.
	dupFree := ks.compatible && len(dupValues(lng)) == 0
	if !dupFree {
		for _, r := range ks.reads {
			if d := dupValues(c.list(r)); len(d) > 0 {
				c.add(Anomaly{Class: DuplicateElements, Key: key, Txns: []int64{c.id(r.txn)},
					Text: fmt.Sprintf("T%d read %s=%s, which holds %s more than once", c.id(r.txn), key, fmtList(c.list(r)), fmtValues(d))})
			}
		}
	}
	if ks.compatible {
		ks.order = lng
		ks.ordered = dupFree
	}

	// Elements: garbage and aborted reads, reported once per element with
	// the first committed read that saw it.
	if dupFree {
		// Each read is a prefix of the longest: only look at the elements
		// no earlier read had.
		maxLen := 0
		for _, r := range ks.reads {
			l := c.list(r)
			for p := maxLen; p < len(l); p++ {
				c.checkElement(k, l[p], r)
			}
			maxLen = max(maxLen, len(l))
		}
	} else {
		seen := make(map[int64]bool)
		for _, r := range ks.reads {
			for _, e := range c.list(r) {
				if !seen[e] {
					seen[e] = true
					c.checkElement(k, e, r)
				}
			}
		}
	}

	if ks.ordered {
		inOrder := make(map[int64]struct{}, len(ks.order))
		for _, e := range ks.order {
			inOrder[e] = struct{}{}
		}
		tails := make(map[int32]int64)
		for v, w := range ks.writers {
			if _, ok := inOrder[v]; ok || c.h[w.txn].Status != StatusOK {
				continue
			}
			if prev, ok := tails[w.txn]; !ok || c.appendIndex(w.txn, key, v) < c.appendIndex(w.txn, key, prev) {
				tails[w.txn] = v
			}
		}
		for t, v := range tails {
			ks.tail = append(ks.tail, tailWrite{txn: t, val: v})
		}
		slices.SortFunc(ks.tail, func(a, b tailWrite) int { return int(a.txn - b.txn) })
	}
}

// inTail reports whether txn has an append in ks.tail.
func (ks *keyState) inTail(txn int32) bool {
	_, ok := slices.BinarySearchFunc(ks.tail, txn, func(tw tailWrite, t int32) int { return int(tw.txn - t) })
	return ok
}

// appendIndex returns the position of the append of v to key in txn.
func (c *checker) appendIndex(txn int32, key string, v int64) int {
	for j, op := range c.h[txn].Ops {
		if op.Kind == OpAppend && op.Key == key && op.Value == v {
			return j
		}
	}
	return -1
}

func (c *checker) checkElement(k int32, e int64, r readRef) {
	key := c.keys[k]
	w, ok := c.perKey[k].writers[e]
	if !ok {
		c.add(Anomaly{Class: GarbageRead, Key: key, Txns: []int64{c.id(r.txn)},
			Text: fmt.Sprintf("T%d read %s=%s, but nobody appended %d to %s", c.id(r.txn), key, fmtList(c.list(r)), e, key)})
		return
	}
	if c.h[w.txn].Status == StatusFail {
		c.add(Anomaly{Class: G1a, Key: key, Txns: []int64{c.id(w.txn), c.id(r.txn)},
			Text: fmt.Sprintf("T%d read %s=%s, but %d was appended by T%d, which failed", c.id(r.txn), key, fmtList(c.list(r)), e, c.id(w.txn))})
	}
}

// checkG1b reports committed reads whose last element was an intermediate
// append of another transaction.
func (c *checker) checkG1b() {
	for k := range c.keys {
		ks := &c.perKey[k]
		for _, r := range ks.reads {
			l := c.list(r)
			if len(l) == 0 {
				continue
			}
			e := l[len(l)-1]
			w, ok := ks.writers[e]
			if !ok || w.last || w.txn == r.txn {
				continue
			}
			final := int64(0)
			for _, op := range c.h[w.txn].Ops {
				if op.Kind == OpAppend && op.Key == c.keys[k] {
					final = op.Value
				}
			}
			c.add(Anomaly{Class: G1b, Key: c.keys[k], Txns: []int64{c.id(w.txn), c.id(r.txn)},
				Text: fmt.Sprintf("T%d read %s=%s, whose last element T%d appended before appending %d",
					c.id(r.txn), c.keys[k], fmtList(l), c.id(w.txn), final)})
		}
	}
}

// checkInternal reports reads of committed transaction ti that contradict
// its own earlier operations on the same key (internal), and reads that
// saw an append it only makes later (future-read). A read must end with the
// appends the transaction made since its previous read of the key, and
// start with that previous read: lists only grow. Other transactions'
// appends may appear in between (a weak level lets a transaction see new
// commits); whether they may is a question for the cycle search.
func (c *checker) checkInternal(ti int32) {
	t := &c.h[ti]
	type state struct {
		known bool    // base holds the previous read
		base  []int64 // the previous read
		own   []int64 // appends since then
	}
	var states map[string]*state
	get := func(key string) *state {
		if states == nil {
			states = make(map[string]*state)
		}
		s := states[key]
		if s == nil {
			s = &state{}
			states[key] = s
		}
		return s
	}
	for j, op := range t.Ops {
		switch op.Kind {
		case OpAppend:
			for i := range j {
				r := &t.Ops[i]
				if r.Kind == OpRead && r.Key == op.Key && slices.Contains(r.List, op.Value) {
					c.add(Anomaly{Class: FutureRead, Key: op.Key, Txns: []int64{t.ID},
						Text: fmt.Sprintf("T%d read %s=%s, which holds %d that T%d appends only later",
							t.ID, op.Key, fmtList(r.List), op.Value, t.ID)})
					break
				}
			}
			s := get(op.Key)
			s.own = append(s.own, op.Value)
		case OpRead:
			l := op.List
			s := get(op.Key)
			n, b := len(s.own), len(s.base)
			ok := len(l) >= n && slices.Equal(l[len(l)-n:], s.own)
			if s.known {
				ok = ok && len(l) >= b+n && slices.Equal(l[:b], s.base)
			}
			if !ok {
				var want string
				switch {
				case s.known && n == 0:
					want = "a list starting with " + fmtList(s.base)
				case s.known:
					want = "a list starting with " + fmtList(s.base) + " and ending in " + fmtList(s.own)
				default:
					want = "a list ending in " + fmtList(s.own)
				}
				c.add(Anomaly{Class: Internal, Key: op.Key, Txns: []int64{t.ID},
					Text: fmt.Sprintf("T%d read %s=%s, but its own earlier operations imply %s", t.ID, op.Key, fmtList(l), want)})
			}
			*s = state{known: true, base: l}
		}
	}
}

// checkLostUpdates reports groups of committed transactions that read the
// same version of a key (as their first operation on it) and then appended
// to it.
func (c *checker) checkLostUpdates() {
	type group struct {
		k    int32
		read readRef
		txns []int32
	}
	groups := make(map[string]*group)
	var order []string
	for i := range c.h {
		t := &c.h[i]
		if t.Status != StatusOK {
			continue
		}
		for j, op := range t.Ops {
			if op.Kind != OpRead || firstOpOn(t.Ops, op.Key) != j || !appendsAfter(t.Ops, op.Key, j) {
				continue
			}
			k := c.keyID[op.Key]
			// When a key's reads agree, a version is identified by its length.
			var sig string
			if c.perKey[k].compatible {
				sig = strconv.Itoa(int(k)) + "/" + strconv.Itoa(len(op.List))
			} else {
				sig = strconv.Itoa(int(k)) + "/" + string(appendList(nil, op.List))
			}
			g := groups[sig]
			if g == nil {
				g = &group{k: k, read: readRef{txn: int32(i), op: int32(j)}}
				groups[sig] = g
				order = append(order, sig)
			}
			g.txns = append(g.txns, int32(i))
		}
	}
	var lost []*group
	for _, sig := range order {
		if g := groups[sig]; len(g.txns) > 1 {
			lost = append(lost, g)
		}
	}
	slices.SortStableFunc(lost, func(a, b *group) int { return int(a.k - b.k) })
	for _, g := range lost {
		key := c.keys[g.k]
		ids := make([]int64, len(g.txns))
		names := make([]string, len(g.txns))
		for i, t := range g.txns {
			ids[i] = c.id(t)
			names[i] = "T" + strconv.FormatInt(ids[i], 10)
		}
		who := strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
		c.add(Anomaly{Class: LostUpdate, Key: key, Txns: ids,
			Text: fmt.Sprintf("%s each read %s=%s and then appended to %s", who, key, fmtList(c.list(g.read)), key)})
	}
}

func firstOpOn(ops []Op, key string) int {
	for j, op := range ops {
		if op.Key == key {
			return j
		}
	}
	return -1
}

func appendsAfter(ops []Op, key string, j int) bool {
	for _, op := range ops[j+1:] {
		if op.Kind == OpAppend && op.Key == key {
			return true
		}
	}
	return false
}

func isPrefix(a, b []int64) bool {
	return len(a) <= len(b) && slices.Equal(a, b[:len(a)])
}

// dupValues returns the values occurring more than once in l, in order of
// their second occurrence.
func dupValues(l []int64) []int64 {
	if len(l) < 2 {
		return nil
	}
	seen := make(map[int64]int, len(l))
	var d []int64
	for _, v := range l {
		seen[v]++
		if seen[v] == 2 {
			d = append(d, v)
		}
	}
	return d
}
