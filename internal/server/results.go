package server

// Results as MySQL sends them. go-mysql-server's results differ from
// MySQL's in a few ways a client sees; each is put right here, on the way
// out, for text and binary (prepared) results alike:
//
//   - DO runs as the SELECT of its expressions (sqlengine/do.go): its rows
//     are dropped and the client gets one OK packet.
//   - go-mysql-server writes every TIME with six fractional digits, where
//     MySQL writes those of the column or expression (none for a TIME
//     column, the only kind Lockstep stores): an all-zero fraction is
//     dropped ('12:34:56', not '12:34:56.000000').
//   - In a text result a DOUBLE or FLOAT is written as MySQL writes it
//     (sqlengine.AppendDouble: 8385959 and 1e15, not 8.385959e+06 and
//     1e+15; a FLOAT with six significant digits).
//   - In a binary result a zero date goes with length 0, as MySQL sends
//     it: vitess writes its year, month and day as zeros, which clients
//     read as a real date (go-sql-driver makes -0001-11-30 of it).
//   - A column's table is named as the statement wrote it, capitals kept
//     (sqlengine/tablecase.go).
//   - Column definitions carry what MySQL's do for BIT (the binary
//     character set, UNSIGNED), YEAR (UNSIGNED ZEROFILL) and FLOAT and
//     DOUBLE without a fixed scale (31 decimals, NOT_FIXED_DEC): drivers
//     choose the Go, Python or Java type of a column from them.
//   - Every reply's status flags say whether the session's sql_mode has
//     NO_BACKSLASH_ESCAPES, read as the reply goes (so the reply to the
//     SET that changes it says it): drivers choose how they escape the
//     strings they put into statements by it (sqlengine/clienttext.go).
//   - Text goes in the session's character_set_results, '?' standing for
//     a character that set cannot hold, as MySQL sends it (go-mysql-server
//     makes it utf8mb4 and failed the statement on such a character;
//     sqlengine/resultscharset.go).

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/dolthub/go-mysql-server/sql/encodings"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
	"google.golang.org/protobuf/proto"
)

// textResults shapes the text results of query's first statement.
func textResults(e *sqlengine.Engine, c *mysql.Conn, query string, cb mysql.ResultSpoolFn) mysql.ResultSpoolFn {
	if sqlengine.IsDo(query) {
		sent := false
		return func(_ *sqltypes.Result, more bool) error {
			if sent {
				return nil
			}
			sent = true
			modeStatus(e, c)
			return cb(&sqltypes.Result{}, more)
		}
	}
	return func(r *sqltypes.Result, more bool) error {
		modeStatus(e, c)
		fixDeclaredDecimals(e, c.ConnectionID, r, false)
		fixValues(r, false)
		fixTableNames(e, c.ConnectionID, r)
		if r != nil {
			fixFieldTypes(r.Fields)
			r.Info = okInfo(r)
		}
		transcode(e, c.ConnectionID, r)
		return cb(r, more)
	}
}

// transcode puts r's text, utf8mb4 from go-mysql-server, in connection
// connID's character_set_results when that is another set: values of
// text columns and the columns' names, '?' for what the set cannot hold;
// every non-binary column says the set (as its default collation).
func transcode(e *sqlengine.Engine, connID uint32, r *sqltypes.Result) {
	if r == nil || len(r.Fields) == 0 {
		return
	}
	cs, ok := e.ResultsCharset(connID)
	if !ok {
		return
	}
	enc := cs.Encoder()
	name := func(s string) string {
		if out, changed := encodeText(enc, []byte(s)); changed {
			return string(out)
		}
		return s
	}
	var cols []int
	for i, f := range r.Fields {
		if f.Charset == binaryCollation {
			continue
		}
		f.Charset = uint32(cs.DefaultCollation())
		f.Name, f.OrgName, f.Table, f.OrgTable, f.Database = name(f.Name), name(f.OrgName), name(f.Table), name(f.OrgTable), name(f.Database)
		switch f.Type {
		case sqltypes.VarChar, sqltypes.Char, sqltypes.Text, sqltypes.Enum, sqltypes.Set:
			cols = append(cols, i)
		}
	}
	for _, row := range r.Rows {
		for _, i := range cols {
			if i < len(row) && !row[i].IsNull() {
				if out, changed := encodeText(enc, row[i].Raw()); changed {
					row[i] = sqltypes.MakeTrusted(row[i].Type(), out)
				}
			}
		}
	}
}

// encodeText is b, UTF-8, in enc's character set, each character enc
// cannot hold a '?', and true if that changed anything. Bytes that are
// not UTF-8 pass as they are: statements are read as UTF-8, so such bytes
// in a result came from a client that sent its own set's bytes (a latin1
// 'caf\xe9'), which go back to it unchanged, as before.
func encodeText(enc encodings.Encoder, b []byte) ([]byte, bool) {
	i := 0
	for i < len(b) && b[i] < utf8.RuneSelf {
		i++
	}
	if i == len(b) {
		return b, false
	}
	out := append(make([]byte, 0, len(b)), b[:i]...)
	for i < len(b) {
		c := b[i]
		if c < utf8.RuneSelf {
			out = append(out, c)
			i++
			continue
		}
		_, n := utf8.DecodeRune(b[i:])
		if n == 1 { // not UTF-8
			out = append(out, c)
			i++
			continue
		}
		if e, ok := enc.EncodeRune(b[i : i+n]); ok {
			out = append(out, e...)
		} else {
			out = append(out, '?')
		}
		i += n
	}
	return out, !bytes.Equal(out, b)
}

// binaryCollation is the binary character set's collation id.
const binaryCollation = 63

// okInfo is the info string an OK packet can carry. MySQL's clients read
// it as a length-prefixed string; vitess writes it after a fixed '#'
// byte, which they read as a length of 35. A shorter info ("Statement
// prepared", after PREPARE) then runs past the end of the packet, and
// libmysqlclient and libmariadb fail the statement with 2027 "Malformed
// packet": it is dropped. A longer one ("Rows matched: 1  Changed: 1
// Warnings: 0", after UPDATE) reads as its first 35 bytes, NUL-ended
// where the packet ends, so the mysql and mariadb clients show it whole.
func okInfo(r *sqltypes.Result) string {
	if len(r.Fields) > 0 || len(r.Info) < 35 {
		return ""
	}
	return r.Info
}

// binaryResults shapes the results of an execution of a prepared
// statement (a prepared DO's are then dropped: okOnly, prepareddo.go).
func binaryResults(e *sqlengine.Engine, c *mysql.Conn, cb func(*sqltypes.Result) error) func(*sqltypes.Result) error {
	return func(r *sqltypes.Result) error {
		modeStatus(e, c)
		fixDeclaredDecimals(e, c.ConnectionID, r, true)
		fixValues(r, true)
		fixTableNames(e, c.ConnectionID, r)
		if r != nil {
			fixFieldTypes(r.Fields)
		}
		transcode(e, c.ConnectionID, r)
		return cb(r)
	}
}

// fixDeclaredDecimals gives the columns of FLOAT(M,D) and DOUBLE(M,D)
// columns, and of TIME columns, MySQL's decimals (D, the TIME's digits),
// and in a text result writes the float values with D decimals
// ('13.3700') and a TIME(6) column's values with six ('10:00:00.000000'),
// as MySQL does (sqlengine/coldecl.go). A TIME of whole seconds is
// written without a fraction (fixValues).
func fixDeclaredDecimals(e *sqlengine.Engine, connID uint32, r *sqltypes.Result, binary bool) {
	if r == nil {
		return
	}
	var floats, scales []int
	for i, f := range r.Fields {
		isFloat := f.Type == sqltypes.Float32 || f.Type == sqltypes.Float64
		if (!isFloat && f.Type != sqltypes.Time) || f.OrgTable == "" || f.OrgName == "" {
			continue
		}
		dec, ok := e.ColumnDecimals(connID, f.Database, f.OrgTable, f.OrgName)
		if !ok {
			continue
		}
		c := proto.Clone(f).(*querypb.Field)
		c.Decimals = uint32(dec)
		r.Fields[i] = c
		if isFloat {
			floats, scales = append(floats, i), append(scales, dec)
		}
	}
	if binary || floats == nil {
		return
	}
	for _, row := range r.Rows {
		for k, i := range floats {
			if i >= len(row) || row[i].IsNull() {
				continue
			}
			bits := 64
			if row[i].Type() == sqltypes.Float32 {
				bits = 32
			}
			f, err := strconv.ParseFloat(string(row[i].Raw()), bits)
			if err != nil {
				continue
			}
			row[i] = sqltypes.MakeTrusted(row[i].Type(), strconv.AppendFloat(nil, f, 'f', scales[k], bits))
		}
	}
}

// modeStatus sets SERVER_STATUS_NO_BACKSLASH_ESCAPES in c's replies as the
// session's sql_mode has it now.
func modeStatus(e *sqlengine.Engine, c *mysql.Conn) {
	if e.NoBackslashEscapesOn(c.ConnectionID) {
		c.StatusFlags |= sqlengine.ServerStatusNoBackslashEscapes
	} else {
		c.StatusFlags &^= sqlengine.ServerStatusNoBackslashEscapes
	}
}

// fixTableNames names result columns' tables as the statement wrote them.
func fixTableNames(e *sqlengine.Engine, connID uint32, r *sqltypes.Result) {
	if r == nil || len(r.Fields) == 0 {
		return
	}
	names := e.ResultTableNames(connID)
	if names == nil {
		return
	}
	for i, f := range r.Fields {
		if n, ok := names[f.Table]; ok && n != f.Table {
			c := proto.Clone(f).(*querypb.Field)
			c.Table = n
			r.Fields[i] = c
		}
	}
}

// MySQL's column flags and the decimals of a floating-point value without
// a fixed scale.
const (
	flagUnsigned = 32
	flagZerofill = 64
	flagBinary   = 128
	notFixedDec  = 31
)

// fixFieldTypes gives column definitions MySQL's character set, flags
// and decimals for BIT, YEAR, FLOAT and DOUBLE.
func fixFieldTypes(fields []*querypb.Field) {
	for i, f := range fields {
		var c *querypb.Field
		switch {
		case f.Type == sqltypes.Bit && (f.Charset != 63 || f.Flags&(flagUnsigned|flagBinary) != flagUnsigned|flagBinary):
			c = proto.Clone(f).(*querypb.Field)
			c.Charset, c.Flags = 63, c.Flags|flagUnsigned|flagBinary
		case f.Type == sqltypes.Year && f.Flags&(flagUnsigned|flagZerofill) != flagUnsigned|flagZerofill:
			c = proto.Clone(f).(*querypb.Field)
			c.Flags |= flagUnsigned | flagZerofill
		case (f.Type == sqltypes.Float32 || f.Type == sqltypes.Float64) && f.Decimals == 0:
			c = proto.Clone(f).(*querypb.Field)
			c.Decimals = notFixedDec
		}
		if c != nil {
			fields[i] = c
		}
	}
}

// fixValues writes TIME values with MySQL's fraction (a TIME(n) column's
// with n digits) and, in a text
// result, doubles in MySQL's form, and in a binary result zero dates.
func fixValues(r *sqltypes.Result, binary bool) {
	if r == nil {
		return
	}
	var dates, times, doubles []int
	for i, f := range r.Fields {
		switch f.Type {
		case sqltypes.Date, sqltypes.Datetime, sqltypes.Timestamp:
			if binary {
				dates = append(dates, i)
			}
		case sqltypes.Time:
			if f.Decimals != 6 { // a TIME(6) column keeps its six digits
				times = append(times, i)
			}
		case sqltypes.Float64, sqltypes.Float32:
			if !binary && (f.Decimals == 0 || f.Decimals == notFixedDec) {
				doubles = append(doubles, i)
			}
		}
	}
	if dates == nil && times == nil && doubles == nil {
		return
	}
	for _, row := range r.Rows {
		for _, i := range doubles {
			if i < len(row) && !row[i].IsNull() {
				row[i] = mysqlDouble(row[i])
			}
		}
		for _, i := range dates {
			if i < len(row) && zeroDate(row[i].Raw()) {
				row[i] = sqltypes.MakeTrusted(row[i].Type(), nil)
			}
		}
		for _, i := range times {
			if i >= len(row) {
				continue
			}
			raw := row[i].Raw()
			if d := r.Fields[i].Decimals; d >= 1 && d <= 5 {
				// A TIME(1) to TIME(5) column: its values are rounded to
				// its digits when stored, so the rest are zeros.
				if dot := bytes.IndexByte(raw, '.'); dot >= 0 && len(raw)-dot-1 == 6 {
					row[i] = sqltypes.MakeTrusted(sqltypes.Time, raw[:dot+1+int(d)])
				}
				continue
			}
			if b, ok := bytes.CutSuffix(raw, []byte(".000000")); ok {
				row[i] = sqltypes.MakeTrusted(sqltypes.Time, b)
			}
		}
	}
}

// mysqlDouble is v, a DOUBLE or FLOAT as go-mysql-server wrote it, as
// MySQL writes it; v if it does not read as a number.
func mysqlDouble(v sqltypes.Value) sqltypes.Value {
	single := v.Type() == sqltypes.Float32
	bits := 64
	if single {
		bits = 32
	}
	f, err := strconv.ParseFloat(string(v.Raw()), bits)
	if err != nil {
		return v
	}
	return sqltypes.MakeTrusted(v.Type(), sqlengine.AppendDouble(nil, f, single))
}

// zeroDate reports whether a DATE, DATETIME or TIMESTAMP text is the zero
// date (every digit 0).
func zeroDate(b []byte) bool {
	if len(b) < 10 {
		return false
	}
	for _, c := range b {
		if c != '0' && c != '-' && c != ':' && c != ' ' && c != '.' {
			return false
		}
	}
	return true
}
