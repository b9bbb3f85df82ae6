package pairing

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/airlock/airlock/config/datadir"
	"github.com/airlock/airlock/config/watch"
)

// Watcher follows the pairings file; Stop ends it.
type Watcher = watch.Watcher

// Watch follows dataDir (checked as Open does, created 0700 if missing) and
// calls onChange once the pairings file has been quiet for settle after any
// change to it. The directory is watched, not the file, because writers
// replace the file by renaming a new one over it.
func Watch(dataDir string, settle time.Duration, logger *slog.Logger, onChange func()) (*Watcher, error) {
	root, err := datadir.Open(dataDir)
	if err != nil {
		return nil, fmt.Errorf("pairing: watch: %w", err)
	}
	root.Close()
	w, err := watch.Start(context.Background(), dataDir, watch.Options{Settle: settle, Logger: logger,
		Match:    func(path string) bool { return filepath.Base(path) == FileName },
		OnChange: func(context.Context) { onChange() }})
	if err != nil {
		return nil, fmt.Errorf("pairing: %w", err)
	}
	return w, nil
}
