package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/airlock/airlock/broker/v1client"
	"github.com/airlock/airlock/config/secret"
	"github.com/airlock/airlock/executors/wire"
)

// runCall is `airlock call TOOL --args JSON`: it fills descriptorId and
// boundsEcho from the broker's catalog, prints the answer envelope, and
// exits 0 when ok, 3 when refused.
func runCall(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("call", stderr)
	broker := fs.String("broker", defaultBroker, "the broker's base `URL`")
	argsJSON := fs.String("args", "{}", "the tool's arguments as a JSON `OBJECT`")
	descriptor := fs.String("descriptor", "", "the descriptor `ID`, when several declare the tool")
	token := addSecretFlag(fs, secret.LaunchToken)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airlock call TOOL [--args JSON] [--broker URL] [--descriptor ID]")
		fmt.Fprintln(stderr, "prints the answer envelope; exit 0 when ok, 3 when refused, 1 when the call could not be made")
		fs.PrintDefaults()
	}
	tool, rest := "", args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		tool, rest = args[0], args[1:]
	}
	if code := parseFlags(fs, rest); code >= 0 {
		return code
	}
	if tool == "" && fs.NArg() == 1 {
		tool = fs.Arg(0)
	} else if tool == "" || fs.NArg() > 0 {
		fs.Usage()
		return exitUsage
	}
	callArgs, err := wire.CompactMember([]byte(*argsJSON))
	if err != nil {
		fmt.Fprintln(stderr, "airlock call: --args must be one JSON object")
		return exitUsage
	}
	c, err := newV1Client(*broker, token)
	if err != nil {
		fmt.Fprintf(stderr, "airlock call: %v\n", err)
		return exitUsage
	}
	ctx := context.Background()
	ds, err := c.Tools(ctx)
	if err != nil {
		return fail(stderr, "call: %v", err)
	}
	call, err := v1client.NewCall(ds, tool, *descriptor, callArgs)
	if err != nil {
		return fail(stderr, "call: %v", err)
	}
	answer, raw, err := c.Call(ctx, call)
	if err != nil {
		return fail(stderr, "call: %v", err)
	}
	out, _ := json.MarshalIndent(json.RawMessage(raw), "", "  ")
	fmt.Fprintf(stdout, "%s\n", out)
	if !answer.OK {
		return exitRefused
	}
	return exitOK
}
