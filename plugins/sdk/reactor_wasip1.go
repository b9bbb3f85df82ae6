//go:build wasip1

package sdk

import (
	"bytes"
	"unsafe"
)

// The reactor exports (see ABI.md). They exist in command builds too but
// the broker only calls them on modules that export _initialize and no
// _start.

// Status bytes that prefix the result of airlock_call.
const (
	statusOK        = 0
	statusError     = 1 // message for the operator's log
	statusToolError = 2 // message for the caller (an Errorf error)
)

var (
	// inputs holds the buffers handed out by airlock_alloc until the
	// next airlock_call, so the GC keeps them (and their addresses) alive.
	inputs [][]byte
	// result holds the last answer until the next call for the same reason.
	result []byte
)

//go:wasmexport airlock_alloc
func airlockAlloc(size int32) int32 {
	if size < 0 {
		return 0
	}
	b := make([]byte, max(size, 1))
	inputs = append(inputs, b)
	return addr(b)
}

//go:wasmexport airlock_call
func airlockCall(toolPtr, toolLen, argsPtr, argsLen int32) int64 {
	tool, okTool := input(toolPtr, toolLen)
	args, okArgs := input(argsPtr, argsLen)
	name, args := string(tool), bytes.Clone(args)
	inputs = nil
	var out []byte
	var err error
	if !okTool || !okArgs {
		err = errBadInput
	} else {
		out, err = dispatch(name, args)
	}
	if msg, ok := callerMessage(err); ok {
		result = append([]byte{statusToolError}, msg...)
	} else if err != nil {
		result = append([]byte{statusError}, err.Error()...)
	} else {
		result = append([]byte{statusOK}, out...)
	}
	return int64(uint32(addr(result)))<<32 | int64(uint32(len(result)))
}

type sdkError string

func (e sdkError) Error() string { return string(e) }

const errBadInput = sdkError("sdk: airlock_call pointers are not inside an airlock_alloc buffer")

// input returns the n bytes at ptr when they lie inside one buffer from
// airlock_alloc; the guest never turns a host-supplied integer into a
// pointer.
func input(ptr, n int32) ([]byte, bool) {
	if n == 0 {
		return nil, true
	}
	for _, b := range inputs {
		start := addr(b)
		if n > 0 && ptr >= start && int64(ptr)+int64(n) <= int64(start)+int64(len(b)) {
			off := ptr - start
			return b[off : off+n], true
		}
	}
	return nil, false
}

func addr(b []byte) int32 { return int32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }
