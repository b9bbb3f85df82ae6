package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/airlock/airlock/plugins"
	"github.com/airlock/airlock/plugins/distribute"
)

func init() {
	registerPlugin(newPluginPushCmd)
	registerPlugin(newPluginPullCmd)
}

// registryFlags are how push and pull reach a registry.
type registryFlags struct {
	plainHTTP     bool
	username      string
	passwordStdin bool
	timeout       time.Duration
}

func addRegistryFlags(fs *pflag.FlagSet) *registryFlags {
	r := &registryFlags{}
	fs.BoolVar(&r.plainHTTP, "plain-http", false, "speak http:// to a registry on 127.0.0.1, ::1 or localhost (refused for any other)")
	fs.StringVar(&r.username, "username", "", "the registry user (with --password-stdin); without it, the Docker credentials file's")
	fs.BoolVar(&r.passwordStdin, "password-stdin", false, "read the password from stdin's first line")
	fs.DurationVar(&r.timeout, "timeout", 10*time.Minute, "bound on the whole transfer")
	return r
}

// options reads the password, if asked, and builds the options.
func (r *registryFlags) options(cmd *cobra.Command) (distribute.Options, error) {
	o := distribute.Options{PlainHTTP: r.plainHTTP, Username: r.username, Progress: cmd.ErrOrStderr()}
	if r.passwordStdin != (r.username != "") {
		return o, usageErr("--username and --password-stdin go together")
	}
	if r.timeout <= 0 {
		return o, usageErr("--timeout must be positive")
	}
	if r.passwordStdin {
		line, err := bufio.NewReader(io.LimitReader(cmd.InOrStdin(), 4096)).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return o, usageErr("--password-stdin: %v", err)
		}
		if o.Password = strings.TrimRight(line, "\r\n"); o.Password == "" {
			return o, usageErr("--password-stdin: stdin held no password")
		}
	}
	return o, nil
}

// distributeErr gives a push or pull error its exit code: 2 for a
// reference or flag that cannot be used, 3 for a refusal (of the
// artifact, the plugin or the credentials), 1 when the registry could not
// be reached or has no such artifact.
func distributeErr(err error) error {
	switch {
	case errors.Is(err, distribute.ErrReference), errors.Is(err, distribute.ErrPlainHTTP),
		errors.Is(err, plugins.ErrNoPluginsDir):
		return &exitError{code: exitUsage, msg: err.Error(), err: err}
	case errors.Is(err, distribute.ErrNotFound), errors.Is(err, distribute.ErrUnreachable):
		return &exitError{code: exitFailed, msg: err.Error(), err: err}
	case distribute.Reason(err) != "":
		return &exitError{code: exitRefused, msg: err.Error(), err: err}
	}
	return err
}

// newPluginPushCmd is `airlock plugin push DIR REF`.
func newPluginPushCmd() *cobra.Command {
	var rf *registryFlags
	c := &cobra.Command{
		Use:   "push DIR REF",
		Short: "store a plugin folder in an OCI registry",
		Long: "Checks the plugin folder DIR as admission would (plugin.json, the module, its sha256)\n" +
			"and stores it under REF (registry/repository:tag) as a plugin artifact: plugin.json,\n" +
			"the module and, when present, plugin.sigstore.json, each a layer of its own media type.\n" +
			"A signature is also attached as a referrer of the artifact. Prints the artifact's\n" +
			"digest. Exit 3 when the plugin or the credentials are refused.",
		Example: "  airlock plugin push greet registry.example/plugins/greet:1.0.0\n" +
			"  airlock plugin push greet 127.0.0.1:5000/greet:1.0.0 --plain-http",
		Args: exactArgs("DIR", "REF"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkPath("", args[0], folder); err != nil {
				return err
			}
			o, err := rf.options(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), rf.timeout)
			defer cancel()
			p, err := distribute.Push(ctx, args[0], args[1], o)
			if err != nil {
				return distributeErr(err)
			}
			if p.Referrer.Digest != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "signature attached as referrer %s\n", p.Referrer.Digest)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "pushed %s %s\n", p.ID, p.Version)
			fmt.Fprintln(cmd.OutOrStdout(), p.Artifact.Digest)
			return nil
		},
	}
	rf = addRegistryFlags(c.Flags())
	return c
}

// newPluginPullCmd is `airlock plugin pull REF --install PLUGINS_DIR`.
func newPluginPullCmd() *cobra.Command {
	var rf *registryFlags
	var install string
	c := &cobra.Command{
		Use:   "pull REF --install PLUGINS_DIR",
		Short: "install a plugin from an OCI registry into a plugins folder",
		Long: "Fetches the plugin artifact REF and installs it as PLUGINS_DIR/<id>, <id> from its\n" +
			"plugin.json. It refuses, by name, an artifact of another type or with a layer it does\n" +
			"not know (artifact-unknown-type), a layer declaring more than its bound before fetching\n" +
			"it (layer-too-large), bytes that do not match their digest (digest-mismatch) and a\n" +
			"folder admission would refuse (plugin-invalid). Nothing is written unless every check\n" +
			"passes; an installed plugin of the same id is then replaced in one rename. Exit 3 for\n" +
			"a refusal, 1 when the registry is unreachable or has no such artifact.",
		Example: "  airlock plugin pull registry.example/plugins/greet:1.0.0 --install ~/.local/share/airlock/plugins",
		Args:    exactArgs("REF"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkPath("--install ", install, folder); err != nil {
				return err
			}
			o, err := rf.options(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), rf.timeout)
			defer cancel()
			p, err := distribute.Pull(ctx, args[0], install, o)
			if err != nil {
				return distributeErr(err)
			}
			verb := "installed"
			if p.Replaced {
				verb = "replaced"
			}
			signed := "unsigned"
			if p.Signed {
				signed = "with its signature"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s (%s) as %s from %s\n", verb, p.ID, p.Version, signed, p.Dir, p.Source.Digest)
			return nil
		},
	}
	rf = addRegistryFlags(c.Flags())
	c.Flags().StringVar(&install, "install", "", "the plugins folder `PLUGINS_DIR` to install into (as PLUGINS_DIR/<id>)")
	_ = c.MarkFlagRequired("install")
	return c
}
