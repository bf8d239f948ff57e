package storage

// State transfer: a store's whole contents as a stream, and a new store
// made from one (a cluster member joining after the log was compacted is
// sent its state this way).
//
// The stream: a magic line, then one record per key in key order (the
// key's length and the value's as uvarints, then their bytes), then an end
// record (a key length of 0), the number of records (8 bytes) and a
// CRC-32C of every byte before it. Import checks all three, so a cut,
// damaged or foreign stream makes no store.
//
// The applied position is the sender's binlog coordinates and means
// nothing to the receiver: it is left out, so the new store has applied
// nothing of the receiver's own log (its GTID high-water marks say which
// transactions it holds); a mark says the store was transferred
// (Transferred), so that an empty store is never taken for one.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/cockroachdb/pebble/v2"
)

var (
	exportMagic = []byte("lockstep-store-export 1\n")
	castagnoli  = crc32.MakeTable(crc32.Castagnoli)
)

// Export writes every key and value the snapshot holds to w.
func (s *Snapshot) Export(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	crc := crc32.New(castagnoli)
	out := io.MultiWriter(bw, crc)
	if _, err := out.Write(exportMagic); err != nil {
		return err
	}
	it, err := s.s.NewIter(nil)
	if err != nil {
		return err
	}
	defer it.Close()
	var n uint64
	var hdr [2 * binary.MaxVarintLen64]byte
	for it.First(); it.Valid(); it.Next() {
		k, v := it.Key(), it.Value()
		if string(k) == string(metaAppliedKey) || string(k) == string(metaTransferredKey) {
			continue
		}
		h := binary.AppendUvarint(hdr[:0], uint64(len(k)))
		h = binary.AppendUvarint(h, uint64(len(v)))
		for _, b := range [][]byte{h, k, v} {
			if _, err := out.Write(b); err != nil {
				return err
			}
		}
		n++
	}
	if err := it.Error(); err != nil {
		return err
	}
	end := binary.AppendUvarint(nil, 0)
	end = binary.BigEndian.AppendUint64(end, n)
	if _, err := out.Write(end); err != nil {
		return err
	}
	if _, err := bw.Write(binary.BigEndian.AppendUint32(nil, crc.Sum32())); err != nil {
		return err
	}
	return bw.Flush()
}

// maxTransferKey and maxTransferValue bound what Import accepts of one
// record: the largest key and row the store writes, with room.
const (
	maxTransferKey   = 64 << 10
	maxTransferValue = 1 << 30
)

// Import makes a new store in o.Dir (which must not hold one) from r, as
// Export wrote it. On any error the directory is left with whatever was
// written and must not be used; the caller removes it.
func Import(o Options, r io.Reader) error {
	if names, err := o.FS.List(o.Dir); err == nil && len(names) > 0 {
		return fmt.Errorf("store: %s is not empty; a transferred store is made in an empty directory", o.Dir)
	}
	br := bufio.NewReaderSize(r, 256<<10)
	crc := crc32.New(castagnoli)
	in := io.TeeReader(br, crc)
	magic := make([]byte, len(exportMagic))
	if _, err := io.ReadFull(in, magic); err != nil || string(magic) != string(exportMagic) {
		return fmt.Errorf("store: not a store transfer (%v)", err)
	}
	e, err := Open(o)
	if err != nil {
		return err
	}
	defer e.Close()
	b := e.db.NewBatch()
	var n uint64
	byteReader := byteReaderOf(in)
	for {
		kl, err := binary.ReadUvarint(byteReader)
		if err != nil {
			return fmt.Errorf("store: transfer cut short after %d records: %w", n, err)
		}
		if kl == 0 {
			break
		}
		vl, err := binary.ReadUvarint(byteReader)
		if err != nil {
			return fmt.Errorf("store: transfer cut short after %d records: %w", n, err)
		}
		if kl > maxTransferKey || vl > maxTransferValue {
			return fmt.Errorf("store: transfer record %d of a %d-byte key and a %d-byte value", n, kl, vl)
		}
		kv := make([]byte, kl+vl)
		if _, err := io.ReadFull(in, kv); err != nil {
			return fmt.Errorf("store: transfer cut short in record %d: %w", n, err)
		}
		if err := b.Set(kv[:kl], kv[kl:], nil); err != nil {
			return err
		}
		n++
		if b.Len() > 4<<20 {
			if err := b.Commit(pebble.NoSync); err != nil {
				return err
			}
			b = e.db.NewBatch()
		}
	}
	var count [8]byte
	if _, err := io.ReadFull(in, count[:]); err != nil {
		return fmt.Errorf("store: transfer cut short at its end: %w", err)
	}
	sum := crc.Sum32()
	var want [4]byte
	if _, err := io.ReadFull(br, want[:]); err != nil {
		return fmt.Errorf("store: transfer cut short at its checksum: %w", err)
	}
	switch {
	case binary.BigEndian.Uint64(count[:]) != n:
		return fmt.Errorf("store: the transfer says %d records, %d came", binary.BigEndian.Uint64(count[:]), n)
	case binary.BigEndian.Uint32(want[:]) != sum:
		return errors.New("store: the transfer's checksum does not match: damaged in transit")
	}
	if err := b.Set(metaTransferredKey, []byte{1}, nil); err != nil {
		return err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return err
	}
	return e.db.Flush()
}

var metaTransferredKey = []byte("\x00meta/transferred")

// Transferred reports whether the store was made by Import.
func (e *Engine) Transferred() bool {
	_, ok, err := e.Latest().Get(metaTransferredKey)
	return ok && err == nil
}

// byteReaderOf reads r a byte at a time (r is buffered below).
func byteReaderOf(r io.Reader) io.ByteReader { return &oneByte{r: r} }

type oneByte struct {
	r   io.Reader
	buf [1]byte
}

func (o *oneByte) ReadByte() (byte, error) {
	_, err := io.ReadFull(o.r, o.buf[:])
	return o.buf[0], err
}
