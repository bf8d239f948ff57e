package server

import (
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/cluster"
	"github.com/lockstepdb/lockstep/internal/tlscert"
	"go.etcd.io/raft/v3/raftpb"
)

func TestClusterTLSOptions(t *testing.T) {
	var c ClusterConfig
	if err := c.applyProviderOptions("socket.ssl_cert=/c.pem; socket.ssl_key = /k.pem ;socket.ssl_ca=/ca.pem;"); err != nil {
		t.Fatal(err)
	}
	if c.SSLCert != "/c.pem" || c.SSLKey != "/k.pem" || c.SSLCA != "/ca.pem" || !c.secured() {
		t.Fatalf("%+v", c)
	}
	if err := c.applyProviderOptions("socket.ssl=no"); err != nil || c.secured() {
		t.Fatalf("socket.ssl=no: secured %v, %v", c.secured(), err)
	}
	for opt, want := range map[string]string{"gcs.fc_limit=0": "gcs.fc_limit=\"0\"", "gcs.fc_factor=2": "a fraction", "evs.send_window=4": "evs.send_window has no meaning", "socket.ssl_cert": "not key=value", "socket.ssl=maybe": "yes or no"} {
		if err := (&ClusterConfig{}).applyProviderOptions(opt); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", opt, err, want)
		}
	}
	off := ClusterConfig{Address: "gcomm://10.0.0.1:1,10.0.0.2:1", NodeAddress: "10.0.0.1:1"}
	if _, _, err := off.members(); err == nil || !strings.Contains(err.Error(), "need TLS") {
		t.Fatalf("members off loopback without TLS: %v", err)
	}
	off.SSLMode = "SERVER"
	if _, self, err := off.members(); err != nil || self != 1 {
		t.Fatalf("members off loopback with TLS: %d %v", self, err)
	}
	cfg := Defaults()
	cfg.Cluster = off
	cfg.SSLCert, cfg.SSLKey = "/c.pem", "/k.pem"
	if _, _, err := clusterTLS(cfg); err == nil || !strings.Contains(err.Error(), "--ssl-ca") {
		t.Fatalf("SERVER mode without a CA: %v", err)
	}
}

// TestClusterTLSTransport: members whose certificates the same CA signed
// talk; a node with a certificate of another CA, or without TLS, gets
// nothing through, even claiming a member's id.
func TestClusterTLSTransport(t *testing.T) {
	set := func() tlscert.Files {
		f, _, err := tlscert.Ensure(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	ours, theirs := set(), set()
	configs := func(f tlscert.Files, mode string) (srv, cli *tls.Config) {
		cfg := Defaults()
		cfg.Cluster.SSLMode = mode
		cfg.SSLCert, cfg.SSLKey, cfg.SSLCA = f.Cert, f.Key, f.CA
		s, c, err := clusterTLS(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s, c
	}
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	lnB := listen()
	addrs := map[uint64]string{1: "127.0.0.1:1", 2: lnB.Addr().String()}
	b := cluster.NewTransport(2, "prod", addrs[2], lnB, addrs)
	bs, bc := configs(ours, "SERVER_X509")
	b.UseTLS(bs, bc)
	b.Start()
	defer b.Close()

	send := func(f *tlscert.Files, mode string) bool {
		a := cluster.NewTransport(1, "prod", addrs[1], listen(), addrs)
		if f != nil {
			s, c := configs(*f, mode)
			a.UseTLS(s, c)
		}
		a.Start()
		defer a.Close()
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			a.Send([]raftpb.Message{{Type: raftpb.MsgHeartbeat, From: 1, To: 2, Term: 1}})
			select {
			case <-b.Recv():
				return true
			case <-time.After(100 * time.Millisecond):
			}
		}
		return false
	}
	if !send(&ours, "SERVER_X509") {
		t.Fatal("a member with a certificate of the cluster's CA got nothing through")
	}
	if send(&theirs, "SERVER") {
		t.Fatal("a node with another CA's certificate got a message through")
	}
	if send(nil, "") {
		t.Fatal("a node without TLS got a message through")
	}
}
