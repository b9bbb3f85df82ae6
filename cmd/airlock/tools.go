package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/airlock/airlock/broker/v1client"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// runTools is `airlock tools`: admitted descriptors and refused plugins,
// either from a plugins folder (offline: each plugin is checked and
// compiled exactly as serve would) or from a running broker. It exits 3
// when any plugin was refused, so a tool author's script can check a
// plugin before shipping it. Offline it judges only the folder it was
// given: the bundled plugins join only with --builtin (the bundled notes
// needs --root notes=DIR, which has nothing to do with the folder).
func runTools(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("tools", stderr)
	sf := addSettingsFlags(fs, "plugins", "root", "no-builtin", "data", "token-file")
	builtin := fs.Bool("builtin", false, "with --plugins, judge the bundled plugins too")
	brokerURL := fs.String("broker", "", "ask a running broker at `URL` (token from TENSORVIZ_LOCAL_TOKEN or --token-file)")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airlock tools --plugins DIR [--builtin] [--root NAME=DIR]... | airlock tools --broker URL [--token-file FILE]")
		fs.PrintDefaults()
	}
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	ctx := context.Background()
	var ds []wire.Descriptor
	var sts []plugins.Status
	var err error
	if *brokerURL != "" || sf.flagSet("plugins") == "" {
		c, cerr := newV1Client(cmp.Or(*brokerURL, defaultBroker), sf.token)
		if cerr != nil {
			fmt.Fprintf(stderr, "airlock tools: %v\n", cerr)
			return exitUsage
		}
		ds, sts, err = toolsFromBroker(ctx, c)
	} else {
		cfg, lerr := sf.load()
		if lerr != nil {
			return fail(stderr, "tools: %v", lerr)
		}
		cfg.NoBuiltin = !*builtin
		if code := checkData("tools", cfg, true, stderr); code >= 0 {
			return code
		}
		ds, sts, err = toolsOffline(ctx, cfg)
	}
	if err != nil {
		return fail(stderr, "tools: %v", err)
	}
	if *asJSON {
		out, _ := json.MarshalIndent(map[string]any{"descriptors": ds, "plugins": sts}, "", "  ")
		fmt.Fprintf(stdout, "%s\n", out)
	} else {
		printTools(stdout, ds, sts)
	}
	for _, s := range sts {
		if !s.Admitted {
			return exitRefused
		}
	}
	return exitOK
}

func toolsFromBroker(ctx context.Context, c *v1client.Client) ([]wire.Descriptor, []plugins.Status, error) {
	ds, err := c.Tools(ctx)
	if err != nil {
		return nil, nil, err
	}
	sts, err := c.Plugins(ctx)
	return ds, sts, err
}

// toolsOffline admits the folder's plugins with a private runtime, as
// serve would, then closes it.
func toolsOffline(ctx context.Context, cfg *config.Config) ([]wire.Descriptor, []plugins.Status, error) {
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	local, err := plugins.Open(ctx, cfg, logger, nil, false)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = local.Close(ctx) }()
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

func printTools(w io.Writer, ds []wire.Descriptor, sts []plugins.Status) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DESCRIPTOR\tEXECUTOR\tTOOLS\tBOUNDS")
	for _, d := range ds {
		var names []string
		for _, t := range d.Tools {
			names = append(names, t.Name)
		}
		b := d.Bounds
		fmt.Fprintf(tw, "%s\t%s\t%s\t%dms %dMiB out≤%dB fetch≤%d hosts=[%s] roots=[%s]\n",
			d.DescriptorID, d.Executor, strings.Join(names, ","), b.TimeoutMs, b.MemoryMiB, b.MaxOutputBytes,
			b.MaxRequests, strings.Join(b.AllowedHosts, ","), strings.Join(b.Roots, ","))
	}
	tw.Flush()
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
