package pairing

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/airlock/airlock/executors/wire"
)

// catalogsDir holds each pairing's last catalog. Catalogs are not secret;
// the broker remembers them so that a call for a descriptor of an
// environment that is not connected is refused machine-unreachable rather
// than unattributed-call, even across a broker restart.
const catalogsDir = "catalogs"

// CatalogPath is where the catalog of the pairing called name is kept.
func CatalogPath(dataDir, name string) string {
	return filepath.Join(dataDir, catalogsDir, name+".json")
}

// SaveCatalog remembers ds as the last catalog of the pairing called name.
func SaveCatalog(dataDir, name string, ds []wire.Descriptor) (err error) {
	defer wrap(&err, "save catalog")
	if !ValidName(name) {
		return ErrNameInvalid
	}
	if err := os.MkdirAll(filepath.Join(dataDir, catalogsDir), 0o700); err != nil {
		return err
	}
	return writeAtomic(CatalogPath(dataDir, name), append(wire.CatalogFrame(ds), '\n'))
}

// LoadCatalog returns the remembered catalog of name; ok is false when
// there is none. A file that is not a valid catalog is an error.
func LoadCatalog(dataDir, name string) (ds []wire.Descriptor, ok bool, err error) {
	defer wrap(&err, "load catalog")
	if !ValidName(name) {
		return nil, false, ErrNameInvalid
	}
	data, err := os.ReadFile(CatalogPath(dataDir, name))
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

// ForgetCatalog deletes the remembered catalog of name, if any.
func ForgetCatalog(dataDir, name string) (err error) {
	defer wrap(&err, "forget catalog")
	if !ValidName(name) {
		return ErrNameInvalid
	}
	if err := os.Remove(CatalogPath(dataDir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
