package elle

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseText parses a history written in a compact notation meant for tests
// and bug reports: one transaction per line,
//
//	T<id> <status> [p=<process>] [t=<start>..<end>] <op>...
//
// where status is ok, fail or info and each op is
//
//	a:<key>:<value>         append value to key
//	r:<key>:[v1,v2,...]     read key and observe the list (r:x:[] is empty)
//	r:<key>:?               read whose result is unknown (fail/info only)
//
// Keys may not contain ':' or spaces. Blank lines and lines starting with
// '#' are ignored. For example:
//
//	T1 ok   p=1 a:x:1 a:y:1
//	T2 ok   p=2 r:x:[1] r:y:[]
//	T3 info p=3 a:y:2
func ParseText(s string) (History, error) {
	var h History
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		t, err := parseTextTxn(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		h = append(h, t)
	}
	if err := Validate(h); err != nil {
		return nil, fmt.Errorf("invalid history: %w", err)
	}
	return h, nil
}

func parseTextTxn(line string) (Txn, error) {
	fields := strings.Fields(line)
	if len(fields) < 2 {
		return Txn{}, fmt.Errorf("want \"T<id> <status> ops...\", got %q", line)
	}
	var t Txn
	id, ok := strings.CutPrefix(fields[0], "T")
	if !ok {
		return Txn{}, fmt.Errorf("transaction %q does not start with T<id>", fields[0])
	}
	var err error
	if t.ID, err = strconv.ParseInt(id, 10, 64); err != nil {
		return Txn{}, fmt.Errorf("bad transaction id %q: %w", fields[0], err)
	}
	t.Status = Status(fields[1])
	if !t.Status.valid() {
		return Txn{}, fmt.Errorf("txn %d: status %q is not ok, fail or info", t.ID, fields[1])
	}
	t.Ops = []Op{}
	for _, f := range fields[2:] {
		switch {
		case strings.HasPrefix(f, "p="):
			if t.Process, err = strconv.ParseInt(f[2:], 10, 64); err != nil {
				return Txn{}, fmt.Errorf("txn %d: bad process %q: %w", t.ID, f, err)
			}
		case strings.HasPrefix(f, "t="):
			start, end, ok := strings.Cut(f[2:], "..")
			if !ok {
				return Txn{}, fmt.Errorf("txn %d: bad times %q, want t=<start>..<end>", t.ID, f)
			}
			if t.Start, err = strconv.ParseInt(start, 10, 64); err != nil {
				return Txn{}, fmt.Errorf("txn %d: bad start time %q: %w", t.ID, f, err)
			}
			if t.End, err = strconv.ParseInt(end, 10, 64); err != nil {
				return Txn{}, fmt.Errorf("txn %d: bad end time %q: %w", t.ID, f, err)
			}
		default:
			op, err := parseTextOp(f, t.Status)
			if err != nil {
				return Txn{}, fmt.Errorf("txn %d: %w", t.ID, err)
			}
			t.Ops = append(t.Ops, op)
		}
	}
	return t, nil
}

func parseTextOp(f string, status Status) (Op, error) {
	parts := strings.SplitN(f, ":", 3)
	if len(parts) != 3 || parts[1] == "" {
		return Op{}, fmt.Errorf("bad operation %q, want a:<key>:<value> or r:<key>:[...]", f)
	}
	key, val := parts[1], parts[2]
	switch parts[0] {
	case "a":
		v, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return Op{}, fmt.Errorf("bad appended value in %q: %w", f, err)
		}
		return AppendOp(key, v), nil
	case "r":
		if val == "?" {
			if status == StatusOK {
				return Op{}, fmt.Errorf("unknown read %q in a committed transaction", f)
			}
			return Op{Kind: OpRead, Key: key}, nil
		}
		if len(val) < 2 || val[0] != '[' || val[len(val)-1] != ']' {
			return Op{}, fmt.Errorf("bad read %q, want r:<key>:[v1,v2,...]", f)
		}
		inner := val[1 : len(val)-1]
		list := []int64{}
		if inner != "" {
			for _, e := range strings.Split(inner, ",") {
				v, err := strconv.ParseInt(e, 10, 64)
				if err != nil {
					return Op{}, fmt.Errorf("bad element in %q: %w", f, err)
				}
				list = append(list, v)
			}
		}
		return Op{Kind: OpRead, Key: key, List: list}, nil
	}
	return Op{}, fmt.Errorf("bad operation %q: kind must be a or r", f)
}

// FormatText writes h in the notation read by ParseText. Keys containing
// ':' or spaces cannot be written faithfully.
func FormatText(h History) string {
	var b strings.Builder
	for _, t := range h {
		fmt.Fprintf(&b, "T%d %s p=%d", t.ID, t.Status, t.Process)
		if t.hasTimes() {
			fmt.Fprintf(&b, " t=%d..%d", t.Start, t.End)
		}
		for _, op := range t.Ops {
			switch op.Kind {
			case OpAppend:
				fmt.Fprintf(&b, " a:%s:%d", op.Key, op.Value)
			case OpRead:
				if op.List == nil && t.Status != StatusOK {
					fmt.Fprintf(&b, " r:%s:?", op.Key)
					continue
				}
				b.WriteString(" r:" + op.Key + ":")
				b.Write(appendList(nil, op.List))
			default:
				fmt.Fprintf(&b, " %s:%s:?", op.Kind, op.Key)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}
