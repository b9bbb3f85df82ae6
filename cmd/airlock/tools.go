package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/airlock/airlock/broker/v1client"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
	"github.com/airlock/airlock/plugins/signing"
)

func init() { register(newToolsCmd) }

// newToolsCmd is `airlock tools`: admitted descriptors and refused
// plugins, either from a plugins folder (offline: each plugin is checked
// and compiled exactly as serve would) or from a running broker. It exits
// 3 when any plugin was refused, so a tool author's script can check a
// plugin before shipping it. Offline it judges only the folder it was
// given: the bundled plugins join only with --builtin (the bundled notes
// needs --root notes=DIR, which has nothing to do with the folder).
func newToolsCmd() *cobra.Command {
	var asJSON, builtin bool
	var sf *settingsFlags
	var b *brokerFlags
	c := &cobra.Command{
		Use:   "tools [--plugins DIR | --broker URL]",
		Short: "list admitted tool descriptors and refused plugins",
		Long: "Lists the admitted descriptors and the refused plugins with their reasons.\n\n" +
			"  --plugins DIR   checks that folder alone offline, compiling each module exactly as serve\n" +
			"                  would (--builtin adds the bundled plugins)\n" +
			"  --broker URL    asks a running broker (GET /v1/tools and GET /v1/plugins)\n\n" +
			"Exit 3 when any plugin is refused.",
		Args: noArgs("tools takes flags only"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			var ds []wire.Descriptor
			var sts []wire.PluginStatus
			if b.given() || !sf.given("plugins") {
				client, err := b.client()
				if err != nil {
					return err
				}
				if ds, sts, err = toolsFromBroker(ctx, client); err != nil {
					return brokerErr(err)
				}
			} else {
				cfg, err := sf.load()
				if err != nil {
					return err
				}
				cfg.NoBuiltin = !builtin
				if err := checkData(cfg, true, cmd.ErrOrStderr()); err != nil {
					return err
				}
				if ds, sts, err = toolsOffline(ctx, cfg); errors.Is(err, plugins.ErrNoPluginsDir) || errors.Is(err, signing.ErrPolicy) {
					return configErr(err)
				} else if err != nil {
					return err
				}
			}
			if asJSON {
				out, _ := json.MarshalIndent(map[string]any{"descriptors": ds, "plugins": sts}, "", "  ")
				fmt.Fprintf(cmd.OutOrStdout(), "%s\n", out)
			} else {
				printTools(cmd.OutOrStdout(), ds, sts)
			}
			for _, s := range sts {
				if !s.Admitted {
					return exitSilently(exitRefused)
				}
			}
			return nil
		},
	}
	sf = addSettingsFlags(c.Flags(), "plugins", "trust-policy", "root", "no-builtin", "data")
	b = addBrokerFlags(c.Flags(), "the default, "+defaultBroker+", unless --plugins is given")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().BoolVar(&builtin, "builtin", false, "with --plugins, judge the bundled plugins too")
	return c
}

func toolsFromBroker(ctx context.Context, c *v1client.Client) ([]wire.Descriptor, []wire.PluginStatus, error) {
	ds, err := c.Tools(ctx)
	if err != nil {
		return nil, nil, err
	}
	sts, err := c.Plugins(ctx)
	return ds, sts, err
}

// toolsOffline admits the folder's plugins with a private runtime, as
// serve would, then closes it.
func toolsOffline(ctx context.Context, cfg *config.Config) ([]wire.Descriptor, []wire.PluginStatus, error) {
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	local, err := plugins.Open(ctx, cfg, logger, nil, false)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = local.Close(ctx) }()
	if err := local.Catalog.WaitCompiled(ctx); err != nil {
		return nil, nil, err
	}
	ds := local.Table.Descriptors()
	for i := range ds {
		ds[i].Executor = "local"
	}
	return ds, local.Catalog.Statuses(), nil
}

// printable quotes s when it holds a character that a terminal could act
// on or that could make it read as something else (a refused plugin's
// folder name is whatever its author chose).
func printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return r == '\t' || !wire.IDRune(r) }) < 0 {
		return s
	}
	return strconv.QuoteToASCII(s)
}

func printTools(w io.Writer, ds []wire.Descriptor, sts []wire.PluginStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	signed := slices.ContainsFunc(ds, func(d wire.Descriptor) bool { return d.Signer != nil })
	header := "DESCRIPTOR\tEXECUTOR\tTOOLS\tBOUNDS"
	if signed {
		header += "\tSIGNER"
	}
	fmt.Fprintln(tw, header)
	for _, d := range ds {
		var names []string
		for _, t := range d.Tools {
			names = append(names, t.Name)
		}
		b := d.Bounds
		fmt.Fprintf(tw, "%s\t%s\t%s\t%dms %dMiB out≤%dB fetch≤%d hosts=[%s] roots=[%s]",
			d.DescriptorID, d.Executor, strings.Join(names, ","), b.TimeoutMs, b.MemoryMiB, b.MaxOutputBytes,
			b.MaxRequests, strings.Join(b.AllowedHosts, ","), strings.Join(b.Roots, ","))
		if signed {
			fmt.Fprintf(tw, "\t%s", cmp.Or(d.Signer.String(), "-"))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	printSources(w, sts)
	refused := 0
	for _, s := range sts {
		if !s.Admitted {
			refused++
		}
	}
	if refused == 0 {
		return
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REFUSED\tORIGIN\tREASON\tDETAIL")
	for _, s := range sts {
		if !s.Admitted {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", printable(s.ID), s.Origin, s.Reason, printable(s.Detail))
		}
	}
	tw.Flush()
}

// printSources lists the plugins `airlock plugin pull` installed, with
// the reference and artifact digest they came from.
func printSources(w io.Writer, sts []wire.PluginStatus) {
	var pulled []wire.PluginStatus
	for _, s := range sts {
		if s.Source != nil {
			pulled = append(pulled, s)
		}
	}
	if len(pulled) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PULLED\tFROM\tDIGEST")
	for _, s := range pulled {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", printable(s.ID), printable(s.Source.Ref), printable(s.Source.Digest))
	}
	tw.Flush()
}
