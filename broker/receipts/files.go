package receipts

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
)

// File is the receipt log being written, in the data directory.
const File = "receipts.jsonl"

// rotatedPattern names a rotated file: receipts-<seq of its first record,
// 20 digits>.jsonl, so that names sort in chain order.
var rotatedPattern = regexp.MustCompile(`^receipts-[0-9]{20}\.jsonl$`)

// rotatedName is the name a file whose first record is seq gets when it
// is rotated.
func rotatedName(seq uint64) string { return fmt.Sprintf("receipts-%020d.jsonl", seq) }

// Files lists the receipt files of dir in chain order: the rotated files
// by name, then File. A missing File is left out.
func Files(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	current := false
	for _, e := range entries {
		switch {
		case rotatedPattern.MatchString(e.Name()):
			out = append(out, filepath.Join(dir, e.Name()))
		case e.Name() == File:
			current = true
		}
	}
	sort.Strings(out)
	if current {
		out = append(out, filepath.Join(dir, File))
	}
	return out, nil
}

// MaxLineBytes bounds one record: every member is bounded (ids at 128
// bytes, digests at 64), so a longer line was not written by the log.
const MaxLineBytes = 4096

// lineHash is the hex SHA-256 of a line's bytes, without its newline: the
// next record's prev.
func lineHash(line []byte) string {
	sum := sha256.Sum256(line)
	return hex.EncodeToString(sum[:])
}

// tail reads the end of f (size bytes long) and returns its last complete
// line (without the newline; nil when there is none) and the length of
// the file up to and including that line's newline: bytes past it are a
// torn record.
func tail(f io.ReaderAt, size int64) (last []byte, clean int64, err error) {
	n := min(size, 2*MaxLineBytes+2)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, size-n); err != nil && err != io.EOF {
		return nil, 0, err
	}
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		if n < size {
			return nil, 0, fmt.Errorf("%w: no line end in the last %d bytes", ErrBroken, n)
		}
		return nil, 0, nil
	}
	clean = size - n + int64(end) + 1
	start := bytes.LastIndexByte(buf[:end], '\n') + 1
	if start == 0 && n < size {
		return nil, 0, fmt.Errorf("%w: a line over %d bytes", ErrBroken, MaxLineBytes)
	}
	return buf[start:end], clean, nil
}
