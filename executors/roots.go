package executors

import (
	"errors"
	"fmt"
	"os"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental/sysfs"
)

// mounts are a descriptor's roots, opened once at Load.
//
// Each root is an os.Root: every path the guest opens is resolved by the
// kernel relative to the root's directory descriptor, and ".." or a
// symlink that would leave it fails. wazero's WithReadOnlyDirMount joins
// paths as strings and follows symlinks out of the directory. sysfs.ReadFS
// on top makes any write fail with EROFS inside wazero, before the host
// file system is asked.
type mounts struct {
	roots []*os.Root
	fs    wazero.FSConfig
}

// openMounts opens the roots named in bounds from the operator's mapping.
func openMounts(names []string, mapping map[string]string) (*mounts, error) {
	m := &mounts{fs: wazero.NewFSConfig()}
	for _, name := range names {
		dir, ok := mapping[name]
		if !ok {
			m.close()
			return nil, admission(ReasonRootUnmapped, fmt.Errorf("root %q is not mapped by the operator", name))
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			m.close()
			return nil, admission(ReasonRootUnmapped, fmt.Errorf("root %q: %w", name, err))
		}
		m.roots = append(m.roots, root)
		ro := &sysfs.ReadFS{FS: &sysfs.AdaptFS{FS: root.FS()}}
		m.fs = m.fs.(sysfs.FSConfig).WithSysFSMount(ro, "/"+name)
	}
	return m, nil
}

func (m *mounts) close() error {
	var errs []error
	for _, r := range m.roots {
		errs = append(errs, r.Close())
	}
	m.roots = nil
	return errors.Join(errs...)
}
