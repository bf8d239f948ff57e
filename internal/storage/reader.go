package storage

// Reading committed data. Packages above storage read through these types
// and never see Pebble:
//
//   - Latest reads the newest committed data. Each Get sees what is
//     committed when it runs, and each iterator is a consistent view of
//     the moment it was created, but two reads may see different states.
//   - A Snapshot is a consistent view fixed when it was taken: every read
//     through it sees the same committed state, whatever commits later.
//     It holds old versions in the store until closed.
//   - An Iter walks a key range of either, in key order.
//
// A value or key an Iter returns is valid until the Iter moves; View's
// value only during its callback. Get returns copies.

import (
	"errors"

	"github.com/cockroachdb/pebble/v2"
)

// Logger receives the store's messages (Pebble's logger: its Fatalf must
// not return).
type Logger = pebble.Logger

// Reader reads committed data: the newest (Engine.Latest) or a snapshot's.
type Reader struct{ r pebble.Reader }

// Latest reads the newest committed data.
func (e *Engine) Latest() Reader { return Reader{e.db} }

// Snapshot is a consistent view of the store. Close it when done.
type Snapshot struct{ s *pebble.Snapshot }

// NewSnapshot takes a consistent view of what is committed now.
func (e *Engine) NewSnapshot() *Snapshot { return &Snapshot{e.db.NewSnapshot()} }

// Reader reads through the snapshot.
func (s *Snapshot) Reader() Reader { return Reader{s.s} }

// Close releases the snapshot.
func (s *Snapshot) Close() error { return s.s.Close() }

// Get returns a copy of k's value and whether k exists.
func (r Reader) Get(k []byte) ([]byte, bool, error) { return get(r.r, k) }

// View calls fn (if not nil) with k's value without copying it, and
// reports whether k exists. fn must not keep the value.
func (r Reader) View(k []byte, fn func(v []byte) error) (bool, error) { return view(r.r, k, fn) }

// NewIter returns an iterator over [lower, upper); a nil bound is open.
// It starts unpositioned: call First or Last. It is a value (no
// allocation of its own); use it through a pointer.
func (r Reader) NewIter(lower, upper []byte) (Iter, error) {
	it, err := r.r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return Iter{}, err
	}
	return Iter{it}, nil
}

// Iter walks a key range in key order.
type Iter struct{ it *pebble.Iterator }

// First moves to the first key and reports whether there is one.
func (i *Iter) First() bool { return i.it.First() }

// Last moves to the last key and reports whether there is one.
func (i *Iter) Last() bool { return i.it.Last() }

// Next moves to the next key and reports whether there is one.
func (i *Iter) Next() bool { return i.it.Next() }

// Prev moves to the previous key and reports whether there is one.
func (i *Iter) Prev() bool { return i.it.Prev() }

// Valid reports whether the iterator is at a key.
func (i *Iter) Valid() bool { return i.it.Valid() }

// Key is the current key, valid until the iterator moves.
func (i *Iter) Key() []byte { return i.it.Key() }

// Value is the current value, valid until the iterator moves.
func (i *Iter) Value() []byte { return i.it.Value() }

// Error is the error that ended the iteration, if any.
func (i *Iter) Error() error { return i.it.Error() }

// Close releases the iterator.
func (i *Iter) Close() error { return i.it.Close() }

// get reads a key from r (the DB or a snapshot).
func get(r pebble.Reader, k []byte) ([]byte, bool, error) {
	v, c, err := r.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := append([]byte(nil), v...)
	return out, true, c.Close()
}

// view calls fn (if not nil) with k's value in r without copying it, and
// reports whether k exists.
func view(r pebble.Reader, k []byte, fn func(v []byte) error) (bool, error) {
	v, c, err := r.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if fn != nil {
		err = fn(v)
	}
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	return true, err
}
