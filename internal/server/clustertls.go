package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"

	"github.com/lockstepdb/lockstep/internal/tlscert"
)

// TLS between cluster members, configured as MariaDB Galera is:
//
//   - --wsrep-ssl-mode=PROVIDER (the default) takes the certificate, key
//     and CA from --wsrep-provider-options' socket.ssl_cert, socket.ssl_key
//     and socket.ssl_ca; none given (or socket.ssl=no), members talk in
//     the clear, which is allowed on loopback only;
//   - SERVER uses the server's own --ssl-cert, --ssl-key and --ssl-ca;
//   - SERVER_X509 does too, and a member also checks that the certificate
//     of the member it dials names that member's host.
//
// Every connection is mutual TLS 1.2 or later: each side presents its
// certificate and verifies the other's against the CA, so only holders of
// a certificate the cluster's CA signed can join the log. A CA is
// required: the certificates a server generates at first start have a CA
// of their own, which no other member trusts. Extended key usage is not
// checked (as Galera does not): one certificate per member serves both
// directions. The hello that follows the handshake (cluster name, node
// id) is then trusted as the certificate holder's.

// secured reports whether members talk over TLS.
func (c ClusterConfig) secured() bool {
	switch c.SSLMode {
	case "SERVER", "SERVER_X509":
		return true
	}
	return !c.SSLOff && (c.SSLCert != "" || c.SSLKey != "" || c.SSLCA != "")
}

// clusterTLS builds the TLS configurations of the cluster port: for
// accepted connections and for dialed ones (nil, nil without TLS).
func clusterTLS(cfg Config) (server, client *tls.Config, err error) {
	cc := cfg.Cluster
	if !cc.secured() {
		return nil, nil, nil
	}
	cert, key, ca, what := cc.SSLCert, cc.SSLKey, cc.SSLCA, "socket.ssl_cert, socket.ssl_key and socket.ssl_ca (--wsrep-provider-options)"
	if cc.SSLMode == "SERVER" || cc.SSLMode == "SERVER_X509" {
		cert, key, ca, what = cfg.SSLCert, cfg.SSLKey, cfg.SSLCA, "--ssl-cert, --ssl-key and --ssl-ca (--wsrep-ssl-mode="+cc.SSLMode+")"
	}
	if cert == "" || key == "" || ca == "" {
		return nil, nil, fmt.Errorf("TLS between cluster members needs %s, all three: the CA is what members verify each other with", what)
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster TLS certificate: %w", err)
	}
	roots, err := tlscert.LoadPool(ca)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster TLS CA: %w", err)
	}
	checkHost := cc.SSLMode == "SERVER_X509"
	verify := func(dialed bool) func(tls.ConnectionState) error {
		return func(cs tls.ConnectionState) error {
			return verifyMember(cs, roots, dialed && checkHost)
		}
	}
	base := tls.Config{
		Certificates: []tls.Certificate{pair},
		MinVersion:   tls.VersionTLS12,
		// The chain is verified by verifyMember, against the cluster's
		// CA and without the key-usage check.
		InsecureSkipVerify: true,
	}
	server, client = base.Clone(), base.Clone()
	server.ClientAuth = tls.RequireAnyClientCert
	server.VerifyConnection = verify(false)
	client.VerifyConnection = verify(true)
	return server, client, nil
}

// verifyMember checks a member's certificate chain against the cluster's
// CA and, if host is set, that it names the host dialed (cs.ServerName).
func verifyMember(cs tls.ConnectionState, roots *x509.CertPool, host bool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("cluster: the member presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	leaf := cs.PeerCertificates[0]
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return fmt.Errorf("cluster: the member's certificate: %w", err)
	}
	if host {
		name := cs.ServerName
		if h, _, err := net.SplitHostPort(name); err == nil {
			name = h
		}
		if err := leaf.VerifyHostname(name); err != nil {
			return fmt.Errorf("cluster: the member's certificate: %w", err)
		}
	}
	return nil
}
