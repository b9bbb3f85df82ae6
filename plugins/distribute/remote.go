package distribute

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// Options say how to reach a registry.
type Options struct {
	// PlainHTTP speaks http:// instead of https://; only a loopback
	// registry (127.0.0.1, ::1, localhost) may be spoken to so.
	PlainHTTP bool
	// Username and Password, when Username is set, are the credentials;
	// otherwise those of the Docker credentials file
	// (~/.docker/config.json, or $DOCKER_CONFIG/config.json) are used.
	Username, Password string
	// Progress receives a line per layer (and per quarter of a large
	// one); nil for none.
	Progress io.Writer
}

// Per-connection bounds; the caller's context bounds the whole operation.
const (
	dialTimeout     = 10 * time.Second
	responseTimeout = 30 * time.Second
)

// repository parses ref and builds the client for it. Nothing is dialled
// here: a plain-HTTP refusal comes before any connection or name lookup.
func repository(ref string, o Options) (*remote.Repository, error) {
	r, err := registry.ParseReference(ref)
	if err != nil {
		return nil, refuse(ErrReference, "%q: %v", ref, err)
	}
	if r.Reference == "" {
		return nil, refuse(ErrReference, "%q names no tag or digest", ref)
	}
	if o.PlainHTTP && !loopback(r.Registry) {
		return nil, refuse(ErrPlainHTTP, "plain HTTP is only for a registry on 127.0.0.1, ::1 or localhost, not %s", r.Registry)
	}
	repo := &remote.Repository{Reference: r, PlainHTTP: o.PlainHTTP}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: dialTimeout}).DialContext
	tr.ResponseHeaderTimeout = responseTimeout
	client := &auth.Client{Client: &http.Client{Transport: tr}, Cache: auth.NewCache()}
	client.SetUserAgent("airlock")
	if o.Username != "" {
		client.Credential = auth.StaticCredential(r.Registry, auth.Credential{Username: o.Username, Password: o.Password})
	} else {
		store, err := credentials.NewStoreFromDocker(credentials.StoreOptions{})
		if err != nil {
			return nil, fmt.Errorf("distribute: the Docker credentials file: %w", err)
		}
		client.Credential = credentials.Credential(store)
	}
	repo.Client = client
	return repo, nil
}

// loopback reports whether a registry's host[:port] is this machine's
// loopback, by its spelling alone (no name is looked up).
func loopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// classify names a registry operation's error with a sentinel; one that
// already has a name, or none fits, is returned as it is.
func classify(err error) error {
	if err == nil || Reason(err) != "" {
		return err
	}
	var resp *errcode.ErrorResponse
	var uerr *url.Error
	var nerr net.Error
	switch {
	case errors.As(err, &resp) && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden),
		errors.Is(err, auth.ErrBasicCredentialNotFound):
		return refuse(ErrUnauthorized, "%v", err)
	case errors.Is(err, errdef.ErrNotFound), errors.As(err, &resp) && resp.StatusCode == http.StatusNotFound:
		return refuse(ErrNotFound, "%v", err)
	case errors.Is(err, content.ErrMismatchedDigest), errors.Is(err, content.ErrTrailingData),
		errors.Is(err, io.ErrUnexpectedEOF):
		return refuse(ErrDigestMismatch, "%v", err)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr), errors.As(err, &uerr):
		return refuse(ErrUnreachable, "%v", err)
	}
	return err
}
