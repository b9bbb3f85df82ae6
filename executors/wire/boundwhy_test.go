package wire

import (
	"strings"
	"testing"
)

// TestBoundWhys: each why a bound decides names the bound's key in
// plugin.json with its value, in that key's unit, and what the call
// reached where it is known.
func TestBoundWhys(t *testing.T) {
	for got, want := range map[string]string{
		OutputWhy(1500, 1000):                "the tool's output was 1500 bytes, over bounds.maxOutputBytes 1000",
		OutputWhy(0, 1000):                   "the tool's output was more than 1000 bytes (bounds.maxOutputBytes)",
		TimeoutWhy(1000):                     "the tool ran past bounds.timeoutMs 1000 ms",
		MemoryWhy(80<<20, 64):                "the tool asked for 80 MiB of memory, over bounds.memoryMiB 64",
		MemoryWhy(64<<20+1, 64):              "the tool asked for 65 MiB of memory, over bounds.memoryMiB 64",
		MemoryWhy(0, 64):                     "the tool needed more memory than bounds.memoryMiB 64",
		BudgetWhy(2):                         "the tool tried fetch 3, over bounds.maxRequests 2",
		UnknownToolWhy("rm_rf", "fx"):        `the descriptor "fx" declares no tool "rm_rf"`,
		UnknownToolWhy("x\u202e\x1by", "fx"): `the descriptor "fx" declares no tool "xy"`,
		ExecTimeout.Why():                    "the tool ran past bounds.timeoutMs",
		OutputTooLarge.Why():                 "the tool's output is over bounds.maxOutputBytes",
		BudgetExhausted.Why():                "the tool made more fetches than bounds.maxRequests",
		HostNotAllowed.Why():                 "the tool fetched a host outside bounds.allowedHosts",
		MemoryExhausted.Why():                "the tool needed more memory than bounds.memoryMiB",
	} {
		if got != want {
			t.Errorf("why %q, want %q", got, want)
		}
	}
	long := UnknownToolWhy(strings.Repeat("t", 128), "fx")
	if want := `the descriptor "fx" declares no tool "` + strings.Repeat("t", maxNameInWhy) + `"`; long != want {
		t.Errorf("a long tool name is not cut: %q", long)
	}
}
