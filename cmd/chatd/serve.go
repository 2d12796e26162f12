package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/config"
)

const serveUsage = `usage: chatd serve [--FLAG VALUE ...]

`

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := serveConfig(args, stdout)
	if err != nil {
		return err
	}
	cfg.FirstTokenOut = terminal(stderr)
	a, err := app.New(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	defer a.Close()
	return a.Run(ctx, nil)
}

// terminal is w when it is a terminal (a person reads it as it is written,
// and nothing keeps it), else nil.
func terminal(w io.Writer) io.Writer {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return w
}

// serveConfig is the Config of `chatd serve`: each setting of the table
// (config.Settings) from its flag, else its environment variable, else its
// default. --help writes the settings to stdout and returns flag.ErrHelp;
// a bad variable or flag is a usageError (exit status 2).
func serveConfig(args []string, stdout io.Writer) (config.Config, error) {
	cfg, err := config.FromEnv()
	if err != nil {
		return config.Config{}, usageError{err}
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	// The flag package would print the error and a default usage; run's
	// caller prints the error, and --help prints the table.
	fs.SetOutput(io.Discard)
	for _, s := range config.Settings() {
		fs.Var(settingFlag{s, &cfg}, s.Flag, s.Usage)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, serveUsage)
			config.WriteSettingsHelp(stdout)
			return config.Config{}, err
		}
		return config.Config{}, usageError{fmt.Errorf("serve: %w (chatd serve --help lists the settings)", err)}
	}
	if fs.NArg() > 0 {
		return config.Config{}, usageError{fmt.Errorf("serve: unexpected argument %q (chatd serve --help lists the settings)", fs.Arg(0))}
	}
	return cfg, nil
}

// settingFlag is a setting as a flag.Value writing into a Config.
type settingFlag struct {
	s   config.Setting
	cfg *config.Config
}

func (f settingFlag) Set(v string) error { return f.s.Set(f.cfg, v) }

// String is the current value, never a secret's (the flag package may
// print it).
func (f settingFlag) String() string {
	if f.cfg == nil || f.s.Secret {
		return ""
	}
	return f.s.Get(*f.cfg)
}

// IsBoolFlag lets a bool setting stand alone: --pprof means --pprof=true.
func (f settingFlag) IsBoolFlag() bool { return f.s.Kind() == config.KindBool }
