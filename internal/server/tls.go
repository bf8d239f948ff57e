package server

import (
	"crypto/tls"
	"errors"
	"regexp"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
	"github.com/lockstepdb/lockstep/internal/tlscert"
)

// The server's TLS configuration, its reload, its variables and status;
// TLS on the wire is package protocol's (tls.go there).

// tlsStatus adds Ssl_accepts and Ssl_finished_accepts.
func (s *Server) tlsStatus(live map[string]func() any) {
	live["Ssl_accepts"] = func() any { return s.tlsStats.Accepts.Load() }
	live["Ssl_finished_accepts"] = func() any { return s.tlsStats.Finished.Load() }
}

// tlsConfig resolves --ssl, --ssl-cert, --ssl-key and --ssl-ca: nil when
// TLS is off; the given files; or, with none given, the data directory's
// generated set (made at first start).
func (s *Server) tlsConfig() (*tls.Config, tlscert.Files, error) {
	cfg := s.cfg
	if !cfg.SSL {
		if cfg.RequireSecureTransport {
			return nil, tlscert.Files{}, errors.New("--require-secure-transport needs TLS: remove --ssl=OFF")
		}
		return nil, tlscert.Files{}, nil
	}
	f := tlscert.Files{Cert: cfg.SSLCert, Key: cfg.SSLKey, CA: cfg.SSLCA}
	switch {
	case f.Cert == "" && f.Key == "" && f.CA == "":
		var generated bool
		var err error
		if f, generated, err = tlscert.Ensure(cfg.DataDir); err != nil {
			return nil, f, err
		}
		if generated {
			s.log.Info("generated TLS certificates: clients verify the server with the CA certificate", "ca", f.CA)
		}
	case f.Cert == "" || f.Key == "":
		return nil, f, errors.New("--ssl-cert and --ssl-key go together")
	}
	r, err := tlscert.NewReloadable(f)
	if err != nil {
		return nil, f, err
	}
	s.tlsReload = r
	return r.Config(), f, nil
}

// reloadTLS answers ALTER INSTANCE RELOAD TLS (CONNECTION_ADMIN): the
// certificate, key and CA files are read again and serve every new TLS
// handshake; on an error the configuration in force stays (3888). The
// NO ROLLBACK ON ERROR form, which would turn TLS off on an error, is
// refused.
func (s *Server) reloadTLS(c *mysql.Conn, query string) (*sqltypes.Result, bool, error) {
	q := strings.TrimLeft(query, " \t\r\n")
	if len(q) > 128 || len(q) < 5 || !strings.EqualFold(q[:5], "alter") {
		return nil, false, nil
	}
	m := reloadTLSStatement.FindStringSubmatch(query)
	if m == nil {
		return nil, false, nil
	}
	if err := s.sql.Require(c, sqlengine.NeedConnectionAdmin); err != nil {
		return nil, true, err
	}
	switch {
	case m[1] != "":
		return nil, true, mysql.NewSQLError(mysql.ERNotSupportedYet, "42000", "This version of Lockstep doesn't yet support 'ALTER INSTANCE RELOAD TLS NO ROLLBACK ON ERROR'")
	case s.tlsReload == nil:
		return nil, true, mysql.NewSQLError(erSSLLibrary, "HY000", "Failed to set up SSL because of the following SSL library error: TLS is off (--ssl=OFF)")
	}
	if err := s.tlsReload.Reload(); err != nil {
		return nil, true, mysql.NewSQLError(erSSLLibrary, "HY000", "Failed to set up SSL because of the following SSL library error: %v", err)
	}
	s.log.Info("TLS certificates reloaded", "cert", s.tlsFiles.Cert, "ca", s.tlsFiles.CA)
	return &sqltypes.Result{}, true, nil
}

const erSSLLibrary = 3888 // ER_DA_SSL_LIBRARY_ERROR

var reloadTLSStatement = regexp.MustCompile(`(?is)^\s*alter\s+instance\s+reload\s+tls(\s+no\s+rollback\s+on\s+error)?\s*;?\s*$`)

// tlsVariables are the TLS and authentication variables with the values
// in force: read-only (ALTER INSTANCE RELOAD TLS reads the same files
// again). require_secure_transport stays
// go-mysql-server's dynamic variable, read at every login.
func (s *Server) tlsVariables() []sql.SystemVariable {
	global := sql.GetMysqlScope(sql.SystemVariableScope_Global)
	str := func(name, v string) sql.SystemVariable {
		return &sql.MysqlSystemVariable{Name: name, Scope: global, Dynamic: false,
			Type: types.NewSystemStringType(name), Default: v}
	}
	have := "DISABLED"
	if s.tls != nil {
		have = "YES"
	}
	return []sql.SystemVariable{
		str("have_ssl", have),
		str("have_openssl", have),
		str("ssl_cert", s.tlsFiles.Cert),
		str("ssl_key", s.tlsFiles.Key),
		str("ssl_ca", s.tlsFiles.CA),
		str("ssl_capath", ""),
		str("ssl_cipher", ""),
		str("tls_version", "TLSv1.2,TLSv1.3"),
		// CREATE USER without a plugin makes mysql_native_password accounts.
		str("default_authentication_plugin", string(mysql.MysqlNativePassword)),
		str("caching_sha2_password_private_key_path", rsaPrivateKeyFile),
		str("caching_sha2_password_public_key_path", rsaPublicKeyFile),
	}
}
