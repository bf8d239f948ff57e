package workload

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/lockstepdb/lockstep/internal/launch"
	"github.com/lockstepdb/lockstep/internal/loopback"
	"github.com/lockstepdb/lockstep/internal/mariadb"
	"github.com/lockstepdb/lockstep/internal/netns"
	"github.com/lockstepdb/lockstep/internal/tlscert"
)

// Faults is a fault schedule: every Interval (with up to a half of it
// of jitter) one of Kinds hits one of Targets. The kinds come in rounds,
// each kind once per round in a random order, so that a short run still
// injects every kind asked for:
//
//   - kill: SIGKILL, then a restart on the same data directory once the
//     process is gone (the crash a power cut gives a process);
//   - pause: SIGSTOP for half an interval, then SIGCONT (a stalled
//     machine: connections hang rather than break);
//   - restart: a clean stop (SIGTERM) and start;
//   - partition: the member's network namespace is cut off from the
//     others for half an interval, then joined again (clients still reach
//     it: they talk to it inside its namespace). Only members started by
//     StartClusterInNamespaces can be cut off.
//   - wipe: a cluster member is killed, its data directory emptied, and
//     started again (a lost disk): it rejoins under a new id and is sent
//     the cluster's state (Galera's state transfer). Only cluster members:
//     a single server's data would simply be gone.
//   - failover: the primary of a replica set (StartReplicaSet) is killed
//     and a replica promoted (package failover, as `lockstep failover`
//     does); clients follow the primary, and the old one comes back as a
//     replica (provisioned again when the new primary refuses it).
//   - disconnect: the primary of a replica set drops its replicas'
//     connections; they reconnect by themselves.
//   - diskfull: the disk a server's data directory is on
//     (StartServerOnTmpfs, StartServerOnLoopDisk) is filled to the last
//     byte for half an interval, then freed: commits fail meanwhile
//     (1026, never acknowledged) and must resume by themselves.
//   - readonly: the kernel makes the ext4 filesystem a server's data
//     directory is on (StartServerOnLoopDisk) read-only, as it does
//     after an I/O error, for half an interval: commits fail meanwhile
//     (1026, never acknowledged). Such a filesystem stays read-only
//     until it is checked: the server is then killed, the filesystem
//     unmounted, checked (e2fsck) and mounted again, and the server
//     started. The error is raised with the filesystem frozen, so that
//     no fsync is in flight when the journal aborts: an fdatasync in
//     flight then can report success for bytes the abort throws away
//     (loopdisk.go), and the run would measure the kernel, not the
//     server.
//
// When the run ends every target is left running and connected.
type Faults struct {
	Kinds    []string
	Interval time.Duration
	Targets  []*Server
	// Replication is the replica set Targets make up, if they do: the
	// failover and disconnect faults hit it as a whole.
	Replication *ReplicaSet
	Seed        int64
	// Skipped are faults asked for that cannot be injected here, with
	// why; the report lists them, so that none passes silently.
	Skipped []string
}

// FaultKinds lists the faults a schedule can name.
func FaultKinds() []string {
	return []string{"kill", "pause", "restart", "partition", "wipe", "failover", "disconnect", "diskfull", "readonly"}
}

// ParseFaults checks a comma-separated list of fault kinds.
func ParseFaults(s string) ([]string, error) {
	var out []string
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		ok := false
		for _, known := range FaultKinds() {
			ok = ok || k == known
		}
		if !ok {
			return nil, fmt.Errorf("unknown fault %q (want some of %s)", k, strings.Join(FaultKinds(), ", "))
		}
		out = append(out, k)
	}
	return out, nil
}

// start runs the schedule until ctx ends; stop waits for it and leaves
// every target running.
func (f *Faults) start(ctx context.Context, r *run) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rnd := rand.New(rand.NewPCG(uint64(f.Seed), 7))
		var round []string
		for {
			wait := f.Interval/2 + time.Duration(rnd.Int64N(int64(f.Interval)))
			select {
			case <-ctx.Done():
				return
			case <-done:
				return
			case <-time.After(wait):
			}
			if len(f.Targets) == 0 || len(f.Kinds) == 0 {
				continue
			}
			if len(round) == 0 {
				round = slices.Clone(f.Kinds)
				rnd.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
			}
			kind := round[0]
			round = round[1:]
			s := f.Targets[rnd.IntN(len(f.Targets))]
			at := time.Since(r.start).Seconds()
			if kind == "failover" || kind == "disconnect" {
				what, err := f.injectReplication(ctx, kind)
				if err != nil {
					r.noteFault(fmt.Sprintf("%s at %.1fs failed: %v", kind, at, err))
				} else {
					r.noteFault(fmt.Sprintf("%s at %.1fs: %s", kind, at, what))
				}
				continue
			}
			if kind == "diskfull" || kind == "readonly" {
				disk := s.fillDisk
				if kind == "readonly" {
					disk = s.readOnlyDisk
				}
				what, err := disk(ctx, f.Interval/2)
				if err != nil {
					r.noteFault(fmt.Sprintf("%s %s at %.1fs failed: %v", kind, s.Name, at, err))
				} else {
					r.noteFault(fmt.Sprintf("%s %s at %.1fs: %s", kind, s.Name, at, what))
				}
				continue
			}
			if err := f.inject(ctx, s, kind); err != nil {
				r.noteFault(fmt.Sprintf("%s %s at %.1fs failed: %v", kind, s.Name, at, err))
				continue
			}
			r.noteFault(fmt.Sprintf("%s %s at %.1fs", kind, s.Name, at))
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		for _, s := range f.Targets {
			_ = s.Resume()
			if s.host != nil {
				_ = s.host.Heal()
			}
			if !s.Running() {
				_ = s.Start()
			}
		}
	}
}

func (f *Faults) inject(ctx context.Context, s *Server, kind string) error {
	switch kind {
	case "kill":
		if err := s.Kill(); err != nil {
			return err
		}
		return s.Start()
	case "pause":
		if err := s.Pause(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(f.Interval / 2):
		}
		return s.Resume()
	case "restart":
		if err := s.Stop(); err != nil {
			return err
		}
		return s.Start()
	case "partition":
		if s.host == nil {
			return errors.New("not in a network namespace")
		}
		if err := s.host.Cut(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(f.Interval / 2):
		}
		return s.host.Heal()
	case "wipe":
		data := s.dataDir()
		if !s.member() || data == "" {
			return errors.New("not a cluster member: its data would be gone, not transferred")
		}
		if err := s.Kill(); err != nil {
			return err
		}
		if err := os.RemoveAll(data); err != nil {
			return err
		}
		return s.Start()
	}
	return fmt.Errorf("unknown fault %q", kind)
}

// injectReplication injects a fault that hits a replica set as a whole,
// and says what it did.
func (f *Faults) injectReplication(ctx context.Context, kind string) (string, error) {
	rs := f.Replication
	if rs == nil {
		return "", errors.New("not a replica set: start one (--start-replicas)")
	}
	// Begun, a failover runs to its end even if the run ends meanwhile:
	// stopped half-way it would leave no primary, or a server that
	// replicates from nothing.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	if kind == "failover" {
		return rs.failover(ctx)
	}
	return rs.disconnect(ctx)
}

// member reports whether s is a cluster member.
func (s *Server) member() bool {
	for _, a := range s.args {
		if strings.HasPrefix(a, "--wsrep-cluster-address=") {
			return true
		}
	}
	return false
}

// dataDir is s's data directory.
func (s *Server) dataDir() string {
	for _, a := range s.args {
		if d, ok := strings.CutPrefix(a, "--datadir="); ok {
			return d
		}
	}
	return ""
}

// Server is a server process (Lockstep or MariaDB: Binary) a run starts
// and injects faults into: same binary, data directory and ports across
// restarts, on 127.0.0.1 (of its network namespace, if it has one).
type Server struct {
	Name  string
	Port  int
	bin   Binary
	args  []string
	first []string // options of the first start only (a Galera bootstrap)
	dir   string
	host  *netns.Host // nil: the caller's network namespace
	disk  string      // the mount its data directory is on ("": none)
	loop  string      // that mount's loop device, if ext4 ("": a tmpfs)

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited <-chan struct{}
	paused bool
}

// StartServer starts a server of bin with its data under dir and the
// given extra options.
func StartServer(name string, bin Binary, dir string, extra ...string) (*Server, error) {
	return startServerAt(name, bin, dir, filepath.Join(dir, "data"), "", extra)
}

// ErrNoTmpfs is returned by StartServerOnTmpfs where a tmpfs cannot be
// mounted (it needs root).
var ErrNoTmpfs = errors.New("cannot mount a tmpfs (needs root)")

// StartServerOnTmpfs is StartServer with the data directory on a tmpfs of
// its own of size bytes (mounted at dir/disk), which the diskfull fault
// fills; Close unmounts it. Where no tmpfs can be mounted the error wraps
// ErrNoTmpfs.
func StartServerOnTmpfs(name string, bin Binary, dir string, size int64, extra ...string) (*Server, error) {
	disk := filepath.Join(dir, "disk")
	if err := os.MkdirAll(disk, 0o755); err != nil {
		return nil, err
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", disk).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%w: %v: %s", ErrNoTmpfs, err, strings.TrimSpace(string(out)))
	}
	s, err := startServerAt(name, bin, dir, filepath.Join(disk, "data"), disk, extra)
	if err != nil {
		_ = exec.Command("umount", "-l", disk).Run()
	}
	return s, err
}

func startServerAt(name string, bin Binary, dir, data, disk string, extra []string) (*Server, error) {
	port, err := loopback.Port()
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	if data, err = filepath.Abs(data); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s := &Server{Name: name, Port: port, bin: bin, dir: dir, disk: disk,
		args: append(bin.serverArgs(dir, data, port), extra...)}
	return s, s.Start()
}

// fillDisk fills s's tmpfs with a file, leaves it full for hold, and
// removes the file; it says how much it wrote.
func (s *Server) fillDisk(ctx context.Context, hold time.Duration) (string, error) {
	if s.disk == "" {
		return "", errors.New("its data directory is not on a disk of its own (StartServerOnTmpfs, StartServerOnLoopDisk)")
	}
	path := filepath.Join(s.disk, "filler")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer os.Remove(path)
	chunk := make([]byte, 1<<20)
	var n int64
	for {
		w, err := f.Write(chunk)
		n += int64(w)
		if err != nil {
			break // full
		}
	}
	f.Close()
	select {
	case <-ctx.Done():
	case <-time.After(hold):
	}
	return fmt.Sprintf("%d MiB filled", n>>20), nil
}

// StartCluster starts n servers of bin as the members of one cluster on
// 127.0.0.1 (data under dir/memberN, the given extra options), and waits
// until each is in a primary component.
func StartCluster(n int, bin Binary, dir string, extra ...string) ([]*Server, error) {
	// Each member's SQL port, cluster port, and (Galera) the ports of its
	// state transfers.
	ports, err := loopback.Ports(4 * n)
	if err != nil {
		return nil, err
	}
	plan := make([]mariadb.Node, n)
	members := make([]*Server, n)
	for i := range members {
		plan[i] = mariadb.Node{Name: fmt.Sprintf("member%d", i+1), Host: "127.0.0.1", GComm: ports[n+i], IST: ports[2*n+i], SST: ports[3*n+i]}
		members[i] = &Server{Port: ports[i]}
	}
	return members, startMembers(members, plan, bin, dir, extra)
}

// StartClusterInNamespaces is StartCluster with each member in a network
// namespace of its own (package netns), so that the partition fault can
// cut it off; Lockstep's members talk to each other over TLS
// (certificates of one CA made under dir/certs). Clients reach a member
// on 127.0.0.1 in its namespace through the endpoints the members give.
// close stops the members and removes the namespaces. Without root it
// fails with netns.ErrUnavailable.
func StartClusterInNamespaces(n int, bin Binary, dir string, extra ...string) (members []*Server, close func(), err error) {
	prefix := fmt.Sprintf("lw%d", os.Getpid()%10000)
	nw, err := netns.New(prefix, n)
	if err != nil {
		return nil, nil, err
	}
	plan := make([]mariadb.Node, n)
	members = make([]*Server, n)
	for i, h := range nw.Hosts {
		plan[i] = mariadb.Node{Name: fmt.Sprintf("member%d", i+1), Host: h.IP, GComm: 4567, IST: 4568, SST: 4444}
		members[i] = &Server{Port: 3306, host: h}
		mysql.RegisterDialContext(h.NS, h.Dial)
	}
	if !bin.MariaDB {
		certDir := filepath.Join(dir, "certs")
		if err := os.MkdirAll(certDir, 0o700); err != nil {
			nw.Close()
			return nil, nil, err
		}
		certs, _, err := tlscert.Ensure(certDir)
		if err != nil {
			nw.Close()
			return nil, nil, err
		}
		extra = append([]string{"--wsrep-ssl-mode=SERVER", "--ssl-cert=" + certs.Cert, "--ssl-key=" + certs.Key, "--ssl-ca=" + certs.CA}, extra...)
	}
	if err := startMembers(members, plan, bin, dir, extra); err != nil {
		nw.Close()
		return nil, nil, err
	}
	return members, func() {
		for _, s := range members {
			_ = s.Stop()
		}
		nw.Close()
	}, nil
}

// startMembers starts the members (their Port and host set) of the
// cluster laid out by plan, and waits until each is in a primary
// component; on an error none is left running.
func startMembers(members []*Server, plan []mariadb.Node, bin Binary, dir string, extra []string) error {
	stopAll := func() {
		for _, s := range members {
			_ = s.Stop()
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for i, s := range members {
		s.Name = fmt.Sprintf("member%d", i+1)
		s.bin, s.dir = bin, filepath.Join(dir, s.Name)
		if err := os.MkdirAll(s.dir, 0o755); err != nil {
			stopAll()
			return err
		}
		margs, err := bin.memberArgs(i, plan)
		if err != nil {
			stopAll()
			return err
		}
		s.args = append(append(bin.serverArgs(s.dir, filepath.Join(s.dir, "data"), s.Port), margs...), extra...)
		if i == 0 {
			s.first = bin.bootstrapArgs()
		}
		if err := s.Start(); err != nil {
			stopAll()
			return err
		}
		// A Galera member joins a running cluster: wait for each before
		// the next (Lockstep's members wait for each other).
		if bin.MariaDB {
			if err := s.waitReady(5 * time.Minute); err != nil {
				stopAll()
				return err
			}
		}
	}
	for _, s := range members {
		if err := s.waitReady(2 * time.Minute); err != nil {
			stopAll()
			return err
		}
	}
	return nil
}

// waitReady waits until a cluster member says wsrep_ready ON.
func (s *Server) waitReady(limit time.Duration) error {
	db, err := sql.Open("mysql", s.rootDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(limit)
	for {
		var name, v string
		if err := db.QueryRow("SHOW STATUS LIKE 'wsrep_ready'").Scan(&name, &v); err == nil && v == "ON" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is not in a primary component after %v", s.Name, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Endpoint is the server's address: host:port, or for a server in a
// network namespace ns(127.0.0.1:port), ns naming the driver's dialer
// into it (Config's endpoints take both).
func (s *Server) Endpoint() string {
	addr := "127.0.0.1:" + strconv.Itoa(s.Port)
	if s.host != nil {
		return s.host.NS + "(" + addr + ")"
	}
	return addr
}

// rootDSN reaches the server as root.
func (s *Server) rootDSN() string {
	c := mysql.NewConfig()
	c.User, c.Net, c.Addr = "root", "tcp", s.Endpoint()
	if s.host != nil {
		c.Net, c.Addr = s.host.NS, "127.0.0.1:"+strconv.Itoa(s.Port)
	}
	return c.FormatDSN()
}

// Start starts the process and waits until it answers.
func (s *Server) Start() error {
	s.mu.Lock()
	if s.cmd != nil {
		s.mu.Unlock()
		return errors.New("already running")
	}
	if err := s.bin.prepare(s.dir, s.dataDir()); err != nil {
		s.mu.Unlock()
		return err
	}
	args, err := s.bin.command(s.dir, append(slices.Clone(s.args), s.first...))
	if err != nil {
		s.mu.Unlock()
		return err
	}
	s.first = nil
	cmd := exec.Command(s.bin.Path, args...)
	if s.host != nil {
		cmd = s.host.Command(s.bin.Path, args...)
	}
	// Its own process group, so that a signal meant for the workload does
	// not reach it; killed if the workload dies, so that a killed workload
	// leaves no server behind (launch.Start).
	p, err := launch.Start(cmd, filepath.Join(s.dir, "server.log"))
	if err != nil {
		s.mu.Unlock()
		return err
	}
	s.cmd, s.exited, s.paused = cmd, p.Exited(), false
	s.mu.Unlock()

	if err := p.WaitAnswers(s.rootDSN(), 2*time.Minute); err != nil {
		if errors.Is(err, launch.ErrExited) {
			s.mu.Lock()
			s.cmd = nil
			s.mu.Unlock()
			return fmt.Errorf("%s exited at start (see %s)", s.Name, filepath.Join(s.dir, "server.log"))
		}
		return fmt.Errorf("%s did not answer: %w", s.Name, err)
	}
	return nil
}

// Running reports whether the process is up.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

func (s *Server) signalAndWait(sig syscall.Signal, wait time.Duration) error {
	s.mu.Lock()
	cmd, exited, paused := s.cmd, s.exited, s.paused
	s.mu.Unlock()
	if cmd == nil {
		return errors.New("not running")
	}
	if paused {
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		return err
	}
	select {
	case <-exited:
	case <-time.After(wait):
		_ = cmd.Process.Kill()
		<-exited
	}
	s.mu.Lock()
	s.cmd, s.paused = nil, false
	s.mu.Unlock()
	return nil
}

// Kill ends the process with SIGKILL.
func (s *Server) Kill() error { return s.signalAndWait(syscall.SIGKILL, time.Minute) }

// Stop ends the process with SIGTERM (SIGKILL after a minute).
func (s *Server) Stop() error {
	if !s.Running() {
		return nil
	}
	return s.signalAndWait(syscall.SIGTERM, time.Minute)
}

// Close stops the server for good: Stop, then the disk its data
// directory is on, if it has one, is unmounted (a tmpfs's data goes with
// it) and its loop device freed.
func (s *Server) Close() error {
	err := s.Stop()
	if s.disk != "" {
		if uerr := exec.Command("umount", "-l", s.disk).Run(); uerr != nil && err == nil {
			err = uerr
		}
		s.disk = ""
	}
	if s.loop != "" {
		if lerr := exec.Command("losetup", "-d", s.loop).Run(); lerr != nil && err == nil {
			err = lerr
		}
		s.loop = ""
	}
	return err
}

// Pause stops the process with SIGSTOP.
func (s *Server) Pause() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("not running")
	}
	s.paused = true
	return s.cmd.Process.Signal(syscall.SIGSTOP)
}

// Resume continues a paused process.
func (s *Server) Resume() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || !s.paused {
		return nil
	}
	s.paused = false
	return s.cmd.Process.Signal(syscall.SIGCONT)
}
