package main

import (
	"context"
	"errors"
	"fmt"
	"log"
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

// serveTokenEnv holds the bearer token of `graphloom serve` (never a flag: command
// lines are visible to other users).
const serveTokenEnv = "GRAPHLOOM_SERVE_TOKEN"

func newServeCmd() *cobra.Command {
	cfg := serve.DefaultConfig()
	var lf llmFlags
	var indexPath, addr string
	var dryRun, insecure bool
	cmd := &cobra.Command{
		Use:   "serve --index INDEX [--addr HOST:PORT]",
		Short: "Serve retrieval over HTTP with the index loaded once",
		Long: `Load the index once and answer a JSON HTTP API:

  GET  /healthz          status, index, load time
  GET  /v1/stats         the index's statistics (as stats --json)
  POST /v1/query         {"question": "…", "retriever": "ppr", "top_k": 5}
  POST /v1/query/batch   {"questions": [{"id": "q1", "question": "…"}], "retriever": …, "top_k": …}
  POST /v1/reload        re-read the index file (also on SIGHUP); needs the token

A reload swaps the index atomically: requests in flight finish on the index they
started with, later ones see the new one (say, after 'graphloom augment' rewrote it);
a failed reload keeps serving the old index. Requests are bounded in size, in number
in flight (503 with Retry-After beyond) and in time. SIGINT or SIGTERM stop the server
after the requests in flight finish.

Security: with GRAPHLOOM_SERVE_TOKEN set, every request needs "Authorization: Bearer
TOKEN"; without it, /v1/reload is refused (use SIGHUP) and listening beyond loopback is
refused unless --insecure. Requests must name the server by an IP address, localhost or
an --allow-host name (DNS rebinding); POST bodies must be application/json; browsers get
CORS headers only for --cors origins.`,
		Example: `  graphloom serve --index harbour.gl --addr 127.0.0.1:8080
  curl -s localhost:8080/v1/query -H 'Content-Type: application/json' -d '{"question": "Who bought the Meridian in 1801?", "top_k": 3}'
  kill -HUP $(pgrep -f "graphloom serve")   # reload after augmenting`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "index"); err != nil {
				return err
			}
			cfg.Token = os.Getenv(serveTokenEnv)
			cfg.ErrorLog = log.New(cmd.ErrOrStderr(), "", log.LstdFlags) // what a 500 answer's id refers to
			if err := serve.CheckListen(addr, cfg.Token != "", insecure); err != nil {
				return usageError{err}
			}
			if host, _, err := net.SplitHostPort(addr); err == nil && host != "" && net.ParseIP(host) == nil {
				cfg.AllowHosts = append(cfg.AllowHosts, host) // the name it listens under
			}
			switch { // flag combinations: usage errors (serve.New checks them too, for library callers)
			case cfg.TopK > cfg.MaxTopK:
				return usageError{fmt.Errorf("serve: --top-k %d exceeds --max-top-k %d: every request leaving top_k out would be refused", cfg.TopK, cfg.MaxTopK)}
			case cfg.TopK > cfg.MaxPassages:
				return usageError{fmt.Errorf("serve: --top-k %d exceeds --max-passages %d: every batch leaving top_k out would be refused", cfg.TopK, cfg.MaxPassages)}
			}
			// Signals are caught before the index loads: a SIGHUP sent during a slow
			// start (a script right after augment) would otherwise end the process.
			sigs := make(chan os.Signal, 4) // a SIGHUP and a SIGINT during a slow load both kept
			signal.Notify(sigs, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM)
			defer signal.Stop(sigs)
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
			hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: cfg.Timeout + 10*time.Second,
				WriteTimeout: cfg.Timeout + 10*time.Second, IdleTimeout: 2 * time.Minute}
			fmt.Fprintf(cmd.OutOrStdout(), "serving %s on http://%s (default retriever %s)\n", indexPath, ln.Addr(), cfg.Retriever)
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
	f.BoolVar(&insecure, "insecure", false, "listen beyond loopback without GRAPHLOOM_SERVE_TOKEN (anyone who reaches the port may query)")
	f.StringSliceVar(&cfg.AllowHosts, "allow-host", nil, "a Host name requests may use besides IP addresses and localhost (the public name behind a reverse proxy); repeatable")
	f.StringSliceVar(&cfg.CORSOrigins, "cors", nil, "a browser origin (https://app.example) given CORS headers; repeatable; none by default")
	f.StringVar(&cfg.Retriever, "retriever", cfg.Retriever, "default retriever of requests that name none")
	f.IntVar(&cfg.TopK, "top-k", cfg.TopK, "default passages per question")
	f.IntVar(&cfg.MaxTopK, "max-top-k", cfg.MaxTopK, "most passages a request may ask for")
	f.IntVar(&cfg.MaxBatch, "max-batch", cfg.MaxBatch, "most questions of one batch request")
	f.IntVar(&cfg.MaxPassages, "max-passages", cfg.MaxPassages, "most passages one batch request returns (questions × top_k)")
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
	limitFlag(cmd, "max-passages", atLeast1(1e9))
	limitFlag(cmd, "max-body", atLeast1(1<<34))
	limitFlag(cmd, "timeout", flagRange{lo: 0, hi: 86400, loOpen: true})
	limitFlag(cmd, "max-in-flight", atLeast1(1e6))
	limitFlag(cmd, "workers", atLeast0(4096))
	return cmd
}
