package load

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/airlock/airlock/broker/unixsock"
	"github.com/airlock/airlock/broker/v1client"
	"github.com/airlock/airlock/executors/baseline"
)

// HTTPFloorServer is a baseline's reactor tool served over loopback HTTP
// by executors/baseline.HTTPFloor: what `airlock load http-floor` runs.
type HTTPFloorServer struct {
	// URL is http://127.0.0.1:PORT, or v1client.UnixBase over Socket.
	URL string
	// Socket, when set, is the Unix socket it listens on instead of a
	// port, in a folder of its own that Close removes.
	Socket string
	srv    *http.Server
	floor  *baseline.HTTPFloor
	runner *baseline.Runner
	served chan error
}

// StartHTTPFloor compiles the baseline named by label (a plugin folder or
// builtin:ID, with the folders of its roots) through cacheDir ("" for
// none) and serves tool to requests that carry secret (SecretGuard): on
// a free loopback port, or with unix on a Unix socket (floorListener).
func StartHTTPFloor(ctx context.Context, label, tool string, roots map[string]string, cacheDir, secret string, unix bool) (*HTTPFloorServer, error) {
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
	ln, socket, err := floorListener(unix)
	if err != nil {
		_ = r.Close(ctx)
		return nil, err
	}
	url := v1client.UnixBase
	if socket == "" {
		url = "http://" + ln.Addr().String()
	}
	s := &HTTPFloorServer{URL: url, Socket: socket, floor: floor, runner: r, served: make(chan error, 1),
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
	if s.Socket != "" {
		err = errors.Join(err, os.RemoveAll(filepath.Dir(s.Socket)))
	}
	return errors.Join(err, s.floor.Close(ctx), s.runner.Close(ctx))
}

// floorListener listens on a free loopback port or, with unix, on a
// socket in a fresh folder only this user can enter (os.MkdirTemp makes
// it 0700), so the floor is reached over the transport the broker is;
// socket is then its path. The socket is the broker's own kind
// (broker/unixsock: 0600, every peer checked to be this user), so the
// floor pays what the broker's listener pays; the secret is checked
// either way.
func floorListener(unix bool) (ln net.Listener, socket string, err error) {
	if !unix {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		return ln, "", err
	}
	dir, err := os.MkdirTemp("", "airlock-floor-")
	if err != nil {
		return nil, "", err
	}
	socket = filepath.Join(dir, "floor.sock")
	if ln, err = unixsock.Listen(socket, nil); err != nil {
		return nil, "", errors.Join(err, os.RemoveAll(dir))
	}
	return ln, socket, nil
}
