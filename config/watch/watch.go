// Package watch calls a function once a folder has been quiet for a while
// after it changed: fsnotify, a debounce and a clean stop, shared by the
// plugins folder and the pairings file.
//
// A change only arms the settle timer; the callback rescans whatever it
// cares about, so a missed or coalesced event costs latency, not
// correctness (RATIONALE.md, "Why fsnotify?").
package watch

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Options say what a Watcher counts as a change and what it calls.
type Options struct {
	// Settle is how long the folder must be quiet after a change before
	// OnChange runs, so a burst (a plugin copied in file by file, a file
	// renamed into place) is seen once, whole.
	Settle time.Duration
	// Match reports whether a change to path counts; nil counts all.
	// Watcher errors (an event queue overflow) always count.
	Match func(path string) bool
	// Subfolders follows the folder's subfolders too (not those whose name
	// starts with "."), and any path created inside a followed one, so a
	// change inside a plugin's folder is seen.
	Subfolders bool
	// OnChange runs on the watcher's goroutine, one call per quiet burst;
	// its ctx ends when the watcher stops.
	OnChange func(ctx context.Context)
	// Logger receives watcher errors; nil discards them.
	Logger *slog.Logger
}

// Watcher follows one folder until Stop.
type Watcher struct {
	dir    string
	o      Options
	fs     *fsnotify.Watcher
	cancel context.CancelFunc
	done   chan struct{}
}

// Start follows dir and calls o.OnChange after each burst of changes,
// until Stop or until ctx ends.
func Start(ctx context.Context, dir string, o Options) (*Watcher, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Match == nil {
		o.Match = func(string) bool { return true }
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	if err := fw.Add(dir); err != nil {
		fw.Close()
		return nil, fmt.Errorf("watch: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &Watcher{dir: dir, o: o, fs: fw, cancel: cancel, done: make(chan struct{})}
	w.addSubfolders()
	go w.follow(ctx)
	return w, nil
}

// Stop ends the watcher and waits for its goroutine, including an OnChange
// call in progress (whose ctx it cancels). Idempotent.
func (w *Watcher) Stop() {
	w.cancel()
	<-w.done
}

// follow is the watcher's goroutine: a counted change restarts the settle
// timer; when the timer fires, OnChange runs.
func (w *Watcher) follow(ctx context.Context) {
	defer close(w.done)
	defer w.fs.Close()
	timer := time.NewTimer(w.o.Settle)
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
			if w.o.Subfolders && ev.Has(fsnotify.Create) {
				_ = w.fs.Add(ev.Name) // a file is followed harmlessly
			}
			if w.o.Match(ev.Name) {
				timer.Reset(w.o.Settle)
			}
		case err, ok := <-w.fs.Errors:
			if !ok {
				return
			}
			w.o.Logger.Warn("watch error", "dir", w.dir, "err", err)
			timer.Reset(w.o.Settle)
		case <-timer.C:
			w.addSubfolders()
			w.o.OnChange(ctx)
		}
	}
}

// addSubfolders follows every subfolder when Options.Subfolders is set,
// catching any created too quickly for its Create event to be acted on.
// Adding a path twice is harmless.
func (w *Watcher) addSubfolders() {
	if !w.o.Subfolders {
		return
	}
	ents, err := os.ReadDir(w.dir)
	if err != nil {
		return
	}
	for _, d := range ents {
		if !strings.HasPrefix(d.Name(), ".") {
			_ = w.fs.Add(filepath.Join(w.dir, d.Name()))
		}
	}
}
