package server

// Connection attributes: the key-value pairs a client sends in its
// handshake response (CLIENT_CONNECT_ATTRS: _client_name, _os, _pid,
// program_name, and the application's own), which MySQL shows in
// performance_schema.session_connect_attrs and
// session_account_connect_attrs. vitess reads them and drops them; the
// wire layer sees the response in plain text (TLS ends below it, see
// wire.go) and keeps them on the connection.

import (
	"encoding/binary"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/lockstepdb/lockstep/internal/binlog"
)

// Capability flags of the handshake response that decide its layout.
const (
	clientConnectWithDB        = 0x00000008
	clientSecureConnection     = 0x00008000
	clientPluginAuth           = 0x00080000
	clientConnectAttrs         = 0x00100000
	clientPluginAuthLenencData = 0x00200000
)

// connAttr is one attribute.
type connAttr struct{ name, value string }

// parseConnAttrs returns the attributes of a HandshakeResponse41 payload
// (without its packet header), or nil if it has none or does not read as
// one.
func parseConnAttrs(p []byte) []connAttr {
	if len(p) < 32 {
		return nil
	}
	caps := binary.LittleEndian.Uint32(p)
	if caps&clientConnectAttrs == 0 {
		return nil
	}
	pos := 32 // capabilities, max packet, character set, filler
	skipNUL := func() bool {
		for pos < len(p) {
			pos++
			if p[pos-1] == 0 {
				return true
			}
		}
		return false
	}
	if !skipNUL() { // user name
		return nil
	}
	switch {
	case caps&clientPluginAuthLenencData != 0:
		n, ok := readLenenc(p, &pos)
		if !ok || pos+int(n) > len(p) {
			return nil
		}
		pos += int(n)
	case caps&clientSecureConnection != 0:
		if pos >= len(p) {
			return nil
		}
		pos += 1 + int(p[pos])
	default:
		if !skipNUL() {
			return nil
		}
	}
	if caps&clientConnectWithDB != 0 && !skipNUL() {
		return nil
	}
	if caps&clientPluginAuth != 0 && !skipNUL() {
		return nil
	}
	total, ok := readLenenc(p, &pos)
	if !ok || pos+int(total) > len(p) {
		return nil
	}
	end := pos + int(total)
	var out []connAttr
	for pos < end {
		k, ok1 := readLenencString(p[:end], &pos)
		v, ok2 := readLenencString(p[:end], &pos)
		if !ok1 || !ok2 {
			return nil
		}
		out = append(out, connAttr{k, v})
	}
	return out
}

// readLenenc reads a length-encoded integer at *pos.
func readLenenc(p []byte, pos *int) (uint64, bool) {
	if *pos > len(p) {
		return 0, false
	}
	v, n, err := binlog.ReadPackedInt(p[*pos:])
	if err != nil {
		return 0, false
	}
	*pos += n
	return v, true
}

// readLenencString reads a length-encoded string at *pos.
func readLenencString(p []byte, pos *int) (string, bool) {
	n, ok := readLenenc(p, pos)
	if !ok || *pos+int(n) > len(p) {
		return "", false
	}
	s := string(p[*pos : *pos+int(n)])
	*pos += int(n)
	return s, true
}

// connAttrsOf are the attributes of the open connections, by id.
type connAttrsOf struct{ m sync.Map } // uint32 -> []connAttr

// registerConnAttrsTables registers
// performance_schema.session_connect_attrs (every connection the reader
// may see) and session_account_connect_attrs (those of its own account),
// in MySQL 8.0's shape.
func (s *Server) registerConnAttrsTables() {
	sch := func() sql.Schema {
		return sql.Schema{
			{Name: "PROCESSLIST_ID", Type: types.Uint32},
			{Name: "ATTR_NAME", Type: types.MustCreateStringWithDefaults(sqltypes.VarChar, 32)},
			{Name: "ATTR_VALUE", Type: types.MustCreateStringWithDefaults(sqltypes.VarChar, 1024), Nullable: true},
			{Name: "ORDINAL_POSITION", Type: types.Int32, Nullable: true},
		}
	}
	rows := func(own bool) func(ctx *sql.Context) ([]sql.Row, error) {
		return func(ctx *sql.Context) ([]sql.Row, error) {
			var out []sql.Row
			me := ctx.Session.Client().User
			for _, p := range ctx.ProcessList.Processes() { // whom the reader may see
				if own && p.User != me {
					continue
				}
				v, ok := s.connAttrs.m.Load(p.Connection)
				if !ok {
					continue
				}
				for i, a := range v.([]connAttr) {
					out = append(out, sql.Row{p.Connection, a.name, a.value, int32(i)})
				}
			}
			return out, nil
		}
	}
	s.sql.AddSystemTable("performance_schema", "session_connect_attrs", sch(), rows(false))
	s.sql.AddSystemTable("performance_schema", "session_account_connect_attrs", sch(), rows(true))
}
