//go:build wasip1

package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"unsafe"
)

// Host functions of the broker's "airlock" module. See ABI.md.

//go:wasmimport airlock fetch
func hostFetch(req unsafe.Pointer, reqLen uint32) uint32

//go:wasmimport airlock fetch_read
func hostFetchRead(buf unsafe.Pointer, bufLen uint32) uint32

//go:wasmimport airlock log
func hostLog(msg unsafe.Pointer, msgLen uint32)

//go:wasmimport airlock config_get
func hostConfigGet(name unsafe.Pointer, nameLen uint32, buf unsafe.Pointer, bufLen uint32) int32

// Main runs the module as a WASI command: the tool named by argv[0] gets
// stdin as its args, and its result goes to stdout as one JSON object. A
// handler error exits 1: an Errorf error as {"error":"<message>"} on
// stdout (the broker's tool-error convention), any other on stderr.
// Reactor builds never call main, so Main costs nothing there.
func Main() {
	if len(os.Args) == 0 {
		fail(errors.New("sdk: no tool name in argv[0]"))
	}
	args, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail(err)
	}
	out, err := dispatch(os.Args[0], args)
	if msg, ok := callerMessage(err); ok {
		failForCaller(msg)
	}
	if err != nil {
		fail(err)
	}
	if _, err := os.Stdout.Write(append(out, '\n')); err != nil {
		fail(err)
	}
	os.Exit(0)
}

// failForCaller reports a tool error: one JSON object on stdout, exit 1.
func failForCaller(msg string) {
	b, err := json.Marshal(map[string]string{"error": msg})
	if err != nil {
		fail(err)
	}
	os.Stdout.Write(append(b, '\n'))
	os.Exit(1)
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", toolName(), err)
	os.Exit(1)
}

func toolName() string {
	if len(os.Args) == 0 {
		return "tool"
	}
	return os.Args[0]
}

// Fetch performs one HTTP request through the broker. Only hosts in the
// descriptor's allowedHosts are reachable and each call has a request
// budget; a refused or failed fetch ends the whole call (the broker
// answers host-not-allowed, budget-exhausted or fetch-failed), so Fetch
// only returns an error for a request it could not encode or a response
// it could not decode.
func Fetch(r Request) (Response, error) {
	if r.Method == "" {
		r.Method = "GET"
	}
	req, err := json.Marshal(r)
	if err != nil {
		return Response{}, err
	}
	n := hostFetch(unsafe.Pointer(unsafe.SliceData(req)), uint32(len(req)))
	runtime.KeepAlive(req)
	buf := make([]byte, max(n, 1))
	if got := hostFetchRead(unsafe.Pointer(unsafe.SliceData(buf)), n); got != n {
		return Response{}, errors.New("sdk: short fetch response")
	}
	var resp Response
	if err := json.Unmarshal(buf[:n], &resp); err != nil {
		return Response{}, err
	}
	return resp, nil
}

// Log sends one line to the operator's log, tagged with the descriptor
// and tool. The broker bounds lines per call and bytes per line.
func Log(msg string) {
	if msg == "" {
		return
	}
	b := []byte(msg)
	hostLog(unsafe.Pointer(unsafe.SliceData(b)), uint32(len(b)))
	runtime.KeepAlive(b)
}

// Config returns the operator's value of name for this plugin
// (plugin_config.<id>.<name> in the broker's config), and whether it is
// set. Only the names plugin.json lists in "config" can be read: any
// other is not found, and the operator's log says the plugin asked.
// Read it in the handler, not in init or a global: the operator may
// change it (SIGHUP) while a reactor instance lives. Never put it in a
// result, an error or a log line.
func Config(name string) (string, bool) {
	var small [256]byte
	buf := small[:]
	// At most twice: a call's values do not change while it runs.
	for {
		n := hostConfigGet(unsafe.Pointer(unsafe.StringData(name)), uint32(len(name)),
			unsafe.Pointer(unsafe.SliceData(buf)), uint32(len(buf)))
		runtime.KeepAlive(name)
		runtime.KeepAlive(buf)
		if n < 0 {
			return "", false
		}
		if int(n) <= len(buf) {
			return string(buf[:n]), true
		}
		buf = make([]byte, n)
	}
}
