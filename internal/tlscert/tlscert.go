// Package tlscert makes the TLS configurations of Lockstep's MySQL
// protocol: the server's (from given files, or from certificates it
// generates in the data directory at first start, as mysqld's
// auto_generate_certs does) and a replica's outbound one.
//
// Generated files have MySQL's names, so that the instructions users know
// apply: ca.pem and ca-key.pem (a CA made for this data directory),
// server-cert.pem and server-key.pem (signed by it, naming 127.0.0.1, ::1,
// localhost and the host name), client-cert.pem and client-key.pem (for
// accounts that REQUIRE X509). Keys are ECDSA P-256 (fast to make, which
// matters for servers started by tests) and written 0600; certificates are
// valid for ten years. Nothing is generated when any of the files exists:
// a partial set is an operator's, and is reported instead of overwritten.
package tlscert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/atomicfile"
)

// Files names a certificate, its key and the CA that verifies peers.
type Files struct {
	Cert, Key, CA string
}

// Generated file names, as mysqld's.
const (
	CAFile         = "ca.pem"
	CAKeyFile      = "ca-key.pem"
	ServerCertFile = "server-cert.pem"
	ServerKeyFile  = "server-key.pem"
	ClientCertFile = "client-cert.pem"
	ClientKeyFile  = "client-key.pem"
)

// Ensure returns the server's files in dir, generating the whole set
// first if none of it exists. generated reports whether it did.
func Ensure(dir string) (f Files, generated bool, err error) {
	f = Files{
		Cert: filepath.Join(dir, ServerCertFile),
		Key:  filepath.Join(dir, ServerKeyFile),
		CA:   filepath.Join(dir, CAFile),
	}
	names := []string{CAFile, CAKeyFile, ServerCertFile, ServerKeyFile, ClientCertFile, ClientKeyFile}
	var present []string
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			present = append(present, n)
		}
	}
	switch {
	case len(present) == 0:
		if err := generate(dir); err != nil {
			return f, false, fmt.Errorf("generating TLS certificates in %s: %w", dir, err)
		}
		return f, true, nil
	case !slices.Contains(present, CAFile) || !slices.Contains(present, ServerCertFile) || !slices.Contains(present, ServerKeyFile):
		return f, false, fmt.Errorf("%s holds only part of a certificate set (%v): give --ssl-cert, --ssl-key and --ssl-ca, or remove them to have a new set generated", dir, present)
	}
	return f, false, nil
}

// generate writes a CA, a server certificate and a client certificate.
func generate(dir string) error {
	now := time.Now().Add(-time.Hour) // tolerate clocks a little behind
	until := now.Add(10 * 365 * 24 * time.Hour)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "Lockstep_Auto_Generated_CA_Certificate"},
		NotBefore:             now,
		NotAfter:              until,
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	leaf := func(cn string, usage x509.ExtKeyUsage, hosts bool) ([]byte, *ecdsa.PrivateKey, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: serial(),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    now,
			NotAfter:     until,
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		}
		if hosts {
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
			tmpl.DNSNames = []string{"localhost"}
			if h, err := os.Hostname(); err == nil && h != "" && h != "localhost" {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		return der, key, err
	}
	serverDER, serverKey, err := leaf("Lockstep_Auto_Generated_Server_Certificate", x509.ExtKeyUsageServerAuth, true)
	if err != nil {
		return err
	}
	clientDER, clientKey, err := leaf("Lockstep_Auto_Generated_Client_Certificate", x509.ExtKeyUsageClientAuth, false)
	if err != nil {
		return err
	}
	// Keys first and the CA certificate last: a crash part-way leaves a
	// set Ensure reports instead of one it would take as complete.
	for _, w := range []struct {
		name string
		data []byte
	}{
		{CAKeyFile, keyPEM(caKey)},
		{ServerKeyFile, keyPEM(serverKey)},
		{ClientKeyFile, keyPEM(clientKey)},
		{ServerCertFile, certPEM(serverDER)},
		{ClientCertFile, certPEM(clientDER)},
		{CAFile, certPEM(caDER)},
	} {
		if err := atomicfile.Write(vfs.Default, filepath.Join(dir, w.name), w.data); err != nil {
			return err
		}
		if err := os.Chmod(filepath.Join(dir, w.name), 0o600); err != nil {
			return err
		}
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

func certPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func keyPEM(k *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		panic(err) // a freshly generated P-256 key always marshals
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// Server returns the server's configuration: TLS 1.2 or later, the
// certificate and key from f, and, when f names a CA, client certificates
// verified against it when a client presents one (accounts that REQUIRE
// X509 then need one; others do not).
func Server(f Files) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("loading --ssl-cert %s and --ssl-key %s: %w", f.Cert, f.Key, err)
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.NoClientCert,
	}
	if f.CA != "" {
		pool, err := LoadPool(f.CA)
		if err != nil {
			return nil, fmt.Errorf("--ssl-ca: %w", err)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}

// Client returns a replica's configuration for connecting to a source,
// as MySQL's SOURCE_SSL options: with ca, the source's certificate chain
// is verified against it; with verifyName (SOURCE_SSL_VERIFY_SERVER_CERT),
// its name too (against the system's CAs when ca is empty); with neither,
// the connection is encrypted but the source not authenticated. cert and
// key, when given, are presented to the source.
func Client(ca, cert, key, serverName string, verifyName bool) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if cert != "" || key != "" {
		if cert == "" || key == "" {
			return nil, errors.New("SOURCE_SSL_CERT and SOURCE_SSL_KEY go together")
		}
		c, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	if ca == "" {
		cfg.InsecureSkipVerify = !verifyName
		return cfg, nil
	}
	pool, err := LoadPool(ca)
	if err != nil {
		return nil, err
	}
	cfg.RootCAs = pool
	if !verifyName {
		// Verify the chain, not the name (MySQL's VERIFY_CA).
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the source sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: pool, Intermediates: x509.NewCertPool()}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	return cfg, nil
}

// LoadPool reads the PEM certificates of path into a pool.
func LoadPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

// Reloadable is a server configuration whose certificate, key and CA can
// be read again while connections are served (ALTER INSTANCE RELOAD TLS):
// Config's GetConfigForClient hands each new handshake the configuration
// last loaded; handshakes under way and connections already encrypted
// keep theirs.
type Reloadable struct {
	files Files
	cur   atomic.Pointer[tls.Config]
	base  tls.Config
}

// NewReloadable loads f once.
func NewReloadable(f Files) (*Reloadable, error) {
	r := &Reloadable{files: f}
	if err := r.Reload(); err != nil {
		return nil, err
	}
	r.base = tls.Config{
		MinVersion:         tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return r.cur.Load(), nil },
	}
	return r, nil
}

// Config is the configuration to serve with.
func (r *Reloadable) Config() *tls.Config { return &r.base }

// WithoutClientCerts is Config for a port that asks for no client
// certificate (HTTPS).
func (r *Reloadable) WithoutClientCerts() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c := r.cur.Load().Clone()
			c.ClientAuth, c.ClientCAs = tls.NoClientCert, nil
			return c, nil
		},
	}
}

// Reload reads the files again; on an error the configuration in force
// stays.
func (r *Reloadable) Reload() error {
	c, err := Server(r.files)
	if err != nil {
		return err
	}
	r.cur.Store(c)
	return nil
}
