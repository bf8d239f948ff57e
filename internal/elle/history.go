package elle

// History file format (JSON Lines)
//
// A history is stored as UTF-8 text with one JSON object per line, one line
// per transaction, in the order the transactions completed (history order).
// Blank lines are ignored. Each object has these fields:
//
//	id       integer, required, unique in the history: the transaction id.
//	process  integer, optional (default 0): the client (connection) that ran
//	         the transaction. Transactions of one process never overlap.
//	status   string, required: "ok" (committed), "fail" (known to have
//	         aborted) or "info" (indeterminate: e.g. the connection died
//	         during COMMIT, so it may or may not have committed).
//	start    integer, optional: when the client began the transaction, in
//	         nanoseconds on a clock shared by all clients (any epoch).
//	end      integer, optional: when the client saw the outcome, same clock.
//	         A transaction with neither start nor end has no known times.
//	error    string, optional: why the transaction failed or is
//	         indeterminate, for humans.
//	ops      array, required: the micro-operations in execution order.
//
// Each micro-operation is an object {"f": F, "k": K, "v": V} where K is the
// key (a string) and
//
//	F = "append": V is the integer appended to the list stored at K;
//	F = "r":      V is the list of integers read from K, [] for an empty or
//	              absent list. In "fail" and "info" transactions V may be
//	              null, meaning the result was never received.
//
// For example:
//
//	{"id":1,"process":0,"status":"ok","start":100,"end":250,"ops":[{"f":"append","k":"x","v":1},{"f":"r","k":"y","v":[]}]}
//	{"id":2,"process":1,"status":"info","error":"connection reset","ops":[{"f":"append","k":"y","v":1}]}
//
// Every value is appended at most once per key in the whole history,
// counting failed and indeterminate transactions. Unknown fields are
// rejected, so that misspelled fields are noticed.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Status is the outcome of a transaction as seen by its client.
type Status string

// Transaction outcomes.
const (
	// StatusOK means the transaction committed.
	StatusOK Status = "ok"
	// StatusFail means the transaction is known to have aborted: none of its
	// effects may ever be visible.
	StatusFail Status = "fail"
	// StatusInfo means the outcome is unknown: the transaction may or may not
	// have committed.
	StatusInfo Status = "info"
)

func (s Status) valid() bool {
	return s == StatusOK || s == StatusFail || s == StatusInfo
}

// OpKind is the kind of a micro-operation.
type OpKind string

// Micro-operation kinds.
const (
	// OpAppend appends Op.Value to the list stored at Op.Key.
	OpAppend OpKind = "append"
	// OpRead reads the list stored at Op.Key into Op.List.
	OpRead OpKind = "r"
)

// Op is one micro-operation of a transaction.
type Op struct {
	Kind OpKind
	Key  string
	// Value is the appended value (OpAppend only).
	Value int64
	// List is the list observed by a read (OpRead only). In a committed
	// transaction nil and empty both mean the empty list. Reads of failed and
	// indeterminate transactions are never used by the checker, so nil is a
	// fine value there for "not received".
	List []int64
}

// AppendOp returns an operation appending v to the list at key.
func AppendOp(key string, v int64) Op { return Op{Kind: OpAppend, Key: key, Value: v} }

// ReadOp returns an operation that read list from key.
func ReadOp(key string, list ...int64) Op {
	if list == nil {
		list = []int64{}
	}
	return Op{Kind: OpRead, Key: key, List: list}
}

// Txn is one transaction of a history.
type Txn struct {
	// ID identifies the transaction; unique within a history.
	ID int64
	// Process identifies the client that ran the transaction.
	Process int64
	Status  Status
	// Start and End are when the client began the transaction and saw its
	// outcome, in nanoseconds on a clock shared by all clients. Both zero
	// means unknown. They are only used for real-time order.
	Start, End int64
	// Error describes why the transaction failed or is indeterminate.
	Error string
	Ops   []Op
}

func (t *Txn) hasTimes() bool { return t.Start != 0 || t.End != 0 }

// History is a list of transactions in history order (the order in which
// they completed).
type History []Txn

// Validate reports whether h is well formed: known statuses and operation
// kinds, unique transaction ids, end not before start, and no value appended
// twice to the same key.
func Validate(h History) error {
	ids := make(map[int64]int, len(h))
	type kv struct {
		k string
		v int64
	}
	appended := make(map[kv]int64)
	for i := range h {
		t := &h[i]
		if !t.Status.valid() {
			return fmt.Errorf("txn %d: unknown status %q (want ok, fail or info)", t.ID, t.Status)
		}
		if j, dup := ids[t.ID]; dup {
			return fmt.Errorf("txn id %d used twice (transactions %d and %d of the history)", t.ID, j+1, i+1)
		}
		ids[t.ID] = i
		if t.hasTimes() && t.End < t.Start {
			return fmt.Errorf("txn %d: end %d is before start %d", t.ID, t.End, t.Start)
		}
		for j, op := range t.Ops {
			switch op.Kind {
			case OpAppend:
				if prev, dup := appended[kv{op.Key, op.Value}]; dup {
					return fmt.Errorf("txn %d: op %d: value %d appended to key %q again (first by txn %d); appended values must be unique per key",
						t.ID, j+1, op.Value, op.Key, prev)
				}
				appended[kv{op.Key, op.Value}] = t.ID
			case OpRead:
			default:
				return fmt.Errorf("txn %d: op %d: unknown operation kind %q (want append or r)", t.ID, j+1, op.Kind)
			}
		}
	}
	return nil
}

// JSON shapes of a transaction and an operation.
type jsonTxn struct {
	ID      *int64   `json:"id"`
	Process int64    `json:"process"`
	Status  Status   `json:"status"`
	Start   int64    `json:"start,omitempty"`
	End     int64    `json:"end,omitempty"`
	Error   string   `json:"error,omitempty"`
	Ops     []jsonOp `json:"ops"`
}

type jsonOp struct {
	F string          `json:"f"`
	K *string         `json:"k"`
	V json.RawMessage `json:"v"`
}

// WriteTxn writes t to w as one line of the JSON Lines history format.
func WriteTxn(w io.Writer, t Txn) error {
	b, err := marshalTxn(t)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("writing txn %d: %w", t.ID, err)
	}
	return nil
}

// Write writes h to w in the JSON Lines history format.
func Write(w io.Writer, h History) error {
	bw := bufio.NewWriter(w)
	for _, t := range h {
		if err := WriteTxn(bw, t); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing history: %w", err)
	}
	return nil
}

func marshalTxn(t Txn) ([]byte, error) {
	if !t.Status.valid() {
		return nil, fmt.Errorf("txn %d: unknown status %q", t.ID, t.Status)
	}
	id := t.ID
	jt := jsonTxn{ID: &id, Process: t.Process, Status: t.Status, Start: t.Start, End: t.End, Error: t.Error,
		Ops: make([]jsonOp, len(t.Ops))}
	for i, op := range t.Ops {
		k := op.Key
		jo := jsonOp{F: string(op.Kind), K: &k}
		switch op.Kind {
		case OpAppend:
			jo.V = strconv.AppendInt(nil, op.Value, 10)
		case OpRead:
			if op.List == nil && t.Status != StatusOK {
				jo.V = json.RawMessage("null")
			} else {
				jo.V = appendList(nil, op.List)
			}
		default:
			return nil, fmt.Errorf("txn %d: op %d: unknown operation kind %q", t.ID, i+1, op.Kind)
		}
		jt.Ops[i] = jo
	}
	b, err := json.Marshal(jt)
	if err != nil {
		return nil, fmt.Errorf("encoding txn %d: %w", t.ID, err)
	}
	return append(b, '\n'), nil
}

func appendList(b []byte, l []int64) []byte {
	b = append(b, '[')
	for i, v := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, v, 10)
	}
	return append(b, ']')
}

// Read parses a history in the JSON Lines format from r and validates it
// (see Validate). Errors name the offending line.
func Read(r io.Reader) (History, error) {
	br := bufio.NewReader(r)
	var h History
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("reading history line %d: %w", lineNo, err)
		}
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			t, perr := ParseTxn(trimmed)
			if perr != nil {
				return nil, fmt.Errorf("history line %d: %w", lineNo, perr)
			}
			h = append(h, t)
		}
		if err != nil { // io.EOF
			break
		}
	}
	if err := Validate(h); err != nil {
		return nil, fmt.Errorf("invalid history: %w", err)
	}
	return h, nil
}

// ParseTxn parses one line of the JSON Lines history format.
func ParseTxn(line []byte) (Txn, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var jt jsonTxn
	if err := dec.Decode(&jt); err != nil {
		return Txn{}, fmt.Errorf("malformed transaction: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Txn{}, errors.New("malformed transaction: unexpected data after the JSON object")
	}
	if jt.ID == nil {
		return Txn{}, errors.New("transaction has no id")
	}
	t := Txn{ID: *jt.ID, Process: jt.Process, Status: jt.Status, Start: jt.Start, End: jt.End, Error: jt.Error}
	if !t.Status.valid() {
		return Txn{}, fmt.Errorf("txn %d: status %q is not ok, fail or info", t.ID, jt.Status)
	}
	if jt.Ops == nil {
		return Txn{}, fmt.Errorf("txn %d: no ops field", t.ID)
	}
	t.Ops = make([]Op, len(jt.Ops))
	for i, jo := range jt.Ops {
		op, err := parseOp(jo, t.Status)
		if err != nil {
			return Txn{}, fmt.Errorf("txn %d: op %d: %w", t.ID, i+1, err)
		}
		t.Ops[i] = op
	}
	return t, nil
}

func parseOp(jo jsonOp, status Status) (Op, error) {
	if jo.K == nil {
		return Op{}, errors.New("missing key \"k\"")
	}
	op := Op{Key: *jo.K}
	null := len(jo.V) == 0 || string(jo.V) == "null"
	switch OpKind(jo.F) {
	case OpAppend:
		op.Kind = OpAppend
		if null {
			return Op{}, errors.New("append has no value \"v\"")
		}
		if err := json.Unmarshal(jo.V, &op.Value); err != nil {
			return Op{}, fmt.Errorf("append value %s is not a 64-bit integer: %w", clip(jo.V), err)
		}
	case OpRead:
		op.Kind = OpRead
		if null {
			if status == StatusOK {
				return Op{}, errors.New("read in a committed transaction has no list \"v\" (use [] for an empty list)")
			}
			return op, nil
		}
		if err := json.Unmarshal(jo.V, &op.List); err != nil {
			return Op{}, fmt.Errorf("read value %s is not a list of 64-bit integers: %w", clip(jo.V), err)
		}
		if op.List == nil { // cannot happen after the null check, but keep reads of ok txns non-nil
			op.List = []int64{}
		}
	case "":
		return Op{}, errors.New("missing operation kind \"f\"")
	default:
		return Op{}, fmt.Errorf("unknown operation kind %q (want append or r)", jo.F)
	}
	return op, nil
}

// clip shortens raw JSON for error messages.
func clip(b []byte) string {
	const limit = 40
	if len(b) > limit {
		return string(b[:limit]) + "..."
	}
	return string(b)
}
