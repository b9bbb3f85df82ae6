package plugins

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/config/datadir"
	"github.com/airlock/airlock/executors"
)

// cacheFolder is the compilation cache's folder in the data directory.
const cacheFolder = "compile-cache"

// CacheDir is the compilation cache folder of cfg: exec.cache_dir, else
// DATA/compile-cache.
func CacheDir(cfg *config.Config) string {
	if cfg.Exec.CacheDir != "" {
		return cfg.Exec.CacheDir
	}
	return filepath.Join(cfg.Data, cacheFolder)
}

// CheckData is the start-up check of the data directory (PROTOCOL section
// 1): it must be the broker user's and not writable by group or others,
// and is created 0700 when missing. With cache, the compilation cache
// folder is prepared too (executors.PrepareCache). Commands run it before
// anything else so that a refusal is a configuration error; it sits beside
// Open, which runs it too, so that no command needs the broker's server to
// check its data. cfg.Data is replaced by the folder with its links
// resolved (datadir.Resolve), so that a link repointed after the check
// steers nothing later.
func CheckData(cfg *config.Config, cache bool, logger *slog.Logger) error {
	resolved, err := datadir.Resolve(cfg.Data)
	if err != nil {
		return fmt.Errorf("data directory %s: %w", cfg.Data, err)
	}
	root, err := datadir.Open(resolved)
	if err != nil {
		return err
	}
	root.Close()
	cfg.Data = resolved
	if !cache {
		return nil
	}
	_, err = executors.PrepareCache(CacheDir(cfg), logger)
	return err
}
