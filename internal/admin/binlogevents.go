package admin

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"regexp"
	"strconv"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"

	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// SHOW BINLOG EVENTS [IN 'file'] [FROM pos] [LIMIT [offset,] count], as
// MySQL answers it: one row per event of one binlog file (the first if
// none is named), from pos (the start of an event) on, with MySQL's
// columns and its wording of each event (the Info column). HA tools
// (orchestrator among them) read binlog coordinates this way.
//
// The file is read from disk event by event, each checked as replay
// checks it, and only as far as the binlog has published (what replicas
// get): past that, a group may still be on its way to the disk. It needs
// REPLICATION SLAVE, as in MySQL 8.

var showBinlogEvents = regexp.MustCompile(`(?is)^\s*show\s+binlog\s+events(?:\s+in\s+'([^']*)')?(?:\s+from\s+(\d+))?(?:\s+limit\s+(?:(\d+)\s*,\s*)?(\d+))?\s*;?\s*$`)

// erShowBinlogEvents is ER_ERROR_WHEN_EXECUTING_COMMAND.
const erShowBinlogEvents = 1220

func showBinlogEventsError(why string) error {
	return mysql.NewSQLError(erShowBinlogEvents, "HY000", "Error when executing command SHOW BINLOG EVENTS: %s", why)
}

// binlogEvents answers a SHOW BINLOG EVENTS statement m matched.
func (a *Admin) binlogEvents(c *mysql.Conn, m []string) (*sqltypes.Result, error) {
	if err := a.SQL.Require(c, sqlengine.NeedReplicationSlave); err != nil {
		return nil, err
	}
	files := a.Binlog.Files()
	if len(files) == 0 {
		return nil, showBinlogEventsError("Could not find target log")
	}
	f := files[0]
	if m[1] != "" {
		found := false
		for _, x := range files {
			if x.Name == m[1] {
				f, found = x, true
				break
			}
		}
		if !found {
			return nil, showBinlogEventsError("Could not find target log")
		}
	}
	from := int64(binlog.FileHeaderSize)
	if m[2] != "" {
		p, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil {
			return nil, showBinlogEventsError("Wrong offset or I/O error")
		}
		from = max(p, from)
	}
	offset, count := int64(0), int64(-1)
	if m[4] != "" {
		count, _ = strconv.ParseInt(m[4], 10, 64)
		if m[3] != "" {
			offset, _ = strconv.ParseInt(m[3], 10, 64)
		}
	}
	// Up to what the binlog has published: the whole file, unless it is
	// the one being written.
	end := f.Size
	if pub, _, _ := a.Binlog.Published(); pub.File == f.Num {
		end = pub.Pos
	} else if pub.File < f.Num {
		end = 0
	}
	res := &sqltypes.Result{Fields: []*querypb.Field{
		{Name: "Log_name", Type: sqltypes.VarChar, Charset: 255},
		{Name: "Pos", Type: sqltypes.Uint64, Charset: 63},
		{Name: "Event_type", Type: sqltypes.VarChar, Charset: 255},
		{Name: "Server_id", Type: sqltypes.Uint32, Charset: 63},
		{Name: "End_log_pos", Type: sqltypes.Uint64, Charset: 63},
		{Name: "Info", Type: sqltypes.VarChar, Charset: 255},
	}}
	if from >= end || count == 0 {
		if from > end {
			return nil, showBinlogEventsError("Wrong offset or I/O error")
		}
		return res, nil
	}
	file, err := a.Binlog.OpenFile(f.Num)
	if err != nil {
		return nil, showBinlogEventsError("Could not open log file")
	}
	defer file.Close()
	var hdr [binlog.HeaderSize]byte
	var buf []byte
	for pos, n := from, int64(0); pos < end && (count < 0 || n < offset+count); n++ {
		if _, err := file.ReadAt(hdr[:], pos); err != nil {
			return nil, showBinlogEventsError("Wrong offset or I/O error")
		}
		size := int64(binary.LittleEndian.Uint32(hdr[9:]))
		if size < binlog.HeaderSize+binlog.ChecksumSize || pos+size > end {
			return nil, showBinlogEventsError("Wrong offset or I/O error")
		}
		if int64(cap(buf)) < size {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		if _, err := file.ReadAt(buf, pos); err != nil && err != io.EOF {
			return nil, showBinlogEventsError("Wrong offset or I/O error")
		}
		ev, err := binlog.NextEvent(buf)
		if err != nil {
			return nil, showBinlogEventsError("Wrong offset or I/O error")
		}
		name, info := describeEvent(ev)
		if n >= offset {
			res.Rows = append(res.Rows, []sqltypes.Value{
				sqltypes.NewVarChar(f.Name), sqltypes.NewUint64(uint64(pos)), sqltypes.NewVarChar(name),
				sqltypes.NewUint32(ev.ServerID), sqltypes.NewUint64(uint64(ev.LogPos)), sqltypes.NewVarChar(info),
			})
		}
		pos += size
	}
	return res, nil
}

// eventNames are MySQL's names of the event types Lockstep writes.
var eventNames = map[byte]string{
	binlog.QueryEvent: "Query", binlog.StopEvent: "Stop", binlog.RotateEvent: "Rotate",
	binlog.FormatDescriptionEvent: "Format_desc", binlog.XIDEvent: "Xid", binlog.TableMapEvent: "Table_map",
	binlog.RowsQueryEvent: "Rows_query", binlog.WriteRowsEventV2: "Write_rows", binlog.UpdateRowsEventV2: "Update_rows",
	binlog.DeleteRowsEventV2: "Delete_rows", binlog.GTIDEvent: "Gtid", binlog.AnonymousGTIDEvent: "Anonymous_Gtid",
	binlog.PreviousGTIDsEvent: "Previous_gtids",
}

// describeEvent is an event's type and Info as MySQL shows them.
func describeEvent(ev binlog.Event) (string, string) {
	name, ok := eventNames[ev.Type]
	if !ok {
		name = fmt.Sprintf("Unknown (%d)", ev.Type)
	}
	body := ev.Body()
	switch ev.Type {
	case binlog.FormatDescriptionEvent:
		if len(body) >= 52 {
			ver := string(bytes.TrimRight(body[2:52], "\x00"))
			return name, fmt.Sprintf("Server ver: %s, Binlog ver: %d", ver, binary.LittleEndian.Uint16(body))
		}
	case binlog.PreviousGTIDsEvent:
		if g, err := binlog.ParsePreviousGTIDs(body); err == nil {
			return name, g.String()
		}
	case binlog.GTIDEvent:
		if g, err := binlog.ParseGTID(body); err == nil {
			return name, fmt.Sprintf("SET @@SESSION.GTID_NEXT= '%s:%d'", g.SID, g.GNO)
		}
	case binlog.AnonymousGTIDEvent:
		return name, "SET @@SESSION.GTID_NEXT= 'ANONYMOUS'"
	case binlog.QueryEvent:
		if q, err := binlog.ParseQuery(body); err == nil {
			if q.DB == "" || q.Query == "BEGIN" {
				return name, q.Query
			}
			return name, fmt.Sprintf("use `%s`; %s", q.DB, q.Query)
		}
	case binlog.XIDEvent:
		if len(body) >= 8 {
			return name, fmt.Sprintf("COMMIT /* xid=%d */", binary.LittleEndian.Uint64(body))
		}
	case binlog.RotateEvent:
		if pos, file, err := binlog.ParseRotate(body); err == nil {
			return name, fmt.Sprintf("%s;pos=%d", file, pos)
		}
	case binlog.TableMapEvent:
		if m, err := binlog.ParseTableMap(body); err == nil {
			return name, fmt.Sprintf("table_id: %d (%s.%s)", m.TableID, m.DB, m.Table)
		}
	case binlog.WriteRowsEventV2, binlog.UpdateRowsEventV2, binlog.DeleteRowsEventV2:
		if r, err := binlog.ParseRows(ev.Type, body); err == nil {
			info := fmt.Sprintf("table_id: %d", r.TableID)
			if r.Flags&binlog.RowsFlagStmtEnd != 0 {
				info += " flags: STMT_END_F"
			}
			return name, info
		}
	case binlog.RowsQueryEvent:
		if payload, ok := binlog.CatalogPayload(body); ok {
			return name, fmt.Sprintf("# %s(%d bytes: the catalog change of the next statement)", binlog.CatalogPrefix, len(payload))
		}
		if len(body) > 0 {
			return name, "# " + string(body[1:])
		}
	}
	return name, ""
}
