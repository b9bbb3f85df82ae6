package plugins

import (
	"context"
	"fmt"
	"time"

	"github.com/airlock/airlock/config/watch"
)

// settle is how long the folder must be quiet before a rescan, so a plugin
// being copied in is looked at once it is whole rather than file by file.
const settle = 250 * time.Millisecond

// Watch rescans whenever the plugins folder or a plugin folder in it
// changes, until Close. It is a no-op without a plugins folder.
func (c *Catalog) Watch(ctx context.Context) error {
	if c.opts.Dir == "" {
		return nil
	}
	w, err := watch.Start(ctx, c.opts.Dir, watch.Options{Settle: settle, Subfolders: true,
		OnChange: c.Scan, Logger: c.opts.Logger})
	if err != nil {
		return fmt.Errorf("plugins: %w", err)
	}
	c.mu.Lock()
	c.watcher = w
	c.mu.Unlock()
	return nil
}

// stopWatching ends the watcher goroutine and waits for it.
func (c *Catalog) stopWatching() {
	c.mu.Lock()
	w := c.watcher
	c.watcher = nil
	c.mu.Unlock()
	if w != nil {
		w.Stop()
	}
}
