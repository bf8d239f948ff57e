package replica

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/lockstepdb/lockstep/internal/binlog"
)

// The relay log holds events received from the source until the applier
// has applied them: relay-bin.NNNNNN files in the data directory, each the
// binlog magic followed by events exactly as the source sent them (semi-sync
// headers stripped, heartbeats dropped).
//
// It is never synced. The replica's position is its own binlog's GTID set
// (applied transactions are durable there), so a relay log lost in a crash
// is simply fetched again; at server start and whenever both threads start
// from stopped, the relay log is emptied (MySQL's relay_log_recovery).
//
// One writer (the receiver) appends through a buffered writer and publishes
// the end it has flushed; one reader (the applier) follows it with its own
// file handle, never reading past the published end.

const relayPrefix = "relay-bin."

// relayPos is a position in the relay log.
type relayPos struct {
	File int
	Pos  int64
}

func (p relayPos) less(o relayPos) bool {
	return p.File < o.File || (p.File == o.File && p.Pos < o.Pos)
}

type relayLog struct {
	dir     string
	maxSize int64

	mu        sync.Mutex
	published relayPos
	changed   chan struct{} // closed when published moves or the log closes
	closed    bool
	size      int64 // bytes in files the reader has not yet removed

	// writer side (receiver goroutine only)
	f   *os.File
	w   *bufio.Writer
	end relayPos
}

func relayName(n int) string { return fmt.Sprintf("%s%06d", relayPrefix, n) }

// openRelay removes any old relay files and starts relay-bin.000001.
func openRelay(dir string, maxSize int64) (*relayLog, error) {
	if err := removeRelayFiles(dir); err != nil {
		return nil, err
	}
	r := &relayLog{dir: dir, maxSize: maxSize, changed: make(chan struct{})}
	if err := r.create(1); err != nil {
		return nil, err
	}
	return r, nil
}

func removeRelayFiles(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), relayPrefix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *relayLog) create(n int) error {
	f, err := os.OpenFile(filepath.Join(r.dir, relayName(n)), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	if _, err := f.Write(binlog.FileMagic); err != nil {
		f.Close()
		return err
	}
	r.f = f
	if r.w == nil {
		r.w = bufio.NewWriterSize(f, 256<<10)
	} else {
		r.w.Reset(f)
	}
	r.end = relayPos{File: n, Pos: int64(len(binlog.FileMagic))}
	r.mu.Lock()
	r.size += int64(len(binlog.FileMagic))
	r.mu.Unlock()
	return nil
}

// append buffers one event. At a transaction boundary (boundary true) the
// file may rotate.
func (r *relayLog) append(ev []byte, boundary bool) error {
	if boundary && r.end.Pos >= r.maxSize {
		if err := r.flush(); err != nil {
			return err
		}
		if err := r.f.Close(); err != nil {
			return err
		}
		if err := r.create(r.end.File + 1); err != nil {
			return err
		}
		r.publish()
	}
	if _, err := r.w.Write(ev); err != nil {
		return err
	}
	r.end.Pos += int64(len(ev))
	r.mu.Lock()
	r.size += int64(len(ev))
	r.mu.Unlock()
	return nil
}

// flush writes the buffer to the file (no fsync) and publishes the end.
func (r *relayLog) flush() error {
	if err := r.w.Flush(); err != nil {
		return err
	}
	r.publish()
	return nil
}

func (r *relayLog) publish() {
	r.mu.Lock()
	if r.published != r.end {
		r.published = r.end
		close(r.changed)
		r.changed = make(chan struct{})
	}
	r.mu.Unlock()
}

// Published returns the readable end and a channel closed when it moves.
func (r *relayLog) Published() (relayPos, <-chan struct{}, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.published, r.changed, r.closed
}

// Space is Relay_Log_Space: bytes in relay files not yet removed.
func (r *relayLog) Space() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.size
}

func (r *relayLog) close() error {
	var err error
	if r.f != nil {
		err = r.w.Flush()
		r.publish()
		if cerr := r.f.Close(); err == nil {
			err = cerr
		}
		r.f = nil
	}
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.changed)
	}
	r.mu.Unlock()
	return err
}

// relayReader follows the relay log from a position.
type relayReader struct {
	r    *relayLog
	pos  relayPos
	f    *os.File
	br   *bufio.Reader
	hdr  [binlog.HeaderSize]byte
	stop <-chan struct{}
}

var errStopped = errors.New("stopped")

func (r *relayLog) reader(from relayPos, stop <-chan struct{}) *relayReader {
	return &relayReader{r: r, pos: from, stop: stop}
}

func (rr *relayReader) close() {
	if rr.f != nil {
		rr.f.Close()
		rr.f = nil
	}
}

// next returns the next whole event (a fresh slice the caller owns) and
// the position just past it. It blocks until one is published or stop
// closes.
func (rr *relayReader) next() ([]byte, relayPos, error) {
	for {
		pub, changed, closed := rr.r.Published()
		if rr.pos.less(pub) {
			if rr.f == nil {
				if err := rr.open(); err != nil {
					return nil, rr.pos, err
				}
			}
			ev, err := rr.read(pub)
			if err == io.EOF { // end of a finished file: go to the next
				rr.close()
				rr.pos = relayPos{File: rr.pos.File + 1, Pos: int64(len(binlog.FileMagic))}
				continue
			}
			return ev, rr.pos, err
		}
		if closed {
			return nil, rr.pos, errStopped
		}
		select {
		case <-changed:
		case <-rr.stop:
			return nil, rr.pos, errStopped
		}
	}
}

func (rr *relayReader) open() error {
	f, err := os.Open(filepath.Join(rr.r.dir, relayName(rr.pos.File)))
	if err != nil {
		return err
	}
	if _, err := f.Seek(rr.pos.Pos, io.SeekStart); err != nil {
		f.Close()
		return err
	}
	rr.f = f
	if rr.br == nil {
		rr.br = bufio.NewReaderSize(f, 256<<10)
	} else {
		rr.br.Reset(f)
	}
	return nil
}

func (rr *relayReader) read(pub relayPos) ([]byte, error) {
	if rr.pos.File < pub.File {
		// A finished file: read to its end.
		if _, err := io.ReadFull(rr.br, rr.hdr[:]); err != nil {
			if err == io.EOF {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("relay log %s: %w", relayName(rr.pos.File), err)
		}
	} else if _, err := io.ReadFull(rr.br, rr.hdr[:]); err != nil {
		return nil, fmt.Errorf("relay log %s at %d: %w", relayName(rr.pos.File), rr.pos.Pos, err)
	}
	size := binary.LittleEndian.Uint32(rr.hdr[9:])
	if size < binlog.HeaderSize || size > 1<<30 {
		return nil, fmt.Errorf("relay log %s at %d: invalid event size %d", relayName(rr.pos.File), rr.pos.Pos, size)
	}
	buf := make([]byte, size)
	copy(buf, rr.hdr[:])
	if _, err := io.ReadFull(rr.br, buf[binlog.HeaderSize:]); err != nil {
		return nil, fmt.Errorf("relay log %s at %d: %w", relayName(rr.pos.File), rr.pos.Pos, err)
	}
	rr.pos.Pos += int64(size)
	return buf, nil
}

// removeBefore removes the files before n (applied and no longer needed
// to restart the SQL thread).
func (r *relayLog) removeBefore(n int) {
	for _, f := range relayFiles(r.dir) {
		if f < n {
			r.removeFile(f)
		}
	}
}

func (r *relayLog) removeFile(n int) {
	p := filepath.Join(r.dir, relayName(n))
	if st, err := os.Stat(p); err == nil {
		r.mu.Lock()
		r.size -= st.Size()
		r.mu.Unlock()
	}
	os.Remove(p)
}

// relayFiles lists relay file numbers present in dir (for tests).
func relayFiles(dir string) []int {
	ents, _ := os.ReadDir(dir)
	var ns []int
	for _, e := range ents {
		if n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), relayPrefix)); err == nil && strings.HasPrefix(e.Name(), relayPrefix) {
			ns = append(ns, n)
		}
	}
	sort.Ints(ns)
	return ns
}
