package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// version is set at release builds (-ldflags "-X main.version=v1.2.3");
// otherwise the build's module version or VCS stamp is used.
var version = ""

// buildVersion describes this binary: its version, the commit it was built
// from (with "+dirty" when the tree had changes), and the Go toolchain.
func buildVersion() string {
	v, commit, dirty, goVersion := version, "", false, ""
	if info, ok := debug.ReadBuildInfo(); ok {
		goVersion = info.GoVersion
		if v == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "devel"
	}
	var b strings.Builder
	b.WriteString("chatd " + v)
	if commit != "" {
		if len(commit) > 12 {
			commit = commit[:12]
		}
		b.WriteString(" (" + commit)
		if dirty {
			b.WriteString("+dirty")
		}
		b.WriteString(")")
	}
	if goVersion != "" {
		b.WriteString(" " + goVersion)
	}
	return b.String()
}

func runVersion(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("version takes no arguments")
	}
	fmt.Fprintln(stdout, buildVersion())
	return nil
}
