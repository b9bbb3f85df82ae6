package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

func init() { register(newVersionCmd) }

// version is set at build time with -ldflags "-X main.version=…"; without
// it the module version of `go install …@vX` is used, else "dev".
var version = "dev"

// wazeroPath is the module whose version `airlock version` reports: the
// runtime every sandboxed tool runs on.
const wazeroPath = "github.com/tetratelabs/wazero"

// buildInfo is what `airlock version` and `airlock --version` print, read
// from the binary itself (runtime/debug), so it cannot disagree with what
// was built.
type buildInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"`             // vcs.revision, "" when built outside a checkout
	Modified bool   `json:"modified,omitempty"` // the checkout had uncommitted changes
	Go       string `json:"go"`
	Wazero   string `json:"wazero"`
}

func buildInfoOf() buildInfo {
	b := buildInfo{Version: version, Go: runtime.Version(), Wazero: "unknown"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if b.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	b.Go = bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	for _, d := range bi.Deps {
		if d.Path == wazeroPath {
			b.Wazero = d.Version
			if d.Replace != nil {
				b.Wazero = d.Replace.Version
			}
		}
	}
	return b
}

// text is the human form: the version on the first line, as before.
func (b buildInfo) text() string {
	commit := b.Commit
	switch {
	case commit == "":
		commit = "unknown"
	case b.Modified:
		commit += " (modified)"
	}
	var s strings.Builder
	fmt.Fprintf(&s, "airlock %s\n", b.Version)
	fmt.Fprintf(&s, "commit  %s\n", commit)
	fmt.Fprintf(&s, "go      %s\n", b.Go)
	fmt.Fprintf(&s, "wazero  %s\n", b.Wazero)
	return s.String()
}

func newVersionCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version",
		Short: "print the version, commit, Go and wazero versions",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := buildInfoOf()
			if asJSON {
				data, _ := json.Marshal(b)
				fmt.Fprintf(cmd.OutOrStdout(), "%s\n", data)
				return nil
			}
			fmt.Fprint(cmd.OutOrStdout(), b.text())
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
