package replica

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/source"
	"github.com/lockstepdb/lockstep/internal/tlscert"
)

// The receiver (the IO thread) keeps one connection to the source: it
// registers, asks for the binlog from the replica's GTID set (or a file and
// position), acknowledges semi-sync events as soon as they are read, before
// they reach the relay log (so a source waiting in AFTER_SYNC waits for one
// network round trip, not for our disk), and hands events to a writer
// goroutine that appends them to the relay log. After an error it
// reconnects every SOURCE_CONNECT_RETRY seconds, resuming from the GTIDs it
// has (executed plus received).

var crcTable = crc32.MakeTable(crc32.IEEE)

// ioError is an error of the IO thread with its MySQL error number.
type ioError struct {
	code  uint16
	msg   string
	fatal bool // stop the thread instead of reconnecting
}

func (e *ioError) Error() string { return e.msg }

type receiver struct {
	r    *Replica
	src  SourceConfig
	stop chan struct{}
	done chan struct{}

	connMu sync.Mutex
	conn   *client.Conn

	state atomic.Value // string: Replica_IO_State

	// Position of the last event read (Source_Log_File,
	// Read_Source_Log_Pos) and counters.
	posMu      sync.Mutex
	sourceFile string
	readPos    uint32
	sourceID   uint32
	sourceUUID string

	Events     atomic.Uint64
	Bytes      atomic.Uint64
	Acks       atomic.Uint64
	Heartbeat  atomic.Int64 // unix nanos of the last heartbeat
	Heartbeats atomic.Uint64
	semi       atomic.Bool
	connected  atomic.Bool
}

func (rc *receiver) setState(s string) { rc.state.Store(s) }

func (rc *receiver) State() string {
	s, _ := rc.state.Load().(string)
	return s
}

// connectErrno is Last_IO_Errno for a failed connection: the source's own
// error number when it refused (1045 for a login it denied, as MySQL
// shows), ours for a TLS set-up error, else 2003.
func connectErrno(err error) uint16 {
	var me *gomysql.MyError
	if errors.As(err, &me) {
		return me.Code
	}
	var re *Error
	if errors.As(err, &re) {
		return re.Code
	}
	return 2003
}

func (rc *receiver) run() {
	defer close(rc.done)
	for attempt := 0; ; attempt++ {
		rc.setState("Connecting to source")
		err := rc.session()
		rc.connected.Store(false)
		select {
		case <-rc.stop:
			return
		default:
		}
		var ie *ioError
		if !errors.As(err, &ie) {
			ie = &ioError{code: connectErrno(err), msg: fmt.Sprintf("error reconnecting to source '%s@%s:%d' - retry-time: %d retries: %d message: %v", rc.src.User, rc.src.Host, rc.src.Port, rc.src.ConnectRetry, attempt+1, err)}
		}
		rc.r.setIOError(ie.code, ie.msg)
		if ie.fatal || uint64(attempt+1) >= rc.src.RetryCount {
			rc.r.logf("replica IO thread stopped: %s", ie.msg)
			rc.r.ioStopped(rc)
			return
		}
		rc.setState("Waiting to reconnect after a failed source event read")
		select {
		case <-rc.stop:
			return
		case <-time.After(time.Duration(rc.src.ConnectRetry) * time.Second):
		}
	}
}

func (rc *receiver) close() {
	close(rc.stop)
	rc.connMu.Lock()
	if rc.conn != nil {
		rc.conn.Close()
	}
	rc.connMu.Unlock()
	<-rc.done
}

// measureClock asks the source for its time and records how far the
// replica's wall clock is from it (ApplyStats.SetClockDiff), taking the
// source's answer as of the middle of the round trip. MySQL's replica
// asks the same at each connection (clock_diff_with_master), to the
// second; a source that cannot say leaves the difference at zero.
func (rc *receiver) measureClock() {
	before := rc.r.now()
	rows, err := rc.query("SELECT UNIX_TIMESTAMP(NOW(6))")
	after := rc.r.now()
	if err != nil || len(rows) != 1 || len(rows[0]) != 1 {
		rc.r.Stats.SetClockDiff(0)
		return
	}
	src, err := strconv.ParseFloat(rows[0][0], 64)
	if err != nil {
		rc.r.Stats.SetClockDiff(0)
		return
	}
	mid := before.Add(after.Sub(before) / 2)
	diff := time.Duration(mid.UnixNano() - int64(src*1e9))
	rc.r.Stats.SetClockDiff(diff)
	if diff >= time.Second || diff <= -time.Second {
		rc.r.logf("this server's clock is %v ahead of its source's (negative: behind); Seconds_Behind_Source takes the difference out", diff.Round(time.Millisecond))
	}
}

func (rc *receiver) query(q string) ([][]string, error) {
	res, err := rc.conn.Execute(q)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	var out [][]string
	for i := range res.Values {
		var row []string
		for j := range res.Values[i] {
			s, _ := res.GetString(i, j)
			row = append(row, s)
		}
		out = append(out, row)
	}
	return out, nil
}

// session runs one connection until it fails or the thread stops.
func (rc *receiver) session() error {
	addr := net.JoinHostPort(rc.src.Host, strconv.Itoa(rc.src.Port))
	var opts []client.Option
	if rc.src.SSL {
		cfg, err := tlscert.Client(rc.src.SSLCA, rc.src.SSLCert, rc.src.SSLKey, rc.src.Host, rc.src.SSLVerify)
		if err != nil {
			return &Error{Code: 2026, Msg: fmt.Sprintf("SSL connection error: %v", err)}
		}
		opts = append(opts, func(c *client.Conn) error {
			c.SetTLSConfig(cfg)
			return nil
		})
	}
	d := net.Dialer{Timeout: 10 * time.Second}
	conn, err := client.ConnectWithDialer(context.Background(), "tcp", addr, rc.src.User, rc.src.Password, "", d.DialContext, opts...)
	if err != nil {
		return err
	}
	rc.connMu.Lock()
	select {
	case <-rc.stop:
		rc.connMu.Unlock()
		conn.Close()
		return nil
	default:
	}
	rc.conn = conn
	rc.connMu.Unlock()
	defer conn.Close()

	maria := strings.Contains(conn.GetServerVersion(), "MariaDB")
	rc.r.sourceLogsCascades.Store(strings.Contains(strings.ToLower(conn.GetServerVersion()), "lockstep"))
	rows, err := rc.query("SELECT @@server_id")
	if err != nil {
		return err
	}
	if len(rows) == 1 {
		id, _ := strconv.ParseUint(rows[0][0], 10, 32)
		if uint32(id) == rc.r.o.ServerID {
			return &ioError{code: 13117, fatal: true, msg: "Fatal error: The replica I/O thread stops because source and replica have equal MySQL server ids; these ids must be different for replication to work (or the --replicate-same-server-id option must be used on replica but this does not always make sense; please check the manual before using it)."}
		}
		rc.posMu.Lock()
		rc.sourceID = uint32(id)
		rc.posMu.Unlock()
	}
	rc.measureClock()
	if !maria {
		if rows, err := rc.query("SELECT @@server_uuid"); err == nil && len(rows) == 1 {
			rc.posMu.Lock()
			rc.sourceUUID = rows[0][0]
			rc.posMu.Unlock()
		}
	}
	period := rc.src.HeartbeatPeriod
	stmts := []string{
		"SET @master_binlog_checksum = 'CRC32', @source_binlog_checksum = 'CRC32'",
		fmt.Sprintf("SET @master_heartbeat_period = %d", int64(period*1e9)),
	}
	if !maria {
		stmts = append(stmts, fmt.Sprintf("SET @source_heartbeat_period = %d", int64(period*1e9)))
		stmts = append(stmts, fmt.Sprintf("SET @replica_uuid = '%s', @slave_uuid = '%s'", rc.r.o.ServerUUID, rc.r.o.ServerUUID))
	}
	semi := false
	if rc.r.SemiSyncEnabled() {
		if rows, err := rc.query("SHOW VARIABLES LIKE 'rpl_semi_sync_%_enabled'"); err == nil {
			for _, r := range rows {
				if (r[0] == "rpl_semi_sync_source_enabled" || r[0] == "rpl_semi_sync_master_enabled") && len(r) > 1 {
					semi = true
				}
			}
		}
		if semi {
			stmts = append(stmts, "SET @rpl_semi_sync_replica = 1, @rpl_semi_sync_slave = 1")
		}
	}
	rc.semi.Store(semi)
	executed := rc.r.gtidsForSource()
	if maria {
		stmts = append(stmts, "SET @mariadb_slave_capability = 4",
			fmt.Sprintf("SET @slave_connect_state = '%s'", MariaConnectState(executed)),
			"SET @slave_gtid_strict_mode = 0", "SET @slave_gtid_ignore_duplicates = 0")
	}
	for _, s := range stmts {
		if _, err := conn.Execute(s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	if err := rc.register(); err != nil {
		return err
	}
	if err := rc.dump(maria, executed); err != nil {
		return err
	}
	rc.setState("Waiting for source to send event")
	rc.connected.Store(true)
	rc.r.clearIOError()
	if rc.r.sourceLogsCascades.Load() {
		// A Lockstep source shows its replicas' apply lag.
		stopReports := make(chan struct{})
		defer close(stopReports)
		go rc.reportApply(conn.Conn.Conn, stopReports)
	}

	// The writer appends to the relay log; this goroutine reads and ACKs.
	events := make(chan []byte, 4096)
	werr := make(chan error, 1)
	go func() { werr <- rc.r.writeRelay(events) }()
	err = rc.read(conn, semi, period, events)
	close(events)
	if e := <-werr; e != nil && err == nil {
		err = e
	}
	return err
}

// reportApply sends apply reports (source.ApplyReport) on w until stop
// closes or a write fails. Each report is one Write of a whole packet,
// so it never interleaves with an ACK, which is one Write too (net.Conn
// serializes concurrent Writes).
func (rc *receiver) reportApply(w io.Writer, stop <-chan struct{}) {
	tick := time.NewTicker(source.ApplyReportInterval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		lag, applying := rc.r.applyLag(rc.r.now())
		pkt := source.ApplyReport{Applying: applying, Lag: lag, Applied: rc.r.Stats.Applied.Load()}.Packet()
		if _, err := w.Write(pkt); err != nil {
			return
		}
	}
}

func (rc *receiver) register() error {
	host, _ := os.Hostname()
	if len(host) > 60 {
		host = host[:60]
	}
	user := rc.src.User
	b := make([]byte, 4, 64)
	b = append(b, 0x15) // COM_REGISTER_SLAVE
	b = binary.LittleEndian.AppendUint32(b, rc.r.o.ServerID)
	b = append(b, byte(len(host)))
	b = append(b, host...)
	b = append(b, byte(len(user)))
	b = append(b, user...)
	b = append(b, 0) // password
	b = binary.LittleEndian.AppendUint16(b, uint16(rc.r.o.Port))
	b = binary.LittleEndian.AppendUint32(b, 0) // rank
	b = binary.LittleEndian.AppendUint32(b, 0) // source id
	rc.conn.ResetSequence()
	if err := rc.conn.WritePacket(b); err != nil {
		return err
	}
	pkt, err := rc.conn.ReadPacket()
	if err != nil {
		return err
	}
	if len(pkt) > 0 && pkt[0] == 0xff {
		return packetError(pkt)
	}
	return nil
}

func (rc *receiver) dump(maria bool, executed binlog.GTIDSet) error {
	b := make([]byte, 4, 128)
	if rc.src.AutoPosition && !maria {
		data := executed.Encode()
		b = append(b, 0x1e) // COM_BINLOG_DUMP_GTID
		b = binary.LittleEndian.AppendUint16(b, 0x04)
		b = binary.LittleEndian.AppendUint32(b, rc.r.o.ServerID)
		b = binary.LittleEndian.AppendUint32(b, 0) // file name length
		b = binary.LittleEndian.AppendUint64(b, 4)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(data)))
		b = append(b, data...)
	} else {
		file, pos := "", uint64(4)
		if !rc.src.AutoPosition {
			file, pos = rc.r.resumePosition(rc.src)
		}
		b = append(b, 0x12) // COM_BINLOG_DUMP
		b = binary.LittleEndian.AppendUint32(b, uint32(pos))
		b = binary.LittleEndian.AppendUint16(b, 0)
		b = binary.LittleEndian.AppendUint32(b, rc.r.o.ServerID)
		b = append(b, file...)
	}
	rc.conn.ResetSequence()
	return rc.conn.WritePacket(b)
}

// packetError turns an ERR packet into an ioError (1236 and the fatal
// source errors stop the thread, as in MySQL).
func packetError(pkt []byte) error {
	if len(pkt) < 3 {
		return &ioError{code: 2013, msg: "malformed error packet from source"}
	}
	code := binary.LittleEndian.Uint16(pkt[1:])
	msg := pkt[3:]
	if len(msg) > 6 && msg[0] == '#' {
		msg = msg[6:]
	}
	fatal := code == 1236 || code == 1045 || code == 1227 || code == 1044
	if code == 1236 {
		return &ioError{code: 13114, fatal: true, msg: fmt.Sprintf("Got fatal error 1236 from source when reading data from binary log: '%s'", msg)}
	}
	return &ioError{code: code, fatal: fatal, msg: string(msg)}
}

func (rc *receiver) read(conn *client.Conn, semi bool, period float64, events chan<- []byte) error {
	timeout := time.Duration(rc.r.NetTimeout()) * time.Second
	if hb := time.Duration(period * 2 * float64(time.Second)); period > 0 && hb+5*time.Second > timeout {
		timeout = hb + 5*time.Second
	}
	checked := false
	for {
		_ = conn.SetReadDeadline(time.Now().Add(timeout))
		pkt, err := conn.ReadPacket()
		if err != nil {
			select {
			case <-rc.stop:
				return nil
			default:
			}
			return &ioError{code: 2013, msg: fmt.Sprintf("Lost connection to source during binlog dump: %v", err)}
		}
		if len(pkt) == 0 {
			continue
		}
		switch pkt[0] {
		case 0xff:
			return packetError(pkt)
		case 0xfe:
			if len(pkt) < 9 {
				return &ioError{code: 2013, msg: "source ended the binlog stream"}
			}
		}
		data := pkt[1:]
		needAck := false
		if semi && len(data) >= 2 && data[0] == 0xef {
			needAck = data[1] == 1
			data = data[2:]
		}
		if len(data) < binlog.HeaderSize+binlog.ChecksumSize {
			return &ioError{code: 13122, msg: fmt.Sprintf("Relay log write failure: event of %d bytes is too short", len(data))}
		}
		h := binlog.ParseHeader(data)
		if int(h.Size) != len(data) {
			return &ioError{code: 13122, fatal: true, msg: fmt.Sprintf("event size %d does not match packet (%d bytes)", h.Size, len(data))}
		}
		if h.Type == binlog.FormatDescriptionEvent {
			alg, err := binlog.FormatChecksum(data)
			if err != nil {
				return &ioError{code: 13122, fatal: true, msg: "malformed format description event from source"}
			}
			if alg != 1 {
				return &ioError{code: 13122, fatal: true, msg: "the source writes binlog events without checksums (binlog_checksum=NONE); Lockstep replicas need binlog_checksum=CRC32"}
			}
			checked = true
		}
		if checked {
			n := len(data) - binlog.ChecksumSize
			if crc32.Update(0, crcTable, data[:n]) != binary.LittleEndian.Uint32(data[n:]) {
				return &ioError{code: 1743, fatal: true, msg: fmt.Sprintf("Replication event checksum verification failed while reading from network (event type %d at source position %d).", h.Type, h.LogPos)}
			}
		}
		rc.Events.Add(1)
		rc.Bytes.Add(uint64(len(data)))
		if h.Type == binlog.RotateEvent {
			if _, file, err := binlog.ParseRotate(data[binlog.HeaderSize : len(data)-binlog.ChecksumSize]); err == nil {
				rc.posMu.Lock()
				rc.sourceFile = file
				rc.posMu.Unlock()
			}
		}
		if h.LogPos != 0 {
			rc.posMu.Lock()
			rc.readPos = h.LogPos
			rc.posMu.Unlock()
		}
		if needAck {
			// Acknowledge before the relay log sees the event.
			rc.posMu.Lock()
			file := rc.sourceFile
			rc.posMu.Unlock()
			ack := make([]byte, 4, 4+9+len(file))
			ack = append(ack, 0xef)
			ack = binary.LittleEndian.AppendUint64(ack, uint64(h.LogPos))
			ack = append(ack, file...)
			conn.ResetSequence()
			if err := conn.WritePacket(ack); err != nil {
				return &ioError{code: 2013, msg: fmt.Sprintf("failed to send semi-sync ACK: %v", err)}
			}
			rc.Acks.Add(1)
		}
		if h.Type == binlog.HeartbeatEvent {
			rc.Heartbeat.Store(time.Now().UnixNano())
			rc.Heartbeats.Add(1)
			continue
		}
		select {
		case events <- data:
		case <-rc.stop:
			return nil
		}
	}
}

// Position returns Source_Log_File and Read_Source_Log_Pos.
func (rc *receiver) Position() (string, uint32) {
	rc.posMu.Lock()
	defer rc.posMu.Unlock()
	return rc.sourceFile, rc.readPos
}
