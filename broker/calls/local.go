package calls

import (
	"github.com/airlock/airlock/executors"
)

// Local is the broker's own executors as a routing source.
type Local struct{ Table *executors.Table }

// Lookup finds an admitted descriptor; the table itself is the door (it
// refuses unattributed calls and runs the rest).
func (l Local) Lookup(id string) (Route, bool) {
	p, ok := l.Table.Get(id)
	if !ok {
		return Route{}, false
	}
	return Route{Descriptor: p.Descriptor(), Executor: "local", Door: l.Table}, true
}

// Routes lists what the local executors admitted.
func (l Local) Routes() []Route {
	ds := l.Table.Descriptors()
	out := make([]Route, len(ds))
	for i, d := range ds {
		out[i] = Route{Descriptor: d, Executor: "local", Door: l.Table}
	}
	return out
}
