package e2e

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock/airlock/cmd/airlock/internal/exitcode"
	"github.com/airlock/airlock/executors/testkit"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
	"github.com/airlock/airlock/plugins/signing"
)

// End-to-end tests of signed plugins (plugins/OPERATING.md, "Signed
// plugins"): `airlock plugin digest` and `airlock plugin sign`, a trust
// policy enforced by serve and `airlock tools`, and bundles made and
// checked by the real cosign CLI.

// signingKey writes a fresh private key (PKCS#8 PEM, 0600) and its public
// key (PEM) into dir as name.key and name.pub, and returns the key's
// fingerprint.
func signingKey(t *testing.T, dir, name string, ed bool) (keyFile, pubFile, fp string) {
	t.Helper()
	var priv crypto.Signer
	var err error
	if ed {
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	} else {
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	must(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	must(t, err)
	pubDER, err := x509.MarshalPKIXPublicKey(priv.Public())
	must(t, err)
	keyFile, pubFile = filepath.Join(dir, name+".key"), filepath.Join(dir, name+".pub")
	must(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	must(t, os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644))
	fp, err = signing.Fingerprint(priv.Public())
	must(t, err)
	return keyFile, pubFile, fp
}

// writePolicy writes a trust policy trusting each public key file for
// its globs.
func writePolicy(t *testing.T, file string, trust map[string][]string) {
	t.Helper()
	type key struct {
		PublicKeyFile string   `json:"publicKeyFile"`
		Plugins       []string `json:"plugins"`
	}
	var doc struct {
		Keys []key `json:"keys"`
	}
	for pub, globs := range trust {
		doc.Keys = append(doc.Keys, key{pub, globs})
	}
	data, _ := json.MarshalIndent(doc, "", "  ")
	must(t, os.WriteFile(file, data, 0o644))
}

// TestSignedPluginsUnderTrustPolicy: with DATA/trust-policy.json, serve
// admits the plugin `airlock plugin sign` signed with a trusted key and
// shows its signer, refuses the unsigned one (signature-missing) and the
// one signed by another key (signer-not-trusted) in GET /v1/plugins and
// `airlock tools --broker`, and admits a dropped-in plugin once it is
// signed, without touching what it had admitted.
func TestSignedPluginsUnderTrustPolicy(t *testing.T) {
	t.Parallel()
	keys, data, dir := t.TempDir(), t.TempDir(), t.TempDir()
	keyFile, pubFile, fp := signingKey(t, keys, "trusted", false)
	otherKey, _, otherFP := signingKey(t, keys, "other", true)
	writePolicy(t, filepath.Join(data, signing.PolicyName), map[string][]string{pubFile: {"good", "late*"}})

	b := wire.Bounds{TimeoutMs: 60000, MemoryMiB: 32, MaxOutputBytes: 4096}
	guest := testkit.Fixture(t, "guest.wasm")
	for _, id := range []string{"good", "unsigned", "stranger"} {
		must(t, plugins.WriteFolder(dir, fxManifestOf(id, b, "echo"), guest))
	}
	code, payload, errOut := runCLI(t, nil, "plugin", "digest", filepath.Join(dir, "good"))
	var compact bytes.Buffer
	if code != 0 || json.Compact(&compact, []byte(payload)) != nil || compact.String() != payload || !strings.HasPrefix(payload, `{"bounds":`) {
		t.Fatalf("plugin digest: exit %d %q %s", code, payload, errOut)
	}
	if code, _, errOut := runCLI(t, nil, "plugin", "sign", filepath.Join(dir, "good"), "--key", keyFile); code != 0 || !strings.Contains(errOut, fp) {
		t.Fatalf("plugin sign: exit %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, nil, "plugin", "sign", filepath.Join(dir, "stranger"), "--key", otherKey); code != 0 {
		t.Fatalf("plugin sign with the other key: exit %d %s", code, errOut)
	}

	p := startServe(t, procOptions{Args: []string{"--plugins", dir, "--no-builtin", "--data", data}, Env: tokenEnv(), Secrets: []string{testToken}})
	st := pluginStatus(t, p)
	if s := st["good"]; !s.Admitted || s.Signer == nil || s.Signer.Key != fp || !s.Signer.Verified {
		t.Errorf("good: %+v, want admitted and signed by %s", s, fp)
	}
	if s := st["unsigned"]; s.Admitted || s.Reason != plugins.ReasonSignatureMissing || s.Signer != nil {
		t.Errorf("unsigned: %+v, want refused signature-missing", s)
	}
	if s := st["stranger"]; s.Admitted || s.Reason != plugins.ReasonSignerNotTrusted || !strings.Contains(s.Detail, otherFP) {
		t.Errorf("stranger: %+v, want refused signer-not-trusted naming %s", s, otherFP)
	}
	code, body, _ := p.do("GET", "/v1/tools", map[string]string{"X-Tensorviz-Token": testToken}, nil)
	if code != 200 || !strings.Contains(string(body), `"signer":{"key":"`+fp+`","verified":true}`) {
		t.Errorf("GET /v1/tools: %d %s, want the signer", code, body)
	}
	// An agent sees the signer in the tool's _meta.
	mc := connectHTTP(t, p, http.Header{"X-Tensorviz-Token": {testToken}})
	if echo := mc.List(t)["echo"]; echo == nil || fmt.Sprint(echo.Meta["airlock/signer"]) != fmt.Sprint(map[string]any{"key": fp, "verified": true}) {
		t.Errorf("MCP tools/list: echo %+v, want _meta airlock/signer naming %s", echo, fp)
	}
	code, out, _ := runCLI(t, tokenEnv(), "tools", "--broker", p.URL())
	if code != exitcode.Refused || !strings.Contains(out, "SIGNER") || !strings.Contains(out, fp) ||
		!strings.Contains(out, "signature-missing") || !strings.Contains(out, "signer-not-trusted") {
		t.Errorf("tools --broker: exit %d\n%s", code, out)
	}
	if !strings.Contains(p.Stderr(), `"reason":"signature-missing"`) {
		t.Errorf("the refusal is not logged")
	}

	// Hot reload: a plugin dropped in unsigned is refused, then admitted
	// once signed; a tampered plugin.json is signature-invalid. The
	// plugin admitted first is never re-admitted or retired.
	must(t, plugins.WriteFolder(dir, fxManifestOf("late", b, "echo"), guest))
	testkit.Eventually(t, "late to be refused", func() bool { return pluginStatus(t, p)["late"].Reason == plugins.ReasonSignatureMissing })
	if code, _, errOut := runCLI(t, nil, "plugin", "sign", filepath.Join(dir, "late"), "--key", keyFile); code != 0 {
		t.Fatalf("plugin sign late: exit %d %s", code, errOut)
	}
	testkit.Eventually(t, "late to be admitted once signed", func() bool { return pluginStatus(t, p)["late"].Admitted })
	manifest := filepath.Join(dir, "late", plugins.ManifestName)
	text, err := os.ReadFile(manifest)
	must(t, err)
	must(t, os.WriteFile(manifest, []byte(strings.Replace(string(text), `"1.0.0"`, `"6.6.6"`, 1)), 0o644))
	testkit.Eventually(t, "the tampered late to be refused", func() bool {
		return pluginStatus(t, p)["late"].Reason == plugins.ReasonSignatureInvalid
	})
	if s := pluginStatus(t, p)["good"]; !s.Admitted {
		t.Errorf("good after the reloads: %+v", s)
	}
	if n := strings.Count(p.Stderr(), `"msg":"plugin admitted","plugin":"good"`); n != 1 {
		t.Errorf("good admitted %d times, want once", n)
	}

	// SIGHUP re-reads the policy: one that cannot be used keeps the one
	// before; one trusting the other key for "stranger" admits it.
	policy := filepath.Join(data, signing.PolicyName)
	must(t, os.WriteFile(policy, []byte(`{"keys":[]}`), 0o644))
	must(t, p.cmd.Process.Signal(syscall.SIGHUP))
	p.waitStderr("trust policy not reloaded")
	writePolicy(t, policy, map[string][]string{pubFile: {"good", "late*"}, filepath.Join(keys, "other.pub"): {"stranger"}})
	must(t, p.cmd.Process.Signal(syscall.SIGHUP))
	testkit.Eventually(t, "stranger to be admitted after SIGHUP", func() bool {
		s := pluginStatus(t, p)["stranger"]
		return s.Admitted && s.Signer != nil && s.Signer.Key == otherFP
	})
	if s := pluginStatus(t, p)["good"]; !s.Admitted {
		t.Errorf("good after SIGHUP: %+v", s)
	}
}

// TestTrustPolicyRefusedAtStart: a trust policy that cannot be used is a
// start error (exit 2) naming the file, the place and the fix.
func TestTrustPolicyRefusedAtStart(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	bad := filepath.Join(t.TempDir(), "policy.json")
	must(t, os.WriteFile(bad, []byte("{\"keys\": [\n  {\"publicKeyFile\": \"k.pub\", \"plugin\": [\"*\"]}\n]}\n"), 0o644))
	code, _, errOut := runCLI(t, nil, "tools", "--plugins", dir, "--data", data, "--trust-policy", bad)
	if code != exitcode.Usage || !strings.Contains(errOut, bad+":2:") || !strings.Contains(errOut, `"plugins"`) {
		t.Errorf("tools with a bad policy: exit %d %s", code, errOut)
	}
	p := start(t, []string{"serve", "--listen", "127.0.0.1:0", "--plugins", dir, "--data", data, "--trust-policy", bad}, procOptions{})
	if code := p.Wait(60 * time.Second); code != exitcode.Usage || !strings.Contains(p.Stderr(), bad) {
		t.Errorf("serve with a bad policy: exit %d %s", code, p.Stderr())
	}
}

// cosignBinary is the cosign CLI that AIRLOCK_COSIGN names (.ci/run
// builds it), run without a network (`unshare -n`: cosign reaches for
// Sigstore's TUF root even when told to ignore the transparency log). The
// test skips without either, unless AIRLOCK_REQUIRE_COSIGN is set.
func cosignBinary(t *testing.T) func(env []string, args ...string) (string, error) {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("AIRLOCK_REQUIRE_COSIGN") != "" {
		skip = t.Fatalf
	}
	bin := os.Getenv("AIRLOCK_COSIGN")
	if bin == "" {
		skip("AIRLOCK_COSIGN does not name the cosign CLI (.ci/run builds it)")
		return nil
	}
	unshare, err := exec.LookPath("unshare")
	if err == nil {
		err = exec.Command(unshare, "-n", "true").Run()
	}
	if err != nil {
		skip("cannot run cosign without a network (unshare -n, which needs root): %v", err)
		return nil
	}
	home := t.TempDir()
	return func(env []string, args ...string) (string, error) {
		cmd := exec.Command(unshare, append([]string{"-n", bin}, args...)...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}

// TestCosignInterop: a bundle the real cosign CLI made with its own
// (encrypted, ECDSA P-256) key over `airlock plugin digest` is admitted
// by `airlock tools` under a policy trusting cosign.pub; signatures
// Airlock made, with that cosign key and with PKCS#8 ECDSA and Ed25519
// keys, verify with `cosign verify-blob`. (cosign cannot sign with an
// Ed25519 key; Ed25519 bundles are Airlock's.)
func TestCosignInterop(t *testing.T) {
	t.Parallel()
	cosign := cosignBinary(t)
	work, data, dir := t.TempDir(), t.TempDir(), t.TempDir()
	pw := []string{"COSIGN_PASSWORD=interop"}
	if out, err := cosign(append(pw, "COSIGN_YES=true"), "generate-key-pair", "--output-key-prefix", filepath.Join(work, "cosign")); err != nil {
		t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
	}
	cosignKey, cosignPub := filepath.Join(work, "cosign.key"), filepath.Join(work, "cosign.pub")
	plugin := filepath.Join(dir, "fx")
	must(t, plugins.WriteFolder(dir, fxManifestOf("fx", wire.Bounds{TimeoutMs: 60000, MemoryMiB: 32, MaxOutputBytes: 4096}, "echo"),
		testkit.Fixture(t, "guest.wasm")))
	code, payload, errOut := runCLI(t, nil, "plugin", "digest", plugin)
	if code != 0 {
		t.Fatalf("plugin digest: exit %d %s", code, errOut)
	}
	payloadFile := filepath.Join(work, "payload")
	must(t, os.WriteFile(payloadFile, []byte(payload), 0o644))
	bundle := filepath.Join(plugin, signing.BundleName)
	if out, err := cosign(pw, "sign-blob", "--key", cosignKey, "--new-bundle-format", "--bundle", bundle,
		"--tlog-upload=false", "--yes", payloadFile); err != nil {
		t.Fatalf("cosign sign-blob: %v\n%s", err, out)
	}
	policy := filepath.Join(work, "policy.json")
	writePolicy(t, policy, map[string][]string{cosignPub: {"*"}})
	code, out, errOut := runCLI(t, nil, "tools", "--plugins", dir, "--data", data, "--trust-policy", policy)
	if code != 0 || !strings.Contains(out, "SHA256:") {
		t.Fatalf("tools with cosign's bundle: exit %d\n%s%s", code, out, errOut)
	}

	// cosign verify-blob wants a trusted root for a bundle even when it
	// ignores the transparency log: an empty one, offline.
	root := filepath.Join(work, "trusted_root.json")
	must(t, os.WriteFile(root, []byte(`{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1"}`), 0o644))
	verify := func(name, pub string) {
		t.Helper()
		if out, err := cosign(nil, "verify-blob", "--key", pub, "--bundle", bundle, "--insecure-ignore-tlog=true",
			"--trusted-root", root, payloadFile); err != nil || !strings.Contains(out, "Verified OK") {
			t.Errorf("cosign verify-blob of Airlock's %s signature: %v\n%s", name, err, out)
		}
	}
	ecKey, ecPub, _ := signingKey(t, work, "ec", false)
	edKey, edPub, _ := signingKey(t, work, "ed", true)
	for _, k := range []struct{ name, key, pub string }{{"cosign-key", cosignKey, cosignPub}, {"ecdsa", ecKey, ecPub}, {"ed25519", edKey, edPub}} {
		if code, _, errOut := runCLI(t, pw, "plugin", "sign", plugin, "--key", k.key); code != 0 {
			t.Fatalf("plugin sign with the %s key: exit %d %s", k.name, code, errOut)
		}
		verify(k.name, k.pub)
	}
	writePolicy(t, policy, map[string][]string{edPub: {"fx"}})
	if code, out, errOut := runCLI(t, nil, "tools", "--plugins", dir, "--data", data, "--trust-policy", policy); code != 0 {
		t.Errorf("tools with Airlock's Ed25519 bundle: exit %d\n%s%s", code, out, errOut)
	}
}

// TestBuildSigns: `airlock build --sign KEY --install DIR` signs the
// project and installs the signature with the plugin, which a policy
// trusting the key then admits; a key others can read is exit 2, before
// anything is built.
func TestBuildSigns(t *testing.T) {
	t.Parallel()
	project := scaffold(t, nil)
	keys, plugDir, data := t.TempDir(), t.TempDir(), t.TempDir()
	keyFile, pubFile, fp := signingKey(t, keys, "build", true)
	must(t, os.Chmod(keyFile, 0o644))
	if code, _, errOut := runCLI(t, nil, "build", project, "--sign", keyFile); code != exitcode.Usage || !strings.Contains(errOut, "chmod 600") {
		t.Errorf("build --sign with a key others can read: exit %d %s", code, errOut)
	}
	must(t, os.Chmod(keyFile, 0o600))
	code, out, errOut := runCLIWithin(t, 10*time.Minute, nil, "build", project, "--sign", keyFile, "--install", plugDir)
	if code != 0 || !strings.Contains(out, "signed with "+fp) {
		t.Fatalf("build --sign --install: exit %d\n%s%s", code, out, errOut)
	}
	for _, f := range []string{filepath.Join(project, signing.BundleName), filepath.Join(plugDir, "greet", signing.BundleName)} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("no signature: %v", err)
		}
	}
	policy := filepath.Join(t.TempDir(), "policy.json")
	writePolicy(t, policy, map[string][]string{pubFile: {"greet"}})
	code, out, errOut = runCLIWithin(t, 10*time.Minute, nil, "tools", "--plugins", plugDir, "--data", data, "--trust-policy", policy)
	if code != 0 || !strings.Contains(out, fp) {
		t.Errorf("tools on the installed plugin: exit %d\n%s%s", code, out, errOut)
	}
}

// TestPluginKeygen: `airlock plugin keygen NAME` writes NAME.key (0600)
// and NAME.pub and prints the fingerprint; the key signs a plugin a policy
// of NAME.pub admits; an existing NAME is exit 2.
func TestPluginKeygen(t *testing.T) {
	t.Parallel()
	keys, dir, data := t.TempDir(), t.TempDir(), t.TempDir()
	name := filepath.Join(keys, "plugins")
	for _, args := range [][]string{{"plugin", "keygen", name}, {"plugin", "keygen", name + "-ec", "--ecdsa"}} {
		code, out, errOut := runCLI(t, nil, args...)
		if code != 0 || !strings.HasPrefix(out, "SHA256:") {
			t.Fatalf("%v: exit %d %s %s", args, code, out, errOut)
		}
	}
	if info, err := os.Stat(name + ".key"); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the private key: %v %v", info.Mode(), err)
	}
	if code, _, errOut := runCLI(t, nil, "plugin", "keygen", name); code != exitcode.Usage || !strings.Contains(errOut, "exists") {
		t.Errorf("keygen over an existing key: exit %d %s", code, errOut)
	}
	must(t, plugins.WriteFolder(dir, fxManifestOf("fx", wire.Bounds{TimeoutMs: 60000, MemoryMiB: 32, MaxOutputBytes: 4096}, "echo"),
		testkit.Fixture(t, "guest.wasm")))
	if code, _, errOut := runCLI(t, nil, "plugin", "sign", filepath.Join(dir, "fx"), "--key", name+".key"); code != 0 {
		t.Fatalf("sign: exit %d %s", code, errOut)
	}
	policy := filepath.Join(keys, "policy.json")
	writePolicy(t, policy, map[string][]string{name + ".pub": {"fx"}})
	if code, out, errOut := runCLI(t, nil, "tools", "--plugins", dir, "--data", data, "--trust-policy", policy); code != 0 || !strings.Contains(out, "SHA256:") {
		t.Errorf("tools: exit %d\n%s%s", code, out, errOut)
	}
}
