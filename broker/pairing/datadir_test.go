package pairing

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock/airlock/config/datadir"
	"github.com/airlock/airlock/executors/wire"
)

// The pairings file, its lock and the remembered catalogs are never
// reached through a link, inside the data folder or out of it.
func TestPairingsFileLinkNotFollowed(t *testing.T) {
	src := t.TempDir()
	if _, err := Add(src, "planted", time.Now()); err != nil {
		t.Fatal(err)
	}
	outside := Path(src)
	before, _ := os.ReadFile(outside)
	for name, target := range map[string]string{"outside": outside, "inside": "copy.json"} {
		t.Run(name, func(t *testing.T) {
			data := t.TempDir()
			if err := os.WriteFile(filepath.Join(data, "copy.json"), before, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, Path(data)); err != nil {
				t.Fatal(err)
			}
			if _, err := Load(data); !errors.Is(err, datadir.ErrLink) {
				t.Errorf("Load: %v, want ErrLink", err)
			}
			if _, err := List(data); !errors.Is(err, datadir.ErrLink) {
				t.Errorf("List: %v, want ErrLink", err)
			}
			if _, err := Add(data, "lab", time.Now()); !errors.Is(err, datadir.ErrLink) {
				t.Errorf("Add: %v, want ErrLink", err)
			}
			if after, _ := os.ReadFile(outside); string(after) != string(before) {
				t.Error("Add wrote through the link")
			}
		})
	}
}

func TestPairingsLockLinkNotFollowed(t *testing.T) {
	data, outside := t.TempDir(), filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(outside, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(data, lockName)); err != nil {
		t.Fatal(err)
	}
	if _, err := Add(data, "lab", time.Now()); !errors.Is(err, datadir.ErrLink) {
		t.Fatalf("Add: %v, want ErrLink", err)
	}
}

func TestCatalogsLinkNotFollowed(t *testing.T) {
	ds := []wire.Descriptor{}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "lab.json"), append(wire.CatalogFrame(ds), '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	// The folder linked away.
	data := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(data, catalogsDir)); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := LoadCatalog(data, "lab"); ok || !errors.Is(err, datadir.ErrLink) {
		t.Errorf("LoadCatalog through a linked folder: ok=%v %v", ok, err)
	}
	if err := SaveCatalog(data, "lab2", ds); !errors.Is(err, datadir.ErrLink) {
		t.Errorf("SaveCatalog through a linked folder: %v", err)
	}
	if err := ForgetCatalog(data, "lab"); !errors.Is(err, datadir.ErrLink) {
		t.Errorf("ForgetCatalog through a linked folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "lab.json")); err != nil {
		t.Errorf("the outside catalog was removed: %v", err)
	}
	// One file linked away: not read; saving replaces the link itself.
	data = t.TempDir()
	if err := SaveCatalog(data, "other", ds); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "lab.json"), CatalogPath(data, "lab")); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := LoadCatalog(data, "lab"); ok || !errors.Is(err, datadir.ErrLink) {
		t.Errorf("LoadCatalog of a linked file: ok=%v %v", ok, err)
	}
	if err := SaveCatalog(data, "lab", ds); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(CatalogPath(data, "lab")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("after save: %v %v", fi, err)
	}
	if _, ok, err := LoadCatalog(data, "lab"); !ok || err != nil {
		t.Errorf("LoadCatalog after save: ok=%v %v", ok, err)
	}
}
