package server

import (
	"fmt"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/dashboard"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// dashboardKeep is how many one-second samples the dashboard keeps.
const dashboardKeep = 300

// topology is the dashboard's view of this server's replication links.
func (s *Server) topology() dashboard.Topology {
	_, ro, _ := sql.SystemVariables.GetGlobal("read_only")
	t := dashboard.Topology{
		ServerID:     s.cfg.ServerID,
		UUID:         s.uuid.String(),
		Version:      binlog.ServerVersion,
		Address:      s.addr,
		ReadOnly:     sqlengine.IntValue(ro) != 0,
		GTIDExecuted: s.gtidVisible().String(),
	}
	if st, ok := s.repl.Status(time.Now()); ok {
		link := &dashboard.SourceLink{
			Host: st.Source.Host, Port: st.Source.Port, IORunning: st.IORunning, SQLRunning: st.SQLRunning,
			IOState: st.IOState, SQLState: st.SQLState, SecondsBehind: st.SecondsBehind,
			RetrievedGTIDs: st.RetrievedGTIDs, ExecutedGTIDs: st.ExecutedGTIDs,
		}
		switch {
		case st.SQLError != "":
			link.LastError = fmt.Sprintf("SQL thread error %d: %s", st.SQLErrno, st.SQLError)
		case st.IOError != "":
			link.LastError = fmt.Sprintf("IO thread error %d: %s", st.IOErrno, st.IOError)
		}
		t.Source = link
	}
	for _, r := range s.source.Replicas() {
		link := dashboard.ReplicaLink{
			ServerID: r.ServerID, Host: r.Host, Port: int(r.Port), Flavor: r.Flavor.String(), SemiSync: r.SemiSync,
			Sent:             fmt.Sprintf("binlog.%06d:%d", r.Sent.File, r.Sent.Pos),
			BehindBytes:      s.source.BytesBehind(r.Sent),
			ConnectedSeconds: time.Since(r.Started).Seconds(),
		}
		if r.ApplyKnown {
			link.Applying = "no"
			if r.Apply.Applying {
				link.Applying, link.ApplyLagSeconds = "yes", r.Apply.Lag.Seconds()
			}
		}
		if r.SemiSync && r.Acked.File != 0 {
			link.Acknowledged = fmt.Sprintf("binlog.%06d:%d", r.Acked.File, r.Acked.Pos)
		}
		t.Replicas = append(t.Replicas, link)
	}
	return t
}
