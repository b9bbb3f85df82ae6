package plugins

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/airlock/airlock/config/filecheck"
	"github.com/airlock/airlock/executors/wire"
)

// SourceName is the file beside plugin.json that records where a pulled
// plugin came from. Admission reads only plugin.json and the module, so
// the record changes neither what is admitted nor the module's hash.
const SourceName = "plugin.source.json"

// maxSourceBytes bounds the record; it is three short strings.
const maxSourceBytes = 16 << 10

// Source is the record: wire.PluginSource, shown in GET /v1/plugins.
type Source = wire.PluginSource

// WriteSource writes s as dir/SourceName.
func WriteSource(dir string, s Source) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, SourceName), append(data, '\n'), 0o644)
}

// ReadSource reads the record of the plugin folder dir of fsys: nil and
// no error when there is none. One that does not parse, or names nothing,
// is an error (the catalog logs it and shows no source).
func ReadSource(fsys fs.FS, dir string) (*Source, error) {
	data, err := filecheck.Read(fsys, path.Join(dir, SourceName), maxSourceBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var s Source
	if err := wire.DecodeStrict(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", SourceName, err)
	}
	for _, v := range []string{s.Ref, s.Digest} {
		if v == "" || strings.IndexFunc(v, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0 {
			return nil, fmt.Errorf("%s: ref and digest must be printable ASCII without spaces", SourceName)
		}
	}
	return &s, nil
}
