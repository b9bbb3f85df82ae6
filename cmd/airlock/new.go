package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/airlock/airlock/plugins/devkit"
)

func init() { register(newNewCmd) }

// newNewCmd is `airlock new NAME [--dir DIR]`: a plugin project that
// builds outside this repository (plugins/devkit.New).
func newNewCmd() *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:   "new NAME [--dir DIR]",
		Short: "write a plugin project: a Go tool, its plugin.json and the guest SDK",
		Long: "Writes a plugin project for the plugin id NAME into ./NAME (or --dir DIR, which must be\n" +
			"empty or absent): a greeting tool written with the guest SDK, its plugin.json, a test, a\n" +
			"README and a copy of the SDK, so it builds anywhere without fetching anything.\n" +
			"plugins/README.md walks from here to a call. Exit 2 for a NAME that is not a plugin id or\n" +
			"a target that is not empty.",
		Example: "  airlock new greet && airlock build greet && airlock run greet greet --args '{\"name\":\"Ada\"}'",
		Args:    exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, target, given := args[0], dir, "--dir "
			if target == "" {
				target, given = name, ""
			}
			if err := checkTarget(given, target); err != nil {
				return err
			}
			files, err := devkit.New(name, target)
			if err != nil {
				return devkitErr(err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "wrote %s: %s\n", target, strings.Join(files, " "))
			fmt.Fprintf(out, "next: airlock build %s && airlock run %s %s --args '{\"name\":\"Ada\"}'\n", target, target, devkit.ToolName(name))
			return nil
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "write the project into `DIR` (default ./NAME); it must be empty or absent")
	return c
}
