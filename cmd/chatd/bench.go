package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"

	"github.com/pressly/goose/v3"

	"github.com/chatd/chatd/app/bench"
	"github.com/chatd/chatd/store/open"
)

// runBench measures chatd against same-run baselines (app/bench). Without
// --db it works on a fresh SQLite file in a temporary directory; with a
// Postgres URL it writes its chats into that database.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", "", "SQLite file or postgres:// URL to measure (default: a temporary SQLite file)")
	var cfg bench.Config
	fs.DurationVar(&cfg.Duration, "duration", bench.DefaultDuration, "how long each throughput phase runs")
	fs.IntVar(&cfg.Concurrency, "concurrency", bench.DefaultConcurrency, "chats taking turns at once")
	fs.IntVar(&cfg.SeedChats, "seed-chats", bench.DefaultSeedChats, "chats to generate before the acquisition and list figures")
	fs.IntVar(&cfg.SeedMessages, "seed-messages", bench.DefaultSeedMessages, "messages to generate, spread over the seeded chats")
	fs.IntVar(&cfg.History, "history", bench.DefaultHistory, "messages of the chat whose stream bootstrap is timed")
	fs.IntVar(&cfg.Samples, "samples", bench.DefaultSamples, "timed bootstraps and acquisition counts")
	fs.IntVar(&cfg.ListSamples, "list-samples", bench.DefaultListSamples, "timed chat list requests per filter")
	fs.IntVar(&cfg.SeqTurns, "turns", bench.DefaultSeqTurns, "sequential turns of one chat")
	fs.IntVar(&cfg.Delivery.Tokens, "delivery-tokens", bench.DefaultDeliveryTokens, "parts streamed at each viewer count of the token delivery figures")
	fs.IntVar(&cfg.Delivery.IdleViewers, "idle-viewers", bench.DefaultIdleViewers, "idle viewers (and bare connections) held for the memory figure")
	capacity := fs.Bool("capacity", false, "run only the capacity steps: concurrent chats streaming from a paced provider to viewers, stepped up until the token p99 passes its limit or the chats no longer stream at once")
	var ccfg bench.CapacityConfig
	fs.Func("capacity-steps", "comma-separated concurrent chat counts of the capacity run (default 10,50,100,250,500,1000)", func(v string) (err error) {
		ccfg.Steps, err = bench.ParseViewers(v)
		return err
	})
	fs.IntVar(&ccfg.Tokens, "capacity-tokens", bench.DefaultCapacityTokens, "tokens of each capacity reply (30 a second after 300 ms)")
	surfaces := fs.Bool("surfaces", false, "run only the surfaces figures: token latency and resume cost of the AI SDK and OpenAI Responses streams next to the WebSocket stream")
	var scfg bench.SurfacesConfig
	fs.IntVar(&scfg.Chats, "surface-chats", bench.DefaultSurfaceChats, "chats streaming at once in the surfaces figures")
	fs.IntVar(&scfg.Tokens, "surface-tokens", bench.DefaultSurfaceTokens, "tokens of each reply in the surfaces figures (30 a second after 300 ms)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof reads it)")
	fs.Func("delivery-viewers", "comma-separated viewer counts of the token delivery figures (default 1,100,1000)", func(v string) (err error) {
		cfg.Delivery.Viewers, err = bench.ParseViewers(v)
		return err
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("bench takes no arguments (got %q)", fs.Args())
	}
	for name, v := range map[string]int{"concurrency": cfg.Concurrency, "history": cfg.History, "samples": cfg.Samples,
		"list-samples": cfg.ListSamples, "turns": cfg.SeqTurns} {
		if v <= 0 {
			return fmt.Errorf("bench: --%s must be positive", name)
		}
	}
	if scfg.Chats <= 0 || scfg.Tokens <= 0 {
		return fmt.Errorf("bench: --surface-chats and --surface-tokens must be positive")
	}
	if *capacity && *surfaces {
		return fmt.Errorf("bench: --capacity and --surfaces are separate runs; choose one")
	}
	if ccfg.Tokens <= 0 {
		return fmt.Errorf("bench: --capacity-tokens must be positive")
	}
	if cfg.Delivery.Tokens <= 0 || cfg.Delivery.IdleViewers <= 0 {
		return fmt.Errorf("bench: --delivery-tokens and --idle-viewers must be positive")
	}
	if cfg.SeedChats < 0 || cfg.SeedMessages < 0 || cfg.Duration <= 0 {
		return fmt.Errorf("bench: --seed-chats and --seed-messages must not be negative, --duration must be positive")
	}
	if cfg.SeedMessages > 0 && cfg.SeedChats == 0 {
		return fmt.Errorf("bench: --seed-messages needs --seed-chats")
	}
	path := *db
	if path == "" {
		dir, err := os.MkdirTemp("", "chatd-bench-")
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "bench.db")
	}
	s, err := open.Store(ctx, path)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer s.Close()
	if err := open.Migrate(ctx, s, func(p *goose.Provider) error {
		_, err := p.Up(ctx)
		return err
	}); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	name := "sqlite"
	if open.IsPostgres(path) {
		name = "postgres"
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	if *surfaces {
		r, err := bench.Surfaces(ctx, s, name, scfg)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		return r.Write(stdout)
	}
	if *capacity {
		r, err := bench.Capacity(ctx, s, name, ccfg)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		return r.Write(stdout)
	}
	r, err := bench.Run(ctx, s, name, cfg)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return r.Write(stdout)
}
