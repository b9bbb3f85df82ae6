package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/broker/session"
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
			if cmd.Flags().Changed("ttl") && (ttl < session.MinTTLSeconds || ttl > session.MaxTTLSeconds) {
				return usageErr("--ttl must be from %d to %d seconds, got %d", session.MinTTLSeconds, session.MaxTTLSeconds, ttl)
			}
			if origin == "" {
				origin = own
			} else if _, err := session.NormalizeOrigin(origin); err != nil {
				return usageErr("--origin must be an origin such as http://HOST:PORT (http or https, no path, query or fragment), got %q", origin)
			}
			return mint(base, tok, localclient.MintOptions{LaunchOrigin: origin, TTLSeconds: ttl, CanProposeSourceEdits: propose}, cmd.OutOrStdout())
		},
	}
	c.Flags().StringVar(&origin, "origin", "", "the view's launch `ORIGIN` (default: the broker's own origin, which its built-in /local/view page has)")
	c.Flags().Int64Var(&ttl, "ttl", 0, fmt.Sprintf("session lifetime in `SECONDS`, from %d to %d (default %d)", session.MinTTLSeconds, session.MaxTTLSeconds, session.DefaultTTLSeconds))
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
		return mintErr(err)
	}
	line, _ := json.Marshal(m)
	fmt.Fprintf(stdout, "%s\n%s\n", line, m.ViewURL(base))
	return nil
}

// mintErr is brokerErr for a mint, whose refusal is said once in plain
// words: "the broker refused the session: 400 INVALID_MESSAGE".
func mintErr(err error) error {
	var refused *localclient.HTTPError
	if !errors.As(err, &refused) {
		return brokerErr(err)
	}
	msg := fmt.Sprintf("the broker refused the session: %d %s", refused.Status, refused.Code)
	if refused.Status == http.StatusUnauthorized {
		msg += " (check the launch token: AIRLOCK_LOCAL_TOKEN or --token-file)"
	}
	code := exitFailed
	var e *exitError
	if errors.As(brokerErr(err), &e) {
		code = e.code
	}
	return &exitError{code: code, msg: msg, err: err}
}
