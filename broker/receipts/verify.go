package receipts

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Report is what Verify found in a chain that holds.
type Report struct {
	Files   int
	Records int
	// Last is the seq of the last complete record and Head its line's
	// hash: what the next record's prev will be. Keeping Head somewhere
	// else (a ticket, another machine) is what makes the last records
	// tamper-evident too: the chain proves every record before its head.
	Last uint64
	Head string
	// Torn, when not empty, notes a final line without its newline in
	// the last file: a crash mid-write, accepted, not tampering.
	Torn string
}

// Broken is the first record that does not continue the chain, with
// where it is (its file and 1-based line) and why. It wraps ErrBroken.
type Broken struct {
	File string
	Line int
	Why  string
}

func (b *Broken) Error() string { return fmt.Sprintf("%s:%d: %s", b.File, b.Line, b.Why) }

// Unwrap lets errors.Is find ErrBroken.
func (b *Broken) Unwrap() error { return ErrBroken }

// Verify checks the chain across files, in the order given (Files' order
// for a data directory): the first record chains from Genesis with seq 1,
// and every record's seq is one past the last and its prev the SHA-256 of
// the last record's line. The first record that breaks this is returned
// as a *Broken: a changed record shows at itself or at the next (whose
// prev no longer matches), a removed or reordered one at the record after
// the gap. A final line without its newline in the last file is a torn
// write, noted in the report and accepted; anywhere else it is a break.
func Verify(files []string) (Report, error) {
	v := verifier{prev: Genesis}
	for i, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return v.report, err
		}
		err = v.file(name, f, i == len(files)-1)
		f.Close()
		if err != nil {
			return v.report, err
		}
		v.report.Files++
	}
	v.report.Last, v.report.Head = v.seq, v.prev
	return v.report, nil
}

// VerifyReader checks one file's worth of records from r as Verify does,
// r being the last file (a torn final line is a note).
func VerifyReader(name string, r io.Reader) (Report, error) {
	v := verifier{prev: Genesis}
	err := v.file(name, r, true)
	v.report.Files = 1
	v.report.Last, v.report.Head = v.seq, v.prev
	return v.report, err
}

type verifier struct {
	seq    uint64
	prev   string
	report Report
}

func (v *verifier) file(name string, r io.Reader, last bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(line) > MaxLineBytes {
				return &Broken{name, n, fmt.Sprintf("a line over %d bytes is not a record", MaxLineBytes)}
			}
			var more []byte
			more, err = br.ReadSlice('\n')
			line = append(append([]byte{}, line...), more...)
		}
		if err == io.EOF {
			if len(line) == 0 {
				return nil
			}
			if !last {
				return &Broken{name, n, "a record without its line end, in a file that is not the last"}
			}
			v.report.Torn = fmt.Sprintf("%s:%d: a torn final record (%d bytes without a line end), as a crash mid-write leaves; accepted", name, n, len(line))
			return nil
		}
		if err != nil {
			return err
		}
		if err := v.record(line[:len(line)-1]); err != "" {
			return &Broken{name, n, err}
		}
	}
}

// record checks one line (without its newline) and moves the chain on;
// it returns why the line breaks the chain, or "".
func (v *verifier) record(line []byte) string {
	if len(line) > MaxLineBytes {
		return fmt.Sprintf("a line over %d bytes is not a record", MaxLineBytes)
	}
	var h head
	if err := jsonUnmarshal(line, &h); err != nil || h.Seq == nil || h.Prev == nil {
		return "not a record (changed, or not written by the receipt log)"
	}
	switch want := v.seq + 1; {
	case *h.Seq < want:
		return fmt.Sprintf("seq %d after seq %d: a record repeated or moved", *h.Seq, v.seq)
	case *h.Seq > want && v.seq == 0:
		return fmt.Sprintf("the chain starts at seq %d: records 1 to %d are missing", *h.Seq, *h.Seq-1)
	case *h.Seq > want:
		return fmt.Sprintf("seq %d after seq %d: records %d to %d are missing", *h.Seq, v.seq, want, *h.Seq-1)
	}
	if *h.Prev != v.prev {
		if v.seq == 0 {
			return "prev is not the genesis value"
		}
		return fmt.Sprintf("prev does not match seq %d's hash: that record was changed, or this one moved", v.seq)
	}
	v.seq, v.prev = *h.Seq, lineHash(line)
	v.report.Records++
	return ""
}

// jsonUnmarshal decodes one JSON value that must fill line entirely.
func jsonUnmarshal(line []byte, v any) error { return json.Unmarshal(line, v) }
