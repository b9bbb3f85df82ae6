package load

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/airlock/airlock/executors/baseline"
)

// HTTPFloorServer is a baseline's reactor tool served over loopback HTTP
// by executors/baseline.HTTPFloor: what `airlock load http-floor` runs.
type HTTPFloorServer struct {
	URL    string
	srv    *http.Server
	floor  *baseline.HTTPFloor
	runner *baseline.Runner
	served chan error
}

// StartHTTPFloor compiles the baseline named by label (a plugin folder or
// builtin:ID, with the folders of its roots) through cacheDir ("" for
// none) and serves tool on a free loopback port to requests that carry
// secret (SecretGuard).
func StartHTTPFloor(ctx context.Context, label, tool string, roots map[string]string, cacheDir, secret string) (*HTTPFloorServer, error) {
	b, err := loadBaseline(label, tool, roots)
	if err != nil {
		return nil, err
	}
	r, err := baseline.New(ctx, b.Module, baseline.Options{Roots: b.Roots, CacheDir: cacheDir})
	if err != nil {
		return nil, err
	}
	floor, err := r.HTTPFloor(tool)
	if err != nil {
		_ = r.Close(ctx)
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = r.Close(ctx)
		return nil, err
	}
	s := &HTTPFloorServer{URL: "http://" + ln.Addr().String(), floor: floor, runner: r, served: make(chan error, 1),
		srv: &http.Server{Handler: SecretGuard(secret, floor), ReadHeaderTimeout: callTimeout}}
	go func() { s.served <- s.srv.Serve(ln) }()
	return s, nil
}

// Close stops serving (calls in flight get a few seconds to end) and
// frees the instances and the runtime.
func (s *HTTPFloorServer) Close(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(sctx)
	if serr := <-s.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return errors.Join(err, s.floor.Close(ctx), s.runner.Close(ctx))
}
