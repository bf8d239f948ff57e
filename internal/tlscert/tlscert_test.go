package tlscert

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEnsureGeneratesOnceAndRefusesPartialSets(t *testing.T) {
	dir := t.TempDir()
	f, gen, err := Ensure(dir)
	if err != nil || !gen {
		t.Fatalf("first Ensure: generated=%v err=%v", gen, err)
	}
	for _, n := range []string{CAKeyFile, ServerKeyFile, ClientKeyFile} {
		st, err := os.Stat(filepath.Join(dir, n))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v, want mode 0600", n, st.Mode(), err)
		}
	}
	before, _ := os.ReadFile(f.Cert)
	if _, gen, err := Ensure(dir); err != nil || gen {
		t.Fatalf("second Ensure: generated=%v err=%v", gen, err)
	}
	after, _ := os.ReadFile(f.Cert)
	if string(before) != string(after) {
		t.Fatal("second Ensure replaced the certificate")
	}
	if err := os.Remove(filepath.Join(dir, CAFile)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Ensure(dir); err == nil || !strings.Contains(err.Error(), "only part") {
		t.Fatalf("partial set: err=%v, want a refusal", err)
	}
}

// handshake runs a TLS handshake between the two configurations over a
// loopback connection and returns the server's view of the connection and
// the client's error.
func handshake(t *testing.T, server, client *tls.Config) (tls.ConnectionState, error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	states := make(chan tls.ConnectionState, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			close(states)
			return
		}
		defer c.Close()
		s := tls.Server(c, server)
		_ = s.SetDeadline(time.Now().Add(10 * time.Second))
		_ = s.Handshake()
		states <- s.ConnectionState()
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tc := tls.Client(c, client)
	_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
	herr := tc.Handshake()
	if herr != nil {
		c.Close()
	}
	return <-states, herr
}

func TestServerAndClientConfigs(t *testing.T) {
	dir := t.TempDir()
	f, _, err := Ensure(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Server(f)
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, CAFile)
	cert, key := filepath.Join(dir, ClientCertFile), filepath.Join(dir, ClientKeyFile)

	// The CA and the name: the generated certificate names 127.0.0.1.
	cli, err := Client(ca, cert, key, "127.0.0.1", true)
	if err != nil {
		t.Fatal(err)
	}
	st, herr := handshake(t, srv, cli)
	if herr != nil {
		t.Fatalf("verified handshake: %v", herr)
	}
	if len(st.VerifiedChains) == 0 || st.Version < tls.VersionTLS12 {
		t.Fatalf("server did not verify the client certificate (chains %d) or version %x", len(st.VerifiedChains), st.Version)
	}

	// A name the certificate does not carry fails with verification on,
	// passes when only the chain is checked.
	cli, _ = Client(ca, "", "", "db.example.com", true)
	if _, herr := handshake(t, srv, cli); herr == nil {
		t.Fatal("name verification passed for a name the certificate lacks")
	}
	cli, _ = Client(ca, "", "", "db.example.com", false)
	if _, herr := handshake(t, srv, cli); herr != nil {
		t.Fatalf("chain-only verification: %v", herr)
	}

	// Another data directory's CA does not verify this server.
	other := t.TempDir()
	if _, _, err := Ensure(other); err != nil {
		t.Fatal(err)
	}
	cli, _ = Client(filepath.Join(other, CAFile), "", "", "127.0.0.1", false)
	if _, herr := handshake(t, srv, cli); herr == nil {
		t.Fatal("a foreign CA verified the server")
	}

	// TLS 1.1 is refused.
	cli, _ = Client("", "", "", "", false)
	cli.MaxVersion = tls.VersionTLS11
	if _, herr := handshake(t, srv, cli); herr == nil {
		t.Fatal("TLS 1.1 accepted")
	}

	// Name verification without a CA uses the system's CAs, which do not
	// know this one.
	cli, _ = Client("", "", "", "127.0.0.1", true)
	if _, herr := handshake(t, srv, cli); herr == nil {
		t.Fatal("the system's CAs verified a generated certificate")
	}
}
