package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/airlock/airlock/metrics"
)

func init() { register(newVersionCmd) }

// version is set at build time with -ldflags "-X main.version=…"; without
// it the module version of `go install …@vX` is used, else "dev".
var version = "dev"

// buildInfo is what `airlock version` and `airlock --version` print: the
// binary's own build info (metrics.ReadBuildInfo, which
// airlock_build_info carries too), so neither can disagree with what was
// built.
type buildInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit"` // vcs.revision, "-dirty" when modified, "unknown" outside a checkout
	Go      string `json:"go"`
	Wazero  string `json:"wazero"`
}

func buildInfoOf() buildInfo {
	b := metrics.ReadBuildInfo(version)
	return buildInfo{Version: b.Version, Commit: b.Commit, Go: b.GoVersion, Wazero: b.WazeroVersion}
}

// text is the human form: the version on the first line, as before.
func (b buildInfo) text() string {
	var s strings.Builder
	fmt.Fprintf(&s, "airlock %s\n", b.Version)
	fmt.Fprintf(&s, "commit  %s\n", b.Commit)
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
