// Package protocol is Lockstep's layer of the MySQL client/server protocol
// below the protocol library (vitess): a listener whose connections
// terminate TLS, enforce max_connections, max_allowed_packet and the
// connection timeouts, count prepared statements and bytes, keep the
// connection attributes, take over binlog dump commands, continue a
// reply over executions it injects, and read the executions of
// statements with more placeholders than the library can (this file,
// tls.go, timeouts.go, prepared.go, connattrs.go, continued.go,
// manyparams.go); and the chain of
// statements the server answers before go-mysql-server (chain.go). It
// knows nothing of the server that configures it: what it needs (the
// limits, the TLS configuration, the SQL layer's prepare check) comes in
// the Listener's fields.
package protocol

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/lockstepdb/lockstep/internal/binlog"
)

// The MySQL protocol listener (vitess) dispatches COM_BINLOG_DUMP_GTID to
// its handler but not COM_BINLOG_DUMP, which MariaDB replicas,
// mysqlbinlog and most CDC tools send; and it ends the connection without
// calling the handler when a dump asks for BINLOG_DUMP_NON_BLOCK. Lockstep
// wraps the listener's connections at the byte level: every dump command
// (either kind) is parsed here, remembered on the connection, and replaced
// by a canonical COM_BINLOG_DUMP_GTID that vitess hands to the handler,
// which then takes over the connection (Conn.TakeDump; the server's
// handler.ComBinlogDumpGTID).
//
// The wrapper parses only packet boundaries: a 4-byte header (3-byte
// length, sequence number) per packet, payloads of 0xffffff bytes
// continuing in the next packet. Only a packet with sequence 0 (a command)
// whose first byte is a dump command is touched. TLS is terminated here,
// below the protocol library, so that all of this sees the plaintext (see
// tls.go, which also covers the connection phase's renumbering).
//
// Wrapping also turns off go-mysql-server's per-query socket poll (it looks
// for a *net.TCPConn); Conn.closedByPeer gives the server a cheaper
// check it runs only for long statements.

const (
	comBinlogDump     = 0x12
	comBinlogDumpGTID = 0x1e
	comStmtPrepare    = 0x16
	comStmtExecute    = 0x17
	comStmtLongData   = 0x18
	comStmtClose      = 0x19
	comStmtReset      = 0x1a
	comProcessKill    = 0x0c
	comStatistics     = 0x09
	comSetOption      = 0x1b
	comRefresh        = 0x07
	comShutdown       = 0x08
	comQuery          = 0x03
)

type Listener struct {
	net.Listener
	conns sync.Map // *Conn -> struct{}
	// MariaDB marks the --mariadb-port listener.
	MariaDB bool
	// MaxPacket is max_allowed_packet: a command larger than this (over
	// all its packets) is refused before it is buffered.
	MaxPacket func() int64
	// Limit counts the connections of every listener against
	// max_connections.
	Limit *ConnLimit
	// TLS, if set, is offered to clients (see tls.go).
	TLS      *tls.Config
	TLSStats *TLSStats
	// ConnectTimeout reads connect_timeout (nil: none).
	ConnectTimeout func() time.Duration
	// CheckPrepare, if set, sees each COM_STMT_PREPARE's statement (in
	// one packet) before vitess parses it, and returns the text vitess is
	// to parse, or refuses it with its error instead. vitess parses
	// Prepared statements itself, with none of the text rewrites of
	// Lockstep's parser, outside every recover that turns a parser panic
	// into an error, and miscounts their placeholders past 65,528.
	CheckPrepare func(connID uint32, query string) (string, error)
	// Prepared counts the prepared statements of every connection
	// (Prepared_stmt_count, see prepared.go).
	Prepared *atomic.Int64
	// PreparedBytes adds up their texts (lockstep_max_prepared_stmt_bytes).
	PreparedBytes *atomic.Int64
	// ReleaseStatement, if set, tells the SQL layer a connection closed a
	// Prepared statement it keeps under key (see prepared.go).
	ReleaseStatement func(connID uint32, key string)
	// Traffic, if set, counts every connection's bytes (Bytes_received,
	// Bytes_sent); countStatus, if set, counts a command vitess answers
	// without the handler (Com_stmt_close, Com_stmt_reset).
	Traffic     *Traffic
	CountStatus func(connID uint32, name string)
	// Statistics, if set, answers COM_STATISTICS (mysqladmin status),
	// which vitess does not know.
	Statistics func() string
}

// Traffic counts the bytes clients sent and were sent, over every
// connection of every listener.
type Traffic struct{ Received, Sent atomic.Uint64 }

// ConnLimit enforces max_connections as MySQL does: one connection more
// than the limit is accepted, for an account with SUPER or
// CONNECTION_ADMIN (checked once it has logged in, see
// the server's handler.ConnectionAuthenticated, Conn.OverLimit); past that a client gets 1040 "Too many
// connections" instead of the handshake, before anything it sends is read.
type ConnLimit struct {
	active atomic.Int64
	// Max reads max_connections.
	Max func() int64
}

// Over reports whether the active connections exceed max_connections.
func (l *ConnLimit) Over() bool { return l != nil && l.active.Load() > l.Max() }

// Accept waits for the next connection. Errors that end one connection
// attempt (too many open files, an aborted handshake) do not end the
// accept loop: the listener pauses, briefly and then longer, and goes on;
// only closing the listener ends it.
func (l *Listener) Accept() (net.Conn, error) {
	pause := 5 * time.Millisecond
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil, err
			}
			time.Sleep(pause)
			pause = min(2*pause, time.Second)
			continue
		}
		pause = 5 * time.Millisecond
		if l.Limit != nil {
			if n := l.Limit.active.Add(1); n > l.Limit.Max()+1 {
				l.Limit.active.Add(-1)
				refuseTooMany(c)
				continue
			}
		}
		w := newConn(c, l)
		if l.ConnectTimeout != nil {
			// The whole connection phase, TLS handshake included.
			w.connectDeadline = time.Now().Add(l.ConnectTimeout())
			_ = c.SetDeadline(w.connectDeadline)
		}
		l.conns.Store(w, struct{}{})
		return w, nil
	}
}

// refuseTooMany answers a connection with MySQL's error 1040 in place of
// the handshake (as mysqld does: no SQLSTATE yet) and closes it.
func refuseTooMany(c net.Conn) {
	msg := "Too many connections"
	pkt := packet(0, append([]byte{0xff, 0x10, 0x04}, msg...))
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write(pkt)
	_ = c.Close()
}

// maxPacketBeforeLogin bounds what a client may send before it has logged
// in (a handshake response with its attributes is well under it).
const maxPacketBeforeLogin = 64 << 10

var errPacketTooLarge = errors.New("packet bigger than max_allowed_packet")

// refuseLargePacket tells the client its command is too large (MySQL's
// ER_NET_PACKET_TOO_LARGE); the connection then ends, as in mysqld. The
// rest of the command is read and dropped first (for at most a few
// seconds, and never kept), so that a client still writing it is not cut
// off before it can read why.
func (c *Conn) refuseLargePacket(seq byte, size int) {
	pkt := packet(seq, append([]byte{0xff, 0x81, 0x04}, "#08S01Got a packet bigger than 'max_allowed_packet' bytes"...))
	_ = c.Conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = c.w.Write(pkt)
	// Drop this packet and any packets that continue the command.
	for n := 4 + size; ; {
		if _, err := io.CopyN(io.Discard, c.r, int64(n)); err != nil || size < 0xffffff {
			return
		}
		hdr := make([]byte, 4)
		if _, err := io.ReadFull(c.r, hdr); err != nil {
			return
		}
		size = int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
		n = size
	}
}

// errPacket is an ERR packet for err (a *mysql.SQLError, or 1105).
func errPacket(seq byte, err error) []byte {
	num, state, msg := mysql.ERUnknownError, mysql.SSUnknownSQLState, err.Error()
	var se *mysql.SQLError
	if errors.As(err, &se) {
		num, state, msg = se.Num, se.State, se.Message
	}
	payload := binary.LittleEndian.AppendUint16([]byte{0xff}, uint16(num))
	payload = append(append(append(payload, '#'), state...), msg...)
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

func newReader(c net.Conn) *bufio.Reader { return bufio.NewReaderSize(c, 16<<10) }

// DumpCommand is a parsed COM_BINLOG_DUMP or COM_BINLOG_DUMP_GTID.
type DumpCommand struct {
	GTIDKind bool
	Flags    uint16
	ServerID uint32
	File     string
	Pos      uint64
	GTIDs    *binlog.GTIDSet
	Err      error // the command was malformed
}

type Conn struct {
	net.Conn // the socket
	l        *Listener
	r        *bufio.Reader // the socket's bytes, or after TLS the plaintext
	w        io.Writer     // the socket, or after TLS the TLS connection
	hdr      [4]byte

	out       []byte // bytes ready for the reader
	remaining int    // payload bytes of the current packet still to pass
	cont      bool   // the current packet continues in the next one
	cmdSize   int64  // bytes of the current command so far

	// The connection phase (see tls.go): until the server's OK or ERR
	// ends it, packets are numbered with shift added on the wire.
	secure  atomic.Pointer[tls.Conn]
	phase   connPhase
	pending []byte // written bytes of an incomplete packet (connection phase)

	// The session's wait_timeout, net_read_timeout and net_write_timeout
	// (nanoseconds, 0: none), set once logged in (see timeouts.go);
	// interactive is the client's CLIENT_INTERACTIVE flag.
	WaitTimeout, ReadTimeout, WriteTimeout atomic.Int64
	// ExecTimeout is the session's max_execution_time, in nanoseconds;
	// SyncMask, on a cluster member, its causal-read mask (causalWait).
	ExecTimeout atomic.Int64
	SyncMask    atomic.Int64
	interactive bool
	// multiResults and multiStatements are the client's
	// CLIENT_MULTI_RESULTS and CLIENT_MULTI_STATEMENTS flags, the second
	// as COM_SET_OPTION last set it (MultiStatements).
	multiResults    bool
	multiStatements atomic.Bool
	// attrs are the connection attributes of the handshake response.
	attrs []ConnAttr
	// afterReply, if set, runs once the reply to the current command has
	// been written: when the next command is read, or the connection
	// closes (SHUTDOWN answers its client before the server stops).
	afterReply atomic.Pointer[func()]
	// stmts are this connection's prepared statements, counted in
	// l.Prepared (its own goroutine only; see prepared.go).
	stmts map[uint32]string // id -> the SQL layer's key for it
	// stmtBytes are their texts' lengths, counted in l.PreparedBytes.
	stmtBytes map[uint32]int64
	// longData counts the bytes of parameters sent in pieces, by
	// statement, and longTotal their sum (prepared.go).
	longData        map[uint32]int64
	longTotal       int64
	connectDeadline time.Time
	// streaming is set when a binlog dump takes the connection over: its
	// reads (semi-sync ACKs) and writes have no timeouts.
	streaming atomic.Bool

	dump atomic.Pointer[DumpCommand]
	// authed is set once the client has logged in (the handler's
	// ConnectionAuthenticated): dump commands are parsed only after, so
	// nothing from a peer that has not logged in is decoded here. connID
	// is the connection's id, set before authed.
	authed atomic.Bool
	connID uint32
	// queryStart is when the statement now running began (monotonicNanos),
	// 0 when idle; read by the disconnect watchdog.
	queryStart atomic.Int64
	cancel     atomic.Pointer[context.CancelFunc]
	closeOnce  sync.Once

	// follow is the reply being continued, if any, and execCursor whether
	// the client's last COM_STMT_EXECUTE asked for a cursor
	// (continued.go).
	follow     *continued
	execCursor bool
	// vc is the library's connection this one serves (manyparams.go).
	vc *mysql.Conn
}

func newConn(c net.Conn, l *Listener) *Conn {
	return &Conn{Conn: c, r: newReader(c), w: c, l: l}
}

// TLS is the connection's TLS, or nil if it is in plain text.
func (c *Conn) TLS() *tls.Conn { return c.secure.Load() }

// Interactive reports the client's CLIENT_INTERACTIVE flag.
func (c *Conn) Interactive() bool { return c.interactive }

// MultiResults reports whether the client takes several results for
// one statement (CLIENT_MULTI_RESULTS, or CLIENT_MULTI_STATEMENTS which
// implies it): a CALL's result sets.
func (c *Conn) MultiResults() bool { return c.multiResults || c.multiStatements.Load() }

// MultiStatements reports whether the client sends several statements
// in one query: CLIENT_MULTI_STATEMENTS at login, then as COM_SET_OPTION
// turns it on or off. The server, which has vitess always hand it a
// query as possibly several statements (so that a CALL can answer with
// several results), refuses a second statement from a client that did
// not ask for them.
func (c *Conn) MultiStatements() bool { return c.multiStatements.Load() }

// MariaDBPort reports whether the connection came in on the listener for
// MariaDB replicas (--mariadb-port).
func (c *Conn) MariaDBPort() bool { return c.l.MariaDB }

// OverLimit reports whether the connections exceed max_connections (this
// one being the administrators' extra one).
func (c *Conn) OverLimit() bool { return c.l.Limit.Over() }

// LoggedIn tells the connection its client has logged in as connection
// id: dump commands are parsed from now on (see authed). It returns the
// connection attributes of the handshake response.
func (c *Conn) LoggedIn(id uint32) []ConnAttr {
	c.connID = id
	c.authed.Store(true)
	return c.attrs
}

// AfterReply runs f once the reply to the current command has been
// written (SHUTDOWN answers its client before the server stops).
func (c *Conn) AfterReply(f func()) { c.afterReply.Store(&f) }

// StatementStarted notes a running statement and how to cancel it.
func (c *Conn) StatementStarted(cancel context.CancelFunc) {
	c.cancel.Store(&cancel)
	c.queryStart.Store(monotonicNanos())
}

// processStart is the origin of monotonicNanos.
var processStart = time.Now()

// monotonicNanos is the time since the process started, on the monotonic
// clock (never 0): a jump of the wall clock does not move it, so the
// watchdog neither waits out a jump back before cancelling a statement
// whose client left, nor cancels early after a jump forward.
func monotonicNanos() int64 { return int64(time.Since(processStart)) + 1 }

// StatementEnded notes that the connection is idle again.
func (c *Conn) StatementEnded() {
	c.queryStart.Store(0)
	c.cancel.Store(nil)
}

// CancelStatement cancels the running statement, if any.
func (c *Conn) CancelStatement() {
	if f := c.cancel.Load(); f != nil {
		(*f)()
	}
}

// Drain ends every connection of l at shutdown: its running statement is
// cancelled and its socket closed, so that its handler returns (a commit
// in flight still finishes: the pipeline is stopped after this). It
// waits, at most limit, until every handler has returned (the handler's
// last act closes its Conn, which leaves conns) and reports how many
// had not.
func (l *Listener) Drain(limit time.Duration) int {
	l.conns.Range(func(k, _ any) bool {
		c := k.(*Conn)
		c.CancelStatement()
		_ = c.Conn.Close() // not c.Close: the handler's own Close says it is done
		return true
	})
	deadline := time.Now().Add(limit)
	for {
		n := 0
		l.conns.Range(func(any, any) bool { n++; return true })
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// replied runs afterReply, if set.
func (c *Conn) replied() {
	if f := c.afterReply.Swap(nil); f != nil {
		(*f)()
	}
}

func (c *Conn) Close() error {
	defer c.replied()
	var err error
	c.closeOnce.Do(func() {
		c.l.conns.Delete(c)
		if c.l.Limit != nil {
			c.l.Limit.active.Add(-1)
		}
		err = c.Conn.Close()
	})
	return err
}

// TakeDump returns (and forgets) the dump command last seen; the dump
// takes the connection over, without timeouts.
func (c *Conn) TakeDump() *DumpCommand {
	c.streaming.Store(true)
	_ = c.Conn.SetDeadline(time.Time{})
	return c.dump.Swap(nil)
}

func (c *Conn) Read(p []byte) (int, error) {
	for len(c.out) == 0 {
		if c.remaining > 0 {
			n := min(len(p), c.remaining)
			n, err := c.r.Read(p[:n])
			c.remaining -= n
			c.counted(n, 0)
			return n, err
		}
		if err := c.nextPacket(); err != nil {
			return 0, err
		}
	}
	n := copy(p, c.out)
	c.out = c.out[n:]
	c.counted(n, 0)
	return n, nil
}

// counted adds to the listener's byte counts.
func (c *Conn) counted(received, sent int) {
	if t := c.l.Traffic; t != nil {
		if received > 0 {
			t.Received.Add(uint64(received))
		}
		if sent > 0 {
			t.Sent.Add(uint64(sent))
		}
	}
}

// Write sends the server's bytes: during the connection phase packet by
// packet (see connPhase), then as they come.
func (c *Conn) Write(p []byte) (int, error) {
	if c.phase.done.Load() {
		if d := c.WriteTimeout.Load(); d > 0 && !c.streaming.Load() {
			_ = c.Conn.SetWriteDeadline(time.Now().Add(time.Duration(d)))
		}
		if c.follow != nil {
			q := c.follow.renumber(p)
			n, err := c.w.Write(q)
			c.counted(0, n)
			if err != nil {
				return min(n, len(p)), err
			}
			return len(p), nil
		}
		n, err := c.w.Write(p)
		c.counted(0, n)
		return n, err
	}
	n, err := c.writeConnectionPhase(p)
	c.counted(0, n)
	return n, err
}

// nextPacket reads the next packet header (and, for a dump command or an
// SSL request, the whole packet) and queues what the reader gets.
func (c *Conn) nextPacket() error {
	if !c.cont {
		c.replied() // vitess reads the next command once it has replied
		if ok, err := c.nextContinued(); ok || err != nil {
			return err
		}
	}
	// A deadline matters only for a read that blocks: wait_timeout before
	// a command's first bytes, net_read_timeout for the rest of a packet
	// not yet buffered (setting one costs a timer update per call).
	timed := c.phase.done.Load() && !c.streaming.Load()
	waiting := timed && !c.cont && c.r.Buffered() < 4
	if waiting {
		c.setReadDeadline(c.WaitTimeout.Load())
	}
	hdr, err := c.r.Peek(4)
	if err != nil {
		if len(hdr) > 0 && errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		if waiting && isTimeout(err) {
			c.disconnectIdle()
		}
		return err
	}
	size := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
	if timed && c.r.Buffered() < 4+size {
		c.setReadDeadline(c.ReadTimeout.Load())
	}
	seq := hdr[3]
	wasCont := c.cont
	c.cont = size == 0xffffff
	if wasCont {
		c.cmdSize += int64(size)
	} else {
		c.cmdSize = int64(size)
	}
	limit := int64(maxPacketBeforeLogin)
	if c.authed.Load() && c.l.MaxPacket != nil {
		limit = c.l.MaxPacket()
	}
	if c.cmdSize > limit {
		c.refuseLargePacket(seq+1, size)
		return errPacketTooLarge
	}
	if !c.phase.done.Load() {
		if c.l.TLS != nil && c.secure.Load() == nil && isSSLRequest(c.r, seq, size) {
			return c.startTLS()
		}
		seq = c.phase.fromClient(seq)
		if seq == 1 && !wasCont {
			// The handshake response: remember CLIENT_INTERACTIVE and the
			// connection attributes (connattrs.go).
			if b, err := c.r.Peek(8); err == nil {
				flags := binary.LittleEndian.Uint32(b[4:])
				c.interactive = flags&clientInteractive != 0
				c.multiStatements.Store(flags&clientMultiStatements != 0)
				c.multiResults = flags&clientMultiResults != 0
			}
			if b, err := c.r.Peek(4 + size); err == nil {
				c.attrs = parseConnAttrs(b[4:])
			}
		}
	}
	if c.authed.Load() && !wasCont && seq == 0 && size > 0 && size < 0xffffff {
		first, err := c.r.Peek(5)
		if err == nil && c.l.CountStatus != nil {
			switch first[4] {
			case comStmtClose:
				c.l.CountStatus(c.connID, "Com_stmt_close")
			case comStmtReset:
				c.l.CountStatus(c.connID, "Com_stmt_reset")
			}
		}
		if err == nil && first[4] == comSetOption && size == 3 {
			if b, err := c.r.Peek(7); err == nil {
				switch binary.LittleEndian.Uint16(b[5:]) {
				case 0:
					c.multiStatements.Store(true)
				case 1:
					c.multiStatements.Store(false)
				}
			}
		}
		if err == nil && first[4] == comStmtClose && size == 5 && c.l.Prepared != nil {
			if b, err := c.r.Peek(9); err == nil {
				c.StmtClosed(binary.LittleEndian.Uint32(b[5:]))
			}
		}
		if err == nil && size >= 5 && (first[4] == comStmtLongData || first[4] == comStmtExecute || first[4] == comStmtReset) {
			if b, err := c.r.Peek(9); err == nil {
				id := binary.LittleEndian.Uint32(b[5:])
				if first[4] == comStmtExecute {
					// Cursor type flags, the bits of a cursor asked for.
					c.execCursor = false
					if size >= 6 {
						f, err := c.r.Peek(10)
						c.execCursor = err == nil && f[9]&0x07 != 0
					}
				}
				if first[4] != comStmtLongData {
					c.longDataUsed(id)
				} else if !c.admitLongData(id, int64(size)-7, limit) {
					c.refuseLargePacket(seq+1, size)
					return errPacketTooLarge
				}
				if p := c.manyParams(id); p != nil && first[4] == comStmtExecute {
					return c.executeManyParams(p, limit) // manyparams.go
				}
			}
		}
		if err == nil && first[4] == comStmtPrepare && c.l.CheckPrepare != nil {
			pkt := make([]byte, 4+size)
			if _, err := io.ReadFull(c.r, pkt); err != nil {
				return err
			}
			q, err := c.l.CheckPrepare(c.connID, string(pkt[5:]))
			if err != nil {
				// Answered here; vitess sees nothing of it.
				_, werr := c.Write(errPacket(1, err))
				return werr
			}
			if q != string(pkt[5:]) && len(q) < 0xffffff-1 {
				pkt = commandPacket(comStmtPrepare, q)
			}
			c.out = pkt
			return nil
		}
		if err == nil && first[4] == comStatistics && size == 1 && c.l.Statistics != nil {
			// COM_STATISTICS (mysqladmin status): its answer is one
			// packet of text, no OK or result set around it.
			if _, err := c.r.Discard(4 + size); err != nil {
				return err
			}
			_, werr := c.Write(packet(1, []byte(c.l.Statistics())))
			return werr
		}
		if err == nil && first[4] == comProcessKill && size == 5 {
			// COM_PROCESS_KILL (deprecated, still sent by PyMySQL's
			// kill() and older clients), which vitess does not know:
			// it is KILL CONNECTION id, answered the same way (OK).
			pkt := make([]byte, 4+size)
			if _, err := io.ReadFull(c.r, pkt); err != nil {
				return err
			}
			c.out = commandPacket(comQuery, fmt.Sprintf("KILL %d", binary.LittleEndian.Uint32(pkt[5:])))
			return nil
		}
		if err == nil && (first[4] == comRefresh && size == 2 || first[4] == comShutdown && size <= 2) {
			// COM_REFRESH (mysqladmin refresh, flush-hosts, flush-threads)
			// and COM_SHUTDOWN (mysqladmin shutdown), which vitess does
			// not know: the FLUSH and SHUTDOWN statements they stand for,
			// answered the same way.
			pkt := make([]byte, 4+size)
			if _, err := io.ReadFull(c.r, pkt); err != nil {
				return err
			}
			if pkt[4] == comShutdown {
				c.out = commandPacket(comQuery, "SHUTDOWN")
			} else {
				c.out = commandPacket(comQuery, refreshStatement(pkt[5]))
			}
			return nil
		}
		if err == nil && (first[4] == comBinlogDump || first[4] == comBinlogDumpGTID) {
			pkt := make([]byte, 4+size)
			if _, err := io.ReadFull(c.r, pkt); err != nil {
				return err
			}
			cmd := parseDumpCommand(pkt[4:])
			c.dump.Store(cmd)
			c.out = canonicalDump()
			return nil
		}
	}
	if seq == hdr[3] {
		c.remaining = 4 + size // header and payload pass as they are
		return nil
	}
	// Renumbered (connection phase): the header is passed from a copy.
	c.hdr = [4]byte{hdr[0], hdr[1], hdr[2], seq}
	if _, err := c.r.Discard(4); err != nil {
		return err
	}
	c.out = c.hdr[:]
	c.remaining = size
	return nil
}

// packet is payload, shorter than 0xffffff bytes, as packet seq: its
// header, then payload.
func packet(seq byte, payload []byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

// commandPacket is a command packet (sequence 0): cmd, then body, the two
// shorter than 0xffffff bytes.
// refreshStatement is the FLUSH statement COM_REFRESH's options stand
// for. REFRESH_SLAVE and REFRESH_MASTER (RESET REPLICA, RESET MASTER)
// become words FLUSH refuses.
func refreshStatement(opts byte) string {
	var names []string
	for _, o := range []struct {
		bit  byte
		name string
	}{{0x01, "PRIVILEGES"}, {0x02, "LOGS"}, {0x04, "TABLES"}, {0x08, "HOSTS"}, {0x10, "STATUS"},
		{0x20, "THREADS"}, {0x40, "RESET_REPLICA"}, {0x80, "RESET_SOURCE"}} {
		if opts&o.bit != 0 {
			names = append(names, o.name)
		}
	}
	if len(names) == 0 {
		// Nothing to flush; FLUSH THREADS has nothing to do either (there
		// is no thread cache) and checks RELOAD, as COM_REFRESH does.
		names = []string{"THREADS"}
	}
	return "FLUSH " + strings.Join(names, ", ")
}

func commandPacket(cmd byte, body string) []byte {
	return packet(0, append([]byte{cmd}, body...))
}

// canonicalDump is the COM_BINLOG_DUMP_GTID packet vitess sees in place of
// any dump command: no flags, empty file name, position 4, no GTID set.
func canonicalDump() []byte {
	payload := []byte{comBinlogDumpGTID, 0, 0}
	payload = binary.LittleEndian.AppendUint32(payload, 0) // server id
	payload = binary.LittleEndian.AppendUint32(payload, 0) // name length
	payload = binary.LittleEndian.AppendUint64(payload, 4) // position
	return packet(0, payload)
}

var errBadDump = errors.New("malformed binlog dump command")

func parseDumpCommand(p []byte) *DumpCommand {
	cmd := &DumpCommand{GTIDKind: p[0] == comBinlogDumpGTID}
	p = p[1:]
	if !cmd.GTIDKind {
		// pos(4) flags(2) server_id(4) file(rest)
		if len(p) < 10 {
			cmd.Err = errBadDump
			return cmd
		}
		cmd.Pos = uint64(binary.LittleEndian.Uint32(p))
		cmd.Flags = binary.LittleEndian.Uint16(p[4:])
		cmd.ServerID = binary.LittleEndian.Uint32(p[6:])
		cmd.File = string(p[10:])
		return cmd
	}
	// flags(2) server_id(4) name_len(4) name pos(8) [data_len(4) data]
	if len(p) < 10 {
		cmd.Err = errBadDump
		return cmd
	}
	cmd.Flags = binary.LittleEndian.Uint16(p)
	cmd.ServerID = binary.LittleEndian.Uint32(p[2:])
	nameLen := int(binary.LittleEndian.Uint32(p[6:]))
	p = p[10:]
	if nameLen < 0 || len(p) < nameLen+8 {
		cmd.Err = errBadDump
		return cmd
	}
	cmd.File = string(p[:nameLen])
	cmd.Pos = binary.LittleEndian.Uint64(p[nameLen:])
	p = p[nameLen+8:]
	// MySQL reads the GTID set whatever the flags say (vitess only when
	// BINLOG_THROUGH_GTID is set, which replicas do not send).
	{
		if len(p) < 4 || len(p)-4 < int(binary.LittleEndian.Uint32(p)) {
			cmd.Err = errBadDump
			return cmd
		}
		set, err := binlog.ParsePreviousGTIDs(p[4 : 4+int(binary.LittleEndian.Uint32(p))])
		if err != nil {
			cmd.Err = errBadDump
			return cmd
		}
		cmd.GTIDs = &set
	}
	return cmd
}

// closedByPeer reports whether the client has closed its side: a
// non-blocking peek at the socket returns 0 bytes at end of stream. Data
// waiting (a pipelined command) or no data means the client is there.
func (c *Conn) closedByPeer() bool {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	_ = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = (n == 0 && err == nil) || err == syscall.ECONNRESET
		return true
	})
	return closed
}

// WatchDisconnects cancels statements that have run for more than a second
// on connections whose client has gone (go-mysql-server's poll does the
// same when it sees a bare TCP connection). cancel is given the
// connection; it returns once stop closes.
func (l *Listener) WatchDisconnects(stop <-chan struct{}, cancel func(*Conn)) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		now := monotonicNanos()
		l.conns.Range(func(k, _ any) bool {
			c := k.(*Conn)
			if st := c.queryStart.Load(); st != 0 && now-st > int64(time.Second) && c.closedByPeer() {
				cancel(c)
			}
			return true
		})
	}
}
