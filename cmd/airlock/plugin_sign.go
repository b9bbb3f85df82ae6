package main

import (
	"crypto"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/airlock/airlock/plugins"
	"github.com/airlock/airlock/plugins/signing"
)

func init() {
	registerPlugin(newPluginKeygenCmd)
	registerPlugin(newPluginDigestCmd)
	registerPlugin(newPluginSignCmd)
}

// passwordEnv holds the password of an encrypted cosign key, the variable
// cosign itself reads.
const passwordEnv = "COSIGN_PASSWORD"

func newPluginKeygenCmd() *cobra.Command {
	var ecdsaKey bool
	c := &cobra.Command{
		Use:   "keygen NAME [--ecdsa]",
		Short: "make a signing key pair: NAME.key (0600) and NAME.pub",
		Long: "Writes a new Ed25519 key pair (ECDSA P-256 with --ecdsa): the private key NAME.key\n" +
			"(PKCS#8 PEM, mode 0600, for `airlock plugin sign --key`) and the public key NAME.pub\n" +
			"(for a trust policy). Neither file may exist. Prints the key's fingerprint.",
		Example: "  airlock plugin keygen ~/keys/plugins",
		Args:    exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			priv, pub, fp, err := signing.NewKeyPair(ecdsaKey)
			if err != nil {
				return err
			}
			for _, f := range []struct {
				name string
				data []byte
				mode os.FileMode
			}{{args[0] + ".key", priv, 0o600}, {args[0] + ".pub", pub, 0o644}} {
				file, err := os.OpenFile(f.name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.mode)
				if err != nil {
					return configErr(err)
				}
				_, err = file.Write(f.data)
				if err = errors.Join(err, file.Close()); err != nil {
					return err
				}
			}
			fmt.Fprintln(cmd.OutOrStdout(), fp)
			return nil
		},
	}
	c.Flags().BoolVar(&ecdsaKey, "ecdsa", false, "make an ECDSA P-256 key (cosign's kind) instead of Ed25519")
	return c
}

func newPluginDigestCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "digest DIR",
		Short: "print the payload a signature of the plugin folder DIR signs (to sign it with cosign)",
		Long: "Prints exactly the bytes a signature of the plugin folder DIR signs: its plugin.json as\n" +
			"canonical JSON (keys sorted, no white space, \"$schema\" left out), after checking that the\n" +
			"module matches its sha256. Exit 3 when a broker would refuse the folder.",
		Example: "  airlock plugin digest notes > payload\n" +
			"  cosign sign-blob --key cosign.key --new-bundle-format --bundle notes/" + signing.BundleName + " --tlog-upload=false --yes payload",
		Args: exactArgs("DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkPath("", args[0], folder); err != nil {
				return err
			}
			_, payload, err := plugins.FolderPayload(args[0])
			if err != nil {
				return refusedErr(err)
			}
			_, err = cmd.OutOrStdout().Write(payload)
			return err
		},
	}
}

func newPluginSignCmd() *cobra.Command {
	var keyFile string
	c := &cobra.Command{
		Use:   "sign DIR --key KEY",
		Short: "sign the plugin folder DIR, writing " + signing.BundleName + " beside its plugin.json",
		Long: "Signs the payload of the plugin folder DIR (see `airlock plugin digest`) with the private\n" +
			"key KEY and writes the Sigstore bundle " + signing.BundleName + " beside plugin.json.\n" +
			"KEY is a PEM file of mode 0600: PKCS#8 ECDSA P-256 or Ed25519 (openssl genpkey), or a\n" +
			"cosign key (cosign generate-key-pair) with its password in " + passwordEnv + ".\n" +
			"Sign again after any change to plugin.json or the module.",
		Example: "  airlock plugin sign ~/.local/share/airlock/plugins/notes --key ~/keys/plugins.key",
		Args:    exactArgs("DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkPath("", args[0], folder); err != nil {
				return err
			}
			key, err := loadSigningKey(keyFile)
			if err != nil {
				return err
			}
			if _, err := plugins.SignFolder(args[0], key); err != nil {
				return refusedErr(err)
			}
			fp, _ := signing.Fingerprint(key.Public())
			fmt.Fprintf(cmd.ErrOrStderr(), "airlock plugin: signed %s with %s\n", args[0], fp)
			return nil
		},
	}
	c.Flags().StringVar(&keyFile, "key", "", "the private key `FILE` (PEM, mode 0600)")
	return c
}

// loadSigningKey loads the key of --key or --sign; a key that cannot be
// used is a usage error (exit 2).
func loadSigningKey(file string) (crypto.Signer, error) {
	if file == "" {
		return nil, usageErr("missing --key FILE (a PEM private key of mode 0600)")
	}
	key, err := signing.LoadKey(file, func() ([]byte, error) {
		for _, kv := range environ() {
			if v, ok := strings.CutPrefix(kv, passwordEnv+"="); ok {
				return []byte(v), nil
			}
		}
		return nil, fmt.Errorf("the key is encrypted; set %s", passwordEnv)
	})
	if err != nil {
		return nil, configErr(err)
	}
	return key, nil
}

// refusedErr makes a folder a broker would refuse exit 3, naming the
// reason.
func refusedErr(err error) error {
	if reason, ok := plugins.Refused(err); ok {
		return &exitError{code: exitRefused, msg: fmt.Sprintf("%s: %v", reason, err), err: err}
	}
	return err
}
