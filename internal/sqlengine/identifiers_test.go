package sqlengine

import "testing"

func TestQuoteNonASCIIIdents(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"select 1", "select 1"},
		{"create table heiße (name varchar(32))", "create table `heiße` (name varchar(32))"},
		{"insert into heiße (name) values ('Pißata')", "insert into `heiße` (name) values ('Pißata')"},
		{"select d.café, `naïve` from d.café", "select d.`café`, `naïve` from d.`café`"},
		{"select 'it''s ü', \"ä\\\"ö\" -- ü\n, @ünïcode /* é */ from t", "select 'it''s ü', \"ä\\\"ö\" -- ü\n, @ünïcode /* é */ from t"},
		{"select x_é1 from t", "select `x_é1` from t"},
	} {
		if got := QuoteNonASCIIIdents(c.in); got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestRewriteLongByte(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"CREATE TABLE t (a LONG BYTE)", "CREATE TABLE t (a LONG VARBINARY)"},
		{"alter table t add column b long  byte not null", "alter table t add column b long  VARBINARY not null"},
		{"CREATE TABLE t (a INT COMMENT 'long byte')", "CREATE TABLE t (a INT COMMENT 'long byte')"},
		{"SELECT 'long byte'", "SELECT 'long byte'"},
	} {
		if got := rewriteLongByte(c.in); got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
}
