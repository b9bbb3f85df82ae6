package pairing

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/airlock/airlock/config/datadir"
)

// Watcher calls a function whenever the pairings file may have changed.
type Watcher struct {
	fs   *fsnotify.Watcher
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// Watch follows dataDir (checked as Open does, created 0700 if missing) and calls onChange once
// the pairings file has been quiet for settle after any event on it. The
// directory is watched, not the file, because writers replace the file
// by renaming a new one over it. Stop ends the watcher.
func Watch(dataDir string, settle time.Duration, logger *slog.Logger, onChange func()) (*Watcher, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	root, err := datadir.Open(dataDir)
	if err != nil {
		return nil, fmt.Errorf("pairing: watch: %w", err)
	}
	root.Close()
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("pairing: watch: %w", err)
	}
	if err := fw.Add(dataDir); err != nil {
		fw.Close()
		return nil, fmt.Errorf("pairing: watch: %w", err)
	}
	w := &Watcher{fs: fw, stop: make(chan struct{}), done: make(chan struct{})}
	go w.follow(settle, logger, onChange)
	return w, nil
}

// follow is the watcher's goroutine: events on the file restart the
// settle timer; when it fires, onChange runs.
func (w *Watcher) follow(settle time.Duration, logger *slog.Logger, onChange func()) {
	defer close(w.done)
	defer w.fs.Close()
	timer := time.NewTimer(settle)
	timer.Stop()
	for {
		select {
		case <-w.stop:
			timer.Stop()
			return
		case ev, ok := <-w.fs.Events:
			if !ok {
				return
			}
			if filepath.Base(ev.Name) == FileName {
				timer.Reset(settle)
			}
		case err, ok := <-w.fs.Errors:
			if !ok {
				return
			}
			logger.Warn("pairings watch error", "err", err)
			timer.Reset(settle)
		case <-timer.C:
			onChange()
		}
	}
}

// Stop ends the watcher and waits for its goroutine. Idempotent.
func (w *Watcher) Stop() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}
