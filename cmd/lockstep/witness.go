package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/lockstepdb/lockstep/internal/server"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// witnessCommand is `lockstep witness`: a cluster member that votes and
// keeps the log and holds no data (Galera's garbd). It takes serve's
// cluster options; any other option is refused, not ignored.
func witnessCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "witness",
		Short: "run a cluster witness (Galera's garbd): it votes and keeps the log, holds no data and serves no clients",
		Long: `A witness is a cluster member that writes and syncs every log entry and
votes, and holds no data: two data members and a witness keep committing
when any one of the three is lost. It takes serve's cluster options
(--wsrep-cluster-address, --wsrep-node-address, --wsrep-cluster-name, TLS
between members) and --datadir for its log.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var bad error
			cmd.Flags().Visit(func(f *pflag.Flag) {
				if bad == nil && !slices.Contains(server.WitnessOptions, f.Name) {
					bad = fmt.Errorf("--%s has no meaning for a witness (it takes %v)", f.Name, server.WitnessOptions)
				}
			})
			if bad != nil {
				return bad
			}
			cfg, err := server.FromFlags(cmd.Flags())
			if err != nil {
				return err
			}
			log := server.NewLogger(os.Stderr, cfg.LogLevel)
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return server.RunWitness(ctx, cfg, log)
		},
	}
	server.RegisterFlags(c.Flags())
	return c
}
