package plugins

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// settle is how long the folder must be quiet before a rescan, so a plugin
// being copied in is looked at once it is whole rather than file by file.
const settle = 250 * time.Millisecond

// watcher follows the plugins folder and its plugin folders.
type watcher struct {
	fs     *fsnotify.Watcher
	cancel context.CancelFunc
	done   chan struct{}
}

// Watch rescans whenever the plugins folder changes, until Close. It is a
// no-op without a plugins folder.
func (c *Catalog) Watch(ctx context.Context) error {
	if c.opts.Dir == "" {
		return nil
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("plugins: watch: %w", err)
	}
	if err := fw.Add(c.opts.Dir); err != nil {
		fw.Close()
		return fmt.Errorf("plugins: watch: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &watcher{fs: fw, cancel: cancel, done: make(chan struct{})}
	c.addPluginDirs(w)
	c.mu.Lock()
	c.watch = w
	c.mu.Unlock()
	go c.follow(ctx, w)
	return nil
}

// addPluginDirs watches every plugin folder, so changes inside one (a new
// module, an edited plugin.json) are seen too. Adding a path twice is
// harmless.
func (c *Catalog) addPluginDirs(w *watcher) {
	ents, err := os.ReadDir(c.opts.Dir)
	if err != nil {
		return
	}
	for _, d := range ents {
		if !strings.HasPrefix(d.Name(), ".") {
			_ = w.fs.Add(filepath.Join(c.opts.Dir, d.Name()))
		}
	}
}

// follow is the watcher's goroutine: events restart the settle timer, and
// when it fires the catalog rescans.
func (c *Catalog) follow(ctx context.Context, w *watcher) {
	defer close(w.done)
	defer w.fs.Close()
	timer := time.NewTimer(settle)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case ev, ok := <-w.fs.Events:
			if !ok {
				return
			}
			if ev.Has(fsnotify.Create) {
				_ = w.fs.Add(ev.Name) // fails harmlessly for files
			}
			timer.Reset(settle)
		case err, ok := <-w.fs.Errors:
			if !ok {
				return
			}
			c.opts.Logger.Warn("plugins watch error", "err", err)
			timer.Reset(settle)
		case <-timer.C:
			c.addPluginDirs(w)
			c.Scan(ctx)
		}
	}
}

// stopWatching ends the watcher goroutine and waits for it.
func (c *Catalog) stopWatching() {
	c.mu.Lock()
	w := c.watch
	c.watch = nil
	c.mu.Unlock()
	if w != nil {
		w.cancel()
		<-w.done
	}
}
