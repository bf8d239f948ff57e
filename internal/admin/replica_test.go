package admin

import (
	"testing"

	"github.com/lockstepdb/lockstep/internal/replica"
)

func TestChangeReplicationSourceOptions(t *testing.T) {
	c := replica.DefaultSource()
	opts, err := parseReplicationOptions(`SOURCE_HOST = '10.0.0.1', MASTER_PORT=3307, SOURCE_USER="re\"pl", SOURCE_PASSWORD='it''s',
		SOURCE_HEARTBEAT_PERIOD = 2.5, SOURCE_CONNECT_RETRY=5, SOURCE_SSL=1, MASTER_SSL_CA='/ca.pem', SOURCE_SSL_CERT='/c.pem', SOURCE_SSL_KEY='/k.pem', SOURCE_LOG_FILE='binlog.000002', SOURCE_LOG_POS=120`)
	if err != nil {
		t.Fatal(err)
	}
	if err := applySourceOptions(&c, opts); err != nil {
		t.Fatal(err)
	}
	want := replica.SourceConfig{Host: "10.0.0.1", Port: 3307, User: `re"pl`, Password: "it's", HeartbeatPeriod: 2.5,
		ConnectRetry: 5, SSL: true, SSLCA: "/ca.pem", SSLCert: "/c.pem", SSLKey: "/k.pem", LogFile: "binlog.000002", LogPos: 120, RetryCount: 86400}
	if c != want {
		t.Fatalf("got %+v\nwant %+v", c, want)
	}
	for _, bad := range []string{"", "SOURCE_HOST", "SOURCE_HOST = ", "SOURCE_HOST='x' SOURCE_PORT=1", "SOURCE_HOST='x"} {
		if _, err := parseReplicationOptions(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	for _, bad := range []string{"SOURCE_PORT=0", "SOURCE_PORT=x", "SOURCE_SSL_CRL='/x'", "MASTER_USE_GTID=maybe", "SOURCE_HEARTBEAT_PERIOD=-1"} {
		opts, err := parseReplicationOptions(bad)
		if err != nil {
			t.Fatalf("%q: %v", bad, err)
		}
		c := replica.DefaultSource()
		if err := applySourceOptions(&c, opts); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzReplicationOptions: the option list of CHANGE REPLICATION SOURCE TO
// from any client parses or fails with an error, and every option it
// gives has a name.
func FuzzReplicationOptions(f *testing.F) {
	f.Add("SOURCE_HOST = '127.0.0.1', SOURCE_PORT = 3306, SOURCE_PASSWORD = 'p''w'")
	f.Add("MASTER_USER=\"r\\\"x\", MASTER_AUTO_POSITION=1")
	f.Add("SOURCE_SSL_CA = '', ")
	f.Fuzz(func(t *testing.T, s string) {
		opts, err := parseReplicationOptions(s)
		if err != nil {
			return
		}
		for _, o := range opts {
			if o.name == "" {
				t.Fatalf("an option without a name from %q", s)
			}
		}
	})
}
