package localclienttest

import (
	"testing"

	"go.uber.org/goleak"
)

// The churn is exercised against a real broker by broker/session's and
// cmd/airlock's hammer tests; this package keeps the leak gate every
// package has.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
