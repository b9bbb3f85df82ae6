package receipts

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock/airlock/config/datadir"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/metrics"
)

// Fsync policies (audit.fsync).
const (
	// FsyncBatch syncs in the background, at most SyncInterval after a
	// write: a crash of the broker loses nothing (every receipt is in the
	// kernel before its answer leaves), a crash of the machine at most
	// that interval.
	FsyncBatch = "batch"
	// FsyncAlways syncs each receipt before its answer leaves.
	FsyncAlways = "always"
)

// Failure modes (audit.fail).
const (
	// FailOpen answers a call whose receipt could not be written, logging
	// once per failure streak and counting it.
	FailOpen = "open"
	// FailClosed refuses it with audit-unavailable.
	FailClosed = "closed"
)

// SyncInterval is how long a receipt may wait for its sync under
// FsyncBatch.
const SyncInterval = 100 * time.Millisecond

// DefaultLockWait is how long an append waits for the lock on File that
// another process holds. Past it the receipt fails (audit.fail decides
// what the call gets), and appends only try the lock, without waiting,
// for as long again: a writer stopped while it held the lock (an
// `airlock mcp` suspended with ^Z) delays one call by this much, not
// every call.
const DefaultLockWait = 2 * time.Second

// Options configure a Log.
type Options struct {
	// Dir is the folder of the log and its key: the data directory, or
	// audit.dir.
	Dir   string
	Fsync string // FsyncBatch (the default) or FsyncAlways
	// MaxFileBytes rotates File once it would grow past it; 0 never.
	MaxFileBytes int64
	// LockWait bounds the wait for another process's lock on File;
	// 0 is DefaultLockWait.
	LockWait time.Duration
	Logger   *slog.Logger
	Metrics  *metrics.Registry
}

// Log appends receipts to File, chained. It is safe for concurrent use;
// appends are serialized, so seq follows the order of writing. Several
// processes may share one log (a broker and `airlock mcp` on one data
// directory): each append holds an exclusive lock on the file and first
// reads the record another process may have appended, so the chain goes
// on across them. The lock is kept between appends while they keep
// coming (lease, LeaseIdle, LeaseMax).
type Log struct {
	opts Options
	macs *sync.Pool // argsHMAC's, keyed with receipts.key
	m    *metrics.Registry

	mu     sync.Mutex
	root   *os.Root
	f      *os.File
	locked bool // f's flock is held (between appends too: lease)
	// busyUntil: until then appends only try the lock (a wait ran out).
	busyUntil time.Time
	lease     lease
	id        fs.FileInfo // f's identity, to compare with the path's
	size      int64       // bytes of f known to this log, all complete lines; -1 unknown
	seq       uint64      // the last record written
	prev      string      // its line's hash
	buf       []byte
	dirty     bool
	failed    error // the failure streak's first error; nil when writing works

	healthy  atomic.Bool
	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
}

// Open opens (creating them when missing) the log and its key in
// o.Dir. A final line without its newline, which only a crash mid-write
// leaves, is cut off (logged with its length), and the chain continues
// from the last complete record, in File or, when File is empty, in the
// newest rotated file.
func Open(o Options) (*Log, error) {
	switch o.Fsync {
	case "":
		o.Fsync = FsyncBatch
	case FsyncBatch, FsyncAlways:
	default:
		return nil, fmt.Errorf("%w: fsync %q", ErrSetting, o.Fsync)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.LockWait <= 0 {
		o.LockWait = DefaultLockWait
	}
	root, err := datadir.Open(o.Dir)
	if err != nil {
		return nil, err
	}
	l := &Log{opts: o, root: root, m: metrics.OrNew(o.Metrics), size: -1, prev: Genesis}
	l.lease.timer = time.AfterFunc(time.Hour, l.expire)
	l.lease.timer.Stop()
	key, err := loadKey(root)
	if err != nil {
		root.Close()
		return nil, err
	}
	l.macs = macPool(key)
	if last, err := l.lastRotated(); err != nil {
		root.Close()
		return nil, err
	} else if err := l.adopt(last); err != nil {
		root.Close()
		return nil, err
	}
	if err := l.acquire(); err != nil {
		root.Close()
		return nil, err
	}
	l.unlock()
	l.healthy.Store(true)
	if o.Fsync == FsyncBatch {
		l.stop, l.done = make(chan struct{}), make(chan struct{})
		go l.syncLoop()
	}
	return l, nil
}

// adopt continues the chain from last, a complete record's line, when it
// is ahead of this log's (another process wrote it, or the log is
// opening). A record behind is not adopted: a file put back with fewer
// records must not hide the ones written since.
func (l *Log) adopt(last []byte) error {
	if last == nil {
		return nil
	}
	var h head
	if err := jsonUnmarshal(last, &h); err != nil || h.Seq == nil {
		return fmt.Errorf("%w: the last record of %s cannot be read", ErrBroken, File)
	}
	if *h.Seq > l.seq {
		l.seq, l.prev = *h.Seq, lineHash(last)
	}
	return nil
}

// lastRotated is the last line of the newest rotated file, nil when there
// is none.
func (l *Log) lastRotated() ([]byte, error) {
	names, err := Files(l.opts.Dir)
	if err != nil {
		return nil, err
	}
	for i := len(names) - 1; i >= 0; i-- {
		if filepath.Base(names[i]) == File {
			continue
		}
		f, err := datadir.OpenFile(l.root, filepath.Base(names[i]), os.O_RDONLY)
		if err != nil {
			return nil, err
		}
		fi, err := f.Stat()
		var last []byte
		if err == nil {
			last, _, err = tail(f, fi.Size())
		}
		f.Close()
		if err != nil || last != nil {
			return last, err
		}
	}
	return nil, nil
}

// firstSeq reads the seq of f's first record (for its rotated name).
func (l *Log) firstSeq() uint64 {
	buf := make([]byte, min(l.size, MaxLineBytes+1))
	n, _ := l.f.ReadAt(buf, 0)
	var h head
	for i, b := range buf[:n] {
		if b == '\n' {
			if jsonUnmarshal(buf[:i], &h) == nil && h.Seq != nil {
				return *h.Seq
			}
			break
		}
	}
	return l.seq // unreadable: the name still sorts after every older file
}

// Healthy reports whether the last write succeeded.
func (l *Log) Healthy() bool { return l.healthy.Load() }

// Ready reports whether a receipt can be expected to be written: the last
// write succeeded, or, in a failure streak, File can be opened again. A
// caller that refuses a call when it is not ready counts it (Unwritten).
func (l *Log) Ready() bool {
	if l.healthy.Load() {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.root == nil || l.acquire() != nil {
		return false
	}
	l.unlock()
	return true
}

// Unwritten counts a receipt that was not attempted because the log was
// not ready.
func (l *Log) Unwritten() { l.m.ReceiptFailures.Inc() }

// Args is the HMAC of a call's arguments under the log's key.
func (l *Log) Args(args []byte) string { return argsHMAC(l.macs, args) }

// BoundsDigest is the hex SHA-256 of the canonical bounds.
func BoundsDigest(b wire.Bounds) string {
	sum := sha256.Sum256(b.Canonical())
	return hex.EncodeToString(sum[:])
}

// Event writes an admission event's record: kind, the id of its subject
// (a plugin id, a pairing name, a session id; never a credential) and,
// for a plugin, its module's SHA-256. A failure is logged and counted as
// Append's are; nothing is refused for it. A nil Log records nothing, so
// a part built without one needs no check.
func (l *Log) Event(kind Kind, id, module string) {
	if l == nil {
		return
	}
	_ = l.Append(Record{Kind: kind, ID: id, Module: module})
}

// Append writes r as the next record, stamping its seq, prev and (when
// zero) time. It returns when the line is in the file (and synced, under
// FsyncAlways); an error wraps ErrUnavailable, and the chain is as if r
// had not been offered.
func (l *Log) Append(r Record) error {
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.root == nil {
		return ErrClosed
	}
	err := l.append(&r)
	if err != nil {
		l.m.ReceiptFailures.Inc()
		if l.failed == nil {
			l.failed = err
			l.healthy.Store(false)
			l.opts.Logger.Error("receipts: a receipt could not be written; retrying at each receipt", "err", err)
		}
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if l.failed != nil {
		l.opts.Logger.Info("receipts: writing works again", "seq", r.Seq)
		l.failed = nil
		l.healthy.Store(true)
	}
	return nil
}

func (l *Log) append(r *Record) (err error) {
	if err := l.acquire(); err != nil {
		return err
	}
	defer func() { l.release(err == nil) }()
	r.Seq, r.Prev = l.seq+1, l.prev
	line, err := appendLine(l.buf[:0], r)
	if err != nil {
		return err
	}
	if l.opts.MaxFileBytes > 0 && l.size > 0 && l.size+int64(len(line))+1 > l.opts.MaxFileBytes {
		if err := l.rotate(); err != nil {
			return err
		}
		if r.Seq != l.seq+1 { // another process wrote the new file first
			r.Seq, r.Prev = l.seq+1, l.prev
			if line, err = appendLine(line[:0], r); err != nil {
				return err
			}
		}
	}
	l.buf = append(line, '\n')
	n, err := l.f.WriteAt(l.buf, l.size)
	if err == nil && l.opts.Fsync == FsyncAlways {
		err = l.f.Sync()
	}
	if err != nil {
		if n > 0 { // a torn line would break the chain: take it back
			_ = l.f.Truncate(l.size)
		}
		return err
	}
	l.size += int64(n)
	l.seq, l.prev = r.Seq, lineHash(line)
	l.dirty = true
	l.m.ReceiptsWritten.Inc()
	l.m.ReceiptBytes.Add(float64(n))
	return nil
}

// maxAcquire bounds how often acquire finds File replaced under it.
const maxAcquire = 8

// acquire locks File for one append: it opens File (creating it) when
// this log holds none, or when the file it holds is no longer File (it
// was removed, replaced, or rotated by another process), locks it
// unless a lease holds the lock already, and
// reads what was appended since this log last wrote (another process's
// records, whose last the chain then continues from; a torn final line
// left by a crash, which is cut). A file removed under the broker would
// take receipts nobody can read, so it is never written to.
func (l *Log) acquire() error {
	for range maxAcquire {
		if l.f == nil {
			if err := l.openFile(); err != nil {
				return err
			}
		}
		if err := l.lock(); err != nil {
			return err
		}
		// One lookup of File in the folder the root holds (one system
		// call: a single name needs no walk) says whether it still
		// names the file held and how long that file is. It is made at
		// every append, lease or not: only the writers of the log take
		// its lock, and a file removed, replaced or renamed away by
		// anyone else must not take the next receipt.
		if li, err := l.root.Lstat(File); err == nil && os.SameFile(l.id, li) {
			if li.Size() == l.size {
				return nil
			}
			if err = l.catchUp(li.Size()); err == nil {
				return nil
			}
			l.unlock()
			return err
		}
		l.unlock()
		l.f.Close()
		l.f, l.id, l.size = nil, nil, -1
	}
	return fmt.Errorf("%s keeps being replaced", File)
}

// openFile opens File (creating it) through the root and remembers its
// identity.
func (l *Log) openFile() error {
	f, err := datadir.OpenOrCreate(l.root, File)
	if err != nil {
		return err
	}
	id, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	l.f, l.id, l.size, l.locked = f, id, -1, false
	return nil
}

// catchUp reads the end of the locked file, size bytes long: it cuts a
// torn final line and continues the chain from the last record when that
// is ahead of this log's.
func (l *Log) catchUp(size int64) error {
	last, clean, err := tail(l.f, size)
	if err != nil {
		return fmt.Errorf("%s: %w", File, err)
	}
	if torn := size - clean; torn > 0 {
		if err := l.f.Truncate(clean); err != nil {
			return err
		}
		l.opts.Logger.Warn("receipts: a torn final record was cut", "file", File, "bytes", torn)
	}
	l.size = clean
	return l.adopt(last)
}

// lock takes f's flock unless this log holds it already (a lease),
// waiting at most LockWait, or only trying while an earlier wait's
// busyUntil lasts.
func (l *Log) lock() error {
	if l.locked {
		return nil
	}
	wait := l.opts.LockWait
	if time.Now().Before(l.busyUntil) {
		wait = 0
	}
	if err := lockFile(l.f, wait); err != nil {
		if errors.Is(err, errLockBusy) {
			l.busyUntil = time.Now().Add(l.opts.LockWait)
		}
		return err
	}
	l.locked, l.lease.since = true, time.Now()
	return nil
}

// unlock lets f's flock go.
func (l *Log) unlock() {
	if l.locked {
		unlockFile(l.f)
		l.locked = false
	}
}

// release ends an append: a failed one lets the lock go; a written one
// keeps it as a lease, for the next receipt to skip the lock and its
// release (two system calls), unless the lease was just cut to let
// another writer in (expire).
func (l *Log) release(written bool) {
	now := time.Now()
	if !written || now.Before(l.lease.open) {
		l.unlock()
		return
	}
	l.lease.last = now
	if !l.lease.armed {
		l.lease.armed = true
		l.lease.timer.Reset(LeaseIdle)
	}
}

// Lease bounds: the lock on File is let go once no receipt was written
// for LeaseIdle, and at the latest LeaseMax after it was taken; then,
// for LeaseIdle, each receipt lets it go again after its write, as
// without a lease, so that a writer waiting in another process is let
// in even while this one writes without pause.
const (
	LeaseIdle = time.Millisecond
	LeaseMax  = 10 * time.Millisecond
)

// lease is the lock held between appends.
type lease struct {
	timer *time.Timer // runs expire
	armed bool        // timer is set
	since time.Time   // when the lock was taken
	last  time.Time   // when the last receipt was written under it
	open  time.Time   // until then, appends let the lock go (after a cut)
}

// expire lets the lease go when it is idle or has run LeaseMax, else
// sets the timer again.
func (l *Log) expire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lease.armed = false
	if !l.locked || l.f == nil {
		return
	}
	now := time.Now()
	idle, cut := l.lease.last.Add(LeaseIdle).Sub(now), l.lease.since.Add(LeaseMax).Sub(now)
	switch {
	case cut <= 0:
		l.unlock()
		l.lease.open = now.Add(LeaseIdle)
	case idle <= 0:
		l.unlock()
	default:
		l.lease.armed = true
		l.lease.timer.Reset(min(idle, cut))
	}
}

// rotate renames the locked File after its first record's seq and starts
// a new one, locked in its place.
func (l *Log) rotate() error {
	if err := l.f.Sync(); err != nil {
		return err
	}
	name := rotatedName(l.firstSeq())
	if _, err := l.root.Lstat(name); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("rotate: %s exists", name)
	}
	if err := l.root.Rename(File, name); err != nil {
		return err
	}
	// The new file is locked before the old one is let go: a writer
	// waiting on the old one then finds File replaced and waits on the
	// new one for this append.
	old := l.f
	err := l.openFile()
	if err == nil {
		if err = lockFile(l.f, l.opts.LockWait); err != nil {
			l.f.Close()
		}
	}
	unlockFile(old)
	old.Close()
	if err != nil {
		l.f, l.id, l.size = nil, nil, -1
		return err
	}
	l.locked, l.lease.since = true, time.Now()
	l.size = 0
	if fi, err := l.f.Stat(); err == nil && fi.Size() != 0 {
		// Another process made File between the rename and the open; it
		// waits for this lock and then reads what is written here.
		if err := l.catchUp(fi.Size()); err != nil {
			return err
		}
	}
	if d, err := l.root.Open("."); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// syncLoop syncs what was written, every SyncInterval (FsyncBatch).
func (l *Log) syncLoop() {
	defer close(l.done)
	t := time.NewTicker(SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.sync()
		}
	}
}

func (l *Log) sync() {
	l.mu.Lock()
	f := l.f
	dirty := l.dirty
	l.dirty = false
	l.mu.Unlock()
	if dirty && f != nil {
		_ = f.Sync() // a file closed since (rotated: synced first) says so harmlessly
	}
}

// Close syncs and closes the log; later appends fail. It may be called
// more than once.
func (l *Log) Close() error {
	if l.stop != nil {
		l.stopOnce.Do(func() { close(l.stop) })
		<-l.done
	}
	l.lease.timer.Stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	var err error
	if l.f != nil {
		l.unlock()
		err = errors.Join(l.f.Sync(), l.f.Close())
		l.f = nil
	}
	if l.root != nil {
		err = errors.Join(err, l.root.Close())
		l.root = nil
	}
	return err
}
