// Package plugins is the plugin folder format and the catalog that admits
// plugins into the executors: it scans the plugins folder (and the bundled
// plugins), watches it, and admits, re-admits or retires each plugin without
// a restart.
//
// A plugin is a folder <plugins dir>/<id>/ holding plugin.json and the
// module it names:
//
//	{"id":"notes","version":"1.0.0","module":"notes.wasm","sha256":"<hex>",
//	 "tools":[{"name":"read_notes","description":"…","inputSchema":{…}}],
//	 "bounds":{"timeoutMs":2000,"memoryMiB":64,"maxOutputBytes":1048576,
//	           "maxRequests":0,"allowedHosts":[],"roots":["notes"]}}
package plugins

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"

	"github.com/airlock/airlock/config/plugincfg"
	"github.com/airlock/airlock/executors/wire"
)

// ManifestName is the descriptor file in every plugin folder.
const ManifestName = "plugin.json"

// MaxManifestBytes bounds plugin.json (PROTOCOL section 8.1); a
// descriptor is small. Every reader of one reads it with filecheck.
const MaxManifestBytes = 1 << 20

// MaxModuleBytes bounds a module file read into memory; a module pulled
// from a registry is held to it before it is downloaded.
const MaxModuleBytes = 256 << 20

// Manifest is plugin.json.
type Manifest struct {
	ID      string      `json:"id"`
	Version string      `json:"version"`
	Module  string      `json:"module"`
	SHA256  string      `json:"sha256"`
	Tools   []wire.Tool `json:"tools"`
	Bounds  wire.Bounds `json:"bounds"`
	// Config names the operator's values (plugin_config.<id>.<name>) the
	// module may read with config_get; it reads no other (PROTOCOL
	// section 8.4). Names stay in the plugin: they are not part of the
	// wire descriptor.
	Config []string `json:"config,omitempty"`
}

// document is plugin.json as written: the manifest and "$schema", which
// points an editor at the JSON Schema of plugin.json for completion and
// which the broker ignores (PROTOCOL section 8.1). It is still a key like
// the others: spelled exactly, a string, and a duplicate of it (case-folded
// or not) is refused.
type document struct {
	Manifest
	Schema string `json:"$schema"`
}

var (
	versionPattern = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+-]{0,63}$`)
	modulePattern  = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\.wasm$`)
	sha256Pattern  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// ParseManifest reads plugin.json strictly (unknown or duplicate keys
// refused, "$schema" allowed and ignored) and checks every field.
func ParseManifest(data []byte) (Manifest, error) {
	if len(data) > MaxManifestBytes {
		return Manifest{}, fmt.Errorf("%s is over %d bytes", ManifestName, MaxManifestBytes)
	}
	var doc document
	if err := wire.DecodeStrict(data, &doc); err != nil {
		return Manifest{}, err
	}
	m := doc.Manifest
	if !versionPattern.MatchString(m.Version) {
		return m, fmt.Errorf("version must match %s", versionPattern)
	}
	if !modulePattern.MatchString(m.Module) {
		return m, fmt.Errorf("module must be a file name ending in .wasm, matching %s", modulePattern)
	}
	if !sha256Pattern.MatchString(m.SHA256) {
		return m, fmt.Errorf("sha256 must be 64 lower-case hex digits")
	}
	d := m.Descriptor()
	if err := d.Validate(); err != nil {
		return m, err
	}
	if err := plugincfg.CheckNames(m.Config); err != nil {
		return m, fmt.Errorf("config: %w", err)
	}
	return m, nil
}

// ParseManifestFile is ParseManifest for the plugin.json at name (as
// the operator knows it: "notes/plugin.json", "myplugin/plugin.json"):
// its error starts with name and, when the strict walk found the place,
// the line and column, so an editor can jump there:
//
//	notes/plugin.json:9:5: bounds: unknown key "timeoutMS"; did you mean "timeoutMs"? (keys are case-sensitive)
//
// The error still carries the wire rule (wire.RuleOf) under the text.
func ParseManifestFile(name string, data []byte) (Manifest, error) {
	m, err := ParseManifest(data)
	if err == nil {
		return m, nil
	}
	var d *wire.DecodeError
	if errors.As(err, &d) {
		line, col := wire.LineCol(data, d.Offset)
		return m, fmt.Errorf("%s:%d:%d: %w", name, line, col, err)
	}
	return m, fmt.Errorf("%s: %w", name, err)
}

// Descriptor is the wire form of the manifest: what callers see and echo.
func (m Manifest) Descriptor() wire.Descriptor {
	return wire.Descriptor{DescriptorID: m.ID, Tools: m.Tools, Bounds: m.Bounds}
}

// Payload is what a plugin's signature signs: the manifest in canonical
// JSON (wire.Canonical: keys sorted, no insignificant white space), so
// that it binds every field and, through sha256, the module, whatever the
// key order or layout of plugin.json. "$schema" is not part of it (the
// broker ignores it). It is the one definition of the payload: `airlock
// plugin digest` prints it, `airlock plugin sign` signs it, the catalog
// verifies it.
func (m Manifest) Payload() ([]byte, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return wire.Canonical(data)
}

// HashModule is the hex SHA-256 a manifest's sha256 must equal.
func HashModule(module []byte) string {
	sum := sha256.Sum256(module)
	return hex.EncodeToString(sum[:])
}

// SetSHA256 returns data, the text of a plugin.json, with the value of
// its top-level "sha256" member replaced by sum and every other byte as it
// was, so a rebuild rewrites one value and leaves the author's key order
// and layout alone. data must be one JSON object with exactly one
// top-level "sha256" member; sum is what HashModule returned.
func SetSHA256(data []byte, sum string) ([]byte, error) {
	start, end, err := sha256Span(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ManifestName, err)
	}
	quoted, _ := json.Marshal(sum)
	out := make([]byte, 0, len(data)-(end-start)+len(quoted))
	out = append(append(append(out, data[:start]...), quoted...), data[end:]...)
	return out, nil
}

// sha256Span finds the bytes of the top-level "sha256" member's value.
func sha256Span(data []byte) (start, end int, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return 0, 0, errors.New("not a JSON object")
	}
	start = -1
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return 0, 0, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return 0, 0, err
		}
		if key != "sha256" {
			continue
		}
		if start >= 0 {
			return 0, 0, errors.New(`"sha256" appears twice`)
		}
		end = int(dec.InputOffset())
		start = end - len(v)
		if start < 0 || !bytes.Equal(data[start:end], v) {
			return 0, 0, errors.New(`cannot locate the "sha256" value`)
		}
	}
	if _, err := dec.Token(); err != nil {
		return 0, 0, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return 0, 0, errors.New("data after the object")
	}
	if start < 0 {
		return 0, 0, errors.New(`no top-level "sha256" member (add "sha256": "")`)
	}
	return start, end, nil
}
