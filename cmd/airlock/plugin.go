package main

import "github.com/spf13/cobra"

func init() { register(newPluginCmd) }

// pluginSubs are the subcommands of `airlock plugin`; each file adds its
// own with registerPlugin, so the group knows none of them.
var pluginSubs []func() *cobra.Command

func registerPlugin(newCmd func() *cobra.Command) { pluginSubs = append(pluginSubs, newCmd) }

// newPluginCmd is `airlock plugin`: work on plugin folders as a whole.
func newPluginCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "plugin",
		Short: "work on plugin folders: plugin push DIR REF | plugin pull REF --install DIR",
	}
	groupCommand(c)
	for _, newCmd := range pluginSubs {
		c.AddCommand(newCmd())
	}
	return c
}
