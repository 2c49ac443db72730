package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/serve"
)

func newServeCmd() *cobra.Command {
	cfg := serve.DefaultConfig()
	var lf llmFlags
	var indexPath, addr string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "serve --index INDEX [--addr HOST:PORT]",
		Short: "Serve retrieval over HTTP with the index loaded once",
		Long: `Load the index once and answer a JSON HTTP API:

  GET  /healthz          status, index, load time
  GET  /v1/stats         the index's statistics (as stats --json)
  POST /v1/query         {"question": "…", "retriever": "ppr", "top_k": 5}
  POST /v1/query/batch   {"questions": [{"id": "q1", "question": "…"}], "retriever": …, "top_k": …}
  POST /v1/reload        re-read the index file (also on SIGHUP)

A reload swaps the index atomically: requests in flight finish on the index they
started with, later ones see the new one (say, after 'graphloom augment' rewrote it);
a failed reload keeps serving the old index. Requests are bounded in size, in number
in flight (503 with Retry-After beyond) and in time. SIGINT or SIGTERM stop the server
after the requests in flight finish.`,
		Example: `  graphloom serve --index harbour.gl --addr 127.0.0.1:8080
  curl -s localhost:8080/v1/query -d '{"question": "Who bought the Meridian in 1801?", "top_k": 3}'
  kill -HUP $(pgrep -f "graphloom serve")   # reload after augmenting`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "index"); err != nil {
				return err
			}
			api, err := lf.apiEmbedder(cmd.Context())
			if err != nil {
				return err
			}
			srv, err := serve.New(indexPath, func() (*graphio.Index, error) { return graphio.ReadFile(indexPath) }, api, cfg)
			if err != nil {
				return err
			}
			if dryRun {
				fmt.Fprintf(cmd.OutOrStdout(), "would serve %s on http://%s (default retriever %s)\n", indexPath, addr, cfg.Retriever)
				return nil
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("serve: %w", err)
			}
			hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: cfg.Timeout + 10*time.Second}
			fmt.Fprintf(cmd.OutOrStdout(), "serving %s on http://%s (default retriever %s)\n", indexPath, ln.Addr(), cfg.Retriever)
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM)
			defer signal.Stop(sigs)
			done := make(chan error, 1)
			go func() { done <- hs.Serve(ln) }()
			for {
				select {
				case err := <-done:
					if errors.Is(err, http.ErrServerClosed) {
						return nil
					}
					return fmt.Errorf("serve: %w", err)
				case sig := <-sigs:
					if sig == syscall.SIGHUP {
						if ix, err := srv.Reload(); err != nil {
							cmd.PrintErrf("reload failed, still serving the previous index: %v\n", err)
						} else {
							cmd.PrintErrf("reloaded %s: %d chunks, %d runs\n", indexPath, len(ix.Chunks), len(ix.Runs))
						}
						continue
					}
					cmd.PrintErrf("%s: finishing the requests in flight\n", sig)
					ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout+5*time.Second)
					err := hs.Shutdown(ctx)
					cancel()
					if err != nil {
						return fmt.Errorf("serve: shutdown: %w", err)
					}
					return nil
				}
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&indexPath, "index", "", "index file")
	f.StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on")
	f.BoolVar(&dryRun, "dry-run", false, "load the index, check the settings and exit without listening")
	f.StringVar(&cfg.Retriever, "retriever", cfg.Retriever, "default retriever of requests that name none")
	f.IntVar(&cfg.TopK, "top-k", cfg.TopK, "default passages per question")
	f.IntVar(&cfg.MaxTopK, "max-top-k", cfg.MaxTopK, "most passages a request may ask for")
	f.IntVar(&cfg.MaxBatch, "max-batch", cfg.MaxBatch, "most questions of one batch request")
	f.Int64Var(&cfg.MaxBody, "max-body", cfg.MaxBody, "largest request body in bytes")
	f.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "deadline of one request")
	f.IntVar(&cfg.MaxInFlight, "max-in-flight", cfg.MaxInFlight, "most requests served at once (503 beyond)")
	f.IntVar(&cfg.Workers, "workers", 0, "questions of a batch retrieved at once (0 = all cores)")
	registerRetrievalFlags(cmd, &cfg.Retrieval)
	lf.register(cmd)
	lf.registerOpen(cmd)
	limitFlag(cmd, "top-k", atLeast1(1e5))
	limitFlag(cmd, "max-top-k", atLeast1(1e5))
	limitFlag(cmd, "max-batch", atLeast1(1e7))
	limitFlag(cmd, "max-body", atLeast1(1<<34))
	limitFlag(cmd, "timeout", flagRange{lo: 0, hi: 86400, loOpen: true})
	limitFlag(cmd, "max-in-flight", atLeast1(1e6))
	limitFlag(cmd, "workers", atLeast0(4096))
	return cmd
}
