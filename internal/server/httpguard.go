package server

import (
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"strings"
)

// The HTTP endpoint (metrics, dashboard, and the profiler when asked
// for) listens on loopback by default. Off loopback it can require basic
// authentication (--http-auth user:password, checked in constant time on
// every path) and serve HTTPS with the server's certificate (--http-ssl).
// Exposing the profiler off loopback without authentication is refused at
// start: it reveals memory and can be made to work for minutes.
//
// On loopback without authentication, a request must name the server by
// address or as localhost in its Host header (421 otherwise): a web page
// in the operator's browser could otherwise rename itself to 127.0.0.1
// through DNS (rebinding) and read the metrics and the dashboard's data.

// httpGuard checks the HTTP options, before anything listens, and returns
// what puts a handler behind authentication (if asked for) and the TLS
// configuration (nil: plain HTTP).
func (s *Server) httpGuard() (func(http.Handler) http.Handler, *tls.Config, error) {
	open := func(h http.Handler) http.Handler { return h }
	cfg := s.cfg
	var tlsCfg *tls.Config
	if cfg.HTTPSSL {
		if s.tls == nil {
			return nil, nil, errors.New("--http-ssl needs the server's TLS certificate: remove --ssl=OFF")
		}
		tlsCfg = s.tlsReload.WithoutClientCerts()
	}
	if cfg.HTTPAuth == "" {
		if !loopbackOnly(cfg.HTTPBindAddress) {
			if cfg.HTTPPprof {
				return nil, nil, errors.New("refusing to start: --lockstep-http-pprof on --http-bind-address " + cfg.HTTPBindAddress + " without --http-auth would let anyone who reaches the port read the server's memory")
			}
			s.log.Warn("the HTTP endpoint accepts connections from other machines without authentication; consider --http-auth and --http-ssl", "address", cfg.HTTPBindAddress)
			return open, tlsCfg, nil
		}
		return localHostOnly, tlsCfg, nil
	}
	user, password, ok := strings.Cut(cfg.HTTPAuth, ":")
	if !ok || user == "" || password == "" {
		return nil, nil, errors.New("--http-auth takes user:password, both not empty")
	}
	return func(h http.Handler) http.Handler { return basicAuth(h, user, password) }, tlsCfg, nil
}

// localHostOnly refuses requests whose Host is a name other than
// localhost (DNS rebinding).
func localHostOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			host = hh
		}
		host = strings.Trim(host, "[]")
		if net.ParseIP(host) == nil && !strings.EqualFold(host, "localhost") {
			http.Error(w, "this endpoint answers requests to an address or to localhost only", http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func basicAuth(h http.Handler, user, password string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		userOK := subtle.ConstantTimeCompare([]byte(u), []byte(user)) == 1
		passOK := subtle.ConstantTimeCompare([]byte(p), []byte(password)) == 1
		if !ok || !userOK || !passOK {
			w.Header().Set("WWW-Authenticate", `Basic realm="lockstep"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// httpListener wraps l in TLS when cfg is set.
func httpListener(l net.Listener, cfg *tls.Config) net.Listener {
	if cfg == nil {
		return l
	}
	return tls.NewListener(l, cfg)
}
