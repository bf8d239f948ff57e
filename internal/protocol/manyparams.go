package protocol

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
)

// Executions of statements with more placeholders than the library reads.
//
// MySQL allows 65,535 placeholders. The library (vitess) counts them in
// 16 bits, and also sizes a COM_STMT_EXECUTE's NULL bitmap as
// (count+7)/8 in 16 bits: from 65,529 placeholders on that wraps to 0,
// and reading the first parameter indexes an empty bitmap (a panic that
// drops the connection). The library skips every parameter already bound
// (by COM_STMT_SEND_LONG_DATA, in its own use). So for such a statement
// the execution is read here: each parameter is decoded as the library
// decodes it (parseStmtArgs) and bound in the library's PrepareData, and
// the library is handed the command without its parameters, which it
// then reads as: an empty bitmap, no new types, every parameter bound.
//
// Invariants: the library's PrepareData is touched only from the
// connection's own goroutine (the library's reads call nextPacket); a
// parameter the client sent as long data is bound already and absent
// from the command, as in the protocol.

// vitessMaxParams is the most placeholders the library reads itself.
const vitessMaxParams = 65528

// Attach gives the connection the library's connection it serves, whose
// prepared statements an execution with many parameters is bound in.
func (c *Conn) Attach(vc *mysql.Conn) { c.vc = vc }

// manyParams reports the library's statement id, if it has more
// placeholders than the library reads.
func (c *Conn) manyParams(id uint32) *mysql.PrepareData {
	if c.vc == nil {
		return nil
	}
	p := c.vc.PrepareData[id]
	if p == nil || int(p.ParamsCount) <= vitessMaxParams {
		return nil
	}
	return p
}

// executeManyParams reads a COM_STMT_EXECUTE of statement p and hands
// the library the command without its parameters, bound in p; a
// malformed one is answered here.
func (c *Conn) executeManyParams(p *mysql.PrepareData, limit int64) error {
	cmd, err := c.readCommand(limit)
	c.cont = false
	if err != nil {
		return err
	}
	pkt, err := bindManyParams(p, cmd)
	if err != nil {
		clear(p.BindVars)
		_, werr := c.Write(errPacket(1, err))
		return werr
	}
	c.out = pkt
	return nil
}

// readCommand reads the whole command starting at the next packet (its
// parts joined, headers dropped), at most limit bytes.
func (c *Conn) readCommand(limit int64) ([]byte, error) {
	var cmd []byte
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
			return nil, err
		}
		size := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
		if int64(len(cmd)+size) > limit {
			c.refuseLargePacket(hdr[3]+1, size)
			return nil, errPacketTooLarge
		}
		at := len(cmd)
		cmd = append(cmd, make([]byte, size)...)
		if _, err := io.ReadFull(c.r, cmd[at:]); err != nil {
			return nil, err
		}
		if size < 0xffffff {
			return cmd, nil
		}
	}
}

// bindManyParams reads the COM_STMT_EXECUTE cmd of statement p, binds its
// parameters in p, and returns the command the library is to read
// instead (a whole packet).
func bindManyParams(p *mysql.PrepareData, cmd []byte) ([]byte, error) {
	malformed := func(what string) error {
		return mysql.NewSQLError(mysql.CRMalformedPacket, mysql.SSUnknownSQLState, "reading %s failed", what)
	}
	const head = 1 + 4 + 1 + 4 // command, statement id, cursor flags, iteration count
	if len(cmd) < head {
		return nil, malformed("the statement's execution")
	}
	n := int(p.ParamsCount)
	pos := head
	bitmap := cmd[pos:min(len(cmd), pos+(n+7)/8)]
	if len(bitmap) < (n+7)/8 {
		return nil, malformed("NULL-bitmap")
	}
	pos += len(bitmap)
	if pos < len(cmd) && cmd[pos] == 1 {
		pos++
		if len(cmd)-pos < 2*n {
			return nil, malformed("parameter types")
		}
		for i := range n {
			t, err := sqltypes.MySQLToType(int64(cmd[pos]), int64(cmd[pos+1])>>2)
			if err != nil {
				return nil, mysql.NewSQLError(mysql.CRMalformedPacket, mysql.SSUnknownSQLState, "MySQLToType(%v,%v) failed: %v", cmd[pos], cmd[pos+1], err)
			}
			p.ParamsType[i] = int32(t)
			pos += 2
		}
	} else if pos < len(cmd) {
		pos++
	}
	if p.BindVars == nil {
		p.BindVars = make(map[string]*querypb.BindVariable, n)
	}
	for i := range n {
		name := "v" + strconv.Itoa(i+1)
		if v := p.BindVars[name]; v != nil {
			continue // sent as long data
		}
		var val sqltypes.Value
		if bitmap[i/8]&(1<<(i%8)) != 0 {
			val = sqltypes.NULL
		} else {
			var ok bool
			if val, pos, ok = decodeParam(cmd, querypb.Type(p.ParamsType[i]), pos); !ok {
				return nil, mysql.NewSQLError(mysql.CRMalformedPacket, mysql.SSUnknownSQLState, "decoding parameter value failed: %v", p.ParamsType[i])
			}
		}
		p.BindVars[name] = sqltypes.ValueBindVariable(val)
	}
	return packet(0, cmd[:head]), nil
}

// decodeParam decodes a parameter of type typ at data[pos:] as the library
// does (vitess's parseStmtArgs): the same values, of the same types, so
// that the statement runs as it would with fewer parameters.
func decodeParam(data []byte, typ querypb.Type, pos int) (sqltypes.Value, int, bool) {
	need := func(n int) bool { return pos >= 0 && len(data)-pos >= n }
	u16 := func() uint64 { v := binary.LittleEndian.Uint16(data[pos:]); pos += 2; return uint64(v) }
	u32 := func() uint64 { v := binary.LittleEndian.Uint32(data[pos:]); pos += 4; return uint64(v) }
	u64 := func() uint64 { v := binary.LittleEndian.Uint64(data[pos:]); pos += 8; return v }
	b := func() int { v := data[pos]; pos++; return int(v) }
	switch typ {
	case sqltypes.Null:
		return sqltypes.NULL, pos, true
	case sqltypes.Int8, sqltypes.Uint8:
		if !need(1) {
			return sqltypes.NULL, 0, false
		}
		v := b()
		if typ == sqltypes.Int8 {
			return sqltypes.NewInt64(int64(int8(v))), pos, true
		}
		return sqltypes.NewUint64(uint64(v)), pos, true
	case sqltypes.Uint16, sqltypes.Int16, sqltypes.Year:
		if !need(2) {
			return sqltypes.NULL, 0, false
		}
		v := u16()
		if typ == sqltypes.Uint16 {
			return sqltypes.NewUint64(v), pos, true
		}
		return sqltypes.NewInt64(int64(int16(v))), pos, true
	case sqltypes.Uint24, sqltypes.Uint32, sqltypes.Int24, sqltypes.Int32, sqltypes.Float32:
		if !need(4) {
			return sqltypes.NULL, 0, false
		}
		v := u32()
		switch typ {
		case sqltypes.Float32:
			return sqltypes.NewFloat64(float64(math.Float32frombits(uint32(v)))), pos, true
		case sqltypes.Int24, sqltypes.Int32:
			return sqltypes.NewInt64(int64(int32(v))), pos, true
		}
		return sqltypes.NewUint64(v), pos, true
	case sqltypes.Uint64, sqltypes.Int64, sqltypes.Float64:
		if !need(8) {
			return sqltypes.NULL, 0, false
		}
		v := u64()
		switch typ {
		case sqltypes.Float64:
			return sqltypes.NewFloat64(math.Float64frombits(v)), pos, true
		case sqltypes.Int64:
			return sqltypes.NewInt64(int64(v)), pos, true
		}
		return sqltypes.NewUint64(v), pos, true
	case sqltypes.Timestamp, sqltypes.Date, sqltypes.Datetime:
		if !need(1) {
			return sqltypes.NULL, 0, false
		}
		size := b()
		if size == 0 {
			return sqltypes.NewVarChar(" "), pos, true
		}
		if size != 4 && size != 7 && size != 11 || !need(size) {
			return sqltypes.NULL, 0, false
		}
		s := fmt.Sprintf("%d-%d-%d", u16(), b(), b())
		if size >= 7 {
			s += fmt.Sprintf(" %d:%d:%d", b(), b(), b())
		}
		if size == 11 {
			s += "." + strconv.FormatUint(u32(), 10)
		}
		return sqltypes.NewVarChar(s), pos, true
	case sqltypes.Time:
		if !need(1) {
			return sqltypes.NULL, 0, false
		}
		size := b()
		if size == 0 {
			return sqltypes.NewVarChar("00:00:00"), pos, true
		}
		if size != 8 && size != 12 || !need(size) {
			return sqltypes.NULL, 0, false
		}
		s := ""
		if b() == 1 {
			s = "-"
		}
		days := uint32(u32())
		hours := uint32(b()) + days*24
		s += fmt.Sprintf("%d:%d:%d", hours, b(), b())
		if size == 12 {
			s += "." + strconv.FormatUint(u32(), 10)
		}
		return sqltypes.NewVarChar(s), pos, true
	case sqltypes.Decimal, sqltypes.Text, sqltypes.Blob, sqltypes.VarChar, sqltypes.Char, sqltypes.VarBinary,
		sqltypes.Bit, sqltypes.Enum, sqltypes.Set, sqltypes.Geometry, sqltypes.Binary, sqltypes.TypeJSON:
		n, w, ok := lenEnc(data, pos)
		if !ok || uint64(len(data)-pos-w) < n {
			return sqltypes.NULL, 0, false
		}
		pos += w
		val := append([]byte(nil), data[pos:pos+int(n)]...)
		return sqltypes.MakeTrusted(sqltypes.VarBinary, val), pos + int(n), true
	}
	return sqltypes.NULL, pos, false
}

// lenEnc reads a length-encoded integer at data[pos:]: its value and width.
func lenEnc(data []byte, pos int) (uint64, int, bool) {
	if pos >= len(data) {
		return 0, 0, false
	}
	w := 1
	switch data[pos] {
	case 0xfc:
		w = 3
	case 0xfd:
		w = 4
	case 0xfe:
		w = 9
	case 0xfb, 0xff:
		return 0, 0, false
	}
	if len(data)-pos < w {
		return 0, 0, false
	}
	if w == 1 {
		return uint64(data[pos]), 1, true
	}
	var v uint64
	for i := w - 1; i >= 1; i-- {
		v = v<<8 | uint64(data[pos+i])
	}
	return v, w, true
}
