package mcptest

import (
	"testing"

	"go.uber.org/goleak"
)

// The client is exercised by broker/mcp's tests and cmd/airlock's MCP
// end-to-end tests; this package keeps the leak gate every package has.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
