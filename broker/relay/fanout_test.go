package relay

import (
	"testing"

	"github.com/airlock/airlock/broker/contract"
)

// TestFanoutFollowsJoinsAndLeaves: host state reaches exactly the views
// registered, whichever of them left (first, middle, last) or was dropped
// as a slow consumer, and the fan-out slice stays in step with the map.
func TestFanoutFollowsJoinsAndLeaves(t *testing.T) {
	h := newHub(false)
	host := join(t, h, contract.Host, 0)
	var views []*peer
	for range 6 {
		views = append(views, join(t, h, contract.View, 0))
	}
	slow := join(t, h, contract.View, 2) // room for two of the three states below
	host.box.take(t)
	for _, v := range append(views, slow) {
		v.box.take(t)
	}
	h.Leave(views[0].m) // the first joined
	h.Leave(views[5].m) // the last of these
	h.Leave(views[2].m) // one in the middle
	host.box.take(t)
	seq := int64(0)
	for round := range 3 {
		seq++
		if r := host.send("focusNode", map[string]any{"n": round}, seq); r != nil {
			t.Fatal(r)
		}
	}
	for i, v := range views {
		switch i {
		case 0, 2, 5:
			v.got()
		default:
			v.got("focusNode", "focusNode", "focusNode")
		}
	}
	if !slow.box.closed || slow.box.code != contract.CloseTryAgainLater {
		t.Fatalf("the slow view was not dropped: closed %v code %d", slow.box.closed, slow.box.code)
	}
	checkFanout(t, h, 3)
	v := join(t, h, contract.View, 0) // a slot freed by a leave is reused cleanly
	v.box.take(t)
	seq++
	host.send("focusNode", map[string]any{}, seq)
	v.got("focusNode")
	checkFanout(t, h, 4)
	h.Close(contract.CloseGoingAway, contract.ReasonGoingAway)
	checkFanout(t, h, 0)
}

// checkFanout wants the fan-out slice to hold exactly the map's views,
// each at its own slot.
func checkFanout(t *testing.T, h *Hub, want int) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.fanout) != want || len(h.views) != want {
		t.Fatalf("fan-out %d, views %d, want %d", len(h.fanout), len(h.views), want)
	}
	for i, m := range h.fanout {
		if m.slot != i || h.views[m.id] != m {
			t.Fatalf("fan-out slot %d holds a view at slot %d (registered: %v)", i, m.slot, h.views[m.id] == m)
		}
	}
}
