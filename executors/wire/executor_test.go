package wire

import (
	"context"
	"encoding/json"
	"testing"
)

func TestContain(t *testing.T) {
	c := Call{V: 1, CallID: "mine", Tool: "t", DescriptorID: "d"}
	boom := ExecutorFunc(func(context.Context, Call) Answer { panic("bug") })
	a, panicked := Contain(context.Background(), boom, c)
	if panicked == nil || a.Refused != ExecThrew || a.CallID != "mine" || a.V != Version {
		t.Fatalf("panic: %+v, %v", a, panicked)
	}
	foreign := ExecutorFunc(func(context.Context, Call) Answer {
		return Observed("someone-else", json.RawMessage(`{}`), nil)
	})
	a, panicked = Contain(context.Background(), foreign, c)
	if panicked != nil || !a.OK || a.CallID != "mine" {
		t.Fatalf("the answer must carry the call's own callId: %+v, %v", a, panicked)
	}
}
