package pairing

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/airlock/airlock/config/datadir"
	"github.com/airlock/airlock/executors/wire"
)

// catalogsDir holds each pairing's last catalog. Catalogs are not secret;
// the broker remembers them so that a call for a descriptor of an
// environment that is not connected is refused machine-unreachable rather
// than unattributed-call, even across a broker restart. The folder and
// its files are reached through the checked data root, never through a
// link.
const catalogsDir = "catalogs"

// CatalogPath is where the catalog of the pairing called name is kept.
func CatalogPath(dataDir, name string) string {
	return filepath.Join(dataDir, catalogsDir, name+".json")
}

// openCatalogs opens the catalogs folder of dataDir (created 0700).
func openCatalogs(dataDir string) (*os.Root, error) {
	root, err := datadir.Open(dataDir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return datadir.Sub(root, catalogsDir)
}

// SaveCatalog remembers ds as the last catalog of the pairing called name.
func SaveCatalog(dataDir, name string, ds []wire.Descriptor) (err error) {
	defer wrap(&err, "save catalog")
	if !ValidName(name) {
		return ErrNameInvalid
	}
	dir, err := openCatalogs(dataDir)
	if err != nil {
		return err
	}
	defer dir.Close()
	return datadir.WriteFileAtomic(dir, name+".json", append(wire.CatalogFrame(ds), '\n'))
}

// LoadCatalog returns the remembered catalog of name; ok is false when
// there is none. A file that is not a valid catalog is an error.
func LoadCatalog(dataDir, name string) (ds []wire.Descriptor, ok bool, err error) {
	defer wrap(&err, "load catalog")
	if !ValidName(name) {
		return nil, false, ErrNameInvalid
	}
	dir, err := openCatalogs(dataDir)
	if err != nil {
		return nil, false, err
	}
	defer dir.Close()
	data, _, err := datadir.ReadFile(dir, name+".json", wire.MaxPeerFrameBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	ds, err = wire.ParseCatalog(data)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", CatalogPath(dataDir, name), err)
	}
	return ds, true, nil
}

// ForgetCatalog deletes the remembered catalog of name, if any (a link
// there is removed itself, not its target).
func ForgetCatalog(dataDir, name string) (err error) {
	defer wrap(&err, "forget catalog")
	if !ValidName(name) {
		return ErrNameInvalid
	}
	dir, err := openCatalogs(dataDir)
	if err != nil {
		return err
	}
	defer dir.Close()
	if err := dir.Remove(name + ".json"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
