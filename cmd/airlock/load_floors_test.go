package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestFloorCommandsHidden: the floor processes `airlock load` starts from
// this binary are in the command table but not in any help, the list of
// a missing subcommand, or shell completion (internal/load/RATIONALE.md,
// "Why do the load tool's floor processes ship in the command?").
func TestFloorCommandsHidden(t *testing.T) {
	floors := []string{"forwarder", "http-floor", "rtt-echo"}
	root := newRoot()
	for _, name := range floors {
		c, rest, err := root.Find([]string{"load", name})
		if err != nil || len(rest) > 0 || c.Name() != name || !c.Hidden {
			t.Errorf("airlock load %s: want a hidden command, got %v %v", name, c, err)
		}
	}
	for _, args := range [][]string{{"--help"}, {"help"}, {"load", "--help"}, {"help", "load"}, {"load"}, {"__complete", "load", ""}, {"__complete", ""}} {
		var out, errOut strings.Builder
		run(args, &out, &errOut)
		for _, name := range floors {
			// Listed: a line of its own that starts with the name (a command
			// list, a completion), or the name in a list of subcommands.
			listed := regexp.MustCompile(`(?m)^\s*` + name + `\b|, ` + name + `\b`)
			if listed.MatchString(out.String()) || listed.MatchString(errOut.String()) {
				t.Errorf("airlock %s shows %s:\n%s%s", strings.Join(args, " "), name, out.String(), errOut.String())
			}
		}
	}
}
