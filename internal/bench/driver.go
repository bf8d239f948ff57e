package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/lockstepdb/lockstep/internal/loadgen"
)

// load is one timed run's outcome, whichever driver produced it.
type load struct {
	TPS, QPS float64
	P95ms    float64
	Errors   uint64
	Elapsed  time.Duration
}

// driver prepares the sbtest tables and runs a workload on a server.
type driver interface {
	Name() string
	Prepare(ctx context.Context, s server, o Options) error
	Run(ctx context.Context, s server, o Options, workload string, threads int, d time.Duration, progress func(trx uint64)) (load, error)
}

// pickDriver returns the driver named by o.Driver ("auto": sysbench when
// installed, else the built-in generator).
func pickDriver(name string) (driver, error) {
	_, err := exec.LookPath("sysbench")
	switch name {
	case "builtin":
		return builtinDriver{}, nil
	case "sysbench":
		if err != nil {
			return nil, fmt.Errorf("--driver=sysbench, but sysbench is not installed (apt-get install sysbench)")
		}
		return sysbenchDriver{}, nil
	case "", "auto":
		if err == nil {
			return sysbenchDriver{}, nil
		}
		return builtinDriver{}, nil
	}
	return nil, fmt.Errorf("invalid value %q for --driver (expected auto, sysbench or builtin)", name)
}

// createDatabase makes an empty sbtest database.
func createDatabase(ctx context.Context, s server) error {
	db, err := s.DB("")
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS sbtest")
	return err
}

type builtinDriver struct{}

func (builtinDriver) Name() string { return "built-in" }

func (builtinDriver) Prepare(ctx context.Context, s server, o Options) error {
	if err := createDatabase(ctx, s); err != nil {
		return err
	}
	db, err := s.DB("sbtest")
	if err != nil {
		return err
	}
	defer db.Close()
	return loadgen.Prepare(ctx, db, o.Tables, o.TableSize, 4)
}

func (builtinDriver) Run(ctx context.Context, s server, o Options, workload string, threads int, d time.Duration, progress func(uint64)) (load, error) {
	db, err := s.DB("sbtest")
	if err != nil {
		return load{}, err
	}
	defer db.Close()
	r, err := loadgen.Run(ctx, db, loadgen.Config{Workload: workload, Tables: o.Tables, TableSize: o.TableSize,
		Threads: threads, Duration: d, Seed: uint64(time.Now().UnixNano())}, progress)
	if err != nil {
		return load{}, err
	}
	return load{TPS: r.TPS(), QPS: r.QPS(), P95ms: float64(r.P95.Microseconds()) / 1000, Errors: r.Errors, Elapsed: r.Elapsed}, nil
}

type sysbenchDriver struct{}

func (sysbenchDriver) Name() string { return "sysbench" }

func sysbenchArgs(s server, o Options) []string {
	port := strconv.Itoa(s.Port())
	if g, ok := s.(interface{ Ports() []int }); ok {
		// sysbench connects its threads to the ports in turn.
		var ps []string
		for _, p := range g.Ports() {
			ps = append(ps, strconv.Itoa(p))
		}
		port = strings.Join(ps, ",")
	}
	return []string{"--db-driver=mysql", "--mysql-host=127.0.0.1", "--mysql-port=" + port,
		"--mysql-user=root", "--mysql-db=sbtest", "--tables=" + strconv.Itoa(o.Tables),
		"--table-size=" + strconv.Itoa(o.TableSize), "--rand-type=uniform", "--db-ps-mode=disable"}
}

func (sysbenchDriver) Prepare(ctx context.Context, s server, o Options) error {
	if err := createDatabase(ctx, s); err != nil {
		return err
	}
	args := append([]string{"oltp_common"}, sysbenchArgs(s, o)...)
	args = append(args, "--threads="+strconv.Itoa(min(o.Tables, 4)), "prepare")
	out, err := exec.CommandContext(ctx, "sysbench", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("sysbench prepare: %v\n%s", err, out)
	}
	return nil
}

var (
	sbTPS    = regexp.MustCompile(`transactions:\s+\d+\s+\(([\d.]+) per sec`)
	sbQPS    = regexp.MustCompile(`queries:\s+\d+\s+\(([\d.]+) per sec`)
	sbP95    = regexp.MustCompile(`95th percentile:\s+([\d.]+)`)
	sbErrors = regexp.MustCompile(`ignored errors:\s+(\d+)`)
	sbTime   = regexp.MustCompile(`total time:\s+([\d.]+)s`)
)

func (sysbenchDriver) Run(ctx context.Context, s server, o Options, workload string, threads int, d time.Duration, progress func(uint64)) (load, error) {
	args := append([]string{workload}, sysbenchArgs(s, o)...)
	args = append(args, "--threads="+strconv.Itoa(threads), "--time="+strconv.Itoa(max(int(d.Seconds()), 1)),
		"--percentile=95", "--report-interval=0", "run")
	cmd := exec.CommandContext(ctx, "sysbench", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	stop := make(chan struct{})
	if progress != nil {
		// sysbench reports nothing until the end: show time passing.
		go func() {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					progress(0)
				}
			}
		}()
	}
	err := cmd.Run()
	close(stop)
	if err != nil {
		return load{}, fmt.Errorf("sysbench %s: %v\n%s", workload, err, out.String())
	}
	l, err := parseSysbench(out.Bytes())
	if err != nil {
		return l, fmt.Errorf("sysbench %s: %w\n%s", workload, err, out.String())
	}
	if l.Elapsed == 0 {
		l.Elapsed = time.Since(start)
	}
	return l, nil
}

// parseSysbench reads a run's figures from sysbench's report.
func parseSysbench(out []byte) (load, error) {
	parse := func(re *regexp.Regexp) float64 {
		m := re.FindSubmatch(out)
		if m == nil {
			return 0
		}
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		return v
	}
	l := load{TPS: parse(sbTPS), QPS: parse(sbQPS), P95ms: parse(sbP95), Errors: uint64(parse(sbErrors)),
		Elapsed: time.Duration(parse(sbTime) * float64(time.Second))}
	if l.TPS == 0 {
		return l, errors.New("no transactions in its report")
	}
	return l, nil
}
