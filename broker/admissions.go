package broker

import (
	"sync"

	"github.com/airlock/airlock/broker/receipts"
	"github.com/airlock/airlock/executors"
)

// admissions writes a receipt of each change to the local plugins: a
// plugin admitted, admitted again (a new program under its id: its folder
// changed) or retired. It compares the executors' table with what it saw
// the last time, so it follows every scan (the watcher's, SIGHUP's)
// without a hook inside the catalog.
type admissions struct {
	log   *receipts.Log
	table *executors.Table

	mu   sync.Mutex
	seen map[string]*executors.Program
}

// sync records what changed since the last call; the first records every
// plugin admitted at start.
func (a *admissions) sync() {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := map[string]*executors.Program{}
	for _, p := range a.table.Programs() {
		id := p.Admitted().DescriptorID
		now[id] = p
		switch old, ok := a.seen[id]; {
		case !ok:
			a.log.Event(receipts.KindPluginAdmitted, id, p.Admitted().SHA256)
		case old != p:
			a.log.Event(receipts.KindPluginReadmitted, id, p.Admitted().SHA256)
		}
	}
	for id, p := range a.seen {
		if _, ok := now[id]; !ok {
			a.log.Event(receipts.KindPluginRetired, id, p.Admitted().SHA256)
		}
	}
	a.seen = now
}
