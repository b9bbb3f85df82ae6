package testkit

import (
	"net"
	"testing"
)

// ResettingAddr is a loopback host:port that resets every connection it
// is offered, until the test ends: an address where no server answers. A
// port merely closed could be bound again by another test's server (tests
// of other packages run beside this one) before it is dialled; this one
// stays the test's.
func ResettingAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // a reset, not an orderly close
			}
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return ln.Addr().String()
}
