package protocol

import (
	"encoding/binary"
	"math"
	"strconv"
	"testing"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
)

// manyParamsCases are parameters as a client sends them in a
// COM_STMT_EXECUTE (type, flags, value bytes) and the value the library
// binds for each.
var manyParamsCases = []struct {
	typ, flags byte
	wire       []byte
	want       sqltypes.Value
}{
	{0x01, 0, []byte{0xfe}, sqltypes.NewInt64(-2)},
	{0x01, 0x80, []byte{0xfe}, sqltypes.NewUint64(254)},
	{0x02, 0, []byte{0xfe, 0xff}, sqltypes.NewInt64(-2)},
	{0x0d, 0, []byte{0xe8, 0x07}, sqltypes.NewInt64(2024)},
	{0x03, 0, []byte{0xfe, 0xff, 0xff, 0xff}, sqltypes.NewInt64(-2)},
	{0x03, 0x80, []byte{0xfe, 0xff, 0xff, 0xff}, sqltypes.NewUint64(math.MaxUint32 - 1)},
	{0x08, 0, binary.LittleEndian.AppendUint64(nil, uint64(math.MaxUint64-1)), sqltypes.NewInt64(-2)},
	{0x08, 0x80, binary.LittleEndian.AppendUint64(nil, math.MaxUint64), sqltypes.NewUint64(math.MaxUint64)},
	{0x04, 0, binary.LittleEndian.AppendUint32(nil, math.Float32bits(1.5)), sqltypes.NewFloat64(1.5)},
	{0x05, 0, binary.LittleEndian.AppendUint64(nil, math.Float64bits(-2.25)), sqltypes.NewFloat64(-2.25)},
	{0x0a, 0, []byte{4, 0xe8, 0x07, 2, 29}, sqltypes.NewVarChar("2024-2-29")},
	{0x0c, 0, []byte{7, 0xe8, 0x07, 2, 29, 13, 5, 9}, sqltypes.NewVarChar("2024-2-29 13:5:9")},
	{0x0c, 0, []byte{11, 0xe8, 0x07, 2, 29, 13, 5, 9, 0x40, 0xe2, 0x01, 0}, sqltypes.NewVarChar("2024-2-29 13:5:9.123456")},
	{0x0c, 0, []byte{0}, sqltypes.NewVarChar(" ")},
	{0x0b, 0, []byte{8, 1, 1, 0, 0, 0, 2, 3, 4}, sqltypes.NewVarChar("-26:3:4")},
	{0x0b, 0, []byte{12, 0, 0, 0, 0, 0, 2, 3, 4, 5, 0, 0, 0}, sqltypes.NewVarChar("2:3:4.5")},
	{0x0b, 0, []byte{0}, sqltypes.NewVarChar("00:00:00")},
	{0xfd, 0, []byte{3, 'a', 0, 'c'}, sqltypes.MakeTrusted(sqltypes.VarBinary, []byte{'a', 0, 'c'})},
	{0xfe, 0, []byte{0}, sqltypes.MakeTrusted(sqltypes.VarBinary, []byte{})},
	{0xfc, 0, append([]byte{0xfc, 0x2c, 0x01}, make([]byte, 300)...), sqltypes.MakeTrusted(sqltypes.VarBinary, make([]byte, 300))},
	{0xf6, 0, []byte{4, '-', '1', '.', '5'}, sqltypes.MakeTrusted(sqltypes.VarBinary, []byte("-1.5"))},
}

// param is one parameter of an execution: NULL, or one of the cases.
type param struct {
	null bool
	c    int // index in manyParamsCases
}

// params are the cases' parameters with a NULL at position null.
func params(null int) []param {
	var ps []param
	for i := range manyParamsCases {
		if i == null {
			ps = append(ps, param{null: true})
		}
		ps = append(ps, param{c: i})
	}
	if null >= len(manyParamsCases) {
		ps = append(ps, param{null: true})
	}
	return ps
}

// executeCommand is a COM_STMT_EXECUTE of statement 7 with ps, their
// types sent or not.
func executeCommand(ps []param, types bool) []byte {
	cmd := []byte{comStmtExecute, 7, 0, 0, 0, 0, 1, 0, 0, 0}
	bitmap := make([]byte, (len(ps)+7)/8)
	for i, p := range ps {
		if p.null {
			bitmap[i/8] |= 1 << (i % 8)
		}
	}
	cmd = append(cmd, bitmap...)
	if !types {
		cmd = append(cmd, 0)
	} else {
		cmd = append(cmd, 1)
		for _, p := range ps {
			if p.null {
				cmd = append(cmd, 0x06, 0)
			} else {
				cmd = append(cmd, manyParamsCases[p.c].typ, manyParamsCases[p.c].flags)
			}
		}
	}
	for _, p := range ps {
		if !p.null {
			cmd = append(cmd, manyParamsCases[p.c].wire...)
		}
	}
	return cmd
}

// TestBindManyParams: an execution read here binds every parameter as
// the library would, NULLs and long data too, and hands the library the
// command without them; a command cut inside its NULL bitmap or a value
// is an error, never a panic.
func TestBindManyParams(t *testing.T) {
	check := func(p *mysql.PrepareData, ps []param, skip string) {
		t.Helper()
		for i, pp := range ps {
			name := "v" + strconv.Itoa(i+1)
			if name == skip {
				continue
			}
			want := sqltypes.NULL
			if !pp.null {
				want = manyParamsCases[pp.c].want
			}
			got, err := sqltypes.BindVariableToValue(p.BindVars[name])
			if err != nil || got.Type() != want.Type() || got.ToString() != want.ToString() {
				t.Errorf("parameter %d: %v (%v), want %v", i+1, got, err, want)
			}
		}
	}
	for _, null := range []int{0, 5, len(manyParamsCases)} {
		ps := params(null)
		p := &mysql.PrepareData{ParamsCount: uint16(len(ps)), ParamsType: make([]int32, len(ps))}
		cmd := executeCommand(ps, true)
		out, err := bindManyParams(p, cmd)
		if err != nil {
			t.Fatalf("NULL at %d: %v", null, err)
		}
		if want := packet(0, cmd[:10]); string(out) != string(want) {
			t.Fatalf("handed on %x, want %x", out, want)
		}
		check(p, ps, "")
		// The next execution sends no types (they are kept), and its
		// second parameter came as long data.
		p.BindVars = map[string]*querypb.BindVariable{"v2": sqltypes.BytesBindVariable([]byte("long"))}
		// Its value is not in the command (its NULL bit is still there).
		again := executeCommand(ps, false)
		again = append(again[:len(again)-len(valueBytes(ps[1:]))], valueBytes(ps[2:])...)
		if _, err := bindManyParams(p, again); err != nil {
			t.Fatalf("NULL at %d, without types: %v", null, err)
		}
		if v := p.BindVars["v2"]; string(v.Value) != "long" {
			t.Errorf("long data replaced by %v", v)
		}
		check(p, ps, "v2")
	}
	ps := params(3)
	cmd := executeCommand(ps, true)
	bitmapEnd := 10 + (len(ps)+7)/8
	for cut := range len(cmd) {
		p := &mysql.PrepareData{ParamsCount: uint16(len(ps)), ParamsType: make([]int32, len(ps))}
		_, err := bindManyParams(p, cmd[:cut])
		// Cut after the bitmap, before the types: read as the library
		// reads it, every parameter of the (unset) type NULL.
		if (cut < bitmapEnd || cut > bitmapEnd) && err == nil {
			t.Errorf("a command cut at %d of %d was read", cut, len(cmd))
		}
	}
}

// valueBytes are the values of ps as they are sent.
func valueBytes(ps []param) []byte {
	var b []byte
	for _, p := range ps {
		if !p.null {
			b = append(b, manyParamsCases[p.c].wire...)
		}
	}
	return b
}

// FuzzBindManyParams: no command makes the reader panic.
func FuzzBindManyParams(f *testing.F) {
	f.Add(executeCommand(params(2), true))
	f.Add(executeCommand(params(4), false))
	f.Fuzz(func(t *testing.T, cmd []byte) {
		n := len(manyParamsCases) + 1
		p := &mysql.PrepareData{ParamsCount: uint16(n), ParamsType: make([]int32, n)}
		bindManyParams(p, cmd)
	})
}
