package calls

import (
	"context"

	"github.com/airlock/airlock/broker/receipts"
)

type doorKey struct{}

// WithDoor marks ctx with the door a call came in by (receipts.DoorV1,
// DoorMCPStdio, DoorMCPHTTP): each door sets it once, where it builds the
// call, and the router's receipt reads it.
func WithDoor(ctx context.Context, door string) context.Context {
	return context.WithValue(ctx, doorKey{}, door)
}

// DoorOf is the door ctx was marked with, or receipts.DoorOther.
func DoorOf(ctx context.Context) string {
	if d, ok := ctx.Value(doorKey{}).(string); ok {
		return d
	}
	return receipts.DoorOther
}
