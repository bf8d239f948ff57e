package server

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"fmt"
	"testing"

	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/vitess/go/mysql"
)

// The scrambles are made with vitess's client-side functions, written from
// the protocol's description independently of the checks under test.

func TestNativeScramble(t *testing.T) {
	stage1 := sha1.Sum([]byte("secret"))
	stage2 := sha1.Sum(stage1[:])
	stored := fmt.Sprintf("*%X", stage2)
	nonce := []byte("0123456789abcdefghij")
	if !checkNativeScramble(stored, nonce, mysql.ScrambleMysqlNativePassword(nonce, []byte("secret"))) {
		t.Fatal("the right password was refused")
	}
	for what, scramble := range map[string][]byte{
		"wrong password": mysql.ScrambleMysqlNativePassword(nonce, []byte("Secret")),
		"other nonce":    mysql.ScrambleMysqlNativePassword([]byte("jihgfedcba9876543210"), []byte("secret")),
		"empty":          nil,
		"short":          []byte{1, 2, 3},
	} {
		if checkNativeScramble(stored, nonce, scramble) {
			t.Errorf("%s accepted", what)
		}
	}
	if !checkNativeScramble("", nonce, nil) || checkNativeScramble("", nonce, []byte{1}) {
		t.Error("an account without a password must take exactly an empty response")
	}
	if checkNativeScramble("*NOTHEX", nonce, make([]byte, 20)) {
		t.Error("a damaged stored string accepted something")
	}
}

func TestSha2FastAndFullChecks(t *testing.T) {
	nonce := []byte("abcdefghij0123456789")
	s1 := sha256.Sum256([]byte("pässword"))
	stage2 := sha256.Sum256(s1[:])
	if !checkSha2Scramble(stage2, nonce, mysql.ScrambleCachingSha2Password(nonce, []byte("pässword"))) {
		t.Fatal("fast auth refused the right password")
	}
	if checkSha2Scramble(stage2, nonce, mysql.ScrambleCachingSha2Password(nonce, []byte("password"))) {
		t.Fatal("fast auth accepted a wrong password")
	}
	if checkSha2Scramble(stage2, nonce, nil) {
		t.Fatal("fast auth accepted an empty scramble")
	}

	stored, err := mysql.SerializeCachingSha2PasswordAuthString("pässword", []byte("saltsaltsaltsaltsalt"), 5)
	if err != nil {
		t.Fatal(err)
	}
	if !checkSha2Password(string(stored), []byte("pässword")) {
		t.Fatal("full auth refused the right password")
	}
	if checkSha2Password(string(stored), []byte("pässwort")) || checkSha2Password("$A$garbage", []byte("x")) {
		t.Fatal("full auth accepted a wrong password or a damaged string")
	}
}

func TestTransportRequirements(t *testing.T) {
	subject := pkix.Name{Country: []string{"SE"}, Organization: []string{"Example"}, CommonName: "client"}
	issuer := pkix.Name{CommonName: "Example CA"}
	cert := &x509.Certificate{Subject: subject, Issuer: issuer}
	plain := (*tls.ConnectionState)(nil)
	noCert := &tls.ConnectionState{CipherSuite: tls.TLS_AES_128_GCM_SHA256}
	withCert := &tls.ConnectionState{CipherSuite: tls.TLS_AES_128_GCM_SHA256, PeerCertificates: []*x509.Certificate{cert}}
	if got := distinguishedName(subject); got != "/C=SE/O=Example/CN=client" {
		t.Fatalf("distinguished name %q", got)
	}
	email := pkix.Name{ExtraNames: []pkix.AttributeTypeAndValue{{Type: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}, Value: "a@b.c"}}}
	if got := distinguishedName(email); got != "/emailAddress=a@b.c" {
		t.Fatalf("distinguished name %q", got)
	}
	for _, c := range []struct {
		u    mysql_db.User
		st   *tls.ConnectionState
		want bool
	}{
		{mysql_db.User{}, plain, true},
		{mysql_db.User{SslType: "ANY"}, plain, false},
		{mysql_db.User{SslType: "ANY"}, noCert, true},
		{mysql_db.User{SslType: "X509"}, noCert, false},
		{mysql_db.User{SslType: "X509"}, withCert, true},
		{mysql_db.User{SslType: "SPECIFIED", X509Subject: "/C=SE/O=Example/CN=client"}, withCert, true},
		{mysql_db.User{SslType: "SPECIFIED", X509Subject: "/CN=client"}, withCert, false},
		{mysql_db.User{SslType: "SPECIFIED", X509Issuer: "/CN=Example CA"}, withCert, true},
		{mysql_db.User{SslType: "SPECIFIED", X509Issuer: "/CN=Example CA"}, noCert, false},
		{mysql_db.User{SslType: "SPECIFIED", SslCipher: "TLS_AES_128_GCM_SHA256"}, noCert, true},
		{mysql_db.User{SslType: "SPECIFIED", SslCipher: "TLS_AES_256_GCM_SHA384"}, noCert, false},
		{mysql_db.User{SslType: "SPECIFIED"}, plain, false},
		{mysql_db.User{SslType: "SOMETHING NEW"}, withCert, false},
	} {
		if got := transportSatisfies(&c.u, c.st); got != c.want {
			t.Errorf("%+v with TLS %v, certificate %v: %v, want %v", c.u, c.st != nil, c.st != nil && len(c.st.PeerCertificates) > 0, got, c.want)
		}
	}
}
