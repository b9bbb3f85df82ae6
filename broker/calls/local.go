package calls

import (
	"github.com/airlock/airlock/executors"
)

// Local is the broker's own executors as a routing source.
type Local struct{ Table *executors.Table }

// Lookup finds an admitted program; the program itself answers the call,
// so the table is read once per call.
func (l Local) Lookup(id string) (Route, bool) {
	p, ok := l.Table.Get(id)
	if !ok {
		return Route{}, false
	}
	return Route{Descriptor: p.Admitted(), Executor: LocalExecutor, To: p, Module: p.ModuleSHA256()}, true
}

// Routes lists what the local executors admitted.
func (l Local) Routes() []Route {
	ps := l.Table.Programs()
	out := make([]Route, len(ps))
	for i, p := range ps {
		out[i] = Route{Descriptor: p.Admitted(), Executor: LocalExecutor, To: p, Module: p.ModuleSHA256()}
	}
	return out
}
