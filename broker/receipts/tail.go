package receipts

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// Tail returns the last n complete records of files (in chain order),
// oldest first; a torn final line is left out.
func Tail(files []string, n int) ([][]byte, error) {
	var out [][]byte
	for i := len(files) - 1; i >= 0 && len(out) < n; i-- {
		data, err := os.ReadFile(files[i])
		if err != nil {
			return nil, err
		}
		if end := bytes.LastIndexByte(data, '\n'); end >= 0 {
			data = data[:end]
		} else {
			continue
		}
		lines := bytes.Split(data, []byte("\n"))
		take := min(n-len(out), len(lines))
		out = append(append([][]byte{}, lines[len(lines)-take:]...), out...)
	}
	return out, nil
}

// Human is a record on one line for a person: seq, time, kind, and the
// members it has.
func (r *Record) Human() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s %s", r.Seq, r.Time.UTC().Format("2006-01-02T15:04:05.000Z"), r.Kind)
	if r.Kind == KindCall {
		fmt.Fprintf(&b, " %s %s %s/%s %s %s", r.Door, orDash(r.Executor), r.Descriptor, r.Tool, r.CallID, r.Outcome)
		if r.DurationMs != nil {
			fmt.Fprintf(&b, " %.3fms", *r.DurationMs)
		}
		return b.String()
	}
	fmt.Fprintf(&b, " %s", r.ID)
	if r.Module != "" {
		fmt.Fprintf(&b, " module %s", r.Module)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
