package distribute

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/airlock/airlock/config/filecheck"
	"github.com/airlock/airlock/config/pluginid"
	"github.com/airlock/airlock/plugins"
)

// Pulled is what Pull installed.
type Pulled struct {
	ID, Version string
	Dir         string // the plugin's folder: PLUGINS_DIR/<id>
	Signed      bool   // the artifact carried a signature layer
	Replaced    bool   // a folder of that id was there and was replaced
	Source      plugins.Source
}

// Pull fetches the plugin artifact ref and installs it into pluginsDir as
// pluginsDir/<id>, <id> from its plugin.json. Every check comes first: the
// artifact's type and its layers' media types, each layer's declared size
// against its bound before it is fetched, every digest while it is
// fetched, then the folder as admission reads it (plugins.CheckFolder).
// The folder is staged hidden in pluginsDir and renamed into place; on any
// failure nothing is left there and an installed plugin is untouched.
func Pull(ctx context.Context, ref, pluginsDir string, o Options) (Pulled, error) {
	repo, err := repository(ref, o)
	if err != nil {
		return Pulled{}, err
	}
	if info, err := os.Stat(pluginsDir); err != nil || !info.IsDir() {
		return Pulled{}, fmt.Errorf("%w: %s", plugins.ErrNoPluginsDir, pluginsDir)
	}
	desc, layers, err := resolve(ctx, repo)
	if err != nil {
		return Pulled{}, err
	}
	data, err := fetchAll(ctx, repo, layers[ManifestMediaType], o.Progress)
	if err != nil {
		return Pulled{}, err
	}
	m, err := plugins.ParseManifestFile(plugins.ManifestName, data)
	if err != nil {
		return Pulled{}, refuse(ErrPluginInvalid, "%v", err)
	}
	if !pluginid.Valid(m.ID) { // ParseManifest holds it too; the id becomes a path here
		return Pulled{}, refuse(ErrPluginInvalid, "id %q: %s", m.ID, pluginid.Rule)
	}

	stage, err := os.MkdirTemp(pluginsDir, ".pull-"+m.ID+"-")
	if err != nil {
		return Pulled{}, fmt.Errorf("distribute: pull: %w", err)
	}
	defer os.RemoveAll(stage) // a no-op once renamed into place
	if err := os.WriteFile(filepath.Join(stage, plugins.ManifestName), data, 0o644); err != nil {
		return Pulled{}, fmt.Errorf("distribute: pull: %w", err)
	}
	if err := fetchTo(ctx, repo, layers[ModuleMediaType], filepath.Join(stage, m.Module), o.Progress); err != nil {
		return Pulled{}, err
	}
	sig, signed := layers[SignatureMediaType]
	if signed {
		if err := fetchTo(ctx, repo, sig, filepath.Join(stage, SignatureName), o.Progress); err != nil {
			return Pulled{}, err
		}
	}
	if _, _, _, err := plugins.CheckFolder(filecheck.Dir(stage), ".", m.ID); err != nil {
		return Pulled{}, refuse(ErrPluginInvalid, "%s: %v", plugins.Reason(err), err)
	}
	src := plugins.Source{Ref: repo.Reference.String(), Digest: desc.Digest.String(), PulledAt: time.Now().UTC().Format(time.RFC3339)}
	if tag := repo.Reference.Reference; tag != desc.Digest.String() {
		src.Ref = repo.Reference.Registry + "/" + repo.Reference.Repository + ":" + tag
	}
	if err := plugins.WriteSource(stage, src); err != nil {
		return Pulled{}, fmt.Errorf("distribute: pull: %w", err)
	}
	if err := os.Chmod(stage, 0o755); err != nil {
		return Pulled{}, fmt.Errorf("distribute: pull: %w", err)
	}
	final := filepath.Join(pluginsDir, m.ID)
	replaced, err := install(stage, final)
	if err != nil {
		return Pulled{}, err
	}
	return Pulled{ID: m.ID, Version: m.Version, Dir: final, Signed: signed, Replaced: replaced, Source: src}, nil
}

// resolve fetches the artifact's manifest and checks its types and its
// layers' types and declared sizes; it returns the layers by media type.
func resolve(ctx context.Context, repo *remote.Repository) (ocispec.Descriptor, map[string]ocispec.Descriptor, error) {
	desc, err := repo.Resolve(ctx, repo.Reference.Reference)
	if err != nil {
		return desc, nil, classify(err)
	}
	if desc.MediaType != ocispec.MediaTypeImageManifest {
		return desc, nil, refuse(ErrUnknownType, "the reference is a %q, not an OCI image manifest", desc.MediaType)
	}
	if desc.Size > MaxArtifactManifestBytes {
		return desc, nil, refuse(ErrLayerTooLarge, "the manifest declares %d bytes, over the bound of %d", desc.Size, MaxArtifactManifestBytes)
	}
	rc, err := repo.Fetch(ctx, desc)
	if err != nil {
		return desc, nil, classify(err)
	}
	data, err := content.ReadAll(rc, desc)
	rc.Close()
	if err != nil {
		return desc, nil, classify(err)
	}
	var man ocispec.Manifest
	if err := json.Unmarshal(data, &man); err != nil {
		return desc, nil, refuse(ErrUnknownType, "the manifest is not JSON: %v", err)
	}
	if man.MediaType != ocispec.MediaTypeImageManifest {
		return desc, nil, refuse(ErrUnknownType, "the manifest's mediaType is %q", man.MediaType)
	}
	if man.ArtifactType != ArtifactType {
		return desc, nil, refuse(ErrUnknownType, "artifactType %q is not a plugin's (%s)", man.ArtifactType, ArtifactType)
	}
	if man.Config.MediaType != ocispec.MediaTypeEmptyJSON {
		return desc, nil, refuse(ErrUnknownType, "config mediaType %q is not %s", man.Config.MediaType, ocispec.MediaTypeEmptyJSON)
	}
	layers := map[string]ocispec.Descriptor{}
	for _, l := range man.Layers {
		kind, ok := layerKinds[l.MediaType]
		switch {
		case !ok:
			return desc, nil, refuse(ErrUnknownType, "layer mediaType %q is not a plugin's", l.MediaType)
		case l.Size < 0 || l.Size > kind.max:
			return desc, nil, refuse(ErrLayerTooLarge, "the %s layer declares %d bytes, over the bound of %d", l.MediaType, l.Size, kind.max)
		case layers[l.MediaType].MediaType != "":
			return desc, nil, refuse(ErrUnknownType, "two %s layers", l.MediaType)
		}
		if err := l.Digest.Validate(); err != nil {
			return desc, nil, refuse(ErrDigestMismatch, "the %s layer's digest: %v", l.MediaType, err)
		}
		layers[l.MediaType] = l
	}
	for mt, kind := range layerKinds {
		if _, ok := layers[mt]; kind.required && !ok {
			return desc, nil, refuse(ErrPluginInvalid, "the artifact has no %s layer", mt)
		}
	}
	return desc, layers, nil
}

// fetchAll fetches a small layer into memory, checking its size and digest.
func fetchAll(ctx context.Context, repo *remote.Repository, d ocispec.Descriptor, progress io.Writer) ([]byte, error) {
	progressf(progress, "pulling %s", describe(d))
	rc, err := repo.Fetch(ctx, d)
	if err != nil {
		return nil, classify(err)
	}
	defer rc.Close()
	data, err := content.ReadAll(rc, d)
	return data, classify(err)
}

// fetchTo streams a layer into the file name, checking its size and
// digest, with a progress line per quarter of a large layer.
func fetchTo(ctx context.Context, repo *remote.Repository, d ocispec.Descriptor, name string, progress io.Writer) error {
	progressf(progress, "pulling %s", describe(d))
	rc, err := repo.Fetch(ctx, d)
	if err != nil {
		return classify(err)
	}
	defer rc.Close()
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("distribute: pull: %w", err)
	}
	defer f.Close()
	vr := content.NewVerifyReader(rc, d)
	var r io.Reader = vr
	if d.Size >= largeLayer {
		r = &progressReader{r: vr, w: progress, total: d.Size}
	}
	if _, err := io.Copy(f, r); err != nil {
		return classify(err)
	}
	if err := vr.Verify(); err != nil {
		return classify(err)
	}
	return f.Close()
}

// install renames the staged folder to final. An existing plugin folder
// is moved aside first and removed only once the new one is in place (and
// moved back if the rename fails); anything at final that is not a plain
// folder is refused, not replaced.
func install(stage, final string) (replaced bool, err error) {
	info, err := os.Lstat(final)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.Rename(stage, final); err != nil {
			return false, fmt.Errorf("distribute: install: %w", err)
		}
		return false, nil
	case err != nil:
		return false, fmt.Errorf("distribute: install: %w", err)
	case !info.IsDir():
		return false, refuse(ErrInstallConflict, "%s exists and is not a folder (%s); it is left as it is", final, info.Mode().Type())
	}
	aside := stage + ".replaced"
	if err := os.Rename(final, aside); err != nil {
		return false, fmt.Errorf("distribute: install: %w", err)
	}
	if err := os.Rename(stage, final); err != nil {
		if back := os.Rename(aside, final); back != nil {
			return false, fmt.Errorf("distribute: install: %w (and the previous folder stays at %s: %v)", err, aside, back)
		}
		return false, fmt.Errorf("distribute: install: %w", err)
	}
	return true, os.RemoveAll(aside)
}
