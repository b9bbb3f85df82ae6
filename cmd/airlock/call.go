package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/airlock/airlock/broker/v1client"
)

func init() { register(newCallCmd) }

// newCallCmd is `airlock call TOOL --args JSON`: it fills descriptorId and
// boundsEcho from the broker's catalog, prints the answer envelope, and
// exits 0 when ok, 3 when refused.
func newCallCmd() *cobra.Command {
	var argsFlag, descriptor string
	var b *brokerFlags
	c := &cobra.Command{
		Use:   "call TOOL [--args JSON|@FILE|-]",
		Short: "call a tool of a running broker and print the answer envelope",
		Long: "Calls TOOL on a running broker (POST /v1/calls), with descriptorId and boundsEcho filled\n" +
			"from its catalog (GET /v1/tools), and prints the answer envelope. Exit 0 when the answer\n" +
			"is ok, 3 when it is a refusal, 1 when the call could not be made.",
		Example: "  airlock call read_notes --args '{\"path\":\"welcome.md\"}'\n" +
			"  airlock call read_notes --args @args.json\n" +
			"  echo '{\"query\":\"bounds\"}' | airlock call search_notes --args -",
		Args: exactArgs("TOOL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			callArgs, err := readArgs(argsFlag, cmd.InOrStdin())
			if err != nil {
				return err
			}
			client, err := b.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			ds, err := client.Tools(ctx)
			if err != nil {
				return brokerErr(err)
			}
			call, err := v1client.NewCall(ds, args[0], descriptor, callArgs)
			if err != nil {
				return err
			}
			answer, raw, err := client.Call(ctx, call)
			if err != nil {
				return brokerErr(err)
			}
			return printAnswer(cmd, raw, answer.OK)
		},
	}
	c.Flags().StringVar(&argsFlag, "args", "{}", argsHelp)
	c.Flags().StringVar(&descriptor, "descriptor", "", "the descriptor `ID`, when several declare the tool")
	b = addBrokerFlags(c.Flags(), "default "+defaultBroker)
	return c
}

// printAnswer prints an answer envelope, indented, and ends the command
// with exit 3 when it is a refusal (call, run).
func printAnswer(cmd *cobra.Command, raw []byte, ok bool) error {
	out, _ := json.MarshalIndent(json.RawMessage(raw), "", "  ")
	fmt.Fprintf(cmd.OutOrStdout(), "%s\n", out)
	if !ok {
		return exitSilently(exitRefused)
	}
	return nil
}
