package server

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/lockstepdb/lockstep/internal/cluster"
	"github.com/lockstepdb/lockstep/internal/commit"
	"github.com/spf13/pflag"
	"gopkg.in/ini.v1"
)

// Config is the server's start-up configuration, under mysqld's option
// names (dashes and underscores are interchangeable).
type Config struct {
	Port                   int
	BindAddress            string
	DataDir                string
	ServerID               uint32
	SyncBinlog             int64
	FlushLogAtTrxCommit    int64
	SyncDelayMicros        int64
	NoDelayCount           int64
	GatherGroups           bool
	MaxBinlogSize          int64
	BinlogExpireSeconds    int64
	DependencyTracking     commit.Tracking
	DependencyHistorySize  int64
	ParallelFlush          bool
	LockWaitTimeoutSeconds int64
	CacheSizeBytes         int64
	// GCPercent is the Go collector's GOGC, GCMemoryLimit its soft
	// memory limit (see server.Run).
	GCPercent     int64
	GCMemoryLimit int64
	// GoMaxProcs is the Go scheduler's GOMAXPROCS (0 = the CPUs available).
	GoMaxProcs int64
	// HTTPPort serves /metrics and the dashboard on HTTPBindAddress (0 =
	// off; HTTPPortAuto: the SQL port + 4774, see HTTPListenPort);
	// HTTPPprof adds Go's profiler under /debug/pprof/.
	HTTPPort        int
	HTTPBindAddress string
	HTTPPprof       bool
	// HTTPAuth ("user:password") requires HTTP basic authentication on
	// every path; HTTPSSL serves HTTPS with the server's certificate.
	HTTPAuth string
	HTTPSSL  bool
	// LogLevel is the least severe level the log shows (NewLogger).
	LogLevel slog.Level

	// Semi-synchronous replication, source side.
	SemiSyncEnabled       bool
	SemiSyncTimeoutMillis int64
	SemiSyncAfterCommit   bool // wait point AFTER_COMMIT (default AFTER_SYNC)
	SemiSyncWaitCount     int64
	SemiSyncWaitNoReplica bool
	// MariaDBPort, if not 0, is a second MySQL-protocol port whose
	// handshake announces a MariaDB 10.11-compatible version: MariaDB
	// replicas use GTIDs (and get MariaDB events) only with a source whose
	// version is 10 or later.
	MariaDBPort int
	// GTIDDomainID is the MariaDB GTID domain of our transactions on
	// MariaDB-flavour replication connections.
	GTIDDomainID int64

	// Replica side. SourceHost set makes the server a replica of it at
	// start (CHANGE REPLICATION SOURCE TO, then START REPLICA unless
	// SkipReplicaStart); the stored configuration is used otherwise.
	SourceHost, SourceUser, SourcePassword string
	SourcePort, SourceConnectRetry         int64
	SourceAutoPosition                     bool
	SkipReplicaStart                       bool
	ReplicaParallelWorkers                 int64
	ReplicaParallelType                    string
	ReplicaSkipErrors                      string
	SemiSyncReplicaEnabled                 bool
	ReadOnly, SuperReadOnly                bool

	// MaxConnections is max_connections (one more is kept for SUPER or
	// CONNECTION_ADMIN).
	MaxConnections int64

	// MaxAllowedPacket is max_allowed_packet: the largest command.
	MaxAllowedPacket int64

	// PerformanceSchema keeps performance_schema's statement summary by
	// digest, of at most PerformanceSchemaDigestsSize digests.
	PerformanceSchema            bool
	PerformanceSchemaDigestsSize int64

	// SecureFilePriv confines file import and export (relative to
	// DataDir; empty: anywhere the server can read and write).
	SecureFilePriv string

	// TLS: SSL offers TLS to clients, with SSLCert/SSLKey/SSLCA or, when
	// none is given, certificates generated in the data directory at first
	// start (as mysqld's auto_generate_certs). RequireSecureTransport
	// refuses logins without TLS.
	SSL                    bool
	SSLCert, SSLKey, SSLCA string
	RequireSecureTransport bool

	// ResetAccounts recreates a missing account store (mysql.db) with
	// root@localhost and no password instead of refusing to start.
	ResetAccounts bool

	// Cluster makes the server a member of a multi-primary cluster when
	// Cluster.Address is set and WsrepOn (cluster.go).
	Cluster ClusterConfig
	WsrepOn bool
}

// groupCommitOnMember refuses the commit-group settings of a single
// server on a cluster member, whose log is raft's and has no commit
// groups: set to anything but their defaults, they would be ignored.
func (c *Config) groupCommitOnMember() error {
	d := Defaults()
	for _, o := range []struct {
		name string
		set  bool
	}{
		{"binlog-group-commit-sync-delay", c.SyncDelayMicros != d.SyncDelayMicros},
		{"binlog-group-commit-sync-no-delay-count", c.NoDelayCount != d.NoDelayCount},
		{"lockstep-binlog-group-commit-gather", c.GatherGroups != d.GatherGroups},
		{"binlog-parallel-flush", c.ParallelFlush != d.ParallelFlush},
	} {
		if o.set {
			return fmt.Errorf("--%s: a cluster member has no commit groups (its log is the cluster's); remove the option", o.name)
		}
	}
	return nil
}

// Clustered reports whether the server starts as a cluster member.
func (c *Config) Clustered() bool { return c.WsrepOn && c.Cluster.Address != "" }

// Defaults are the values with no options.
// HTTPPortAuto is --http-port's default: see HTTPListenPort.
const HTTPPortAuto = -1

// HTTPListenPort is the HTTP endpoint's port: --http-port, or by default
// the SQL port + 4774 (8080 for MySQL's 3306), so that a second server
// started with only another --port and --datadir does not collide with
// the first; a port chosen by the system when that is out of range or the
// SQL port is.
func (c *Config) HTTPListenPort() int {
	if c.HTTPPort != HTTPPortAuto {
		return c.HTTPPort
	}
	if c.Port > 0 && c.Port+4774 <= 65535 {
		return c.Port + 4774
	}
	return 0
}

func Defaults() Config {
	return Config{
		Port:                         3306,
		BindAddress:                  "127.0.0.1",
		HTTPBindAddress:              "127.0.0.1",
		DataDir:                      "./lockstep-data",
		SecureFilePriv:               "secure-files",
		SSL:                          true,
		MaxConnections:               151,
		MaxAllowedPacket:             64 << 20,
		PerformanceSchema:            true,
		PerformanceSchemaDigestsSize: 10000,
		ServerID:                     1,
		SyncBinlog:                   1,
		FlushLogAtTrxCommit:          1,
		GatherGroups:                 true,
		MaxBinlogSize:                1 << 30,
		BinlogExpireSeconds:          30 * 24 * 3600,
		DependencyTracking:           commit.WriteSet,
		DependencyHistorySize:        25000,
		LockWaitTimeoutSeconds:       50,
		CacheSizeBytes:               512 << 20,
		GCPercent:                    400,
		GCMemoryLimit:                1 << 30,
		HTTPPort:                     HTTPPortAuto,
		SemiSyncTimeoutMillis:        10000,
		SemiSyncWaitCount:            1,
		SemiSyncWaitNoReplica:        true,
		SourcePort:                   3306,
		SourceConnectRetry:           60,
		SourceAutoPosition:           true,
		ReplicaParallelWorkers:       4,
		ReplicaParallelType:          "LOGICAL_CLOCK",
		ReplicaSkipErrors:            "OFF",
		WsrepOn:                      true,
		Cluster: ClusterConfig{Name: "my_wsrep_cluster", TickMillis: 100, ApplierThreads: defaultApplierThreads,
			FCLimit: int64(cluster.DefaultFlowConfig.Limit), FCFactor: cluster.DefaultFlowConfig.Factor,
			DesyncAfterMillis: cluster.DefaultFlowConfig.DesyncAfter.Milliseconds(), DesyncedReads: "WAIT"},
	}
}

func strOpt(name, help string, get func(*Config) *string) option {
	return option{
		name: name, help: help,
		def:   func(c *Config) string { return *get(c) },
		apply: func(c *Config, v string) error { *get(c) = v; return nil },
	}
}

// option is one setting: its name (dashed), help, and how to apply a
// textual value to a Config.
type option struct {
	name  string
	help  string
	def   func(*Config) string
	apply func(*Config, string) error
	// boolean options may be given without a value (--name means ON).
	boolean bool
}

func intOpt(name, help string, get func(*Config) *int64, lo, hi int64) option {
	return option{
		name: name, help: help,
		def: func(c *Config) string { return strconv.FormatInt(*get(c), 10) },
		apply: func(c *Config, v string) error {
			n, err := parseSize(v)
			if err != nil || n < lo || n > hi {
				return fmt.Errorf("invalid value %q for --%s (expected an integer from %d to %d)", v, name, lo, hi)
			}
			*get(c) = n
			return nil
		},
	}
}

// parseSize parses an integer with an optional K/M/G suffix, as mysqld does.
func parseSize(v string) (int64, error) {
	v = strings.TrimSpace(v)
	mult := int64(1)
	if n := len(v); n > 0 {
		switch v[n-1] {
		case 'k', 'K':
			mult, v = 1<<10, v[:n-1]
		case 'm', 'M':
			mult, v = 1<<20, v[:n-1]
		case 'g', 'G':
			mult, v = 1<<30, v[:n-1]
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n * mult, err
}

func boolOpt(name, help string, get func(*Config) *bool) option {
	return option{
		name: name, help: help, boolean: true,
		def: func(c *Config) string {
			if *get(c) {
				return "ON"
			}
			return "OFF"
		},
		apply: func(c *Config, v string) error {
			b, err := parseBool(name, v)
			*get(c) = b
			return err
		},
	}
}

func parseBool(name, v string) (bool, error) {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "1", "ON", "TRUE", "YES", "":
		return true, nil
	case "0", "OFF", "FALSE", "NO":
		return false, nil
	}
	return false, fmt.Errorf("invalid value %q for --%s (expected ON or OFF)", v, name)
}

var options = []option{
	{name: "port", help: "TCP port for MySQL clients",
		def: func(c *Config) string { return strconv.Itoa(c.Port) },
		apply: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 65535 {
				return fmt.Errorf("invalid value %q for --port", v)
			}
			c.Port = n
			return nil
		}},
	strOpt("http-bind-address", "address the HTTP endpoint (dashboard, /metrics) listens on; off loopback, set --http-auth (and --http-ssl)",
		func(c *Config) *string { return &c.HTTPBindAddress }),
	strOpt("http-auth", "user:password that HTTP clients must give (basic authentication) on every path of the HTTP endpoint; empty: none",
		func(c *Config) *string { return &c.HTTPAuth }),
	boolOpt("http-ssl", "serve the HTTP endpoint over HTTPS, with the server's TLS certificate",
		func(c *Config) *bool { return &c.HTTPSSL }),
	boolOpt("lockstep-http-pprof", "serve Go's profiler under /debug/pprof/ on the HTTP endpoint, with one lock contention in 100 sampled for its mutex profile",
		func(c *Config) *bool { return &c.HTTPPprof }),
	{name: "http-port", help: "port for the HTTP endpoint (dashboard, /metrics), on --http-bind-address; auto: the SQL port + 4774 (8080 for 3306), so that servers on other SQL ports do not collide; 0 turns it off",
		def: func(c *Config) string {
			if c.HTTPPort == HTTPPortAuto {
				return "auto"
			}
			return strconv.Itoa(c.HTTPPort)
		},
		apply: func(c *Config, v string) error {
			if strings.EqualFold(strings.TrimSpace(v), "auto") {
				c.HTTPPort = HTTPPortAuto
				return nil
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 65535 {
				return fmt.Errorf("invalid value %q for --http-port", v)
			}
			c.HTTPPort = n
			return nil
		}},
	{name: "mariadb-port", help: "second client port announcing a MariaDB-compatible version, for MariaDB replicas using GTIDs (0 = off)",
		def: func(c *Config) string { return strconv.Itoa(c.MariaDBPort) },
		apply: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 65535 {
				return fmt.Errorf("invalid value %q for --mariadb-port", v)
			}
			c.MariaDBPort = n
			return nil
		}},
	{name: "bind-address", help: "address to listen on",
		def:   func(c *Config) string { return c.BindAddress },
		apply: func(c *Config, v string) error { c.BindAddress = v; return nil }},
	{name: "datadir", help: "data directory (binlog files and the store)",
		def: func(c *Config) string { return c.DataDir },
		apply: func(c *Config, v string) error {
			if v == "" {
				return fmt.Errorf("--datadir must not be empty")
			}
			c.DataDir = v
			return nil
		}},
	{name: "server-id", help: "server id written in binlog events",
		def: func(c *Config) string { return strconv.FormatUint(uint64(c.ServerID), 10) },
		apply: func(c *Config, v string) error {
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return fmt.Errorf("invalid value %q for --server-id", v)
			}
			c.ServerID = uint32(n)
			return nil
		}},
	intOpt("sync-binlog", "fsync the binlog every N commit groups (1 = every group, 0 = leave it to the OS)",
		func(c *Config) *int64 { return &c.SyncBinlog }, 0, 1<<32-1),
	intOpt("innodb-flush-log-at-trx-commit", "1 = durable commits; 0 or 2 = fsync once a second unless sync_binlog says otherwise",
		func(c *Config) *int64 { return &c.FlushLogAtTrxCommit }, 0, 2),
	intOpt("binlog-group-commit-sync-delay", "microseconds a commit group waits for more transactions before syncing",
		func(c *Config) *int64 { return &c.SyncDelayMicros }, 0, 1_000_000),
	intOpt("binlog-group-commit-sync-no-delay-count", "stop waiting once this many transactions are queued (0 = no limit)",
		func(c *Config) *int64 { return &c.NoDelayCount }, 0, 100_000),
	boolOpt("lockstep-binlog-group-commit-gather", "without a sync delay, let a group that will be synced wait (at most half a recent fsync time) for the sessions that committed recently",
		func(c *Config) *bool { return &c.GatherGroups }),
	intOpt("max-binlog-size", "rotate the binlog after this many bytes",
		func(c *Config) *int64 { return &c.MaxBinlogSize }, 4096, 1<<30),
	intOpt("binlog-expire-logs-seconds", "purge binlog files older than this (0 = never)",
		func(c *Config) *int64 { return &c.BinlogExpireSeconds }, 0, 1<<32),
	intOpt("binlog-transaction-dependency-history-size", "WRITESET history size",
		func(c *Config) *int64 { return &c.DependencyHistorySize }, 1, 1_000_000),
	{name: "binlog-transaction-dependency-tracking", help: "COMMIT_ORDER, WRITESET or WRITESET_SESSION",
		def: func(c *Config) string { return c.DependencyTracking.String() },
		apply: func(c *Config, v string) error {
			t, ok := commit.ParseTracking(strings.ToUpper(v))
			if !ok {
				return fmt.Errorf("invalid value %q for --binlog-transaction-dependency-tracking (expected COMMIT_ORDER, WRITESET or WRITESET_SESSION)", v)
			}
			c.DependencyTracking = t
			return nil
		}},
	{name: "binlog-parallel-flush", help: "encode binlog events in the committing threads (AliSQL binlog parallel flush)",
		def: func(c *Config) string {
			if c.ParallelFlush {
				return "ON"
			}
			return "OFF"
		},
		apply: func(c *Config, v string) error {
			b, err := parseBool("binlog-parallel-flush", v)
			c.ParallelFlush = b
			return err
		}},
	intOpt("innodb-lock-wait-timeout", "seconds a row lock wait lasts before error 1205",
		func(c *Config) *int64 { return &c.LockWaitTimeoutSeconds }, 1, 1<<30),
	intOpt("lockstep-cache-size", "bytes of block cache for the store",
		func(c *Config) *int64 { return &c.CacheSizeBytes }, 8<<20, 1<<40),
	intOpt("lockstep-gc-percent", "Go garbage collector target (GOGC): the heap grows this many percent past the live heap between collections (GOGC in the environment takes precedence)",
		func(c *Config) *int64 { return &c.GCPercent }, 25, 10000),
	intOpt("lockstep-gc-memory-limit", "Go heap size (the store's cache is not on it) at which the collector works harder whatever the GC percent: a soft limit (GOMEMLIMIT in the environment takes precedence)",
		func(c *Config) *int64 { return &c.GCMemoryLimit }, 64<<20, 1<<50),
	intOpt("lockstep-gomaxprocs", "OS threads running Go code at once (GOMAXPROCS; 0 = the CPUs available; GOMAXPROCS in the environment takes precedence): more than the CPUs shortens durable commit latency under many connections and costs read-heavy work CPU",
		func(c *Config) *int64 { return &c.GoMaxProcs }, 0, 1024),
	{name: "lockstep-log-level", help: "least severe messages the log shows: DEBUG (adds client connections and go-mysql-server's query logging), INFO, WARN or ERROR",
		def: func(c *Config) string { return c.LogLevel.String() },
		apply: func(c *Config, v string) error {
			var l slog.Level
			switch u := strings.ToUpper(strings.TrimSpace(v)); u {
			case "DEBUG", "INFO", "WARN", "ERROR":
				if err := l.UnmarshalText([]byte(u)); err != nil {
					return err
				}
			default:
				return fmt.Errorf("invalid value %q for --lockstep-log-level (expected DEBUG, INFO, WARN or ERROR)", v)
			}
			c.LogLevel = l
			return nil
		}},
	boolOpt("rpl-semi-sync-source-enabled", "semi-synchronous replication: commits wait for a replica's acknowledgement",
		func(c *Config) *bool { return &c.SemiSyncEnabled }),
	intOpt("rpl-semi-sync-source-timeout", "milliseconds a commit waits for an acknowledgement before the source falls back to async",
		func(c *Config) *int64 { return &c.SemiSyncTimeoutMillis }, 0, 1<<32-1),
	{name: "rpl-semi-sync-source-wait-point", help: "AFTER_SYNC (wait before the commit is visible) or AFTER_COMMIT",
		def: func(c *Config) string {
			if c.SemiSyncAfterCommit {
				return "AFTER_COMMIT"
			}
			return "AFTER_SYNC"
		},
		apply: func(c *Config, v string) error {
			switch strings.ToUpper(strings.TrimSpace(v)) {
			case "AFTER_SYNC":
				c.SemiSyncAfterCommit = false
			case "AFTER_COMMIT":
				c.SemiSyncAfterCommit = true
			default:
				return fmt.Errorf("invalid value %q for --rpl-semi-sync-source-wait-point (expected AFTER_SYNC or AFTER_COMMIT)", v)
			}
			return nil
		}},
	intOpt("rpl-semi-sync-source-wait-for-replica-count", "acknowledgements a commit waits for",
		func(c *Config) *int64 { return &c.SemiSyncWaitCount }, 1, 65535),
	boolOpt("rpl-semi-sync-source-wait-no-replica", "keep waiting (until the timeout) when fewer semi-sync replicas are connected than the count",
		func(c *Config) *bool { return &c.SemiSyncWaitNoReplica }),
	intOpt("gtid-domain-id", "MariaDB GTID domain of this server's transactions (MariaDB replicas)",
		func(c *Config) *int64 { return &c.GTIDDomainID }, 0, 1<<32-1),
	strOpt("source-host", "replicate from this source (as CHANGE REPLICATION SOURCE TO SOURCE_HOST at start)",
		func(c *Config) *string { return &c.SourceHost }),
	intOpt("source-port", "the source's port", func(c *Config) *int64 { return &c.SourcePort }, 1, 65535),
	intOpt("source-connect-retry", "seconds between reconnection attempts", func(c *Config) *int64 { return &c.SourceConnectRetry }, 1, 31536000),
	strOpt("source-user", "user the replica connects to its source as", func(c *Config) *string { return &c.SourceUser }),
	strOpt("source-password", "that user's password", func(c *Config) *string { return &c.SourcePassword }),
	intOpt("max-connections", "client connections at once (one more for an account with SUPER or CONNECTION_ADMIN); past that, error 1040",
		func(c *Config) *int64 { return &c.MaxConnections }, 1, 100000),
	intOpt("max-allowed-packet", "the largest command a client may send (MySQL 8's default, 64M); a larger one gets error 1153 and the connection ends",
		func(c *Config) *int64 { return &c.MaxAllowedPacket }, 1024, 1<<30),
	strOpt("secure-file-priv", "the only folder LOAD_FILE(), LOAD DATA INFILE and SELECT ... INTO OUTFILE/DUMPFILE may use (relative to --datadir; empty: any folder the server can reach, not recommended)",
		func(c *Config) *string { return &c.SecureFilePriv }),
	boolOpt("ssl", "offer TLS to clients (certificates from --ssl-cert/--ssl-key/--ssl-ca, or generated in the data directory at first start)",
		func(c *Config) *bool { return &c.SSL }),
	strOpt("ssl-cert", "the server's TLS certificate (PEM)", func(c *Config) *string { return &c.SSLCert }),
	strOpt("ssl-key", "the server's TLS private key (PEM)", func(c *Config) *string { return &c.SSLKey }),
	strOpt("ssl-ca", "CA certificates that verify client certificates (PEM; REQUIRE X509 accounts need one)", func(c *Config) *string { return &c.SSLCA }),
	boolOpt("require-secure-transport", "refuse logins that do not use TLS (error 3159)",
		func(c *Config) *bool { return &c.RequireSecureTransport }),
	boolOpt("source-auto-position", "find the position on the source from the replica's GTIDs",
		func(c *Config) *bool { return &c.SourceAutoPosition }),
	boolOpt("lockstep-reset-accounts", "when the account store (<datadir>/mysql.db) of a data directory in use is missing, recreate it with root@localhost and no password instead of refusing to start",
		func(c *Config) *bool { return &c.ResetAccounts }),
	boolOpt("skip-replica-start", "do not start replication at server start",
		func(c *Config) *bool { return &c.SkipReplicaStart }),
	intOpt("replica-parallel-workers", "applier worker threads (0 or 1 = apply in the coordinator)",
		func(c *Config) *int64 { return &c.ReplicaParallelWorkers }, 0, 1024),
	{name: "replica-parallel-type", help: "LOGICAL_CLOCK, WRITESET or DATABASE",
		def: func(c *Config) string { return c.ReplicaParallelType },
		apply: func(c *Config, v string) error {
			switch u := strings.ToUpper(strings.TrimSpace(v)); u {
			case "LOGICAL_CLOCK", "WRITESET", "DATABASE":
				c.ReplicaParallelType = u
				return nil
			}
			return fmt.Errorf("invalid value %q for --replica-parallel-type (expected LOGICAL_CLOCK, WRITESET or DATABASE)", v)
		}},
	strOpt("replica-skip-errors", "error numbers the applier skips (comma-separated, all, or OFF)",
		func(c *Config) *string { return &c.ReplicaSkipErrors }),
	boolOpt("rpl-semi-sync-replica-enabled", "acknowledge semi-synchronous sources",
		func(c *Config) *bool { return &c.SemiSyncReplicaEnabled }),
	boolOpt("performance-schema", "keep performance_schema.events_statements_summary_by_digest (MySQL's default, ON)",
		func(c *Config) *bool { return &c.PerformanceSchema }),
	intOpt("performance-schema-digests-size", "the most digests events_statements_summary_by_digest holds; statements past them are counted in one row with no digest",
		func(c *Config) *int64 { return &c.PerformanceSchemaDigestsSize }, 1, 1<<20),
	boolOpt("read-only", "refuse clients' writes unless they have SUPER (replication still applies)",
		func(c *Config) *bool { return &c.ReadOnly }),
	boolOpt("super-read-only", "refuse every client's writes (replication still applies)",
		func(c *Config) *bool { return &c.SuperReadOnly }),
	strOpt("wsrep-cluster-address", "gcomm:// and the cluster address (host:port) of every member, in the same order on every member: the server is then a member of a multi-primary cluster",
		func(c *Config) *string { return &c.Cluster.Address }),
	strOpt("wsrep-node-address", "this member's entry in --wsrep-cluster-address, where it listens for the other members",
		func(c *Config) *string { return &c.Cluster.NodeAddress }),
	strOpt("wsrep-cluster-name", "the cluster's name: members of another cluster are refused, and the cluster's GTID UUID is derived from it",
		func(c *Config) *string { return &c.Cluster.Name }),
	boolOpt("wsrep-on", "with --wsrep-cluster-address, start as a cluster member (OFF: a single server, whatever the address)",
		func(c *Config) *bool { return &c.WsrepOn }),
	strOpt("wsrep-node-name", "this member's name (wsrep_node_name; default: its host name)",
		func(c *Config) *string { return &c.Cluster.NodeName }),
	{name: "wsrep-provider", help: "accepted for Galera configuration files: Lockstep's replication is built in, so any library path means ON; none means a single server",
		def: func(c *Config) string { return "" },
		apply: func(c *Config, v string) error {
			if strings.EqualFold(strings.TrimSpace(v), "none") {
				c.WsrepOn = false
			}
			return nil
		}},
	intOpt("wsrep-slave-threads", "threads that prepare committed transactions for a member's store (wsrep_applier_threads); they become visible in log order whatever the number",
		func(c *Config) *int64 { return &c.Cluster.ApplierThreads }, 1, cluster.MaxApplierThreads),
	intOpt("lockstep-fc-desync-after", "milliseconds a member's apply queue may stay over gcs.fc_limit before it desyncs itself and stops slowing the others (0: never)",
		func(c *Config) *int64 { return &c.Cluster.DesyncAfterMillis }, 0, 3600000),
	{name: "lockstep-desynced-reads", help: "what a desynced member does with a statement that reads or writes tables: WAIT (until it has applied what the cluster had committed, as wsrep_sync_wait does) or REFUSE (1047)",
		def: func(c *Config) string { return c.Cluster.DesyncedReads },
		apply: func(c *Config, v string) error {
			switch m := strings.ToUpper(strings.TrimSpace(v)); m {
			case "WAIT", "REFUSE":
				c.Cluster.DesyncedReads = m
				return nil
			}
			return fmt.Errorf("invalid value %q for --lockstep-desynced-reads: WAIT or REFUSE", v)
		}},
	strOpt("lockstep-replace-member", "a member joining with an empty data directory takes the place of the voting member at this cluster address: once caught up, it becomes a voter and that member stops being one in the same change (raft's joint consensus), so the number of voters never grows",
		func(c *Config) *string { return &c.Cluster.Replaces }),
	boolOpt("wsrep-new-cluster", "as galera_new_cluster passes it: a member with an empty log starts a new cluster from --wsrep-cluster-address without asking the others first (not needed: a listed member that finds no other running starts one)",
		func(c *Config) *bool { return &c.Cluster.NewCluster }),
	{name: "wsrep-ssl-mode", help: "TLS between members: PROVIDER (the socket.ssl_* of --wsrep-provider-options; none given, no TLS), SERVER (--ssl-cert, --ssl-key and --ssl-ca, peers verified against the CA) or SERVER_X509 (also each peer's host name); members off loopback need TLS",
		def: func(c *Config) string { return c.Cluster.SSLMode },
		apply: func(c *Config, v string) error {
			switch m := strings.ToUpper(strings.TrimSpace(v)); m {
			case "PROVIDER", "SERVER", "SERVER_X509":
				c.Cluster.SSLMode = m
				return nil
			}
			return fmt.Errorf("invalid value %q for --wsrep-ssl-mode: PROVIDER, SERVER or SERVER_X509", v)
		}},
	{name: "wsrep-provider-options", help: "Galera provider options; Lockstep takes socket.ssl_cert, socket.ssl_key, socket.ssl_ca and socket.ssl (TLS between members, with --wsrep-ssl-mode=PROVIDER) and refuses the others by name",
		def:   func(c *Config) string { return "" },
		apply: func(c *Config, v string) error { return c.Cluster.applyProviderOptions(v) }},
	intOpt("lockstep-cluster-tick", "milliseconds per tick of the cluster's raft clock: a heartbeat every tick, an election after 10 to 20 ticks without a leader",
		func(c *Config) *int64 { return &c.Cluster.TickMillis }, 1, 10000),
}

// optionAliases are the older (and MariaDB) names of options.
var optionAliases = map[string]string{
	"rpl-semi-sync-master-enabled":              "rpl-semi-sync-source-enabled",
	"rpl-semi-sync-master-timeout":              "rpl-semi-sync-source-timeout",
	"rpl-semi-sync-master-wait-point":           "rpl-semi-sync-source-wait-point",
	"rpl-semi-sync-master-wait-for-slave-count": "rpl-semi-sync-source-wait-for-replica-count",
	"rpl-semi-sync-master-wait-no-slave":        "rpl-semi-sync-source-wait-no-replica",
	"master-host":                               "source-host",
	"master-port":                               "source-port",
	"master-user":                               "source-user",
	"master-password":                           "source-password",
	"master-connect-retry":                      "source-connect-retry",
	"skip-slave-start":                          "skip-replica-start",
	"slave-parallel-workers":                    "replica-parallel-workers",
	"slave-parallel-threads":                    "replica-parallel-workers",
	"slave-parallel-type":                       "replica-parallel-type",
	"slave-skip-errors":                         "replica-skip-errors",
	"rpl-semi-sync-slave-enabled":               "rpl-semi-sync-replica-enabled",
	"wsrep-applier-threads":                     "wsrep-slave-threads",
}

func lookupOption(name string) (*option, bool) {
	name = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "_", "-")
	name = strings.TrimPrefix(name, "loose-")
	if a, ok := optionAliases[name]; ok {
		name = a
	}
	for i := range options {
		if options[i].name == name {
			return &options[i], true
		}
	}
	return nil, false
}

// ignoredInFiles are mysqld options a my.cnf commonly has that have no
// meaning here; they are accepted in a defaults file (not on the command
// line) and ignored.
var ignoredInFiles = map[string]bool{
	"user": true, "socket": true, "pid-file": true, "log-error": true, "log-bin": true,
	"skip-name-resolve": true, "default-authentication-plugin": true,
}

// fixedInFiles are mysqld options a my.cnf commonly has whose setting is
// how Lockstep always works: a defaults file may have them with that
// value (accepted and nothing to do), and any other value is refused at
// start, never ignored.
var fixedInFiles = map[string]struct {
	values []string // accepted, lower case
	why    string
}{
	"binlog-format":            {[]string{"row"}, "the binlog is always ROW"},
	"binlog-row-image":         {[]string{"full"}, "row images are always FULL"},
	"binlog-row-metadata":      {[]string{"full"}, "table maps always carry FULL metadata"},
	"gtid-mode":                {[]string{"on"}, "every transaction has a GTID (gtid_mode is always ON)"},
	"enforce-gtid-consistency": {[]string{"on", "1", "true"}, "enforce_gtid_consistency is always ON"},
	"log-replica-updates":      {[]string{"on", "1", "true", ""}, "a replica always logs what it applies"},
	"log-slave-updates":        {[]string{"on", "1", "true", ""}, "a replica always logs what it applies"},
	"character-set-server":     {[]string{"utf8mb4"}, "the server's character set is utf8mb4 (a database or table may name another collation of it)"},
	"collation-server":         {[]string{"utf8mb4_0900_ai_ci"}, "the server's collation is utf8mb4_0900_ai_ci, MySQL 8's (a database or table may name another)"},
}

// RegisterFlags adds every option to fs. Values go through Apply, so
// the command line and the defaults file share validation.
func RegisterFlags(fs *pflag.FlagSet) {
	fs.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		return pflag.NormalizedName(strings.ReplaceAll(name, "_", "-"))
	})
	d := Defaults()
	for _, o := range options {
		fs.String(o.name, o.def(&d), o.help)
		if o.boolean {
			fs.Lookup(o.name).NoOptDefVal = "ON"
		}
	}
	for alias, name := range optionAliases {
		fs.String(alias, "", "alias of --"+name)
		_ = fs.MarkHidden(alias)
		if o, _ := lookupOption(name); o.boolean {
			fs.Lookup(alias).NoOptDefVal = "ON"
		}
	}
	fs.String("defaults-file", "", "read options from this my.cnf-style file ([mysqld], [server] and [lockstep] sections)")
}

// FromFlags builds the configuration: defaults, then the defaults file,
// then options given on the command line.
func FromFlags(fs *pflag.FlagSet) (Config, error) {
	c := Defaults()
	if f, _ := fs.GetString("defaults-file"); f != "" {
		if err := c.applyFile(f); err != nil {
			return c, err
		}
	}
	var err error
	fs.Visit(func(fl *pflag.Flag) {
		if err != nil || fl.Name == "defaults-file" {
			return
		}
		o, ok := lookupOption(fl.Name)
		if !ok {
			err = fmt.Errorf("unknown option --%s", fl.Name)
			return
		}
		err = o.apply(&c, fl.Value.String())
	})
	return c, err
}

func (c *Config) applyFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading --defaults-file %s: %w", path, err)
	}
	return c.applyFileBytes(path, data)
}

// applyFileBytes applies a my.cnf-style file's contents (path names it in
// errors).
func (c *Config) applyFileBytes(path string, data []byte) error {
	f, err := ini.LoadSources(ini.LoadOptions{AllowBooleanKeys: true, SkipUnrecognizableLines: false, IgnoreInlineComment: false, UnescapeValueDoubleQuotes: true}, data)
	if err != nil {
		return fmt.Errorf("reading --defaults-file %s: %w", path, err)
	}
	var unknown []string
	for _, sec := range f.Sections() {
		switch strings.ToLower(sec.Name()) {
		case "mysqld", "server", "lockstep", "mariadbd", "mariadb", "galera":
		default:
			continue
		}
		for _, k := range sec.Keys() {
			o, ok := lookupOption(k.Name())
			if !ok {
				n := strings.ReplaceAll(strings.ToLower(k.Name()), "_", "-")
				if ignoredInFiles[n] || strings.HasPrefix(strings.ToLower(k.Name()), "loose") {
					continue
				}
				if f, ok := fixedInFiles[n]; ok {
					if !slices.Contains(f.values, strings.ToLower(strings.TrimSpace(k.Value()))) {
						return fmt.Errorf("%s: %s = %s is not supported: %s", path, k.Name(), k.Value(), f.why)
					}
					continue
				}
				unknown = append(unknown, k.Name())
				continue
			}
			if err := o.apply(c, k.Value()); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("%s: unknown option(s) %s (prefix with loose- to ignore)", path, strings.Join(unknown, ", "))
	}
	return nil
}

// PipelineConfig is the commit pipeline's configuration.
func (c *Config) PipelineConfig() *commit.Config {
	pc := &commit.Config{ServerID: c.ServerID}
	pc.SyncBinlog.Store(c.SyncBinlog)
	pc.FlushLogAtTrxCommit.Store(c.FlushLogAtTrxCommit)
	pc.SyncDelay.Store(c.SyncDelayMicros)
	pc.NoDelayCount.Store(c.NoDelayCount)
	pc.Gather.Store(c.GatherGroups)
	pc.ParallelFlush.Store(c.ParallelFlush)
	pc.MaxBinlogSize.Store(c.MaxBinlogSize)
	pc.Tracking.Store(int32(c.DependencyTracking))
	pc.HistorySize.Store(c.DependencyHistorySize)
	return pc
}
