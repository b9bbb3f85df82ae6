package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/airlock/airlock/broker/calls"
	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/broker/v1client"
	"github.com/airlock/airlock/config/secret"
	"github.com/airlock/airlock/executors/wire"
)

// defaultBroker is where the CLI looks for a broker when --broker is not
// given: the default listen address of `airlock serve`.
const defaultBroker = "http://127.0.0.1:7420"

// brokerFlags are --broker URL and --token-file FILE, the one way every
// command that talks to a running broker (call, tools --broker, mint,
// load calls, load relay, mcp --broker) finds it and its launch token:
// the same flags, the same parsing of the URL, and the same errors, all
// exit 2, for a bad URL or a missing or unusable token.
type brokerFlags struct {
	fs    *pflag.FlagSet
	url   string
	token *secretFlag
}

// addBrokerFlags adds both flags to fs; without says what the command
// does when --broker is not given.
func addBrokerFlags(fs *pflag.FlagSet, without string) *brokerFlags {
	b := &brokerFlags{fs: fs}
	fs.StringVar(&b.url, "broker", "", "the running broker's `URL`, http://HOST:PORT, or unix:PATH for its Unix socket ("+without+")")
	b.token = addSecretFlag(fs, secret.LaunchToken)
	return b
}

// given reports whether --broker was on the command line.
func (b *brokerFlags) given() bool { return b.fs.Changed("broker") }

// socket is the path of --broker unix:PATH, or "" for a URL.
func (b *brokerFlags) socket() string {
	path, _ := strings.CutPrefix(b.url, v1client.UnixPrefix)
	if path == b.url {
		return ""
	}
	return path
}

// base is the broker's base URL and its origin; a Unix socket has
// neither, and the commands that ask (views are opened over TCP) need
// the broker's URL.
func (b *brokerFlags) base() (base, origin string, err error) {
	if b.socket() != "" {
		return "", "", usageErr("--broker %s serves /v1 and MCP calls; this command needs the broker's http URL, such as %s (views are opened over TCP)", b.url, defaultBroker)
	}
	raw := cmp.Or(b.url, defaultBroker)
	base, origin, err = brokerBase(raw)
	if err != nil {
		return "", "", usageErr("--broker must be an http URL such as %s, got %q", defaultBroker, raw)
	}
	return base, origin, nil
}

// client is a /v1 client of the broker with the launch token, over TCP
// or, for --broker unix:PATH, over the broker's Unix socket.
func (b *brokerFlags) client() (*v1client.Client, error) {
	hc := &http.Client{Timeout: 15 * time.Minute}
	base, path := v1client.UnixBase, b.socket()
	if path != "" {
		if !filepath.IsAbs(path) {
			return nil, usageErr("--broker %s: the socket's path must be absolute", b.url)
		}
		hc.Transport = v1client.UnixTransport(path)
	} else {
		var err error
		if base, _, err = b.base(); err != nil {
			return nil, err
		}
	}
	tok, err := b.token.read()
	if err != nil {
		return nil, err
	}
	return &v1client.Client{Base: base, Token: tok, HTTP: hc, Socket: path}, nil
}

// errBrokerURL refuses a --broker that is not http(s)://HOST:PORT.
var errBrokerURL = errors.New("want http://HOST:PORT")

// brokerBase returns the broker's base URL and its origin from --broker,
// which may also be given as ws://… or with a path.
func brokerBase(raw string) (base, origin string, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", "", errBrokerURL
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "ws":
		u.Scheme = "http"
	case "https", "wss":
		u.Scheme = "https"
	default:
		return "", "", errBrokerURL
	}
	origin = u.Scheme + "://" + strings.ToLower(u.Host)
	return origin, origin, nil
}

// argsHelp is the help of every --args flag.
const argsHelp = "the tool's arguments: a JSON `OBJECT`, @FILE to read it from a file, or - to read it from stdin"

// readArgs is the value of --args: the JSON object itself, @FILE, or -
// for stdin, each read up to the broker's bound on a call
// (calls.MaxCallBytes), compacted. Its errors are usage errors.
func readArgs(v string, stdin io.Reader) (json.RawMessage, error) {
	data, from := []byte(v), ""
	switch {
	case v == "-":
		from = " (from stdin)"
		var err error
		if data, err = readBounded(stdin); err != nil {
			return nil, usageErr("--args -: %v", err)
		}
	case strings.HasPrefix(v, "@"):
		from = " (from " + v[1:] + ")"
		f, err := os.Open(v[1:])
		if err != nil {
			return nil, usageErr("--args %s: %s", v, pathReason(err, file))
		}
		defer f.Close()
		if data, err = readBounded(f); err != nil {
			return nil, usageErr("--args %s: %v", v, err)
		}
	}
	args, err := wire.CompactMember(data)
	if err != nil {
		return nil, usageErr("--args must be one JSON object%s: %v", from, err)
	}
	return args, nil
}

// readBounded reads r whole, refusing more than calls.MaxCallBytes.
func readBounded(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, calls.MaxCallBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > calls.MaxCallBytes {
		return nil, fmt.Errorf("larger than %d MiB, the broker's bound on a call", calls.MaxCallBytes>>20)
	}
	return data, nil
}

// brokerErr is an error of a client of the broker: exit 3 when the broker
// refused the launch token (401) or the request's origin (403), a plain
// failure (exit 1) otherwise.
func brokerErr(err error) error {
	var v1 *v1client.StatusError
	var local *localclient.HTTPError
	switch {
	case errors.As(err, &v1) && (v1.Status == http.StatusUnauthorized || v1.Status == http.StatusForbidden),
		errors.As(err, &local) && (local.Status == http.StatusUnauthorized || local.Status == http.StatusForbidden):
		return &exitError{code: exitRefused, msg: err.Error(), err: err}
	}
	return err
}
