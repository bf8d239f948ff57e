package server

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/lockstepdb/lockstep/internal/atomicfile"
	"github.com/lockstepdb/lockstep/internal/protocol"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// Authentication: Lockstep checks logins itself, against the accounts in
// go-mysql-server's mysql database, because it terminates TLS itself
// (package protocol) and because go-mysql-server's caching_sha2_password has neither
// the cache nor the RSA exchange MySQL 8 clients rely on.
//
//   - mysql_native_password: the client proves SHA1(password) against the
//     stored SHA1(SHA1(password)) and the 20-byte nonce.
//   - caching_sha2_password, as MySQL 8.4: fast authentication when this
//     server has seen the password since start (or since the account
//     last changed): the client's scramble is checked against the cached
//     SHA256(SHA256(password)). Otherwise full authentication: the
//     password itself, over TLS in the clear, without TLS encrypted with
//     the server's RSA key (sent on request; private_key.pem and
//     public_key.pem in the data directory, made at first need), then
//     checked against the stored salted SHA-256 crypt string and cached.
//
// Then, in MySQL's order: a locked account is refused (3118), the
// account's REQUIRE SSL / X509 / ISSUER / SUBJECT / CIPHER is checked
// against the TLS connection (1045), and require_secure_transport refuses
// any login without TLS (3159). A name unknown to the server goes through
// the plugin the client asked for and is refused like a wrong password,
// so that a client cannot tell the two apart.
type authServer struct {
	db      *mysql_db.MySQLDb
	datadir string
	// requireTLS reads require_secure_transport.
	requireTLS func() bool

	// failures blocks accounts after failed logins (loginfailures.go).
	failures *loginFailures

	mu    sync.Mutex
	cache map[string]sha2Cached // user@host -> the last password seen
	key   *rsa.PrivateKey
	pub   []byte // PEM
}

type sha2Cached struct {
	authString string   // the account's stored string when cached
	stage2     [32]byte // SHA256(SHA256(password))
}

func newAuthServer(db *mysql_db.MySQLDb, datadir string, requireTLS func() bool) *authServer {
	return &authServer{db: db, datadir: datadir, requireTLS: requireTLS, cache: map[string]sha2Cached{}, failures: newLoginFailures()}
}

func (a *authServer) AuthMethods() []mysql.AuthMethod {
	return []mysql.AuthMethod{nativeAuth{a}, sha2Auth{a}}
}

// DefaultAuthMethodDescription is what the greeting proposes; accounts
// with the other plugin get an auth switch.
func (a *authServer) DefaultAuthMethodDescription() mysql.AuthMethodDescription {
	return mysql.MysqlNativePassword
}

// account finds the account a login from c as user matches, nil if none.
func (a *authServer) account(c *mysql.Conn, user string) *mysql_db.User {
	rd := a.db.Reader()
	defer rd.Close()
	return sqlengine.LoginAccount(rd, user, remoteHost(c.RemoteAddr()))
}

func remoteHost(addr net.Addr) string {
	if addr == nil || addr.Network() == "unix" {
		return "localhost"
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}

// handles reports whether plugin is the one to use for user: the
// account's own plugin, or, for a name with no account, the one the
// client asked for. It also tells the protocol library that the
// connection is secure, which it cannot see (see package protocol).
func (a *authServer) handles(c *mysql.Conn, user string, plugin mysql.AuthMethodDescription) bool {
	if w, ok := c.Conn.(*protocol.Conn); ok && w.TLS() != nil {
		c.Capabilities |= mysql.CapabilityClientSSL
	}
	u := a.account(c, user)
	return u == nil || u.Plugin == string(plugin)
}

// wrongPassword answers a login to account u with a wrong password: 1045,
// or 3955 when the failure blocks the account.
func (a *authServer) wrongPassword(c *mysql.Conn, u *mysql_db.User, usedPassword bool) error {
	if err := a.failures.failed(u); err != nil {
		return err
	}
	return accessDenied(c, u.User, usedPassword)
}

func accessDenied(c *mysql.Conn, user string, usedPassword bool) error {
	yes := "NO"
	if usedPassword {
		yes = "YES"
	}
	return mysql.NewSQLError(mysql.ERAccessDeniedError, mysql.SSAccessDeniedError,
		"Access denied for user '%s'@'%s' (using password: %s)", user, remoteHost(c.RemoteAddr()), yes)
}

// admit applies the checks that follow a correct password.
func (a *authServer) admit(c *mysql.Conn, u *mysql_db.User, usedPassword bool) (mysql.Getter, error) {
	if u.Locked {
		return nil, mysql.NewSQLError(3118, "HY000", "Access denied for user '%s'@'%s'. Account is locked.", u.User, u.Host)
	}
	var state *tls.ConnectionState
	if w, ok := c.Conn.(*protocol.Conn); ok {
		if tc := w.TLS(); tc != nil {
			st := tc.ConnectionState()
			state = &st
		}
	}
	if !transportSatisfies(u, state) {
		return nil, accessDenied(c, u.User, usedPassword)
	}
	if state == nil && a.requireTLS() {
		return nil, mysql.NewSQLError(3159, "HY000", "Connections using insecure transport are prohibited while --require_secure_transport=ON.")
	}
	a.failures.succeeded(u)
	return sql.MysqlConnectionUser{User: u.User, Host: u.Host}, nil
}

// transportSatisfies checks an account's REQUIRE clause against the
// connection's TLS state (nil: not TLS). A client certificate is there
// only if it was verified against --ssl-ca (tlscert.Server).
func transportSatisfies(u *mysql_db.User, st *tls.ConnectionState) bool {
	switch u.SslType {
	case "":
		return true
	case "ANY":
		return st != nil
	case "X509":
		return st != nil && len(st.PeerCertificates) > 0
	case "SPECIFIED":
		if st == nil {
			return false
		}
		if u.SslCipher != "" && !strings.EqualFold(u.SslCipher, tls.CipherSuiteName(st.CipherSuite)) {
			return false
		}
		if u.X509Issuer != "" || u.X509Subject != "" {
			if len(st.PeerCertificates) == 0 {
				return false
			}
			cert := st.PeerCertificates[0]
			if u.X509Issuer != "" && u.X509Issuer != distinguishedName(cert.Issuer) {
				return false
			}
			if u.X509Subject != "" && u.X509Subject != distinguishedName(cert.Subject) {
				return false
			}
		}
		return true
	}
	return false // a requirement this server does not know: refuse
}

// distinguishedName formats a name as MySQL shows and compares it:
// "/C=SE/ST=Stockholm/O=Example/CN=client", in the certificate's order.
func distinguishedName(n pkix.Name) string {
	short := map[string]string{
		"2.5.4.6": "C", "2.5.4.8": "ST", "2.5.4.7": "L", "2.5.4.10": "O",
		"2.5.4.11": "OU", "2.5.4.3": "CN", "1.2.840.113549.1.9.1": "emailAddress",
		"2.5.4.9": "street", "2.5.4.17": "postalCode", "2.5.4.5": "serialNumber",
	}
	var b strings.Builder
	for _, rdn := range n.ToRDNSequence() {
		for _, atv := range rdn {
			name, ok := short[atv.Type.String()]
			if !ok {
				name = atv.Type.String()
			}
			fmt.Fprintf(&b, "/%s=%v", name, atv.Value)
		}
	}
	return b.String()
}

// nativeAuth is mysql_native_password.
type nativeAuth struct{ a *authServer }

func (nativeAuth) Name() mysql.AuthMethodDescription { return mysql.MysqlNativePassword }
func (n nativeAuth) HandleUser(c *mysql.Conn, user string) bool {
	return n.a.handles(c, user, mysql.MysqlNativePassword)
}
func (nativeAuth) AllowClearTextWithoutTLS() bool  { return true }
func (nativeAuth) AuthPluginData() ([]byte, error) { return newNonce() }

// newNonce is the 20-byte nonce both plugins send, with its NUL.
func newNonce() ([]byte, error) {
	salt, err := mysql.NewSalt()
	return append(salt, 0), err
}

func (n nativeAuth) HandleAuthPluginData(c *mysql.Conn, user string, server, client []byte, _ net.Addr) (mysql.Getter, error) {
	used := len(client) > 0
	u := n.a.account(c, user)
	if u == nil || len(server) != 21 {
		return nil, accessDenied(c, user, used)
	}
	if err := n.a.failures.blocked(u); err != nil {
		return nil, err
	}
	if !checkNativeScramble(u.AuthString, server[:20], client) {
		return nil, n.a.wrongPassword(c, u, used)
	}
	return n.a.admit(c, u, used)
}

// checkNativeScramble verifies a mysql_native_password response: the
// stored string is "*" and hex(SHA1(SHA1(password))), the response
// SHA1(password) XOR SHA1(nonce + SHA1(SHA1(password))). An account with
// no password takes an empty response only.
func checkNativeScramble(authString string, nonce, scramble []byte) bool {
	if authString == "" {
		return len(scramble) == 0
	}
	if len(authString) != 41 || authString[0] != '*' || len(scramble) != sha1.Size {
		return false
	}
	stage2, err := hex.DecodeString(authString[1:])
	if err != nil {
		return false
	}
	h := sha1.New()
	h.Write(nonce)
	h.Write(stage2)
	stage1 := h.Sum(nil)
	for i := range stage1 {
		stage1[i] ^= scramble[i]
	}
	got := sha1.Sum(stage1)
	return subtle.ConstantTimeCompare(got[:], stage2) == 1
}

// sha2Auth is caching_sha2_password.
type sha2Auth struct{ a *authServer }

// The second byte of caching_sha2_password's AuthMoreData packets.
const (
	sha2RequestPublicKey = 0x02
	sha2FastAuthOK       = 0x03
	sha2FullAuth         = 0x04
)

func (sha2Auth) Name() mysql.AuthMethodDescription { return mysql.CachingSha2Password }
func (s sha2Auth) HandleUser(c *mysql.Conn, user string) bool {
	return s.a.handles(c, user, mysql.CachingSha2Password)
}
func (sha2Auth) AllowClearTextWithoutTLS() bool  { return true }
func (sha2Auth) AuthPluginData() ([]byte, error) { return newNonce() }

func (s sha2Auth) HandleAuthPluginData(c *mysql.Conn, user string, server, client []byte, _ net.Addr) (mysql.Getter, error) {
	w, ok := c.Conn.(*protocol.Conn)
	if !ok || len(server) != 21 {
		return nil, accessDenied(c, user, len(client) > 0)
	}
	nonce := server[:20]
	if len(client) == 1 && client[0] == 0 {
		client = nil
	}
	u := s.a.account(c, user)
	if u != nil {
		if err := s.a.failures.blocked(u); err != nil {
			return nil, err
		}
	}
	if len(client) == 0 {
		// No password given: only an account without one.
		if u == nil {
			return nil, accessDenied(c, user, false)
		}
		if u.AuthString != "" {
			return nil, s.a.wrongPassword(c, u, false)
		}
		return s.a.admit(c, u, false)
	}
	if u == nil || u.AuthString == "" {
		// Go through full authentication as for a real account, so that
		// the exchange does not tell a client which names exist.
		if err := w.AuthWrite([]byte{mysql.AuthMoreDataPacket, sha2FullAuth}); err != nil {
			return nil, err
		}
		if _, err := s.fullAuthPassword(w, nonce); err != nil {
			return nil, err
		}
		return nil, accessDenied(c, user, true)
	}
	key := u.User + "@" + u.Host
	s.a.mu.Lock()
	cached, hit := s.a.cache[key]
	s.a.mu.Unlock()
	if hit && cached.authString == u.AuthString && checkSha2Scramble(cached.stage2, nonce, client) {
		if err := w.AuthWrite([]byte{mysql.AuthMoreDataPacket, sha2FastAuthOK}); err != nil {
			return nil, err
		}
		return s.a.admit(c, u, true)
	}
	if err := w.AuthWrite([]byte{mysql.AuthMoreDataPacket, sha2FullAuth}); err != nil {
		return nil, err
	}
	password, err := s.fullAuthPassword(w, nonce)
	if err != nil {
		return nil, err
	}
	if password == nil || !checkSha2Password(u.AuthString, password) {
		return nil, s.a.wrongPassword(c, u, true)
	}
	s1 := sha256.Sum256(password)
	s.a.mu.Lock()
	s.a.cache[key] = sha2Cached{authString: u.AuthString, stage2: sha256.Sum256(s1[:])}
	s.a.mu.Unlock()
	return s.a.admit(c, u, true)
}

// fullAuthPassword reads the password for full authentication: in the
// clear over TLS; otherwise RSA-encrypted (XORed with the nonce first),
// after sending the public key if the client asks for it. nil means the
// client sent something that is not a password.
func (s sha2Auth) fullAuthPassword(w *protocol.Conn, nonce []byte) ([]byte, error) {
	pkt, err := w.AuthRead()
	if err != nil {
		return nil, err
	}
	if w.TLS() != nil {
		if n := len(pkt); n > 0 && pkt[n-1] == 0 {
			return pkt[:n-1], nil
		}
		return pkt, nil
	}
	key, pub, err := s.a.rsaKey()
	if err != nil {
		return nil, err
	}
	if len(pkt) == 1 && pkt[0] == sha2RequestPublicKey {
		if err := w.AuthWrite(append([]byte{mysql.AuthMoreDataPacket}, pub...)); err != nil {
			return nil, err
		}
		if pkt, err = w.AuthRead(); err != nil {
			return nil, err
		}
	}
	plain, err := rsa.DecryptOAEP(sha1.New(), nil, key, pkt, nil)
	if err != nil {
		return nil, nil // not encrypted with our key: a wrong password
	}
	for i := range plain {
		plain[i] ^= nonce[i%len(nonce)]
	}
	if n := len(plain); n > 0 && plain[n-1] == 0 {
		plain = plain[:n-1]
	}
	return plain, nil
}

// checkSha2Scramble verifies a fast-auth response: SHA256(password) XOR
// SHA256(SHA256(SHA256(password)) + nonce), against the cached
// SHA256(SHA256(password)).
func checkSha2Scramble(stage2 [32]byte, nonce, scramble []byte) bool {
	if len(scramble) != sha256.Size {
		return false
	}
	h := sha256.New()
	h.Write(stage2[:])
	h.Write(nonce)
	stage1 := h.Sum(nil)
	for i := range stage1 {
		stage1[i] ^= scramble[i]
	}
	got := sha256.Sum256(stage1)
	return subtle.ConstantTimeCompare(got[:], stage2[:]) == 1
}

// checkSha2Password checks a password against a stored
// caching_sha2_password string ($A$rounds$salt+hash).
func checkSha2Password(authString string, password []byte) bool {
	digest, iterations, salt, _, err := mysql.DeserializeCachingSha2PasswordAuthString([]byte(authString))
	if err != nil || digest != "SHA256" {
		return false
	}
	want, err := mysql.SerializeCachingSha2PasswordAuthString(string(password), salt, iterations)
	return err == nil && subtle.ConstantTimeCompare(want, []byte(authString)) == 1
}

// RSA key files for caching_sha2_password without TLS (mysqld's names).
const (
	rsaPrivateKeyFile = "private_key.pem"
	rsaPublicKeyFile  = "public_key.pem"
)

// rsaKey returns the server's RSA key pair, loading it from the data
// directory or making and saving one at first need.
func (a *authServer) rsaKey() (*rsa.PrivateKey, []byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.key != nil {
		return a.key, a.pub, nil
	}
	path := filepath.Join(a.datadir, rsaPrivateKeyFile)
	var key *rsa.PrivateKey
	if b, err := os.ReadFile(path); err == nil {
		blk, _ := pem.Decode(b)
		if blk == nil {
			return nil, nil, fmt.Errorf("%s: not a PEM key", path)
		}
		k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, nil, fmt.Errorf("%s: not an RSA key", path)
		}
		key = rk
	} else if errors.Is(err, os.ErrNotExist) {
		if key, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			return nil, nil, err
		}
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		if err := atomicfile.Write(vfs.Default, path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})); err != nil {
			return nil, nil, err
		}
		if err := os.Chmod(path, 0o600); err != nil {
			return nil, nil, err
		}
	} else {
		return nil, nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	pub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	_ = atomicfile.Write(vfs.Default, filepath.Join(a.datadir, rsaPublicKeyFile), pub)
	a.key, a.pub = key, pub
	return key, pub, nil
}
