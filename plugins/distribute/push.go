package distribute

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"

	"github.com/airlock/airlock/config/filecheck"
	"github.com/airlock/airlock/plugins"
)

// Pushed is what Push stored.
type Pushed struct {
	ID, Version string
	// Artifact is the plugin's manifest; Referrer, when the folder is
	// signed, the manifest that repeats the signature for registry tools.
	Artifact, Referrer ocispec.Descriptor
}

// Push stores the plugin folder dir under ref (registry/repository:tag)
// as a plugin artifact, after checking it as admission would short of
// compiling it (plugins.CheckFolder). A signature file beside plugin.json
// becomes a layer and also a referrer of the artifact.
func Push(ctx context.Context, dir, ref string, o Options) (Pushed, error) {
	repo, err := repository(ref, o)
	if err != nil {
		return Pushed{}, err
	}
	if err := repo.Reference.ValidateReferenceAsTag(); err != nil {
		return Pushed{}, refuse(ErrReference, "%q: push needs a tag (the digest is the artifact's, printed once pushed)", ref)
	}
	fsys := filecheck.Dir(dir)
	m, manifest, module, err := plugins.CheckFolder(fsys, ".", "")
	if err != nil {
		return Pushed{}, refuse(ErrPluginInvalid, "%s: %s: %v", plugins.Reason(err), dir, err)
	}
	signature, err := filecheck.Read(fsys, SignatureName, MaxSignatureBytes)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Pushed{}, refuse(ErrPluginInvalid, "%s: %v", SignatureName, err)
	}

	store := memory.New()
	add := func(mediaType, name string, data []byte) (ocispec.Descriptor, error) {
		d := content.NewDescriptorFromBytes(mediaType, data)
		d.Annotations = map[string]string{ocispec.AnnotationTitle: name}
		return d, store.Push(ctx, d, bytes.NewReader(data))
	}
	var layers []ocispec.Descriptor
	for _, f := range []struct {
		mediaType, name string
		data            []byte
	}{{ManifestMediaType, plugins.ManifestName, manifest}, {ModuleMediaType, m.Module, module}, {SignatureMediaType, SignatureName, signature}} {
		if f.data == nil {
			continue
		}
		d, err := add(f.mediaType, f.name, f.data)
		if err != nil {
			return Pushed{}, fmt.Errorf("distribute: push: %w", err)
		}
		layers = append(layers, d)
	}
	p := Pushed{ID: m.ID, Version: m.Version}
	p.Artifact, err = oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, ArtifactType, oras.PackManifestOptions{
		Layers: layers,
		ManifestAnnotations: map[string]string{
			ocispec.AnnotationTitle: m.ID, ocispec.AnnotationVersion: m.Version,
		},
	})
	if err != nil {
		return Pushed{}, fmt.Errorf("distribute: push: %w", err)
	}
	copyOpts := oras.CopyGraphOptions{PreCopy: func(_ context.Context, d ocispec.Descriptor) error {
		progressf(o.Progress, "pushing %s", describe(d))
		return nil
	}}
	if err := oras.CopyGraph(ctx, store, repo, p.Artifact, copyOpts); err != nil {
		return Pushed{}, classify(err)
	}
	if err := repo.Tag(ctx, p.Artifact, repo.Reference.Reference); err != nil {
		return Pushed{}, classify(err)
	}
	if signature == nil {
		return p, nil
	}
	// The referrer: the same signature blob, under a manifest whose
	// subject is the artifact, for tools that look for signatures by the
	// referrers API. Pull reads the layer, not this.
	p.Referrer, err = oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, SignatureMediaType, oras.PackManifestOptions{
		Subject: &p.Artifact,
		Layers:  layers[len(layers)-1:],
	})
	if err != nil {
		return Pushed{}, fmt.Errorf("distribute: push: %w", err)
	}
	if err := oras.CopyGraph(ctx, store, repo, p.Referrer, copyOpts); err != nil {
		return Pushed{}, classify(err)
	}
	return p, nil
}
