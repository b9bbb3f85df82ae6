package signing

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

func newKey(t *testing.T, ed bool) crypto.Signer {
	t.Helper()
	if ed {
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func pubPEM(t *testing.T, k crypto.Signer) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// trust is one key of a policy and the ids it may sign.
type trust struct {
	key   crypto.Signer
	globs []string
}

// policyOf is a policy trusting each key for its globs.
func policyOf(t *testing.T, keys ...trust) *Policy {
	t.Helper()
	var doc policyFile
	for _, k := range keys {
		doc.Keys = append(doc.Keys, policyKey{PublicKey: pubPEM(t, k.key), Plugins: k.globs})
	}
	data, _ := json.Marshal(doc)
	p, err := ParsePolicy("trust-policy.json", data)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestVerify(t *testing.T) {
	for _, ed := range []bool{false, true} {
		name := map[bool]string{false: "ecdsa", true: "ed25519"}[ed]
		t.Run(name, func(t *testing.T) {
			key, other := newKey(t, ed), newKey(t, !ed)
			payload := []byte(`{"id":"notes","version":"1.0.0"}`)
			bundle, err := Sign(payload, key)
			if err != nil {
				t.Fatal(err)
			}
			fp, _ := Fingerprint(key.Public())
			trusted := policyOf(t, trust{key, []string{"no*"}}, trust{other, []string{"*"}})
			got, err := trusted.Verify("notes", payload, bundle)
			if err != nil || got != fp {
				t.Fatalf("Verify = %q, %v; want %q", got, err, fp)
			}
			if claimed, err := Claimed(bundle); err != nil || claimed != fp {
				t.Errorf("Claimed = %q, %v; want %q", claimed, err, fp)
			}
			for _, c := range []struct {
				name    string
				p       *Policy
				id      string
				payload []byte
				bundle  []byte
				want    error
			}{
				{"no signature", trusted, "notes", payload, nil, ErrMissing},
				{"tampered payload", trusted, "notes", []byte(`{"id":"notes","version":"6.6.6"}`), bundle, ErrInvalid},
				{"another plugin's signature", trusted, "notes", []byte(`{"id":"notes2"}`), bundle, ErrInvalid},
				{"not a bundle", trusted, "notes", payload, []byte(`{"mediaType":"nope"}`), ErrInvalid},
				{"unknown key", policyOf(t, trust{other, []string{"*"}}), "notes", payload, bundle, ErrNotTrusted},
				{"trusted for other ids", policyOf(t, trust{key, []string{"web", "team-*"}}), "notes", payload, bundle, ErrNotTrusted},
			} {
				if _, err := c.p.Verify(c.id, c.payload, c.bundle); !errors.Is(err, c.want) {
					t.Errorf("%s: %v, want %v", c.name, err, c.want)
				}
			}
		})
	}
}

func TestFingerprint(t *testing.T) {
	key := newKey(t, false)
	fp, err := Fingerprint(key.Public())
	if err != nil || !strings.HasPrefix(fp, "SHA256:") || len(fp) != len("SHA256:")+43 || strings.HasSuffix(fp, "=") {
		t.Errorf("Fingerprint = %q, %v", fp, err)
	}
	h, _ := hint(key.Public())
	if hintFingerprint(h) != fp {
		t.Errorf("a bundle's hint %q is not the fingerprint %q", h, fp)
	}
}

func TestParsePolicyErrors(t *testing.T) {
	key := newKey(t, false)
	pub, _ := json.Marshal(pubPEM(t, key))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "k.pub"), []byte(pubPEM(t, key)), 0o644); err != nil {
		t.Fatal(err)
	}
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	rsaPub, _ := json.Marshal(pubPEM(t, rsaKey))
	file := filepath.Join(dir, "trust-policy.json")
	for _, c := range []struct{ name, data, want string }{
		{"not JSON", `{"keys":[`, "trust-policy.json:1:"},
		{"unknown key", "{\"keys\":[{\"publicKey\":" + string(pub) + ",\n \"plugin\":[\"*\"]}]}", `trust-policy.json:2:2: keys[0]: unknown key "plugin"; did you mean "plugins"?`},
		{"no keys", `{"keys":[]}`, "keys: no key"},
		{"no key material", `{"keys":[{"plugins":["*"]}]}`, `keys[0]: no key; add "publicKey"`},
		{"both", `{"keys":[{"publicKey":` + string(pub) + `,"publicKeyFile":"k.pub","plugins":["*"]}]}`, "keys[0]: both publicKey and publicKeyFile"},
		{"missing file", `{"keys":[{"publicKeyFile":"nope.pub","plugins":["*"]}]}`, "keys[0].publicKeyFile:"},
		{"not PEM", `{"keys":[{"publicKey":"hello","plugins":["*"]}]}`, "keys[0]: not a PEM public key"},
		{"RSA", `{"keys":[{"publicKey":` + string(rsaPub) + `,"plugins":["*"]}]}`, "only ECDSA P-256 and Ed25519"},
		{"no globs", `{"keys":[{"publicKey":` + string(pub) + `,"plugins":[]}]}`, "keys[0].plugins: empty"},
		{"bad glob", `{"keys":[{"publicKey":` + string(pub) + `,"plugins":["ok","[a-"]}]}`, `keys[0].plugins[1]: "[a-" is not a glob`},
		{"duplicate", `{"keys":[{"publicKey":` + string(pub) + `,"plugins":["a"]},{"publicKeyFile":"k.pub","plugins":["b"]}]}`, "keys[1]: the same key as keys[0]"},
	} {
		_, err := ParsePolicy(file, []byte(c.data))
		if !errors.Is(err, ErrPolicy) || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	p, err := ParsePolicy(file, []byte(`{"keys":[{"publicKeyFile":"k.pub","plugins":["*"]}]}`))
	if err != nil || len(p.keys) != 1 {
		t.Fatalf("a key file relative to the policy: %v", err)
	}
	if p, err := ReadPolicy(filepath.Join(dir, "absent.json"), true); p != nil || err != nil {
		t.Errorf("an absent optional policy: %v %v", p, err)
	}
	if _, err := ReadPolicy(filepath.Join(dir, "absent.json"), false); !errors.Is(err, ErrPolicy) {
		t.Errorf("an absent named policy: %v", err)
	}
}

func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	for _, ed := range []bool{false, true} {
		key := newKey(t, ed)
		der, _ := x509.MarshalPKCS8PrivateKey(key)
		file := filepath.Join(dir, "k.pem")
		os.Remove(file)
		if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadKey(file, nil); !errors.Is(err, ErrKey) {
			t.Errorf("a key readable by others: %v", err)
		}
		if err := os.Chmod(file, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := LoadKey(file, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := Fingerprint(key.Public())
		if fp, _ := Fingerprint(got.Public()); fp != want {
			t.Errorf("loaded %s, want %s", fp, want)
		}
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(p384)
	file := filepath.Join(dir, "p384.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKey(file, nil); !errors.Is(err, ErrKey) || !strings.Contains(err.Error(), "P-256") {
		t.Errorf("a P-384 key: %v", err)
	}
}

// TestLoadCosignKey: a key in cosign's encrypted format is read with the
// password given, and refused without it.
func TestLoadCosignKey(t *testing.T) {
	key := newKey(t, false)
	der, err := cryptoutils.MarshalPrivateKeyToEncryptedDER(key, func(bool) ([]byte, error) { return []byte("pw"), nil })
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "cosign.key")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: string(cryptoutils.EncryptedSigstorePrivateKeyPEMType), Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := LoadKey(file, func() ([]byte, error) { return []byte("pw"), nil })
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustFingerprint(t, got.Public()), mustFingerprint(t, key.Public()); a != b {
		t.Errorf("loaded %s, want %s", a, b)
	}
	if _, err := LoadKey(file, nil); !errors.Is(err, ErrKey) || !strings.Contains(err.Error(), "COSIGN_PASSWORD") {
		t.Errorf("an encrypted key without a password: %v", err)
	}
	if _, err := LoadKey(file, func() ([]byte, error) { return []byte("wrong"), nil }); !errors.Is(err, ErrKey) {
		t.Errorf("an encrypted key with the wrong password: %v", err)
	}
}

func mustFingerprint(t *testing.T, pub crypto.PublicKey) string {
	t.Helper()
	fp, err := Fingerprint(pub)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

// TestNewKeyPair: both kinds of key pair load and sign, and the policy of
// the public key verifies the signature as the fingerprint returned.
func TestNewKeyPair(t *testing.T) {
	for _, ec := range []bool{false, true} {
		priv, pub, fp, err := NewKeyPair(ec)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "k.key")
		if err := os.WriteFile(file, priv, 0o600); err != nil {
			t.Fatal(err)
		}
		key, err := LoadKey(file, nil)
		if err != nil {
			t.Fatal(err)
		}
		bundle, err := Sign([]byte("payload"), key)
		if err != nil {
			t.Fatal(err)
		}
		doc, _ := json.Marshal(policyFile{Keys: []policyKey{{PublicKey: string(pub), Plugins: []string{"*"}}}})
		p, err := ParsePolicy("p.json", doc)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := p.Verify("x", []byte("payload"), bundle); err != nil || got != fp {
			t.Errorf("ecdsa=%v: %q %v, want %q", ec, got, err, fp)
		}
	}
}
