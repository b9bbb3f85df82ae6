package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/airlock/airlock/cmd/airlock/internal/exitcode"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins/distribute"
)

// The plugin distribution commands against a real registry:
// `airlock plugin push DIR REF` and `airlock plugin pull REF --install DIR`.

// webPlugin copies the bundled web plugin (admissible with no roots) into
// a folder of its own and returns it.
func webPlugin(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "..", "..", "plugins", "bundled", "web")
	dir := filepath.Join(t.TempDir(), "web")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"plugin.json", "web.wasm"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// registryEnv is a private, empty Docker credentials folder, so that the
// machine's own ~/.docker is never read.
func registryEnv(t *testing.T) []string {
	return []string{"DOCKER_CONFIG=" + t.TempDir()}
}

// snapshot is every file under dir with its content's hash, to show a
// refused pull left a plugins folder exactly as it was.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		line := rel + " " + d.Type().String()
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			line += " " + hex.EncodeToString(sum[:])
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// toolsStatus runs `airlock tools --plugins dir --json` and returns the
// status of plugin id.
func toolsStatus(t *testing.T, dir, id string) wire.PluginStatus {
	t.Helper()
	code, out, errOut := runCLI(t, nil, "tools", "--plugins", dir, "--json")
	if code != exitcode.OK {
		t.Fatalf("tools --plugins: exit %d\n%s\n%s", code, out, errOut)
	}
	var got struct{ Plugins []wire.PluginStatus }
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("tools --json: %v\n%s", err, out)
	}
	for _, s := range got.Plugins {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("tools --plugins: no plugin %s in %s", id, out)
	return wire.PluginStatus{}
}

// TestPluginPushPull: a plugin folder pushed to a registry and pulled into
// an empty plugins folder is admitted there, and shows where it came from;
// a second pull replaces it.
func TestPluginPushPull(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t, false)
	env := registryEnv(t)
	ref := reg.Host + "/plugins/web:1.0.0"
	code, out, errOut := runCLI(t, env, "plugin", "push", webPlugin(t), ref, "--plain-http")
	if code != exitcode.OK {
		t.Fatalf("push: exit %d\n%s\n%s", code, out, errOut)
	}
	digest := strings.TrimSpace(out)
	if !strings.HasPrefix(digest, "sha256:") || len(digest) != 71 {
		t.Fatalf("push printed %q, want the artifact's digest", out)
	}
	for _, f := range []string{"plugin.json", "web.wasm"} {
		if !strings.Contains(errOut, "pushing "+f) {
			t.Errorf("push's progress does not name %s:\n%s", f, errOut)
		}
	}

	plugins := t.TempDir()
	code, out, errOut = runCLI(t, env, "plugin", "pull", ref, "--install", plugins, "--plain-http")
	if code != exitcode.OK {
		t.Fatalf("pull: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "installed web 1.0.0") || !strings.Contains(out, digest) {
		t.Errorf("pull said %q", out)
	}
	for _, f := range []string{"plugin.json", "web.wasm"} {
		if !strings.Contains(errOut, "pulling "+f) {
			t.Errorf("pull's progress does not name %s:\n%s", f, errOut)
		}
	}
	ents, _ := os.ReadDir(plugins)
	if len(ents) != 1 || ents[0].Name() != "web" {
		t.Fatalf("the plugins folder holds %v, want web alone", ents)
	}
	s := toolsStatus(t, plugins, "web")
	if !s.Admitted {
		t.Fatalf("the pulled plugin is refused: %s %s", s.Reason, s.Detail)
	}
	if s.Source == nil || s.Source.Ref != ref || s.Source.Digest != digest {
		t.Errorf("source = %+v, want ref %s digest %s", s.Source, ref, digest)
	}

	code, out, _ = runCLI(t, nil, "tools", "--plugins", plugins)
	if code != exitcode.OK || !strings.Contains(out, "PULLED") || !strings.Contains(out, ref) {
		t.Errorf("tools does not show where web came from:\n%s", out)
	}
	p := startServe(t, procOptions{Args: []string{"--plugins", plugins, "--no-builtin"}, Env: tokenEnv(), Secrets: []string{testToken}})
	if s := pluginStatus(t, p)["web"]; !s.Admitted || s.Source == nil || s.Source.Digest != digest {
		t.Errorf("GET /v1/plugins: %+v", s)
	}
	// GET /v1/tools and an agent's tools/list name the source too.
	if code, body, _ := p.do("GET", "/v1/tools", map[string]string{"X-Tensorviz-Token": testToken}, nil); code != 200 ||
		!strings.Contains(string(body), `"source":{"ref":"`+ref+`","digest":"`+digest+`"`) {
		t.Errorf("GET /v1/tools: %d %s, want web's source", code, body)
	}
	mc := connectHTTP(t, p, http.Header{"X-Tensorviz-Token": {testToken}})
	if fetch := mc.List(t)["fetch_url"]; fetch == nil || !strings.Contains(fmt.Sprint(fetch.Meta["airlock/source"]), digest) {
		t.Errorf("MCP tools/list: fetch_url %+v, want _meta airlock/source naming %s", fetch, digest)
	}
	mc.Close()
	p.Stop()

	code, out, errOut = runCLI(t, env, "plugin", "pull", reg.Host+"/plugins/web@"+digest, "--install", plugins, "--plain-http")
	if code != exitcode.OK || !strings.Contains(out, "replaced web 1.0.0") {
		t.Fatalf("pull by digest over the installed one: exit %d\n%s\n%s", code, out, errOut)
	}

	// A folder dropped in by hand has no source.
	if err := os.Remove(filepath.Join(plugins, "web", "plugin.source.json")); err != nil {
		t.Fatal(err)
	}
	if s := toolsStatus(t, plugins, "web"); !s.Admitted || s.Source != nil {
		t.Errorf("without its record: admitted %v, source %+v", s.Admitted, s.Source)
	}
}

// TestPluginPushPullSignature: a signature file beside plugin.json travels
// as a layer (pull installs it) and is attached as a referrer of the
// artifact that registry tools can find.
func TestPluginPushPullSignature(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t, false)
	env := registryEnv(t)
	dir := webPlugin(t)
	bundle := []byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","note":"a stand-in bundle"}` + "\n")
	if err := os.WriteFile(filepath.Join(dir, "plugin.sigstore.json"), bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	ref := reg.Host + "/plugins/web:signed"
	code, out, errOut := runCLI(t, env, "plugin", "push", dir, ref, "--plain-http")
	if code != exitcode.OK {
		t.Fatalf("push: exit %d\n%s\n%s", code, out, errOut)
	}
	digest := strings.TrimSpace(out)

	repo := testRepo(t, reg, "plugins/web")
	var referrers []ocispec.Descriptor
	err := repo.Referrers(context.Background(), ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digestOf(t, digest)},
		distribute.SignatureMediaType, func(ds []ocispec.Descriptor) error {
			referrers = append(referrers, ds...)
			return nil
		})
	if err != nil || len(referrers) != 1 || referrers[0].ArtifactType != distribute.SignatureMediaType {
		t.Fatalf("referrers of %s: %v %+v", digest, err, referrers)
	}

	plugins := t.TempDir()
	code, out, errOut = runCLI(t, env, "plugin", "pull", ref, "--install", plugins, "--plain-http")
	if code != exitcode.OK || !strings.Contains(out, "with its signature") {
		t.Fatalf("pull: exit %d\n%s\n%s", code, out, errOut)
	}
	got, err := os.ReadFile(filepath.Join(plugins, "web", "plugin.sigstore.json"))
	if err != nil || !bytes.Equal(got, bundle) {
		t.Fatalf("installed signature: %v %q", err, got)
	}
	if s := toolsStatus(t, plugins, "web"); !s.Admitted {
		t.Fatalf("the signed plugin is refused: %s %s", s.Reason, s.Detail)
	}
}

// testRepo is an oras-go client of the test registry, for the test's own
// hand-made artifacts.
func testRepo(t *testing.T, reg *testRegistry, name string) *remote.Repository {
	t.Helper()
	repo, err := remote.NewRepository(reg.Host + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	return repo
}

func digestOf(t *testing.T, s string) digest.Digest {
	t.Helper()
	d, err := digest.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// handMade pushes an artifact the test composes (layers as given, with
// their own descriptors) and tags it.
func handMade(t *testing.T, repo *remote.Repository, tag, artifactType string, layers []ocispec.Descriptor, blobs [][]byte) {
	t.Helper()
	ctx := context.Background()
	for i, b := range blobs {
		d := content.NewDescriptorFromBytes(layers[i].MediaType, b)
		if err := repo.Push(ctx, d, bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
	}
	empty := ocispec.DescriptorEmptyJSON
	if err := repo.Push(ctx, empty, bytes.NewReader(empty.Data)); err != nil {
		t.Fatal(err)
	}
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: artifactType, Config: empty, Layers: layers}
	m.SchemaVersion = 2
	data, _ := json.Marshal(m)
	if _, err := oras.TagBytes(ctx, repo, ocispec.MediaTypeImageManifest, data, tag); err != nil {
		t.Fatal(err)
	}
}

// layer is the descriptor of b as a layer of mediaType.
func layer(mediaType string, b []byte) ocispec.Descriptor {
	return content.NewDescriptorFromBytes(mediaType, b)
}

// byteFlipper is a registry in front of the real one that serves every
// blob with its last byte changed (same length, same headers).
func byteFlipper(t *testing.T, reg *testRegistry) string {
	t.Helper()
	target, _ := url.Parse("http://" + reg.Host)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if !strings.Contains(resp.Request.URL.Path, "/blobs/") || resp.StatusCode != http.StatusOK {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if len(body) > 0 {
			body[len(body)-1] ^= 0xff
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// TestPluginPullRefusals: each bad artifact is refused by name, exit 3,
// with nothing written to the plugins folder and the installed plugin of
// the same id untouched.
func TestPluginPullRefusals(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t, false)
	env := registryEnv(t)
	good := reg.Host + "/plugins/web:1.0.0"
	if code, out, errOut := runCLI(t, env, "plugin", "push", webPlugin(t), good, "--plain-http"); code != exitcode.OK {
		t.Fatalf("push: exit %d\n%s\n%s", code, out, errOut)
	}
	plugins := t.TempDir()
	if code, out, errOut := runCLI(t, env, "plugin", "pull", good, "--install", plugins, "--plain-http"); code != exitcode.OK {
		t.Fatalf("pull: exit %d\n%s\n%s", code, out, errOut)
	}
	before := snapshot(t, plugins)

	web := webPlugin(t)
	manifest, _ := os.ReadFile(filepath.Join(web, "plugin.json"))
	module, _ := os.ReadFile(filepath.Join(web, "web.wasm"))
	repo := testRepo(t, reg, "plugins/bad")
	mLayer, wLayer := layer(distribute.ManifestMediaType, manifest), layer(distribute.ModuleMediaType, module)

	huge := wLayer
	huge.Size = 10 << 30
	handMade(t, repo, "huge", distribute.ArtifactType, []ocispec.Descriptor{mLayer, huge}, [][]byte{manifest, module})
	handMade(t, repo, "foreign", "application/vnd.example.thing.v1+json", []ocispec.Descriptor{mLayer, wLayer}, [][]byte{manifest, module})
	odd := []byte("#!/bin/sh\n")
	handMade(t, repo, "oddlayer", distribute.ArtifactType,
		[]ocispec.Descriptor{mLayer, wLayer, layer("application/x-shellscript", odd)}, [][]byte{manifest, module, odd})
	trick := bytes.Replace(manifest, []byte(`"id": "web"`), []byte(`"id": "../x"`), 1)
	handMade(t, repo, "trick", distribute.ArtifactType,
		[]ocispec.Descriptor{layer(distribute.ManifestMediaType, trick), wLayer}, [][]byte{trick, module})
	other := append([]byte{}, module...)
	other = append(other, 0) // a module plugin.json's sha256 does not name
	handMade(t, repo, "rehashed", distribute.ArtifactType,
		[]ocispec.Descriptor{mLayer, layer(distribute.ModuleMediaType, other)}, [][]byte{manifest, other})
	flipper := byteFlipper(t, reg)

	for _, c := range []struct {
		name, ref, reason string
		code              int
	}{
		{"wrong bytes", flipper + "/plugins/web:1.0.0", "digest-mismatch", exitcode.Refused},
		{"a 10 GB layer", reg.Host + "/plugins/bad:huge", "layer-too-large", exitcode.Refused},
		{"a foreign artifact", reg.Host + "/plugins/bad:foreign", "artifact-unknown-type", exitcode.Refused},
		{"an unknown layer", reg.Host + "/plugins/bad:oddlayer", "artifact-unknown-type", exitcode.Refused},
		{"an id that is a path", reg.Host + "/plugins/bad:trick", "plugin-invalid", exitcode.Refused},
		{"a module its hash does not name", reg.Host + "/plugins/bad:rehashed", "plugin-invalid", exitcode.Refused},
		{"no such artifact", reg.Host + "/plugins/none:1", "artifact-not-found", exitcode.Failed},
		{"a reference with a path", reg.Host + "/../../etc:1", "reference-invalid", exitcode.Usage},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, env, "plugin", "pull", c.ref, "--install", plugins, "--plain-http")
			if code != c.code || !strings.Contains(errOut, c.reason) {
				t.Errorf("exit %d, want %d naming %s\n%s\n%s", code, c.code, c.reason, out, errOut)
			}
			if after := snapshot(t, plugins); after != before {
				t.Errorf("the plugins folder changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(plugins), "x")); err == nil {
		t.Error("a folder x appeared beside the plugins folder")
	}
}

// TestPluginPullInstallConflict: a plugin's folder name taken by a link
// is not replaced.
func TestPluginPullInstallConflict(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t, false)
	env := registryEnv(t)
	ref := reg.Host + "/plugins/web:1.0.0"
	if code, out, errOut := runCLI(t, env, "plugin", "push", webPlugin(t), ref, "--plain-http"); code != exitcode.OK {
		t.Fatalf("push: exit %d\n%s\n%s", code, out, errOut)
	}
	plugins := t.TempDir()
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(plugins, "web")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, plugins)
	code, out, errOut := runCLI(t, env, "plugin", "pull", ref, "--install", plugins, "--plain-http")
	if code != exitcode.Refused || !strings.Contains(errOut, "install-conflict") {
		t.Errorf("exit %d, want 3 install-conflict\n%s\n%s", code, out, errOut)
	}
	if after := snapshot(t, plugins); after != before {
		t.Errorf("the plugins folder changed:\n%s\n%s", before, after)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("the link's target was written: %v", ents)
	}
}

// TestPluginPlainHTTPOnlyLoopback: --plain-http to a registry that is not
// on the loopback is refused before anything is dialled or looked up (the
// name does not resolve; the refusal is a usage error, not unreachable).
func TestPluginPlainHTTPOnlyLoopback(t *testing.T) {
	t.Parallel()
	env := registryEnv(t)
	plugins := t.TempDir()
	for _, args := range [][]string{
		{"plugin", "pull", "registry.example/plugins/web:1.0.0", "--install", plugins, "--plain-http"},
		{"plugin", "pull", "10.0.0.1:5000/plugins/web:1.0.0", "--install", plugins, "--plain-http"},
		{"plugin", "push", webPlugin(t), "registry.example/plugins/web:1.0.0", "--plain-http"},
	} {
		code, out, errOut := runCLIWithin(t, 30*time.Second, env, args...)
		if code != exitcode.Usage || !strings.Contains(errOut, "plain-http-refused") {
			t.Errorf("%v: exit %d, want 2 plain-http-refused\n%s\n%s", args, code, out, errOut)
		}
	}
	if ents, _ := os.ReadDir(plugins); len(ents) != 0 {
		t.Errorf("the plugins folder holds %v", ents)
	}
}

// TestPluginRegistryCredentials: against a registry with htpasswd auth,
// --username with --password-stdin works, as does the Docker credentials
// file; a wrong or missing password is unauthorized (exit 3); the
// password never appears in any output.
func TestPluginRegistryCredentials(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t, true)
	env := registryEnv(t)
	ref := reg.Host + "/plugins/web:1.0.0"
	check := func(what string, code, want int, out, errOut, reason string) {
		t.Helper()
		if code != want || !strings.Contains(errOut+out, reason) {
			t.Errorf("%s: exit %d, want %d %s\n%s\n%s", what, code, want, reason, out, errOut)
		}
		if strings.Contains(out+errOut, registryPassword) || strings.Contains(out+errOut, "wrong-"+registryPassword) {
			t.Errorf("%s: a password appears in the output", what)
		}
	}
	code, out, errOut := runCLIStdin(t, env, registryPassword+"\n",
		"plugin", "push", webPlugin(t), ref, "--plain-http", "--username", registryUser, "--password-stdin")
	check("push with the password", code, exitcode.OK, out, errOut, "sha256:")

	plugins := t.TempDir()
	code, out, errOut = runCLIStdin(t, env, "wrong-"+registryPassword+"\n",
		"plugin", "pull", ref, "--install", plugins, "--plain-http", "--username", registryUser, "--password-stdin")
	check("pull with a wrong password", code, exitcode.Refused, out, errOut, "unauthorized")
	code, out, errOut = runCLI(t, env, "plugin", "pull", ref, "--install", plugins, "--plain-http")
	check("pull with no credentials", code, exitcode.Refused, out, errOut, "unauthorized")
	if ents, _ := os.ReadDir(plugins); len(ents) != 0 {
		t.Fatalf("a refused pull left %v", ents)
	}
	code, out, errOut = runCLIStdin(t, env, registryPassword+"\n",
		"plugin", "pull", ref, "--install", plugins, "--plain-http", "--username", registryUser, "--password-stdin")
	check("pull with the password", code, exitcode.OK, out, errOut, "installed web")

	docker := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(registryUser + ":" + registryPassword))
	cfg := `{"auths":{"` + reg.Host + `":{"auth":"` + auth + `"}}}`
	if err := os.WriteFile(filepath.Join(docker, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, []string{"DOCKER_CONFIG=" + docker}, "plugin", "pull", ref, "--install", plugins, "--plain-http")
	check("pull with the Docker credentials file", code, exitcode.OK, out, errOut, "replaced web")
	if strings.Contains(out+errOut, auth) {
		t.Error("the Docker credential appears in the output")
	}
}
