// Package server assembles a Lockstep server: the data directory, recovery,
// the commit pipeline, the SQL layer and the MySQL protocol listener.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	gmsserver "github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/google/uuid"
	"github.com/lockstepdb/lockstep/internal/admin"
	"github.com/lockstepdb/lockstep/internal/atomicfile"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/commit"
	"github.com/lockstepdb/lockstep/internal/dashboard"
	"github.com/lockstepdb/lockstep/internal/digest"
	"github.com/lockstepdb/lockstep/internal/lock"
	"github.com/lockstepdb/lockstep/internal/metrics"
	"github.com/lockstepdb/lockstep/internal/protocol"
	"github.com/lockstepdb/lockstep/internal/replica"
	"github.com/lockstepdb/lockstep/internal/source"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
	"github.com/lockstepdb/lockstep/internal/storage"
	"github.com/lockstepdb/lockstep/internal/tlscert"
)

// Server is a running Lockstep server.
type Server struct {
	cfg     Config
	uuid    binlog.UUID
	pipe    *commit.Pipeline // nil on a cluster member
	member  *member          // a cluster member's node (cluster.go), or nil
	store   *storage.Engine
	blog    *binlog.Log
	cloneMu sync.Mutex // one CLONE at a time (clone.go)
	slow    slowLog    // the slow query log (slowlog.go)
	// digests is performance_schema's summary of statements by digest
	// (statements.go), nil with --performance-schema=OFF.
	digests *digest.Summary
	// stmtMetrics, with digests, feed the statement metrics (nil without
	// an HTTP endpoint or performance_schema).
	stmtMetrics atomic.Pointer[metrics.Statements]
	// connAttrs are the open connections' attributes (connattrs.go).
	connAttrs connAttrsOf
	traffic   protocol.Traffic
	sql       *sqlengine.Engine
	listener  *gmsserver.Server
	mariadb   *gmsserver.Server // --mariadb-port, or nil
	// mariadbWire is the --mariadb-port listener's wire wrapper (or nil).
	mariadbWire *protocol.Listener
	addr        string
	log         *slog.Logger
	stop        chan struct{}
	// shutdownCh is closed by SHUTDOWN (shutdown.go).
	shutdownCh   chan struct{}
	shutdownOnce sync.Once
	http         *http.Server
	httpAddr     string
	source       *source.Source
	wire         *protocol.Listener
	// tls is what clients are offered (nil: --ssl=OFF), from tlsFiles;
	// auth checks logins (auth.go).
	tls       *tls.Config
	tlsReload *tlscert.Reloadable // what tls serves (nil: --ssl=OFF)
	tlsFiles  tlscert.Files
	tlsStats  protocol.TLSStats
	// prepared counts the connections' prepared statements, and
	// preparedBytes their texts' bytes (prepared.go).
	prepared      atomic.Int64
	preparedBytes atomic.Int64
	dos           preparedDos // prepared DO statements (prepareddo.go)
	auth          *authServer
	repl          *replica.Replica
	adm           *admin.Admin   // replication and binlog administration
	chain         protocol.Chain // the statements answered before go-mysql-server
	sessions      *sessions      // authenticated connections (sessionlimits.go)
	unbound       *handler       // the handler wrapHandler made last, until bound
	dirLock       *os.File       // holds the data directory's lock (lockDataDir)
	// secureFilePriv is the folder LOAD_FILE, LOAD DATA and SELECT ...
	// INTO OUTFILE are confined to ("" = anywhere).
	secureFilePriv string
	conns          *protocol.ConnLimit // max_connections, over both client ports
	// components are the installed components' URNs (components.go).
	componentsMu sync.Mutex
	components   []string
}

// bind gives the handler wrapHandler just made its listener's session
// manager.
func (s *Server) bind(lst *gmsserver.Server) {
	s.unbound.fast.sm = lst.SessionManager()
	s.unbound = nil
}

// Start opens the data directory (recovering it if needed) and starts
// listening. It returns once clients can connect.
func Start(cfg Config, log *slog.Logger) (*Server, error) {
	return StartContext(context.Background(), cfg, log)
}

// StartContext is Start, giving up when ctx ends first (a new cluster
// member waits for the cluster to take it in).
func StartContext(ctx context.Context, cfg Config, log *slog.Logger) (_ *Server, err error) {
	if err := atomicfile.MkdirAll(vfs.Default, cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating --datadir %s: %w", cfg.DataDir, err)
	}
	dirLock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(cfg.DataDir); err == nil && st.Mode().Perm()&0o077 != 0 {
		// Created 0700 when new; an older or hand-made one may not be.
		log.Warn("the data directory is open to other users of this machine; it holds the binlog, the accounts' password hashes and the TLS keys: chmod 700 it", "datadir", cfg.DataDir, "mode", fmt.Sprintf("%04o", st.Mode().Perm()))
	}
	defer func() {
		if err != nil {
			dirLock.Close()
		}
	}()
	id, err := serverUUID(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	pc := cfg.PipelineConfig()
	pc.ServerUUID = id
	obs := metrics.NewObserver()
	pc.Observer = obs
	pc.Warn = func(msg string, args ...any) { log.Warn(msg, append(args, "component", "binlog")...) }
	semi := source.NewSemiSync(func(on bool, reason string) {
		if on {
			log.Info("semi-sync replication switched on", "reason", reason)
		} else {
			log.Warn("semi-sync replication switched off; commits no longer wait for replicas", "reason", reason)
		}
	})
	semi.SetTimeout(cfg.SemiSyncTimeoutMillis)
	semi.SetAfterCommit(cfg.SemiSyncAfterCommit)
	semi.SetWaitForReplicaCount(cfg.SemiSyncWaitCount)
	semi.SetWaitNoReplica(cfg.SemiSyncWaitNoReplica)
	semi.SetEnabled(cfg.SemiSyncEnabled)
	pc.Acks = semi
	var (
		pipe  *commit.Pipeline
		store *storage.Engine
		blog  *binlog.Log
		rec   commit.Recovery
		m     *member
	)
	if cfg.Clustered() {
		if cfg.SourceHost != "" {
			return nil, fmt.Errorf("--source-host: a cluster member does not replicate from a source")
		}
		if err := cfg.groupCommitOnMember(); err != nil {
			return nil, err
		}
		m, store, blog, err = openMember(ctx, cfg, id, log.With("component", "cluster"), storage.Options{
			FS: vfs.Default, Dir: filepath.Join(cfg.DataDir, "store"), Collator: sqlengine.Collator{}, CacheSize: cfg.CacheSizeBytes,
			Logger: storeLogger{log.With("component", "store")},
			Warn:   func(msg string) { log.Warn(msg, "component", "store") },
		})
	} else {
		pipe, store, blog, rec, err = commit.Open(commit.OpenOptions{
			FS: vfs.Default, Dir: cfg.DataDir, Collator: sqlengine.Collator{}, Config: pc, CacheSize: cfg.CacheSizeBytes,
			Logger: storeLogger{log.With("component", "store")},
			Warn:   func(msg string) { log.Warn(msg, "component", "store") },
		})
	}
	if err != nil {
		return nil, err
	}
	for _, n := range rec.Notes {
		log.Warn("recovery: " + n)
	}
	if rec.Replayed > 0 || rec.Truncated > 0 {
		log.Info("recovered from the binlog", "replayed_transactions", rec.Replayed, "truncated_tail_bytes", rec.Truncated, "binlog_end", fmt.Sprintf("%s:%d", blog.Name(rec.End.File), rec.End.Pos))
	}
	if rec.StoreAhead {
		log.Warn("the binlog lost transactions the store holds (a relaxed sync_binlog / innodb_flush_log_at_trx_commit setting and an OS crash): they stay, replicas will not receive them, and their GTIDs stay executed", "gtids", rec.StoreOnly.String(), "store_position", fmt.Sprintf("%d:%d", rec.DurableFrom.File, rec.DurableFrom.Pos))
	}
	s := &Server{cfg: cfg, uuid: id, pipe: pipe, member: m, store: store, blog: blog, log: log, dirLock: dirLock, sessions: newSessions(),
		shutdownCh: make(chan struct{})}
	locks := lock.New()
	if m != nil {
		s.source = source.New(blog, cfg.ServerID, id, s.gtidVisible, semi, log.With("component", "source"))
		s.sql = sqlengine.NewClusterMember(store, m, cfg.ServerID, locks)
		log.Info("cluster member", "node", m.id, "members", len(m.Members()), "cluster", cfg.Cluster.Name, "address", cfg.Cluster.NodeAddress)
		if cfg.Cluster.NewCluster {
			log.Info("--wsrep-new-cluster is not needed: members form the cluster from the member list, and raft's state on disk brings it back after a full stop")
		}
	} else {
		s.source = source.New(blog, cfg.ServerID, id, pipe.GTIDExecuted, semi, log.With("component", "source"))
		s.sql = sqlengine.New(store, pipe, locks)
	}
	s.sql.OtherPreparedBytes = &s.preparedBytes
	s.source.DomainID = uint32(cfg.GTIDDomainID)
	s.repl, err = replica.New(replica.Options{
		Dir: cfg.DataDir, ServerID: cfg.ServerID, ServerUUID: id, Port: cfg.Port,
		Store: store, Pipe: pipe, Exec: s.sql, Logf: func(f string, a ...any) { log.Warn(fmt.Sprintf(f, a...), "component", "replica") },
		CascadeParent: s.sql.CascadeParent,
	})
	if err != nil {
		s.shutdownStorage()
		return nil, fmt.Errorf("refusing to start: %w. Restore the file from a backup, or remove it and configure replication again with CHANGE REPLICATION SOURCE TO", err)
	}
	s.repl.Settings.Workers.Store(cfg.ReplicaParallelWorkers)
	s.repl.Settings.Type.Store(cfg.ReplicaParallelType)
	s.repl.Settings.SkipErrors.Store(cfg.ReplicaSkipErrors)
	s.repl.Settings.SemiSync.Store(cfg.SemiSyncReplicaEnabled)
	if m != nil && s.repl.Configured() {
		s.shutdownStorage()
		return nil, fmt.Errorf("refusing to start as a cluster member: this data directory is configured to replicate from a source (RESET REPLICA ALL on it as a single server first)")
	}
	if s.secureFilePriv, err = secureFileDir(cfg); err != nil {
		s.shutdownStorage()
		return nil, err
	}
	s.sql.ReadOnly.Store(cfg.ReadOnly || cfg.SuperReadOnly)
	s.sql.SuperReadOnly.Store(cfg.SuperReadOnly)
	ac := admin.Components{SQL: s.sql, Binlog: blog, Store: store, Pipe: pipe, Source: s.source, Replica: s.repl,
		Log: log, GTIDVisible: s.gtidVisible, ReopenSlowLog: s.closeSlowLog, FlushStatus: flushServerStatus,
		ServerID: cfg.ServerID, GTIDDomainID: cfg.GTIDDomainID, ReadOnly: cfg.ReadOnly, SuperReadOnly: cfg.SuperReadOnly}
	if m != nil {
		ac.Member = memberAdmin{m, store}
	}
	s.adm = admin.New(ac)
	s.chain = s.interceptors()
	started := time.Now()
	status := []func(map[string]func() any){s.adm.SemiSyncStatus, s.adm.ReplicaStatus, s.fastPathStatus, s.tlsStatus, s.preparedStatus, s.trafficStatus}
	if m != nil {
		status = append(status, m.status)
	}
	installStatus(pipe, locks, started, status...)
	s.refreshSlowLog()
	if cfg.PerformanceSchema {
		s.digests = digest.NewSummary(int(cfg.PerformanceSchemaDigestsSize), maxDigestLength)
	}
	if s.tls, s.tlsFiles, err = s.tlsConfig(); err != nil {
		s.shutdownStorage()
		return nil, err
	}
	if err := s.registerVariables(); err != nil {
		s.shutdownStorage()
		return nil, err
	}
	if err := s.loadUsers(); err != nil {
		s.shutdownStorage()
		return nil, err
	}
	if err := s.loadComponents(); err != nil {
		s.shutdownStorage()
		return nil, err
	}
	if m != nil {
		// Other members' account changes arrive through the store.
		s.stop = make(chan struct{})
		s.sql.WatchAccounts(s.stop)
	}
	if err := s.checkExposure(); err != nil {
		s.shutdownStorage()
		return nil, err
	}
	s.auth = newAuthServer(s.sql.GMS.Analyzer.Catalog.MySQLDb, cfg.DataDir, func() bool {
		_, v, _ := sql.SystemVariables.GetGlobal("require_secure_transport")
		return sqlengine.IntValue(v) != 0
	})
	s.sql.LoginFailuresReset = s.auth.failures.reset
	s.sql.GMS.Analyzer.Catalog.BinlogPrimaryController = s.adm.PrimaryController()
	s.registerPerformanceSchema()
	s.registerDigestTable()
	if s.cfg.PerformanceSchema {
		s.sql.EnableTableIO()
		s.registerFileIOTables()
	}
	s.registerProcessTables()
	s.registerConnAttrsTables()
	s.registerGroupTables()
	s.registerFunctions()
	s.registerClusterFunctions()
	if s.stop == nil {
		s.stop = make(chan struct{})
	}
	if s.cfg.PerformanceSchema {
		s.registerMemoryTable()
	}
	if m == nil {
		go s.adm.ExpireLogs(s.stop)
	}
	addr := net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.Port))
	tl, err := net.Listen("tcp", addr)
	if err != nil {
		s.shutdownStorage()
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	s.conns = &protocol.ConnLimit{Max: func() int64 {
		_, v, _ := sql.SystemVariables.GetGlobal("max_connections")
		return sqlengine.IntValue(v)
	}}
	s.wire = &protocol.Listener{Listener: tl, Limit: s.conns, MaxPacket: maxAllowedPacket, TLS: s.tls, TLSStats: &s.tlsStats, ConnectTimeout: connectTimeout,
		CheckPrepare: s.checkPrepare, Prepared: &s.prepared, PreparedBytes: &s.preparedBytes, ReleaseStatement: s.sql.ReleaseProtocol,
		Traffic: &s.traffic, CountStatus: s.sql.CountStatus, Statistics: s.statistics}
	lst, err := gmsserver.NewServerWithHandler(gmsserver.Config{
		Protocol:                "tcp",
		Address:                 addr,
		Listener:                s.wire,
		Version:                 binlog.ServerVersion,
		ProtocolListenerFactory: s.protocolListener,
	}, s.sql.GMS, s.sql.NewContext, s.sql.SessionBuilder(), nil, s.wrapHandler)
	if err != nil {
		tl.Close()
		s.shutdownStorage()
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	s.bind(lst)
	go s.wire.WatchDisconnects(s.stop, (*protocol.Conn).CancelStatement)
	if cfg.MariaDBPort != 0 {
		if err := s.listenMariaDB(); err != nil {
			lst.Close()
			s.shutdownStorage()
			return nil, err
		}
	}
	s.listener = lst
	s.addr = lst.Listener.Addr().String()
	if cfg.HTTPPort != 0 {
		guard, httpTLS, err := s.httpGuard()
		if err != nil {
			lst.Close()
			s.shutdownStorage()
			return nil, err
		}
		haddr := net.JoinHostPort(cfg.HTTPBindAddress, strconv.Itoa(cfg.HTTPListenPort()))
		hl, err := net.Listen("tcp", haddr)
		if err != nil {
			lst.Close()
			s.shutdownStorage()
			return nil, fmt.Errorf("HTTP endpoint on %s (--http-port): %w", haddr, err)
		}
		reg := metrics.Registry(obs, pipe, locks, s.source, started)
		metrics.RegisterReplica(reg, s.repl)
		metrics.RegisterFastPath(reg, s.sql.Fast.Executed.Load, s.sql.Fast.Fallbacks.Load)
		metrics.RegisterServer(reg, s.store.DiskBytes, s.adm.BinlogBytes)
		if s.digests != nil {
			s.stmtMetrics.Store(metrics.RegisterStatements(reg))
		}
		if m != nil {
			metrics.RegisterCluster(reg, m.Driver)
		}
		mux := metrics.Handler(reg, cfg.HTTPPprof)
		hl = httpListener(hl, httpTLS)
		sampler := dashboard.NewSampler(reg, dashboardKeep, time.Second, dashboard.DefaultKeep)
		go sampler.Run(s.stop)
		dashboard.New(sampler, s.topology).Register(mux)
		// A profile or trace runs for as many seconds as asked: the write
		// timeout leaves room for that only when the profiler is on.
		write := time.Minute
		if cfg.HTTPPprof {
			write = 10 * time.Minute
			// /debug/pprof/mutex shows where goroutines wait for each
			// other's locks: sample one contention event in 100.
			runtime.SetMutexProfileFraction(100)
		}
		s.http = &http.Server{Handler: guard(mux), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: write, IdleTimeout: 2 * time.Minute}
		s.httpAddr = hl.Addr().String()
		go func() {
			if err := s.http.Serve(hl); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("HTTP endpoint stopped", "err", err)
			}
		}()
	}
	go func() {
		if err := lst.Start(); err != nil && !errors.Is(err, net.ErrClosed) {
			log.Error("listener stopped", "err", err)
		}
	}()
	if err := s.startReplication(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// startReplication applies the --source-* options and starts replication
// if a source is configured (unless --skip-replica-start).
func (s *Server) startReplication() error {
	if s.cfg.SourceHost != "" {
		err := s.repl.ChangeSource(func(c *replica.SourceConfig) error {
			c.Host, c.Port, c.User, c.Password = s.cfg.SourceHost, int(s.cfg.SourcePort), s.cfg.SourceUser, s.cfg.SourcePassword
			c.AutoPosition = s.cfg.SourceAutoPosition
			c.ConnectRetry = int(s.cfg.SourceConnectRetry)
			return nil
		})
		if err != nil {
			return fmt.Errorf("--source-host: %w", err)
		}
	}
	if s.repl.Configured() && !s.cfg.SkipReplicaStart {
		if err := s.repl.Start(true, true); err != nil {
			return fmt.Errorf("starting replication: %w", err)
		}
		src := s.repl.Source()
		s.log.Info("replicating", "source", net.JoinHostPort(src.Host, strconv.Itoa(src.Port)), "workers", s.repl.Settings.Workers.Load(), "parallel_type", s.repl.Settings.Type.Load())
	}
	return nil
}

// protocolListener makes go-mysql-server's protocol listener with
// Lockstep's authentication (auth.go) in place of go-mysql-server's.
func (s *Server) protocolListener(cfg gmsserver.Config, lc mysql.ListenerConfig, sel gmsserver.ServerEventListener) (gmsserver.ProtocolListener, error) {
	lc.AuthServer = s.auth
	return gmsserver.MySQLProtocolListenerFactory(cfg, lc, sel)
}

// mariadbVersion is what the --mariadb-port handshake announces. MariaDB
// itself sends its version behind a "5.5.5-" prefix, which MariaDB clients
// and replicas strip; a MariaDB replica uses GTIDs only if the version
// after it is 10 or later.
const mariadbVersion = "5.5.5-10.11.99-MariaDB-lockstep"

// listenMariaDB starts the --mariadb-port listener: the same server, a
// MariaDB-style version in the handshake.
func (s *Server) listenMariaDB() error {
	addr := net.JoinHostPort(s.cfg.BindAddress, strconv.Itoa(s.cfg.MariaDBPort))
	tl, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s (--mariadb-port): %w", addr, err)
	}
	wl := &protocol.Listener{Listener: tl, MariaDB: true, Limit: s.conns, MaxPacket: maxAllowedPacket, TLS: s.tls, TLSStats: &s.tlsStats, ConnectTimeout: connectTimeout,
		CheckPrepare: s.checkPrepare, Prepared: &s.prepared, PreparedBytes: &s.preparedBytes, ReleaseStatement: s.sql.ReleaseProtocol,
		Traffic: &s.traffic, CountStatus: s.sql.CountStatus, Statistics: s.statistics}
	lst, err := gmsserver.NewServerWithHandler(gmsserver.Config{
		Protocol: "tcp", Address: addr, Listener: wl, Version: mariadbVersion,
		ProtocolListenerFactory: s.protocolListener,
	}, s.sql.GMS, s.mariadbContext, s.sql.SessionBuilderVersion(strings.TrimPrefix(mariadbVersion, "5.5.5-")), nil, s.wrapHandler)
	if err != nil {
		tl.Close()
		return fmt.Errorf("listening on %s (--mariadb-port): %w", addr, err)
	}
	s.unbound.idBase = mariadbConnIDBase
	s.bind(lst)
	s.mariadb, s.mariadbWire = lst, wl
	go wl.WatchDisconnects(s.stop, (*protocol.Conn).CancelStatement)
	go func() {
		if err := lst.Start(); err != nil && !errors.Is(err, net.ErrClosed) {
			s.log.Error("MariaDB-port listener stopped", "err", err)
		}
	}()
	return nil
}

// mariadbContext makes the --mariadb-port listener's query contexts. Each
// listener numbers its queries from 1, but the engine's process list is
// shared and refuses a query id already running ("pid N is already in
// use"), so this listener's ids start at 1<<62.
func (s *Server) mariadbContext(ctx context.Context, opts ...sql.ContextOption) *sql.Context {
	c := s.sql.NewContext(ctx, opts...)
	if pid := c.Pid(); pid != 0 {
		c.ApplyOpts(sql.WithPid(pid + 1<<62))
	}
	return c
}

// Addr is the address clients connect to.
func (s *Server) Addr() string { return s.addr }

// Close stops accepting clients, finishes committing, flushes the store and
// closes the binlog.
func (s *Server) Close() error {
	close(s.stop)
	if s.http != nil {
		s.http.Close()
	}
	s.repl.Close()
	err := s.listener.Close()
	if s.mariadb != nil {
		s.mariadb.Close()
	}
	// Dumps and semi-sync waits end first, so that no commit waits for
	// an acknowledgement; then the clients' connections are ended and
	// their handlers waited for, as mysqld kills its client threads
	// before it stops its engines: a statement still running when the
	// store closes would read a closed store.
	s.source.Close()
	left := 0
	for _, w := range []*protocol.Listener{s.wire, s.mariadbWire} {
		if w != nil {
			left += w.Drain(shutdownDrain)
		}
	}
	if left > 0 {
		s.log.Warn("connections still running at shutdown", "connections", left, "waited", shutdownDrain)
	}
	if e := s.shutdownStorage(); err == nil {
		err = e
	}
	s.closeSlowLog()
	s.dirLock.Close()
	return err
}

// shutdownDrain bounds how long Close waits for connections' handlers.
const shutdownDrain = 10 * time.Second

// lockDataDir takes <dir>/lockstep.pid with an exclusive advisory lock,
// held until the returned file is closed (or the process ends), and
// writes the process id in it: a second server on the same directory is
// refused with a message naming the one that holds it.
func lockDataDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, "lockstep.pid")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("locking the data directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		pid, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("the data directory %s is in use by another lockstep server (pid %s); stop it, or give this one another --datadir", dir, strings.TrimSpace(string(pid)))
		}
		return nil, fmt.Errorf("locking the data directory %s: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

func (s *Server) shutdownStorage() error {
	var err error
	if s.member != nil {
		s.member.stop()
		err = s.blog.Close()
	} else {
		err = s.pipe.Close()
	}
	if e := s.store.Close(); err == nil {
		err = e
	}
	return err
}

// storeLogger passes the store's errors to the server log (its routine
// messages are dropped) and stops the process on a fatal one, as Pebble
// requires.
type storeLogger struct{ log *slog.Logger }

func (l storeLogger) Infof(string, ...any) {}
func (l storeLogger) Errorf(format string, args ...any) {
	l.log.Error(fmt.Sprintf(format, args...))
}
func (l storeLogger) Fatalf(format string, args ...any) {
	l.log.Error("fatal store error: " + fmt.Sprintf(format, args...))
	os.Exit(2)
}

// serverUUID reads or creates <datadir>/auto.cnf, as mysqld does.
func serverUUID(dir string) (binlog.UUID, error) {
	path := filepath.Join(dir, "auto.cnf")
	if b, err := os.ReadFile(path); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "server-uuid="); ok {
				return binlog.ParseUUID(strings.TrimSpace(v))
			}
		}
		return binlog.UUID{}, fmt.Errorf("%s has no server-uuid line", path)
	} else if !os.IsNotExist(err) {
		return binlog.UUID{}, err
	}
	u := uuid.New()
	id, _ := binlog.ParseUUID(u.String())
	content := fmt.Sprintf("[auto]\nserver-uuid=%s\n", u.String())
	return id, atomicfile.Write(vfs.Default, path, []byte(content))
}

// registerVariables publishes the server's settings as MySQL system
// variables; the dynamic ones change the running pipeline.
func (s *Server) registerVariables() error {
	// A cluster member syncs its log before acknowledging any entry and
	// has no commit groups: the pipeline's settings show what it does,
	// read-only.
	var pc *commit.Config
	if s.pipe != nil {
		pc = s.pipe.Config()
	} else {
		pc = &commit.Config{}
		pc.SyncBinlog.Store(1)
		pc.FlushLogAtTrxCommit.Store(1)
		pc.Tracking.Store(int32(commit.WriteSet))
		pc.HistorySize.Store(s.cfg.DependencyHistorySize)
	}
	dynamic := func(set func(int64)) func(int64) {
		if s.member != nil {
			return nil
		}
		return set
	}
	onOff := func(b bool) int8 {
		if b {
			return 1
		}
		return 0
	}
	global := sql.GetMysqlScope(sql.SystemVariableScope_Global)
	intVar := func(name string, lo, hi int64, def int64, set func(int64)) sql.SystemVariable {
		return &sql.MysqlSystemVariable{
			Name: name, Scope: global, Dynamic: set != nil,
			Type: types.NewSystemIntType(name, lo, hi, false), Default: def,
			NotifyChanged: func(_ *sql.Context, _ sql.SystemVariableScope, v sql.SystemVarValue) error {
				if set != nil {
					set(sqlengine.IntValue(v.Val))
				}
				return nil
			},
		}
	}
	// pipelineBool is an ON/OFF setting of the pipeline, read-only on a
	// cluster member.
	pipelineBool := func(name string, b *atomic.Bool) sql.SystemVariable {
		return &sql.MysqlSystemVariable{
			Name: name, Scope: global, Dynamic: s.member == nil,
			Type: types.NewSystemBoolType(name), Default: onOff(b.Load()),
			NotifyChanged: func(_ *sql.Context, _ sql.SystemVariableScope, v sql.SystemVarValue) error {
				b.Store(sqlengine.IntValue(v.Val) != 0)
				return nil
			},
		}
	}
	vars := append(append(s.adm.SemiSyncVariables(), s.adm.ReplicaVariables()...),
		intVar("sync_binlog", 0, 1<<32-1, pc.SyncBinlog.Load(), dynamic(pc.SyncBinlog.Store)),
		intVar("innodb_flush_log_at_trx_commit", 0, 2, pc.FlushLogAtTrxCommit.Load(), dynamic(pc.FlushLogAtTrxCommit.Store)),
		intVar("binlog_group_commit_sync_delay", 0, 1_000_000, pc.SyncDelay.Load(), dynamic(pc.SyncDelay.Store)),
		intVar("binlog_group_commit_sync_no_delay_count", 0, 100_000, pc.NoDelayCount.Load(), dynamic(pc.NoDelayCount.Store)),
		intVar("binlog_transaction_dependency_history_size", 1, 1_000_000, pc.HistorySize.Load(), dynamic(pc.HistorySize.Store)),
		intVar("binlog_expire_logs_seconds", 0, 1<<32, s.binlogExpireSeconds(), nil),
		pipelineBool("lockstep_binlog_group_commit_gather", &pc.Gather),
		pipelineBool("binlog_parallel_flush", &pc.ParallelFlush),
		&sql.MysqlSystemVariable{
			Name: "binlog_transaction_dependency_tracking", Scope: global, Dynamic: s.member == nil,
			Type:    types.NewSystemEnumType("binlog_transaction_dependency_tracking", "COMMIT_ORDER", "WRITESET", "WRITESET_SESSION"),
			Default: commit.Tracking(pc.Tracking.Load()).String(),
			NotifyChanged: func(_ *sql.Context, _ sql.SystemVariableScope, v sql.SystemVarValue) error {
				if t, ok := commit.ParseTracking(strings.ToUpper(fmt.Sprint(v.Val))); ok {
					pc.Tracking.Store(int32(t))
				}
				return nil
			},
		},
		&sql.MysqlSystemVariable{
			Name: "gtid_executed", Scope: global, Dynamic: false,
			Type: types.NewSystemStringType("gtid_executed"), Default: "",
			ValueFunction: func() (any, error) { return s.gtidVisible().String(), nil },
		},
	)
	vars = append(vars,
		&sql.MysqlSystemVariable{
			Name: "performance_schema_digests_size", Scope: global, Dynamic: false,
			Type:    types.NewSystemIntType("performance_schema_digests_size", -1, 1<<20, false),
			Default: s.cfg.PerformanceSchemaDigestsSize,
		})
	vars = append(vars, s.tlsVariables()...)
	vars = append(vars, s.clusterVariables()...)
	vars = append(vars, s.clusterSettings()...)
	vars = append(vars, s.limitVariables()...)
	// Every role granted to an account is active in its sessions (SET ROLE
	// and SET DEFAULT ROLE are not supported): MySQL with this variable ON.
	vars = append(vars, &sql.MysqlSystemVariable{
		Name: "activate_all_roles_on_login", Scope: global, Dynamic: false,
		Type: types.NewSystemBoolType("activate_all_roles_on_login"), Default: int8(1),
	})
	sql.SystemVariables.AddSystemVariables(vars)
	sqlengine.RegisterComputedVariable("gtid_executed")
	// Start-up values, read-only ones included (as mysqld's options).
	return sql.SystemVariables.AssignValues(map[string]any{
		"server_id":                s.cfg.ServerID,
		"server_uuid":              s.uuid.String(),
		"log_bin":                  1,
		"binlog_format":            "ROW",
		"binlog_row_image":         "FULL",
		"binlog_row_metadata":      "FULL",
		"binlog_checksum":          "CRC32",
		"gtid_mode":                "ON",
		"enforce_gtid_consistency": "ON",
		"max_binlog_size":          uint64(s.cfg.MaxBinlogSize),
		"version":                  binlog.ServerVersion,
		"version_comment":          "Lockstep",
		"port":                     int64(s.cfg.Port),
		"bind_address":             s.cfg.BindAddress,
		"datadir":                  s.cfg.DataDir,
		"innodb_lock_wait_timeout": s.cfg.LockWaitTimeoutSeconds,
		"secure_file_priv":         s.secureFilePriv,
		"max_connections":          s.cfg.MaxConnections,
		"max_allowed_packet":       s.cfg.MaxAllowedPacket,
		"require_secure_transport": onOff(s.cfg.RequireSecureTransport),
		"performance_schema":       onOff(s.cfg.PerformanceSchema),
		"max_digest_length":        int64(maxDigestLength),
	})
}

// maxAllowedPacket reads max_allowed_packet.
func maxAllowedPacket() int64 {
	_, v, _ := sql.SystemVariables.GetGlobal("max_allowed_packet")
	return sqlengine.IntValue(v)
}

// secureFileDir resolves --secure-file-priv (relative to the data
// directory; empty: no confinement) and creates the folder, readable by
// the server's user only.
func secureFileDir(cfg Config) (string, error) {
	dir := cfg.SecureFilePriv
	if dir == "" {
		return "", nil
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(cfg.DataDir, dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", fmt.Errorf("--secure-file-priv %s: %w", abs, err)
	}
	return abs, nil
}

// Run starts the server and serves until ctx ends.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	// The store's block cache and memtables live outside the Go heap, so
	// the heap proper is small (tens of MB under OLTP load) while the
	// statement path allocates quickly: with Go's default GOGC=100 the
	// collector ran constantly. 400 measured 18% more oltp_read_only QPS
	// (docs/BENCHMARKS.md). A soft memory limit keeps that headroom from
	// multiplying a large live heap (an ALTER TABLE rewrite holds the
	// table's rows): near the limit the collector runs as often as it
	// must. (Lockstep builds with cgo, which go-mysql-server's regular
	// expressions need, so Pebble's cache and memtables are C allocations
	// outside the limit.)
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(int(cfg.GCPercent))
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(cfg.GCMemoryLimit)
	}
	// Durable commits pass through two serial goroutines (the flusher and
	// the committer, internal/commit). The flusher returns from each fsync
	// without a processor when every one is busy, and waits in the global
	// run queue behind the connections; more processors than CPUs let it
	// take an idle one and leave the sharing to the kernel. That trades
	// read-heavy CPU for commit latency, so it is an option, not the
	// default (docs/BENCHMARKS.md, "Go's scheduler and the commit path").
	if cfg.GoMaxProcs > 0 && os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(int(cfg.GoMaxProcs))
	}
	for {
		s, err := StartContext(ctx, cfg, log)
		if err != nil {
			return err
		}
		attrs := []any{"address", s.Addr(), "metrics", s.httpAddr, "datadir", cfg.DataDir, "server_uuid", s.uuid.String()}
		if open := s.passwordless(); len(open) > 0 {
			attrs = append(attrs, "note", strings.Join(open, ", ")+" may log in without a password; keep --bind-address on loopback, or give them passwords (ALTER USER ... IDENTIFIED BY)")
		}
		log.Info("lockstep is ready for connections", attrs...)
		select {
		case <-ctx.Done():
			log.Info("shutting down")
			return s.Close()
		case <-s.ShutdownRequested():
			log.Info("shutting down: SHUTDOWN")
			return s.Close()
		case <-s.behind():
			// A cluster member behind the cluster's purged log: its data
			// directory is marked, and the next start sets its data
			// aside and joins with a copy (resync.go).
			log.Info("restarting to take a copy of a member's data")
			if err := s.Close(); err != nil {
				return err
			}
		}
	}
}

// behind is closed when the server, a cluster member, must restart to
// take a copy of a member's data (resync.go); nil for a single server.
func (s *Server) behind() <-chan struct{} {
	if s.member == nil {
		return nil
	}
	return s.member.behind
}
