package main

import (
	"testing"

	"go.uber.org/goleak"
)

// The command's own unit tests; its end-to-end suite is cmd/airlock/e2e.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
