// Command lockstep is the Lockstep database server.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/lockstepdb/lockstep/internal/server"
	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "lockstep",
		Short:         "Lockstep: a MySQL-compatible server whose binlog is its only log",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	serve := &cobra.Command{
		Use:   "serve",
		Short: "run the server (defaults: 127.0.0.1:3306, data in ./lockstep-data, root without password)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := server.FromFlags(cmd.Flags())
			if err != nil {
				return err
			}
			log := server.NewLogger(os.Stderr, cfg.LogLevel)
			// Development aid: LOCKSTEP_CPUPROFILE=file profiles until shutdown.
			if path := os.Getenv("LOCKSTEP_CPUPROFILE"); path != "" {
				f, err := os.Create(path)
				if err != nil {
					return err
				}
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer func() { pprof.StopCPUProfile(); f.Close() }()
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return server.Run(ctx, cfg, log)
		},
	}
	server.RegisterFlags(serve.Flags())
	root.AddCommand(serve, witnessCommand(), benchCommand(), workloadCommand(), failoverCommand())
	if err := root.Execute(); err != nil {
		if !errors.Is(err, errChecksFailed) {
			fmt.Fprintln(os.Stderr, "lockstep:", err)
		}
		os.Exit(1)
	}
}
