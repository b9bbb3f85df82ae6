package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlock/airlock/broker/pairing"
	"github.com/airlock/airlock/config"
)

func init() { register(newPairCmd) }

// newPairCmd is `airlock pair add NAME | ls | rm NAME`, on the pairings
// file of --data. `add` prints the new bearer alone on stdout, once;
// nothing else ever shows it.
func newPairCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "pair",
		Short: "manage the pairings of environments: pair add NAME | pair ls | pair rm NAME",
		Long: "Manages the pairings file of --data. `pair add` prints the new bearer once, alone on\n" +
			"stdout; give it to `airlock env` (AIRLOCK_BEARER or --bearer-file). A broker watching\n" +
			"the folder picks up every change and closes the connection of a removed pairing.",
	}
	groupCommand(c)
	c.AddCommand(
		pairSub("add NAME", "pair a new environment and print its bearer, once", exactArgs("NAME"),
			func(cmd *cobra.Command, cfg *config.Config, args []string) error {
				return pairAdd(cfg.Data, args[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
			}),
		pairSub("rm NAME", "revoke a pairing; a broker watching --data closes its connection", exactArgs("NAME"),
			func(cmd *cobra.Command, cfg *config.Config, args []string) error {
				if err := pairing.Remove(cfg.Data, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "airlock pair: %s revoked; a broker watching %s closes its connection\n", args[0], cfg.Data)
				return nil
			}),
		pairList(),
	)
	return c
}

// pairSub is one pair subcommand on the settings of --config and --data.
func pairSub(use, short string, args cobra.PositionalArgs, run func(*cobra.Command, *config.Config, []string) error) *cobra.Command {
	var sf *settingsFlags
	c := &cobra.Command{
		Use: use, Short: short, Args: args,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := sf.load()
			if err != nil {
				return err
			}
			if err := checkData(cfg, false, cmd.ErrOrStderr()); err != nil {
				return err
			}
			err = run(cmd, cfg, args)
			if errors.Is(err, pairing.ErrNameInvalid) || errors.Is(err, pairing.ErrFileOpen) {
				return configErr(err)
			}
			return err
		},
	}
	sf = addSettingsFlags(c.Flags(), "data")
	return c
}

func pairAdd(data, name string, stdout, stderr io.Writer) error {
	bearer, err := pairing.Add(data, name, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, bearer)
	fmt.Fprintf(stderr, "airlock pair: %s paired; the bearer above is shown once and stored nowhere\n", name)
	return nil
}

// pairList is `pair ls`: one line per pairing, its name and when it was
// made; with --json, {"pairings":[{"name":…,"created":…}]}. The digest
// of the bearer stays in the file.
func pairList() *cobra.Command {
	var asJSON bool
	c := pairSub("ls", "list the pairings: name and when each was made", exactArgs(),
		func(cmd *cobra.Command, cfg *config.Config, _ []string) error {
			ps, err := pairing.List(cfg.Data)
			if err != nil {
				return err
			}
			type entry struct {
				Name    string `json:"name"`
				Created string `json:"created"`
			}
			list := make([]entry, 0, len(ps))
			for _, p := range ps {
				list = append(list, entry{p.Name, p.Created})
			}
			out := cmd.OutOrStdout()
			if asJSON {
				data, _ := json.MarshalIndent(map[string]any{"pairings": list}, "", "  ")
				fmt.Fprintf(out, "%s\n", data)
				return nil
			}
			for _, p := range list {
				fmt.Fprintf(out, "%s\t%s\n", p.Name, p.Created)
			}
			return nil
		})
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
