package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/lockstepdb/lockstep/internal/failover"
	"github.com/spf13/cobra"
)

func failoverCommand() *cobra.Command {
	var (
		replicas, user, password string
		opts                     failover.Options
	)
	cmd := &cobra.Command{
		Use:   "failover --replicas HOST:PORT,...",
		Short: "promote the most advanced replica of a lost primary and point the others at it",
		Long: `lockstep failover promotes a replica after its primary is lost, and
points the other replicas at it, over the MySQL protocol (the README's
"Failover" procedure, as one command):

  1. every replica must answer (--skip-unreachable goes on without those
     that do not, knowingly: one of them may be the only one holding a
     commit the primary acknowledged);
  2. each stops receiving (STOP REPLICA IO_THREAD) and applies everything
     it received;
  3. the replica whose gtid_executed holds every other's is promoted: it
     stops replicating (RESET REPLICA ALL), read_only goes OFF, and with
     --semi-sync it waits for acknowledgements; if none holds everything
     the others hold, the replicas diverged and nothing is promoted;
  4. the others replicate from it by GTID auto-positioning.

Give each replica as the others reach it (it is the address they will
replicate from). Make sure the old primary is down first: a failover
while it still takes writes leaves two primaries. Once it is back, point it
at the new primary (CHANGE REPLICATION SOURCE TO ... SOURCE_AUTO_POSITION=1);
if it committed transactions it never sent, the new primary refuses it
(13114) and it must be provisioned again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var rs []failover.Replica
			for _, addr := range strings.Split(replicas, ",") {
				addr = strings.TrimSpace(addr)
				if addr == "" {
					continue
				}
				c := mysql.NewConfig()
				c.User, c.Passwd, c.Net, c.Addr = user, password, "tcp", addr
				c.Timeout, c.ReadTimeout, c.WriteTimeout = 5*time.Second, time.Minute, time.Minute
				db, err := sql.Open("mysql", c.FormatDSN())
				if err != nil {
					return err
				}
				defer db.Close()
				rs = append(rs, failover.Replica{Addr: addr, DB: db})
			}
			if len(rs) == 0 {
				return fmt.Errorf("--replicas names no replica")
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			opts.Log = func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
			res, err := failover.Promote(ctx, rs, opts)
			if err != nil {
				return err
			}
			fmt.Printf("new primary: %s\n", rs[res.Primary].Addr)
			for i, err := range res.Failed {
				fmt.Printf("NOT repointed: %s: %v\n", rs[i].Addr, err)
			}
			if len(res.Failed) > 0 {
				return fmt.Errorf("%d replica(s) could not be pointed at the new primary", len(res.Failed))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&replicas, "replicas", "", "host:port of each replica of the lost primary, comma-separated, as the others reach it")
	f.StringVarP(&user, "user", "u", "root", "account to log in as (needs REPLICATION_SLAVE_ADMIN or SUPER, and SYSTEM_VARIABLES_ADMIN)")
	f.StringVarP(&password, "password", "p", "", "its password")
	f.DurationVar(&opts.ApplyTimeout, "apply-timeout", time.Minute, "how long each replica may take to apply what it received")
	f.BoolVar(&opts.SemiSync, "semi-sync", false, "have the new primary wait for semi-synchronous acknowledgements (rpl_semi_sync_source_enabled)")
	f.BoolVar(&opts.SkipUnreachable, "skip-unreachable", false, "go on without replicas that do not answer (they may hold acknowledged commits the others lack)")
	_ = cmd.MarkFlagRequired("replicas")
	return cmd
}
