package main

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/airlock/airlock/plugins"
	"github.com/airlock/airlock/plugins/devkit"
)

func init() { register(newRunCmd) }

// newRunCmd is `airlock run DIR TOOL --args JSON`: one call of a built
// project's tool, offline, under its bounds, through the executors as a
// broker makes it (plugins/devkit.Run). Roots, exec limits and the
// compilation cache come from the same flags, config file and environment
// as serve's.
func newRunCmd() *cobra.Command {
	var argsFlag string
	var sf *settingsFlags
	c := &cobra.Command{
		Use:   "run DIR TOOL [--args JSON|@FILE|-] [--root NAME=DIR]...",
		Short: "call a plugin project's tool once, offline, under its bounds",
		Long: "Admits the built project in DIR as a broker would and calls TOOL once through the same\n" +
			"executors, with the descriptor's bounds; prints the answer envelope. Roots are mapped\n" +
			"with --root NAME=DIR (or the config file), as for serve; the tool's log lines and\n" +
			"stderr go to stderr. Exit 0 when the answer is ok, 3 when it is a refusal or the plugin\n" +
			"would not be admitted.",
		Example: "  airlock run greet greet --args '{\"name\":\"Ada\"}'\n" +
			"  airlock run wordcount count_words --root notes=$HOME/notes --args @args.json",
		Args: exactArgs("DIR", "TOOL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkPath("", args[0], folder); err != nil {
				return err
			}
			callArgs, err := readArgs(argsFlag, cmd.InOrStdin())
			if err != nil {
				return err
			}
			cfg, err := loadCompiling(sf, cmd)
			if err != nil {
				return err
			}
			rc := plugins.RuntimeConfig(cfg, configLogger(cmd.ErrOrStderr(), cfg))
			a, err := devkit.Run(cmd.Context(), args[0], args[1], callArgs, devkit.RunOptions{Runtime: rc})
			if err != nil {
				return devkitErr(err)
			}
			raw, _ := json.Marshal(a)
			return printAnswer(cmd, raw, a.OK)
		},
	}
	c.Flags().StringVar(&argsFlag, "args", "{}", argsHelp)
	sf = addSettingsFlags(c.Flags(), "root", "data", "log-level")
	return c
}
