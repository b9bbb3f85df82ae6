package main

import (
	"crypto"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/plugins"
	"github.com/airlock/airlock/plugins/devkit"
	"github.com/airlock/airlock/plugins/signing"
)

func init() { register(newBuildCmd) }

// newBuildCmd is `airlock build DIR`: compile the project to its module,
// write the module's sha256 into plugin.json and check the plugin as the
// catalog would (plugins/devkit.Build).
func newBuildCmd() *cobra.Command {
	var command, tinygo bool
	var install, signKey string
	var sf *settingsFlags
	c := &cobra.Command{
		Use:   "build DIR [--command] [--tinygo] [--sign KEY] [--install PLUGINS_DIR]",
		Short: "compile a plugin project, hash it into plugin.json and check it as a broker would",
		Long: "Compiles the project in DIR to the WASI module its plugin.json names (a reactor, or a\n" +
			"command with --command; with the Go toolchain, or TinyGo with --tinygo), writes the\n" +
			"module's SHA-256 into plugin.json (nothing else in the file changes) and checks the\n" +
			"plugin exactly as the catalog admits one. The module and hash are written only when\n" +
			"every check passes. With --sign KEY it then signs the plugin (`airlock plugin sign`),\n" +
			"writing " + signing.BundleName + " beside plugin.json (and into the installed copy).\n" +
			"Exit 0 admissible, 1 the build failed, 2 DIR is not a project,\n" +
			"3 a broker would refuse the plugin (the reason is named).",
		Example: "  airlock build greet\n  airlock build greet --install ~/.local/share/airlock/plugins\n" +
			"  airlock build greet --sign ~/keys/plugins.key --install ~/.local/share/airlock/plugins",
		Args: exactArgs("DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkPath("", args[0], folder); err != nil {
				return err
			}
			if install != "" {
				if err := checkTarget("--install ", install); err != nil {
					return err
				}
			}
			var key crypto.Signer
			if cmd.Flags().Changed("sign") {
				var err error
				if key, err = loadSigningKey(signKey); err != nil {
					return err
				}
			}
			cfg, err := loadCompiling(sf, cmd)
			if err != nil {
				return err
			}
			o := devkit.BuildOptions{TinyGo: tinygo, Env: environ(), Output: cmd.ErrOrStderr(), CacheDir: plugins.CacheDir(cfg)}
			if command {
				o.Style = devkit.Command
			}
			b, err := devkit.Build(cmd.Context(), args[0], o)
			if err != nil {
				return devkitErr(err)
			}
			var tools []string
			for _, t := range b.Manifest.Tools {
				tools = append(tools, t.Name)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "built %s (%s, %s, %d bytes), sha256 %s in plugin.json; admissible as %q with tools %s\n",
				b.Module, b.Style, b.Compiler, b.Size, b.Manifest.SHA256, b.Manifest.ID, strings.Join(tools, ", "))
			if key != nil {
				if b.Signature, err = plugins.SignFolder(args[0], key); err != nil {
					return refusedErr(err)
				}
				fp, _ := signing.Fingerprint(key.Public())
				fmt.Fprintf(out, "signed with %s into %s\n", fp, signing.BundleName)
			}
			if install != "" {
				if err := devkit.Install(b, install); err != nil {
					return fmt.Errorf("install: %w", err)
				}
				fmt.Fprintf(out, "installed into %s\n", install)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&command, "command", false, "build a command module (a fresh instance per call) instead of a reactor (pooled)")
	c.Flags().BoolVar(&tinygo, "tinygo", false, "compile with tinygo (0.34 or newer, on PATH) for a smaller module")
	c.Flags().StringVar(&signKey, "sign", "", "then sign the plugin with the private key `KEY` (PEM, mode 0600; see `airlock plugin sign`)")
	c.Flags().StringVar(&install, "install", "", "then copy the plugin into the plugins folder `DIR` (as DIR/<id>, atomically)")
	sf = addSettingsFlags(c.Flags(), "data")
	return c
}

// loadCompiling loads the settings of a command that compiles modules
// (build, run) and checks its data directory and compilation cache as
// serve does.
func loadCompiling(sf *settingsFlags, cmd *cobra.Command) (*config.Config, error) {
	cfg, err := sf.load()
	if err != nil {
		return nil, err
	}
	return cfg, checkData(cfg, true, cmd.ErrOrStderr())
}

// devkitErr gives a devkit error its exit code: 2 usage, 3 the plugin
// would be refused, 1 anything else.
func devkitErr(err error) error {
	switch {
	case errors.Is(err, devkit.ErrUsage):
		return &exitError{code: exitUsage, msg: err.Error(), err: err}
	case errors.Is(err, devkit.ErrRefused):
		return &exitError{code: exitRefused, msg: err.Error(), err: err}
	}
	return err
}
