// Package source serves the binlog to replicas and binlog consumers over
// the MySQL replication protocol (COM_BINLOG_DUMP and COM_BINLOG_DUMP_GTID),
// with semi-synchronous acknowledgements.
//
// A dump connection reads binlog files directly, up to the end the commit
// pipeline has published (binlog.Log.Published), and never takes a lock the
// commit path holds: a slow or stuck replica cannot slow commits, except
// through semi-sync waits, which are bounded by
// rpl_semi_sync_source_timeout.
//
// The package knows nothing of SQL or of the server's session machinery:
// the server resolves the replica's session variables (@source_heartbeat_period
// and friends) into a Request and hands over the connection.
package source

import (
	"log/slog"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/lockstepdb/lockstep/internal/binlog"
)

// Source serves dump connections.
type Source struct {
	log      *binlog.Log
	serverID uint32
	uuid     binlog.UUID
	executed func() binlog.GTIDSet
	Semi     *SemiSync
	logger   *slog.Logger
	// DomainID is gtid_domain_id: the MariaDB GTID domain our transactions
	// are given on MariaDB-flavour connections. Set before serving.
	DomainID uint32

	mu         sync.Mutex
	registered map[uint32]Registration // COM_REGISTER_SLAVE, by connection id
	dumps      map[*replica]struct{}
	closed     bool
}

// Registration is what COM_REGISTER_SLAVE told us.
type Registration struct {
	Host string
	Port uint16
}

// New returns a Source for log. executed returns the server's executed
// GTID set.
func New(log *binlog.Log, serverID uint32, uuid binlog.UUID, executed func() binlog.GTIDSet, semi *SemiSync, logger *slog.Logger) *Source {
	return &Source{
		log: log, serverID: serverID, uuid: uuid, executed: executed, Semi: semi, logger: logger,
		registered: map[uint32]Registration{}, dumps: map[*replica]struct{}{},
	}
}

// Register records a COM_REGISTER_SLAVE for connection connID.
func (s *Source) Register(connID uint32, r Registration) {
	s.mu.Lock()
	s.registered[connID] = r
	s.mu.Unlock()
}

// Forget drops what is known of connection connID (it closed).
func (s *Source) Forget(connID uint32) {
	s.mu.Lock()
	delete(s.registered, connID)
	s.mu.Unlock()
}

// replica is one dump connection.
type replica struct {
	req     Request
	reg     Registration
	conn    net.Conn
	started time.Time
	acked   binlog.Position // guarded by SemiSync.mu

	sentMu sync.Mutex
	sent   binlog.Position
	// offered is the end of the binlog range being written to the
	// replica, set before the first byte of it is: the replica cannot
	// hold anything past it, so a semi-sync ACK past it is clamped to it.
	offered binlog.Position

	apply applyState // the replica's last apply report
}

func (r *replica) setSent(p binlog.Position) {
	r.sentMu.Lock()
	r.sent = p
	r.sentMu.Unlock()
}

// offer records that the binlog up to p is about to be written to the
// replica.
func (r *replica) offer(p binlog.Position) {
	r.sentMu.Lock()
	if r.offered.Less(p) {
		r.offered = p
	}
	r.sentMu.Unlock()
}

// clampAck limits an acknowledged position to what the replica can have
// received: a replica cannot acknowledge events it was never sent.
func (r *replica) clampAck(p binlog.Position) binlog.Position {
	r.sentMu.Lock()
	defer r.sentMu.Unlock()
	if r.offered.Less(p) {
		return r.offered
	}
	return p
}

// ReplicaInfo describes a connected dump for SHOW REPLICAS and metrics.
type ReplicaInfo struct {
	ConnID   uint32
	ServerID uint32
	Host     string
	Port     uint16
	UUID     string
	Flavor   Flavor
	SemiSync bool
	Started  time.Time
	Sent     binlog.Position
	Acked    binlog.Position
	// Apply is the replica's last apply report, if ApplyKnown (a Lockstep
	// replica that reported within the last few seconds).
	Apply      ApplyReport
	ApplyKnown bool
}

// Replicas lists the dump connections, by server id.
func (s *Source) Replicas() []ReplicaInfo {
	s.mu.Lock()
	rs := make([]*replica, 0, len(s.dumps))
	for r := range s.dumps {
		rs = append(rs, r)
	}
	s.mu.Unlock()
	out := make([]ReplicaInfo, 0, len(rs))
	for _, r := range rs {
		r.sentMu.Lock()
		sent := r.sent
		r.sentMu.Unlock()
		s.Semi.mu.Lock()
		acked := r.acked
		s.Semi.mu.Unlock()
		out = append(out, ReplicaInfo{
			ConnID: r.req.ConnID, ServerID: r.req.ServerID, Host: r.reg.Host, Port: r.reg.Port,
			UUID: r.req.UUID, Flavor: r.req.Flavor, SemiSync: r.req.SemiSync,
			Started: r.started, Sent: sent, Acked: acked,
		})
		out[len(out)-1].Apply, out[len(out)-1].ApplyKnown = r.apply.get(time.Now())
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].ServerID < out[j].ServerID || (out[i].ServerID == out[j].ServerID && out[i].ConnID < out[j].ConnID)
	})
	return out
}

// BytesBehind is how many binlog bytes lie between p and the published
// end (0 when p is at or past it).
func (s *Source) BytesBehind(p binlog.Position) int64 {
	end, _, _ := s.log.Published()
	if !p.Less(end) {
		return 0
	}
	if p.File == end.File {
		return end.Pos - p.Pos
	}
	var n int64
	for _, f := range s.log.Files() {
		switch {
		case f.Num == p.File:
			n += max(f.Size-p.Pos, 0)
		case f.Num > p.File && f.Num < end.File:
			n += f.Size
		case f.Num == end.File:
			n += end.Pos
		}
	}
	return n
}

// Close ends every dump and every semi-sync wait.
func (s *Source) Close() {
	s.mu.Lock()
	s.closed = true
	for r := range s.dumps {
		r.conn.Close()
	}
	s.mu.Unlock()
	s.Semi.Close()
}
