package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlock/airlock/broker/localclient"
)

func init() { register(newMintCmd) }

// newMintCmd mints a workspace session on a running broker and prints the
// mint response and the built-in view page's URL, so an extension author
// can try the session flow by hand. It is the one command that prints
// credentials: that is its purpose.
func newMintCmd() *cobra.Command {
	var origin string
	var ttl int64
	var propose bool
	var b *brokerFlags
	c := &cobra.Command{
		Use:   "mint",
		Short: "mint a workspace session and print its view URL (prints credentials)",
		Long: "Mints a workspace session on a running broker.\n\n" +
			"It prints CREDENTIALS: the mint response (viewCredential, hostCookieKey) on the first line and, on the\n" +
			"second, the view URL, whose fragment #<workspaceSessionId>.<viewCredential> is the one-time view\n" +
			"credential. This is the only Airlock command that prints a credential; treat its output as a secret.",
		Args: noArgs("mint takes flags only"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			base, own, err := b.base()
			if err != nil {
				return err
			}
			tok, err := b.token.read()
			if err != nil {
				return err
			}
			if origin == "" {
				origin = own
			}
			return mint(base, tok, localclient.MintOptions{LaunchOrigin: origin, TTLSeconds: ttl, CanProposeSourceEdits: propose}, cmd.OutOrStdout())
		},
	}
	c.Flags().StringVar(&origin, "origin", "", "the view's launch `ORIGIN` (default: the broker's own origin, which its built-in /local/view page has)")
	c.Flags().Int64Var(&ttl, "ttl", 0, "session lifetime in `SECONDS` (default 28800, clamped to [1, 86400])")
	c.Flags().BoolVar(&propose, "propose", false, "mint with canProposeSourceEdits")
	b = addBrokerFlags(c.Flags(), "default "+defaultBroker)
	return c
}

func mint(base, token string, o localclient.MintOptions, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := &localclient.Client{Base: base, Token: token}
	m, err := c.Mint(ctx, o)
	if err != nil {
		return brokerErr(err)
	}
	line, _ := json.Marshal(m)
	fmt.Fprintf(stdout, "%s\n%s\n", line, m.ViewURL(base))
	return nil
}
