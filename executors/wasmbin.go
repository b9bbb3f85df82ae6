package executors

import (
	"bytes"
	"fmt"
)

// wazero's CompiledModule lists imported functions and memories but not
// imported tables, globals or tags, nor unexported memories. Admission
// must see all of them, so this reads the two sections it needs straight
// from the binary. It runs after wazero compiled the module, so the binary
// is known to be well formed; errors here still refuse rather than panic.

// Import kinds in the import section.
const (
	kindFunc   = 0
	kindTable  = 1
	kindMemory = 2
	kindGlobal = 3
	kindTag    = 4
)

type wasmImport struct {
	module, name string
	kind         byte
}

// binaryInfo is what admission needs from the binary.
type binaryInfo struct {
	imports []wasmImport
	// minPages is the largest declared minimum of any memory, defined or
	// imported.
	minPages uint64
}

type reader struct {
	b   []byte
	err error
}

func readBinary(b []byte) (binaryInfo, error) {
	var info binaryInfo
	if len(b) < 8 || !bytes.Equal(b[:4], []byte("\x00asm")) {
		return info, ErrBadBinary
	}
	r := &reader{b: b[8:]}
	for len(r.b) > 0 && r.err == nil {
		id := r.u8()
		size := r.u32()
		body := r.take(int(size))
		if r.err != nil {
			break
		}
		sec := &reader{b: body}
		switch id {
		case 2:
			info.imports = sec.imports(&info)
		case 5:
			for n := sec.u32(); n > 0 && sec.err == nil; n-- {
				info.minPages = max(info.minPages, sec.limitsMin())
			}
		}
		if sec.err != nil {
			r.err = sec.err
		}
	}
	if r.err != nil {
		return info, fmt.Errorf("%w: %v", ErrBadBinary, r.err)
	}
	return info, nil
}

func (r *reader) imports(info *binaryInfo) []wasmImport {
	var out []wasmImport
	for n := r.u32(); n > 0 && r.err == nil; n-- {
		imp := wasmImport{module: r.name(), name: r.name(), kind: r.u8()}
		switch imp.kind {
		case kindFunc:
			r.u32()
		case kindTable:
			r.u8()
			r.limitsMin()
		case kindMemory:
			info.minPages = max(info.minPages, r.limitsMin())
		case kindGlobal:
			r.u8()
			r.u8()
		case kindTag:
			r.u8()
			r.u32()
		default:
			r.fail("unknown import kind")
		}
		out = append(out, imp)
	}
	return out
}

// limitsMin reads limits (including the threads and memory64 flag forms)
// and returns the minimum.
func (r *reader) limitsMin() uint64 {
	flags := r.u8()
	if flags > 7 {
		r.fail("unknown limits flags")
		return 0
	}
	mem64 := flags&4 != 0
	read := r.u32as64
	if mem64 {
		read = r.u64
	}
	lo := read()
	if flags&1 != 0 {
		read()
	}
	return lo
}

func (r *reader) name() string { return string(r.take(int(r.u32()))) }

func (r *reader) u8() byte {
	if b := r.take(1); len(b) == 1 {
		return b[0]
	}
	return 0
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail("section runs past the end")
		return nil
	}
	b := r.b[:n]
	r.b = r.b[n:]
	return b
}

func (r *reader) u32() uint32     { return uint32(r.leb(32)) }
func (r *reader) u32as64() uint64 { return r.leb(32) }
func (r *reader) u64() uint64     { return r.leb(64) }

// leb reads an unsigned LEB128 of at most bits bits.
func (r *reader) leb(bits uint) uint64 {
	var v uint64
	for shift := uint(0); shift < bits+7; shift += 7 {
		b := r.u8()
		if r.err != nil {
			return 0
		}
		v |= uint64(b&0x7f) << shift
		if b&0x80 == 0 {
			return v
		}
	}
	r.fail("LEB128 too long")
	return 0
}

func (r *reader) fail(msg string) {
	if r.err == nil {
		r.err = fmt.Errorf("%s", msg)
	}
}
