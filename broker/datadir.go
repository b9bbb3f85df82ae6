package broker

import (
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
// anything else so that a refusal is a configuration error.
func CheckData(cfg *config.Config, cache bool, logger *slog.Logger) error {
	root, err := datadir.Open(cfg.Data)
	if err != nil {
		return err
	}
	root.Close()
	if !cache {
		return nil
	}
	return executors.PrepareCache(CacheDir(cfg), logger)
}
