package main

import (
	"github.com/spf13/cobra"

	"github.com/airlock/airlock/plugins/signing"
)

func init() { register(newPluginCmd) }

// pluginSubs are the subcommands of `airlock plugin`; each file adds its
// own with registerPlugin, so the group knows none of them.
var pluginSubs []func() *cobra.Command

func registerPlugin(newCmd func() *cobra.Command) { pluginSubs = append(pluginSubs, newCmd) }

// newPluginCmd is `airlock plugin`: work on plugin folders as a whole.
func newPluginCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "plugin",
		Short: "work on plugin folders: keygen NAME | digest DIR | sign DIR --key KEY | push DIR REF | pull REF --install DIR",
		Long: "A plugin's signature (" + signing.BundleName + " beside plugin.json, a Sigstore bundle)\n" +
			"signs its payload: plugin.json in canonical JSON, which pins the module's SHA-256.\n" +
			"With a trust policy, a broker admits only plugins signed by a key it trusts for their id.\n" +
			"push and pull move plugin folders through any OCI registry, signature included.",
	}
	groupCommand(c)
	for _, newCmd := range pluginSubs {
		c.AddCommand(newCmd())
	}
	return c
}
