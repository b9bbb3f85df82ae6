package signing

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/airlock/airlock/config/filecheck"
	"github.com/airlock/airlock/executors/wire"
)

// PolicyName is the trust policy's file in the data directory when the
// configuration names none.
const PolicyName = "trust-policy.json"

// maxPolicyBytes bounds a trust policy file.
const maxPolicyBytes = 1 << 20

// Policy is the operator's trust policy: the public keys that may sign
// plugins, each for the plugin ids its globs match. With a policy, every
// plugin of the plugins folder must be signed by a key trusted for its id.
type Policy struct {
	file   string
	digest string
	keys   []trustedKey
}

type trustedKey struct {
	fingerprint string
	plugins     []string
	verifier    signature.Verifier
}

// policyFile is the file as written:
//
//	{"keys":[{"publicKey":"-----BEGIN PUBLIC KEY-----\n…","plugins":["notes"]},
//	         {"publicKeyFile":"team.pub","plugins":["team-*"]}]}
type policyFile struct {
	Keys []policyKey `json:"keys"`
}

type policyKey struct {
	PublicKey     string   `json:"publicKey,omitempty"`
	PublicKeyFile string   `json:"publicKeyFile,omitempty"`
	Plugins       []string `json:"plugins"`
}

// File is the policy's file, as its messages name it.
func (p *Policy) File() string { return p.file }

// Digest identifies the policy's content (its file and every key file it
// names): a change makes every plugin be checked again.
func (p *Policy) Digest() string { return p.digest }

// ReadPolicy reads the trust policy at file. With optional set, a missing
// file is no policy (nil, nil): the default place in the data directory.
// Every other problem is an error naming the file, the place (line and
// column, or the key path) and the fix.
func ReadPolicy(file string, optional bool) (*Policy, error) {
	data, err := filecheck.ReadPath(file, maxPolicyBytes)
	if optional && errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	return ParsePolicy(file, data)
}

// ParsePolicy parses a trust policy's data; file names it in messages
// and is where a relative publicKeyFile is found from.
func ParsePolicy(file string, data []byte) (*Policy, error) {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrPolicy, file, fmt.Sprintf(format, a...))
	}
	var doc policyFile
	if err := wire.DecodeStrict(data, &doc); err != nil {
		var d *wire.DecodeError
		if errors.As(err, &d) {
			line, col := wire.LineCol(data, d.Offset)
			return nil, fmt.Errorf("%w: %s:%d:%d: %w", ErrPolicy, file, line, col, err)
		}
		return nil, fail("%v (want {\"keys\":[{\"publicKey\":\"PEM\" or \"publicKeyFile\":\"PATH\",\"plugins\":[\"ID or GLOB\"]}]})", err)
	}
	if len(doc.Keys) == 0 {
		return nil, fail(`keys: no key; list at least one {"publicKeyFile":"PATH","plugins":["*"]} (or remove the file to admit unsigned plugins)`)
	}
	h := sha256.New()
	h.Write(data)
	p := &Policy{file: file}
	seen := map[string]string{}
	for i, k := range doc.Keys {
		at := fmt.Sprintf("keys[%d]", i)
		pemData := []byte(k.PublicKey)
		switch {
		case k.PublicKey != "" && k.PublicKeyFile != "":
			return nil, fail("%s: both publicKey and publicKeyFile; keep one", at)
		case k.PublicKeyFile != "":
			name := k.PublicKeyFile
			if !filepath.IsAbs(name) {
				name = filepath.Join(filepath.Dir(file), name)
			}
			var err error
			if pemData, err = filecheck.ReadPath(name, maxKeyBytes); err != nil {
				return nil, fail("%s.publicKeyFile: %v", at, err)
			}
			h.Write(pemData)
		case k.PublicKey == "":
			return nil, fail(`%s: no key; add "publicKey" (the PEM text) or "publicKeyFile" (a path, relative to this file)`, at)
		}
		pub, err := cryptoutils.UnmarshalPEMToPublicKey(pemData)
		if err != nil {
			return nil, fail("%s: not a PEM public key (%v); give the \"-----BEGIN PUBLIC KEY-----\" text, e.g. cosign.pub", at, err)
		}
		v, err := loadVerifier(pub)
		if err != nil {
			return nil, fail("%s: %v", at, err)
		}
		fp, _ := Fingerprint(pub)
		if prev, dup := seen[fp]; dup {
			return nil, fail("%s: the same key as %s (%s); merge their plugins", at, prev, fp)
		}
		seen[fp] = at
		if len(k.Plugins) == 0 {
			return nil, fail(`%s.plugins: empty; list the plugin ids or globs it may sign, e.g. ["notes","team-*"] or ["*"]`, at)
		}
		for j, g := range k.Plugins {
			if _, err := path.Match(g, ""); err != nil || g == "" {
				return nil, fail("%s.plugins[%d]: %q is not a glob (path.Match: * ? [a-z] and \\ to escape)", at, j, g)
			}
		}
		p.keys = append(p.keys, trustedKey{fingerprint: fp, plugins: k.Plugins, verifier: v})
	}
	p.digest = hex.EncodeToString(h.Sum(nil))
	return p, nil
}
