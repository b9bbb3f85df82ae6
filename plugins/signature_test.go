package plugins_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/plugins"
	"github.com/airlock/airlock/plugins/signing"
)

// payloadSeed is a plugin.json with every kind of field.
const payloadSeed = `{"$schema":"https://example.invalid/plugin.schema.json","id":"notes","version":"1.0.0","module":"notes.wasm",
 "sha256":"0000000000000000000000000000000000000000000000000000000000000000",
 "tools":[{"name":"read_notes","description":"Read <one> & note","inputSchema":{"type":"object","properties":{"path":{"type":"string","maxLength":1.0e3}},"required":["path"]}}],
 "bounds":{"timeoutMs":2000,"memoryMiB":64,"maxOutputBytes":1048576,"maxRequests":0,"allowedHosts":["example.com"],"roots":["notes"]},
 "config":["api_key"]}`

// FuzzPayload: the payload is a fixed point (the payload of the payload,
// parsed, is itself), and neither key order nor white space in plugin.json
// changes it.
func FuzzPayload(f *testing.F) {
	f.Add([]byte(payloadSeed))
	f.Add([]byte(`{"id":"a","version":"1","module":"a.wasm","sha256":"` + string(bytes.Repeat([]byte("a"), 64)) + `","tools":[{"name":"t","description":"","inputSchema":{}}],"bounds":{"timeoutMs":1,"memoryMiB":1,"maxOutputBytes":1,"maxRequests":0,"allowedHosts":null,"roots":[]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := plugins.ParseManifest(data)
		if err != nil {
			return
		}
		payload, err := m.Payload()
		if err != nil {
			return // a number JSON cannot hold in a float64
		}
		again, err := plugins.ParseManifest(payload)
		if err != nil {
			t.Fatalf("the payload %s does not parse: %v", payload, err)
		}
		if p2, err := again.Payload(); err != nil || !bytes.Equal(p2, payload) {
			t.Fatalf("payload of the payload:\n%s\n%s", p2, payload)
		}
		// Another layout: keys sorted differently (encoding/json sorts
		// map keys), indented, HTML escaped.
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		other, _ := json.MarshalIndent(v, "\t", "   ")
		m2, err := plugins.ParseManifest(other)
		if err != nil {
			return // a value encoding/json alone reads differently
		}
		if p3, err := m2.Payload(); err != nil || !bytes.Equal(p3, payload) {
			t.Fatalf("a relaid plugin.json changed the payload:\n%s\n%s", p3, payload)
		}
	})
}

func TestPayloadIgnoresLayout(t *testing.T) {
	m, err := plugins.ParseManifest([]byte(payloadSeed))
	if err != nil {
		t.Fatal(err)
	}
	p1, _ := m.Payload()
	relaid := `{"bounds":{"roots":["notes"],"allowedHosts":["example.com"],"maxRequests":0,"maxOutputBytes":1048576,"memoryMiB":64,"timeoutMs":2000},
	  "config":["api_key"], "tools":[{"inputSchema":{"required":["path"],"properties":{"path":{"maxLength":1000,"type":"string"}},"type":"object"},"description":"Read <one> & note","name":"read_notes"}],
	  "sha256":"0000000000000000000000000000000000000000000000000000000000000000","module":"notes.wasm","version":"1.0.0","id":"notes"}`
	m2, err := plugins.ParseManifest([]byte(relaid))
	if err != nil {
		t.Fatal(err)
	}
	if p2, _ := m2.Payload(); !bytes.Equal(p1, p2) {
		t.Errorf("payloads differ:\n%s\n%s", p1, p2)
	}
	want := `{"bounds":{"allowedHosts":["example.com"],"maxOutputBytes":1048576,"maxRequests":0,"memoryMiB":64,"roots":["notes"],"timeoutMs":2000},"config":["api_key"],"id":"notes","module":"notes.wasm","sha256":"0000000000000000000000000000000000000000000000000000000000000000","tools":[{"description":"Read <one> & note","inputSchema":{"properties":{"path":{"maxLength":1000,"type":"string"}},"required":["path"],"type":"object"},"name":"read_notes"}],"version":"1.0.0"}`
	if string(p1) != want {
		t.Errorf("payload\n%s\nwant\n%s", p1, want)
	}
}

// trustedEnv is a catalog under a trust policy of one fresh key, trusted
// for ids matching glob, and that key's file.
func trustedEnv(t *testing.T, builtin fstest.MapFS, glob string) (*env, string) {
	t.Helper()
	e := newEnv(t, builtin, nil)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	keyFile := filepath.Join(t.TempDir(), "k.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	pub, _ := x509.MarshalPKIXPublicKey(key.Public())
	doc, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{
		"publicKey": string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})), "plugins": []string{glob}}}})
	p, err := signing.ParsePolicy("trust-policy.json", doc)
	if err != nil {
		t.Fatal(err)
	}
	e.cat.SetTrust(p)
	return e, keyFile
}

func signFolder(t *testing.T, dir, keyFile string) {
	t.Helper()
	key, err := signing.LoadKey(keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plugins.SignFolder(dir, key); err != nil {
		t.Fatal(err)
	}
}

// TestSignatureAtAdmission: under a policy, a signed plugin is admitted
// with its signer; a module changed after signing is still hash-mismatch
// (the signature binds the module through sha256); the bundled plugins
// are exempt; without a policy a signed plugin's signer is shown
// unverified.
func TestSignatureAtAdmission(t *testing.T) {
	guest := testkit.Fixture(t, "guest.wasm")
	builtinManifest, _ := json.Marshal(withSHA(guestManifest("bundled"), guest))
	builtin := fstest.MapFS{"bundled/plugin.json": {Data: builtinManifest}, "bundled/guest.wasm": {Data: guest}}
	e, keyFile := trustedEnv(t, builtin, "fx*")
	for _, id := range []string{"fx", "fx2"} {
		if err := plugins.WriteFolder(e.dir, guestManifest(id), guest); err != nil {
			t.Fatal(err)
		}
		signFolder(t, filepath.Join(e.dir, id), keyFile)
	}
	tampered := append(bytes.Clone(guest), 0) // a custom section's worth
	if err := os.WriteFile(filepath.Join(e.dir, "fx2", "guest.wasm"), tampered, 0o644); err != nil {
		t.Fatal(err)
	}
	e.cat.Scan(context.Background())
	if s := e.status(t, "fx"); !s.Admitted || s.Signer == nil || !s.Signer.Verified {
		t.Errorf("fx: %+v", s)
	}
	if p, ok := e.table.Get("fx"); !ok || p.Descriptor().Signer == nil {
		t.Errorf("fx's descriptor carries no signer")
	}
	if s := e.status(t, "fx2"); s.Admitted || s.Reason != plugins.ReasonHashMismatch {
		t.Errorf("fx2 with its module changed: %+v", s)
	}
	if s := e.status(t, "bundled"); !s.Admitted || s.Signer != nil {
		t.Errorf("the bundled plugin under a policy: %+v", s)
	}
	e.cat.SetTrust(nil)
	e.cat.Scan(context.Background())
	if s := e.status(t, "fx"); !s.Admitted || s.Signer == nil || s.Signer.Verified || s.Signer.Key == "" {
		t.Errorf("fx without a policy: %+v", s)
	}
}

// withSHA sets m's sha256 for module.
func withSHA(m plugins.Manifest, module []byte) plugins.Manifest {
	m.SHA256 = plugins.HashModule(module)
	return m
}
