package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock/airlock/config/filecheck"
	"github.com/airlock/airlock/config/plugincfg"
	"github.com/airlock/airlock/config/watch"
	"github.com/airlock/airlock/executors"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/metrics"
	"github.com/airlock/airlock/plugins/signing"
)

// Where a plugin folder came from.
const (
	OriginBuiltin = "builtin" // embedded in the binary
	OriginPlugins = "plugins" // the operator's plugins folder
)

// Admission refusal reasons found by the catalog itself; the executors add
// theirs (compile-failed, imports-refused, root-unmapped, schema-invalid,
// schema-too-complex, abi-invalid, memory-invalid). Together they are the closed set of the
// `reason` label.
const (
	ReasonDescriptorInvalid = executors.ReasonDescriptorInvalid
	ReasonModuleMissing     = "module-missing"
	ReasonHashMismatch      = "hash-mismatch"
	// With a trust policy (signing.Policy), a plugin of the plugins folder
	// without plugin.sigstore.json, with one that does not verify, or
	// signed by a key the policy does not trust for its id.
	ReasonSignatureMissing = "signature-missing"
	ReasonSignatureInvalid = "signature-invalid"
	ReasonSignerNotTrusted = "signer-not-trusted"
)

// Reasons is every admission refusal reason.
var Reasons = []string{
	ReasonDescriptorInvalid, ReasonModuleMissing, ReasonHashMismatch,
	ReasonSignatureMissing, ReasonSignatureInvalid, ReasonSignerNotTrusted,
	executors.ReasonCompileFailed, executors.ReasonImportsRefused, executors.ReasonRootUnmapped,
	executors.ReasonSchemaInvalid, executors.ReasonSchemaTooComplex, executors.ReasonABIInvalid,
	executors.ReasonMemoryInvalid,
}

// Options configure a Catalog.
type Options struct {
	Runtime *executors.Runtime
	Table   *executors.Table // where admitted programs are put
	Dir     string           // the plugins folder; "" for none
	Builtin fs.FS            // bundled plugin folders; nil for none
	Logger  *slog.Logger
	Metrics *metrics.Registry // nil counts into a private registry (metrics.OrNew)
	// Trust is the operator's trust policy; nil admits unsigned plugins.
	// SetTrust replaces it.
	Trust *signing.Policy
	// Background makes the first scan list a plugin once the checks that
	// need no compilation pass and compile its module after the scan: a
	// module compilation refuses is then refused and withdrawn, and the
	// listeners run again. Without it, and at every later scan, a scan
	// compiles each module before it lists it, so a plugin added or
	// changed while the broker runs is listed, or replaces its old
	// version, only once it is ready. See executors/RATIONALE.md, "Why
	// are tools listed before their modules compile?".
	Background bool
}

// Catalog admits plugin folders into a Table and keeps them in step with
// the folders. Scans are serialized; calls never wait for a scan because
// they only read the Table (with Options.Background, a call may wait for
// its own module's compilation, within its time bound).
type Catalog struct {
	opts      Options
	mu        sync.Mutex // serializes Scan; guards entries, listeners and trust
	trust     *signing.Policy
	entries   map[string]*entry
	listeners []func()
	statuses  atomic.Pointer[[]wire.PluginStatus]
	retiring  sync.WaitGroup // programs closing after retirement
	compiling sync.WaitGroup // whenCompiled goroutines
	pending   int            // modules compiling in the background; guarded by mu
	closed    bool           // Close has begun; guarded by mu
	scanned   bool           // a scan has run; guarded by mu
	// abandon ends the retirement waits when Close's context ends.
	abandon   context.Context
	abandoned context.CancelFunc
	watcher   *watch.Watcher
}

type entry struct {
	status      wire.PluginStatus
	fingerprint string
	program     *executors.Program // nil when refused
	// settled is closed once a background compilation's outcome is in
	// status; nil when there was none.
	settled chan struct{}
}

// New builds a Catalog; call Scan to admit, Watch to follow changes.
func New(opts Options) (*Catalog, error) {
	if opts.Dir != "" {
		info, err := os.Stat(opts.Dir)
		if err != nil || !info.IsDir() {
			return nil, fmt.Errorf("%w: %s", ErrNoPluginsDir, opts.Dir)
		}
	}
	opts.Metrics = metrics.OrNew(opts.Metrics)
	for _, r := range Reasons { // at zero from the first scrape
		opts.Metrics.PluginAdmissionErr.WithLabelValues(r)
	}
	c := &Catalog{opts: opts, entries: map[string]*entry{}, trust: opts.Trust}
	c.abandon, c.abandoned = context.WithCancel(context.Background())
	c.statuses.Store(&[]wire.PluginStatus{})
	return c, nil
}

// SetTrust replaces the trust policy (nil: none) for the scans to come;
// a scan after a change checks every plugin again.
func (c *Catalog) SetTrust(p *signing.Policy) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trust = p
}

// OnChange registers fn to run after every scan that changed what is
// admitted (a paired environment re-sends its catalog).
func (c *Catalog) OnChange(fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.listeners = append(c.listeners, fn)
}

// Statuses is every plugin folder of the last scan, sorted by id.
func (c *Catalog) Statuses() []wire.PluginStatus { return *c.statuses.Load() }

// source is one plugin folder to consider.
type source struct {
	fsys   fs.FS
	origin string
}

// Scan looks at every plugin folder once: new or changed folders are
// admitted (or refused), removed folders are retired. A folder whose files
// did not change is not looked at again.
func (c *Catalog) Scan(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	found := c.folders()
	changed := false
	for id, src := range found {
		if c.consider(ctx, id, src) {
			changed = true
		}
	}
	for id, e := range c.entries {
		if _, ok := found[id]; !ok {
			c.retire(id, e)
			delete(c.entries, id)
			c.opts.Logger.Info("plugin retired", "plugin", id, "origin", e.status.Origin)
			changed = true
		}
	}
	c.publish()
	if changed {
		for _, fn := range c.listeners {
			fn()
		}
	}
	if changed || !c.scanned {
		c.allCompiled()
	}
	c.scanned = true
}

// background reports whether this scan compiles in the background: only
// the first does, when start-up is what an agent's host is waiting on.
func (c *Catalog) background() bool { return c.opts.Background && !c.scanned }

// allCompiled logs "plugins compiled" when a background catalog has no
// module left to compile: a script (or a test) that wants every call to
// run at once, not wait for its module, waits for that line.
func (c *Catalog) allCompiled() {
	if !c.opts.Background || c.pending > 0 || c.closed {
		return
	}
	admitted := 0
	for _, e := range c.entries {
		if e.program != nil {
			admitted++
		}
	}
	c.opts.Logger.Info("plugins compiled", "plugins", admitted)
}

// folders lists plugin folders by id. The operator's folder wins over a
// bundled plugin of the same id, so a newer version can be dropped in.
// Hidden folders (".name") are skipped so a copy can be staged beside the
// live plugins and renamed into place.
func (c *Catalog) folders() map[string]source {
	found := map[string]source{}
	add := func(fsys fs.FS, origin string) {
		ents, err := fs.ReadDir(fsys, ".")
		if err != nil {
			c.opts.Logger.Warn("plugins folder unreadable", "origin", origin, "err", err)
			return
		}
		for _, d := range ents {
			if strings.HasPrefix(d.Name(), ".") {
				continue
			}
			if info, err := fs.Stat(fsys, d.Name()); err != nil || !info.IsDir() {
				continue
			}
			found[d.Name()] = source{fsys, origin}
		}
	}
	if c.opts.Builtin != nil {
		add(c.opts.Builtin, OriginBuiltin)
	}
	if c.opts.Dir != "" {
		add(filecheck.Dir(c.opts.Dir), OriginPlugins)
	}
	return found
}

// consider admits or refuses the folder id unless it is unchanged since
// the last scan, and reports whether what is admitted changed.
func (c *Catalog) consider(ctx context.Context, id string, src source) bool {
	fp := fingerprint(src.fsys, id)
	if c.trust != nil {
		fp += "|trust:" + c.trust.Digest()
	}
	old := c.entries[id]
	if old != nil && old.fingerprint == fp && old.status.Origin == src.origin {
		return false
	}
	e := &entry{fingerprint: fp, status: wire.PluginStatus{ID: id, Origin: src.origin}}
	if src.origin == OriginPlugins {
		var serr error
		if e.status.Source, serr = ReadSource(src.fsys, id); serr != nil {
			c.opts.Logger.Warn("plugin source record unreadable; no source shown", "plugin", id, "err", serr)
		}
	}
	prog, m, signer, err := c.admit(ctx, id, src, e.status.Source)
	e.status.Version = m.Version
	if err == nil {
		e.status.Signer = signer
	}
	if err != nil {
		e.status.Reason, e.status.Detail = Reason(err), err.Error()
		c.refused(e.status)
	} else {
		e.program = prog
		e.status.Admitted = true
		if prev := c.opts.Table.Put(prog); prev != nil && (old == nil || prev != old.program) {
			c.closeLater(prev)
		}
		c.opts.Logger.Info("plugin admitted", "plugin", id, "origin", src.origin, "version", m.Version, "tools", len(m.Tools),
			"signer", signer.String())
		if c.background() {
			e.settled = make(chan struct{})
			c.pending++
			c.compiling.Add(1)
			go c.whenCompiled(id, e, time.Now())
		}
	}
	if old != nil && old.program != nil {
		if e.program == nil {
			c.opts.Table.Remove(id)
		}
		c.closeLater(old.program)
	}
	c.entries[id] = e
	return (old != nil && old.program != nil) || e.program != nil
}

// whenCompiled waits for the background compilation of e's program and
// logs it, or refuses the plugin by name when compilation refused its
// module: the program is withdrawn and the listeners run. An entry
// replaced or retired meanwhile is left to whoever did that.
func (c *Catalog) whenCompiled(id string, e *entry, since time.Time) {
	defer c.compiling.Done()
	defer close(e.settled)
	err := e.program.Ready(context.Background()) // ends when compiled or retired
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending--
	defer c.allCompiled()
	if c.entries[id] != e || errors.Is(err, executors.ErrRetired) {
		return
	}
	if err == nil {
		c.opts.Logger.Info("plugin compiled", "plugin", id, "ms", time.Since(since).Milliseconds())
		return
	}
	e.status.Admitted, e.status.Signer = false, nil
	e.status.Reason, e.status.Detail = Reason(err), err.Error()
	c.refused(e.status)
	c.retire(id, e)
	e.program = nil
	c.publish()
	for _, fn := range c.listeners {
		fn()
	}
}

// WaitCompiled waits until the modules of the scans so far are compiled
// and their outcomes are in Statuses (a Background catalog), or ctx ends.
func (c *Catalog) WaitCompiled(ctx context.Context) error {
	c.mu.Lock()
	var pending []chan struct{}
	for _, e := range c.entries {
		if e.settled != nil {
			pending = append(pending, e.settled)
		}
	}
	c.mu.Unlock()
	for _, ch := range pending {
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// admit reads, checks and loads one folder, which must declare its own
// name as id: as LoadFolder does, with its signature checked between the
// reading and the loading, so that a plugin the trust policy refuses is
// never compiled. The admitted descriptor carries the signer and where
// the folder was pulled from (pulled), so /v1/tools and MCP show both.
func (c *Catalog) admit(ctx context.Context, id string, src source, pulled *wire.PluginSource) (*executors.Program, Manifest, *wire.Signer, error) {
	m, module, err := ReadFolder(src.fsys, id, id)
	if err != nil {
		return nil, m, nil, err
	}
	signer, err := c.signature(src, id, m)
	if err != nil {
		return nil, m, nil, err
	}
	d := m.Descriptor()
	d.Signer, d.Source = signer, pulled
	prog, err := load(ctx, c.opts.Runtime, m, d, module, c.background())
	if err == nil {
		checkConfig(c.opts.Logger, id, prog.ConfigNames(), c.opts.Runtime.PluginConfig())
	}
	return prog, m, signer, err
}

// LoadFolder reads the plugin folder dir of fsys ("." for fsys itself)
// with ReadFolder and loads its module into rt with Admit. It is the one
// admission path: the catalog, `airlock build` and `airlock run` all go
// through it, so a plugin that passes one passes the others. Errors map
// onto Reasons with Reason.
func LoadFolder(ctx context.Context, rt *executors.Runtime, fsys fs.FS, dir, id string) (*executors.Program, Manifest, error) {
	m, module, err := ReadFolder(fsys, dir, id)
	if err != nil {
		return nil, m, err
	}
	prog, err := Admit(ctx, rt, m, module)
	return prog, m, err
}

// ReadFolder reads and checks the plugin folder dir of fsys as the catalog
// does before admitting it: plugin.json and the module it names, each a
// regular file and no link, within its bound (filecheck.Read), the
// descriptor's fields, and the id when id is not "". The hash is Admit's.
func ReadFolder(fsys fs.FS, dir, id string) (Manifest, []byte, error) {
	m, _, module, err := readFolder(fsys, dir, id)
	return m, module, err
}

// CheckFolder is ReadFolder and Admit's hash check: everything admission
// checks short of loading the module. It also returns plugin.json's bytes
// as written, for a copy that must keep them (a registry push).
func CheckFolder(fsys fs.FS, dir, id string) (m Manifest, manifest, module []byte, err error) {
	m, manifest, module, err = readFolder(fsys, dir, id)
	if err == nil {
		err = checkHash(m, module)
	}
	return m, manifest, module, err
}

func readFolder(fsys fs.FS, dir, id string) (Manifest, []byte, []byte, error) {
	data, err := filecheck.Read(fsys, path.Join(dir, ManifestName), MaxManifestBytes)
	if err != nil {
		return Manifest{}, nil, nil, refusal(ReasonDescriptorInvalid, err)
	}
	m, err := ParseManifestFile(path.Join(dir, ManifestName), data)
	if err != nil {
		return m, nil, nil, refusal(ReasonDescriptorInvalid, err)
	}
	if id != "" && m.ID != id {
		return m, nil, nil, refusal(ReasonDescriptorInvalid, fmt.Errorf("id %q does not match its folder name", m.ID))
	}
	module, err := filecheck.Read(fsys, path.Join(dir, m.Module), MaxModuleBytes)
	if err != nil {
		return m, nil, nil, refusal(ReasonModuleMissing, fmt.Errorf("module %s: %w", m.Module, err))
	}
	return m, data, module, nil
}

// Admit checks module against m's sha256 and loads it into rt for m's
// descriptor (compiling it and checking its imports, style, memory,
// schemas and roots).
func Admit(ctx context.Context, rt *executors.Runtime, m Manifest, module []byte) (*executors.Program, error) {
	return load(ctx, rt, m, m.Descriptor(), module, false)
}

// load is Admit for d, m's descriptor with what the catalog adds (the
// signer); with background, the module is still compiling when it
// returns (executors.Runtime.Prepare).
func load(ctx context.Context, rt *executors.Runtime, m Manifest, d wire.Descriptor, module []byte, background bool) (*executors.Program, error) {
	if err := checkHash(m, module); err != nil {
		return nil, err
	}
	opts := []executors.LoadOption{executors.WithConfig(m.Config), executors.WithModuleHash(m.SHA256)}
	if background {
		return rt.Prepare(ctx, d, module, opts...)
	}
	return rt.Load(ctx, d, module, opts...)
}

// checkHash refuses a module whose SHA-256 is not m's sha256.
func checkHash(m Manifest, module []byte) error {
	if HashModule(module) != m.SHA256 {
		return refusal(ReasonHashMismatch, errors.New("the module's SHA-256 does not match plugin.json"))
	}
	return nil
}

// checkConfig tells the operator, by name only, which values a plugin
// declares that are not set (config_get answers not found) and which set
// values it does not declare (it can never read them: a typo, or a
// plugin that changed).
func checkConfig(logger *slog.Logger, id string, declared []string, values *plugincfg.Values) {
	set := values.Names(id)
	var unset, unread []string
	for _, n := range declared {
		if !slices.Contains(set, n) {
			unset = append(unset, n)
		}
	}
	for _, n := range set {
		if !slices.Contains(declared, n) {
			unread = append(unread, n)
		}
	}
	if len(unset) > 0 {
		logger.Warn("plugin declares config names the operator did not set; config_get answers them not found",
			"plugin", id, "names", unset)
	}
	if len(unread) > 0 {
		logger.Warn("plugin_config sets names the plugin does not declare; it cannot read them",
			"plugin", id, "names", unread)
	}
}

// CheckConfig runs checkConfig for every admitted plugin against the
// runtime's values now (after they were re-read).
func (c *Catalog) CheckConfig() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, e := range c.entries {
		if e.program != nil {
			checkConfig(c.opts.Logger, id, e.program.ConfigNames(), c.opts.Runtime.PluginConfig())
		}
	}
}

// refused logs and counts a refusal.
func (c *Catalog) refused(s wire.PluginStatus) {
	c.opts.Logger.Warn("plugin refused", "plugin", s.ID, "origin", s.Origin, "reason", s.Reason, "detail", s.Detail)
	c.opts.Metrics.PluginAdmissionErr.WithLabelValues(metrics.LabelIn(s.Reason, Reasons...)).Inc()
}

// retire removes an entry's program from the table.
func (c *Catalog) retire(id string, e *entry) {
	if e.program == nil {
		return
	}
	if cur, ok := c.opts.Table.Get(id); ok && cur == e.program {
		c.opts.Table.Remove(id)
	}
	c.closeLater(e.program)
}

// retireGrace bounds how long the catalog waits for a retired program's
// in-flight calls; past it they run on, and the runtime's Close cancels
// any still running.
const retireGrace = time.Minute

// closeLater closes a retired program once its in-flight calls finish.
func (c *Catalog) closeLater(p *executors.Program) {
	c.retiring.Add(1)
	go func() {
		defer c.retiring.Done()
		ctx, cancel := context.WithTimeout(c.abandon, retireGrace)
		defer cancel()
		_ = p.Close(ctx)
	}()
}

// publish stores the statuses of this scan and sets the gauge.
func (c *Catalog) publish() {
	list := make([]wire.PluginStatus, 0, len(c.entries))
	admitted := 0
	for _, e := range c.entries {
		list = append(list, e.status)
		if e.status.Admitted {
			admitted++
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	c.statuses.Store(&list)
	c.opts.Metrics.PluginsAdmitted.Set(float64(admitted))
}

// Close stops watching, retires every program and waits for their
// in-flight calls. If ctx ends first it stops waiting (each program is
// then released by its last call, which the runtime's Close forces) and
// returns ctx's cause once its own goroutines have ended (RATIONALE.md, "What
// does Close do when its context ends?").
func (c *Catalog) Close(ctx context.Context) error {
	c.stopWatching()
	c.mu.Lock()
	c.closed = true
	for id, e := range c.entries {
		c.retire(id, e)
	}
	c.entries = map[string]*entry{}
	c.publish()
	c.mu.Unlock()
	done := make(chan struct{})
	go func() { c.compiling.Wait(); c.retiring.Wait(); close(done) }()
	select {
	case <-done:
		c.abandoned()
		return nil
	case <-ctx.Done():
	}
	c.abandoned()
	<-done
	return fmt.Errorf("plugins: close: %w", context.Cause(ctx))
}

// fingerprint identifies a folder's content cheaply: the manifest's bytes,
// the module's size and modification time and the source record's bytes.
// A change to any makes the folder be considered again.
func fingerprint(fsys fs.FS, id string) string {
	h := sha256.New()
	data, err := filecheck.Read(fsys, id+"/"+ManifestName, MaxManifestBytes)
	if err != nil {
		return "unreadable:" + err.Error()
	}
	h.Write(data)
	if sig, err := filecheck.Read(fsys, id+"/"+signing.BundleName, signing.MaxBundleBytes); err == nil {
		h.Write([]byte("|sig|"))
		h.Write(sig)
	}
	if m, err := ParseManifest(data); err == nil {
		if info, err := fs.Stat(fsys, id+"/"+m.Module); err == nil {
			fmt.Fprintf(h, "|%d|%d", info.Size(), info.ModTime().UnixNano())
		}
	}
	if src, err := filecheck.Read(fsys, id+"/"+SourceName, maxSourceBytes); err == nil {
		h.Write([]byte("|"))
		h.Write(src)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// admissionRefusal carries a catalog-level reason.
type admissionRefusal struct {
	reason string
	err    error
}

func (e *admissionRefusal) Error() string { return e.err.Error() }
func (e *admissionRefusal) Unwrap() error { return e.err }

func refusal(reason string, err error) error { return &admissionRefusal{reason, err} }

// Refused reports the catalog-level reason of err (ReadFolder's,
// Admit's hash check, a signature's) and whether it is one.
func Refused(err error) (string, bool) {
	var r *admissionRefusal
	if errors.As(err, &r) {
		return r.reason, true
	}
	return "", false
}

// Reason maps an admission error of LoadFolder or Admit onto the closed
// set of Reasons.
func Reason(err error) string {
	var r *admissionRefusal
	if errors.As(err, &r) {
		return r.reason
	}
	var a *executors.AdmissionError
	if errors.As(err, &a) {
		return a.Reason
	}
	return executors.ReasonCompileFailed
}
