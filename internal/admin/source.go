package admin

import (
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"

	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// The replication source's side: semi-sync's variables and status,
// gtid_purged, SHOW REPLICAS.

// SemiSyncVariables are the rpl_semi_sync_source_* system variables and
// their rpl_semi_sync_master_* aliases, which SET GLOBAL keeps equal.
func (a *Admin) SemiSyncVariables() []sql.SystemVariable {
	global := sql.GetMysqlScope(sql.SystemVariableScope_Global)
	semi := a.Source.Semi
	var vars []sql.SystemVariable
	add := sqlengine.VariableAdder(&vars)
	b2i := func(b bool) int8 {
		if b {
			return 1
		}
		return 0
	}
	boolVar := func(name string, get func() bool, set func(bool)) *sql.MysqlSystemVariable {
		return &sql.MysqlSystemVariable{
			Name: name, Scope: global, Dynamic: true, Type: types.NewSystemBoolType(name), Default: b2i(get()),
			NotifyChanged: func(_ *sql.Context, _ sql.SystemVariableScope, v sql.SystemVarValue) error {
				set(sqlengine.IntValue(v.Val) != 0)
				return nil
			},
		}
	}
	intVar := func(name string, lo, hi int64, get func() int64, set func(int64)) *sql.MysqlSystemVariable {
		return &sql.MysqlSystemVariable{
			Name: name, Scope: global, Dynamic: true, Type: types.NewSystemIntType(name, lo, hi, false), Default: get(),
			NotifyChanged: func(_ *sql.Context, _ sql.SystemVariableScope, v sql.SystemVarValue) error {
				set(sqlengine.IntValue(v.Val))
				return nil
			},
		}
	}
	add(boolVar("rpl_semi_sync_source_enabled", semi.Enabled, semi.SetEnabled), "rpl_semi_sync_master_enabled")
	add(intVar("rpl_semi_sync_source_timeout", 0, 1<<32-1, semi.Timeout, semi.SetTimeout), "rpl_semi_sync_master_timeout")
	add(intVar("rpl_semi_sync_source_wait_for_replica_count", 1, 65535, semi.WaitForReplicaCount, semi.SetWaitForReplicaCount), "rpl_semi_sync_master_wait_for_slave_count")
	add(boolVar("rpl_semi_sync_source_wait_no_replica", semi.WaitNoReplica, semi.SetWaitNoReplica), "rpl_semi_sync_master_wait_no_slave")
	waitPoint := func() string {
		if semi.AfterCommit() {
			return "AFTER_COMMIT"
		}
		return "AFTER_SYNC"
	}
	add(&sql.MysqlSystemVariable{
		Name: "rpl_semi_sync_source_wait_point", Scope: global, Dynamic: true,
		Type:    types.NewSystemEnumType("rpl_semi_sync_source_wait_point", "AFTER_SYNC", "AFTER_COMMIT"),
		Default: waitPoint(),
		NotifyChanged: func(_ *sql.Context, _ sql.SystemVariableScope, v sql.SystemVarValue) error {
			semi.SetAfterCommit(strings.EqualFold(fmt.Sprint(v.Val), "AFTER_COMMIT"))
			return nil
		},
	}, "rpl_semi_sync_master_wait_point")
	add(&sql.MysqlSystemVariable{
		Name: "gtid_domain_id", Scope: global, Dynamic: false,
		Type: types.NewSystemIntType("gtid_domain_id", 0, 1<<32-1, false), Default: a.GTIDDomainID,
	})
	add(&sql.MysqlSystemVariable{
		Name: "gtid_strict_mode", Scope: global, Dynamic: true,
		Type: types.NewSystemBoolType("gtid_strict_mode"), Default: int8(0),
	})
	add(&sql.MysqlSystemVariable{
		Name: "binlog_row_value_options", Scope: global, Dynamic: false,
		Type: types.NewSystemStringType("binlog_row_value_options"), Default: "",
	})
	add(&sql.MysqlSystemVariable{
		Name: "gtid_purged", Scope: global, Dynamic: false,
		Type: types.NewSystemStringType("gtid_purged"), Default: "",
		ValueFunction: func() (any, error) { return a.gtidPurged(), nil },
	})
	return vars
}

// gtidPurged is the set of GTIDs no longer in any binlog file: the
// Previous_gtids of the oldest file.
func (a *Admin) gtidPurged() string {
	set, err := a.Binlog.PreviousGTIDs(a.Binlog.Files()[0].Num)
	if err != nil {
		a.Log.Warn("reading gtid_purged", "err", err)
		return ""
	}
	return set.String()
}

// SemiSyncStatus adds Rpl_semi_sync_source_* (and _master_) status
// variables.
func (a *Admin) SemiSyncStatus(live map[string]func() any) {
	semi := a.Source.Semi
	st := &semi.Stats
	onOff := func(b bool) any {
		if b {
			return "ON"
		}
		return "OFF"
	}
	vals := map[string]func() any{
		"status":                func() any { return onOff(semi.Status()) },
		"clients":               func() any { return uint64(semi.Clients()) },
		"yes_tx":                func() any { return st.YesTx.Load() },
		"no_tx":                 func() any { return st.NoTx.Load() },
		"wait_sessions":         func() any { return uint64(max(st.WaitSessions.Load(), 0)) },
		"tx_avg_wait_time":      func() any { return semi.AvgWaitMicros() },
		"tx_wait_time":          func() any { return st.WaitNanos.Load() / 1000 },
		"tx_waits":              func() any { return st.Waits.Load() },
		"timefunc_failures":     func() any { return uint64(0) },
		"no_times":              func() any { return st.Timeouts.Load() },
		"received_acks":         func() any { return st.Acks.Load() },
		"wait_pos_backtraverse": func() any { return uint64(0) },
	}
	for k, f := range vals {
		live["Rpl_semi_sync_source_"+k] = f
		live["Rpl_semi_sync_master_"+k] = f
	}
}

// showReplicas answers SHOW REPLICAS / SHOW SLAVE HOSTS.
func (a *Admin) showReplicas(legacy bool) *sqltypes.Result {
	names := []string{"Server_Id", "Host", "Port", "Source_Id", "Replica_UUID"}
	if legacy {
		names = []string{"Server_id", "Host", "Port", "Master_id", "Slave_UUID"}
	}
	typesOf := []querypb.Type{sqltypes.Uint32, sqltypes.VarChar, sqltypes.Uint32, sqltypes.Uint32, sqltypes.VarChar}
	res := &sqltypes.Result{}
	for i, n := range names {
		res.Fields = append(res.Fields, &querypb.Field{Name: n, Type: typesOf[i], Charset: 255})
	}
	for _, r := range a.Source.Replicas() {
		res.Rows = append(res.Rows, []sqltypes.Value{
			sqltypes.NewUint32(r.ServerID),
			sqltypes.NewVarChar(r.Host),
			sqltypes.NewUint32(uint32(r.Port)),
			sqltypes.NewUint32(a.ServerID),
			sqltypes.NewVarChar(r.UUID),
		})
	}
	return res
}
