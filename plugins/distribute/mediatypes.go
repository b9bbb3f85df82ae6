// Package distribute stores plugin folders in OCI registries and installs
// them from there: `airlock plugin push` and `airlock plugin pull`. A
// plugin is an OCI image manifest (v1.1) whose artifactType is
// ArtifactType and whose layers are the folder's files, each with a media
// type of its own; nothing else is accepted on pull (plugins/OPERATING.md,
// "Plugins from a registry").
//
// It is the only package besides the binary that links oras-go
// (broker/imports_test.go), so the broker never carries registry code.
package distribute

import "github.com/airlock/airlock/plugins"

// The media types of a plugin artifact: Airlock's own vocabulary, here and
// nowhere else.
const (
	// ArtifactType is the artifact manifest's artifactType.
	ArtifactType = "application/vnd.airlock.plugin.v1+json"
	// ManifestMediaType is the plugin.json layer.
	ManifestMediaType = "application/vnd.airlock.plugin.manifest.v1+json"
	// ModuleMediaType is the WebAssembly module layer.
	ModuleMediaType = "application/vnd.airlock.plugin.module.v1+wasm"
	// SignatureMediaType is the Sigstore bundle layer (plugin.sigstore.json),
	// and the artifactType of the referrer that repeats it.
	SignatureMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
)

// SignatureName is the signature file beside plugin.json.
const SignatureName = "plugin.sigstore.json"

// Bounds on what pull downloads, checked against each descriptor's
// declared size before a byte of it is fetched.
const (
	// MaxArtifactManifestBytes bounds the OCI manifest itself.
	MaxArtifactManifestBytes = 1 << 20
	// MaxManifestBytes bounds the plugin.json layer: admission's own bound.
	MaxManifestBytes = plugins.MaxManifestBytes
	// MaxModuleBytes bounds the module layer: admission's own bound.
	MaxModuleBytes = plugins.MaxModuleBytes
	// MaxSignatureBytes bounds the signature layer; a bundle is a few KiB.
	MaxSignatureBytes = 1 << 20
)

// layerKinds is every layer media type pull accepts: the file each one
// lands in ("" for the module, whose name plugin.json decides) and its
// bound.
var layerKinds = map[string]struct {
	file     string
	max      int64
	required bool
}{
	ManifestMediaType:  {plugins.ManifestName, MaxManifestBytes, true},
	ModuleMediaType:    {"", MaxModuleBytes, true},
	SignatureMediaType: {SignatureName, MaxSignatureBytes, false},
}
