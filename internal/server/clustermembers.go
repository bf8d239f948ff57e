package server

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/cluster"
)

// The cluster's members as MySQL Group Replication shows them:
// performance_schema.replication_group_members and
// replication_group_member_stats, one row per member, from what each
// member last announced (cluster.Announcement). A member not heard from
// for three announcement periods is UNREACHABLE; the others are ONLINE,
// or RECOVERING while they follow no leader, catch up after finding one,
// or still join (a raft learner, which does not vote: losing a voter
// before a joining member is ONLINE can cost the cluster its quorum).
// Every member is a PRIMARY (multi-primary mode). On a single server
// both tables are empty, as on a MySQL server without Group Replication.
//
// The queue of a member is the log entries the leader has committed and
// it has not applied (as of its last announcement). The other
// statistics are each member's own since it started: transactions
// checked are those it applied (certification runs on the leader, and
// every member applies the same certified log), conflicts detected are
// its own sessions' transactions refused by certification, rows
// validating are the keys its certification index holds.
// TRANSACTIONS_COMMITTED_ALL_MEMBERS is the cluster's GTIDs up to the
// lowest number every member has announced as applied (empty until every
// member has been heard from).

const groupChannel = "group_replication_applier"

// memberState is MEMBER_STATE of m as this member knows it.
func (m *member) memberState(x cluster.Member) string {
	switch {
	case !m.Reachable(x):
		return "UNREACHABLE"
	case x.Synced && !x.Learner:
		return "ONLINE"
	}
	return "RECOVERING"
}

// clientAddresses lists where clients reach the members heard from
// (wsrep_incoming_addresses), host:port.
func (m *member) clientAddresses() []string {
	var out []string
	for _, x := range m.Members() {
		if m.Reachable(x) && x.Service[serviceHost] != "" {
			out = append(out, net.JoinHostPort(x.Service[serviceHost], x.Service[servicePort]))
		}
	}
	return out
}

// committedEverywhere is the GTID set every member has applied ("" until
// all have announced).
func (m *member) committedEverywhere(members []cluster.Member) string {
	low := uint64(0)
	for i, x := range members {
		if x.Heard.IsZero() {
			return ""
		}
		if i == 0 || x.AppliedGNO < low {
			low = x.AppliedGNO
		}
	}
	if low == 0 {
		return ""
	}
	return fmt.Sprintf("%s:1-%d", m.sid, low)
}

func (s *Server) registerGroupTables() {
	str := func(n int64) sql.Type { return types.MustCreateStringWithDefaults(sqltypes.Char, n) }
	text := types.LongText
	col := func(name string, t sql.Type, nullable bool) *sql.Column {
		return &sql.Column{Name: name, Type: t, Nullable: nullable}
	}
	version, _, _ := strings.Cut(binlog.ServerVersion, "-")
	s.sql.AddSystemTable("performance_schema", "replication_group_members", sql.Schema{
		col("CHANNEL_NAME", str(64), false),
		col("MEMBER_ID", str(36), false),
		col("MEMBER_HOST", str(255), false),
		col("MEMBER_PORT", types.Int32, true),
		col("MEMBER_STATE", str(64), false),
		col("MEMBER_ROLE", str(64), false),
		col("MEMBER_VERSION", str(64), false),
		col("MEMBER_COMMUNICATION_STACK", str(64), false),
	}, func(*sql.Context) ([]sql.Row, error) {
		m := s.member
		if m == nil {
			return nil, nil
		}
		var rows []sql.Row
		for _, x := range m.Members() {
			host, port := x.Service[serviceHost], any(nil)
			if host == "" {
				host, _, _ = net.SplitHostPort(x.Addr)
			}
			if p, err := strconv.Atoi(x.Service[servicePort]); err == nil {
				port = int32(p)
			}
			role := "PRIMARY" // every data member takes writes
			if x.Service[serviceRole] == "witness" {
				role = "WITNESS" // votes and keeps the log; no data, no clients
			}
			rows = append(rows, sql.Row{groupChannel, x.Service[serviceUUID], host, port,
				m.memberState(x), role, version, "raft"})
		}
		return rows, nil
	})
	s.sql.AddSystemTable("performance_schema", "replication_group_member_stats", sql.Schema{
		col("CHANNEL_NAME", str(64), false),
		col("VIEW_ID", types.MustCreateStringWithDefaults(sqltypes.VarChar, 512), false),
		col("MEMBER_ID", str(36), false),
		col("COUNT_TRANSACTIONS_IN_QUEUE", types.Uint64, false),
		col("COUNT_TRANSACTIONS_CHECKED", types.Uint64, false),
		col("COUNT_CONFLICTS_DETECTED", types.Uint64, false),
		col("COUNT_TRANSACTIONS_ROWS_VALIDATING", types.Uint64, false),
		col("TRANSACTIONS_COMMITTED_ALL_MEMBERS", text, false),
		col("LAST_CONFLICT_FREE_TRANSACTION", text, false),
		col("COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE", types.Uint64, false),
		col("COUNT_TRANSACTIONS_REMOTE_APPLIED", types.Uint64, false),
		col("COUNT_TRANSACTIONS_LOCAL_PROPOSED", types.Uint64, false),
		col("COUNT_TRANSACTIONS_LOCAL_ROLLBACK", types.Uint64, false),
	}, func(*sql.Context) ([]sql.Row, error) {
		m := s.member
		if m == nil {
			return nil, nil
		}
		members := m.Members()
		all := m.committedEverywhere(members)
		lead := m.LeaderCommit()
		var rows []sql.Row
		for _, x := range members {
			if x.Heard.IsZero() {
				continue // nothing known of it
			}
			queue := lead - min(x.Applied, lead)
			applied := x.AppliedGNO - x.StartGNO
			last := ""
			if x.AppliedGNO > 0 {
				last = fmt.Sprintf("%s:%d", m.sid, x.AppliedGNO)
			}
			remote := applied - min(applied, x.Committed)
			rows = append(rows, sql.Row{groupChannel, strconv.FormatUint(x.Term, 10), x.Service[serviceUUID],
				queue, applied, x.Conflicts, x.CertKeys, all, last, queue, remote,
				x.Committed + x.Conflicts, x.Conflicts})
		}
		return rows, nil
	})
}
