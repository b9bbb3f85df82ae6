package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/airlock/airlock/broker/v1client"
	"github.com/airlock/airlock/executors/wire"
)

// Remote is a running broker's /v1 API as a Backend (`airlock mcp
// --broker URL`). Its errors say what happened and what to do, in words
// an agent's user can act on (Check, and a call's refusal).
func Remote(c *v1client.Client) Backend { return remoteBackend{c} }

type remoteBackend struct{ c *v1client.Client }

func (b remoteBackend) Descriptors(ctx context.Context) ([]wire.Descriptor, error) {
	ds, err := b.c.Tools(ctx)
	return ds, b.explain(err)
}

func (b remoteBackend) Call(ctx context.Context, c wire.Call) (wire.Answer, error) {
	a, _, err := b.c.Call(ctx, c)
	return a, b.explain(err)
}

// checkTimeout bounds Check: a broker that accepts and never answers is
// as good as gone.
const checkTimeout = 10 * time.Second

// CheckRemote lists c's catalog once, so that `airlock mcp --broker`
// refuses to start, saying why, rather than serve an agent an empty
// list. Its error wraps the client's (*v1client.StatusError for a
// refused token), for the command to pick the exit code.
func CheckRemote(ctx context.Context, c *v1client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	_, err := remoteBackend{c}.Descriptors(ctx)
	return err
}

// explain says which of three things went wrong with the broker, each
// with its fix; nil stays nil. The token never appears: it travels in a
// header, and neither the URL nor the broker's error body holds it.
func (b remoteBackend) explain(err error) error {
	var se *v1client.StatusError
	var ue *url.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se) && (se.Status == http.StatusUnauthorized || se.Status == http.StatusForbidden):
		return &remoteError{err, fmt.Sprintf("the broker at %s refused the launch token (%d %s): give airlock mcp the token that broker was started with, in AIRLOCK_LOCAL_TOKEN or a file named by --token-file",
			b.c.Base, se.Status, http.StatusText(se.Status))}
	case errors.As(err, &se):
		return &remoteError{err, fmt.Sprintf("the broker at %s answered %d %s", b.c.Base, se.Status, http.StatusText(se.Status))}
	case errors.As(err, &ue):
		return &remoteError{err, fmt.Sprintf("cannot reach the broker at %s (%v): start it (airlock serve), or give --broker the address its listening line printed",
			b.c.Base, ue.Err)}
	}
	return &remoteError{err, fmt.Sprintf("the broker at %s: %v", b.c.Base, err)}
}

// remoteError is a client error said plainly; it wraps the client's.
type remoteError struct {
	err error
	msg string
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.err }
