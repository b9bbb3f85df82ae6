// Package broker is Airlock's core: the HTTP server and its routes, and the
// parts they are built from (sessions and the relay hub, the executor
// channel, call routing, pairings), each in a sub-package by concern.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/internal/connlimit"
	"github.com/airlock/airlock/broker/internal/httpx"
	"github.com/airlock/airlock/broker/unixsock"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/metrics"
)

// Component is a part of the broker that serves routes and owns resources
// (sockets, goroutines) that must be released when the broker stops.
type Component interface {
	// Mount registers the component's routes.
	Mount(mux *http.ServeMux)
	// Drain stops taking new work; in-flight work may finish.
	Drain()
	// Close stops new work, waits for work in flight until ctx ends, then
	// forces the rest and returns ctx's cause; it returns with its
	// goroutines ended (RATIONALE.md, "What does Close do when its context
	// ends?").
	Close(ctx context.Context) error
}

// Options are what a Server is built from.
type Options struct {
	Config  *config.Config
	Logger  *slog.Logger
	Metrics *metrics.Registry
	// Components serve the routes beyond /healthz and /metrics.
	Components []Component
}

// Server is the broker's HTTP front: one listener (plus an optional one for
// metrics), the connection cap and bounds on slow clients, the Host guard,
// and the components behind it.
type Server struct {
	opts     Options
	port     atomic.Int64
	loopback bool
	conns    *connlimit.Limiter
	http     *http.Server
	metrics  *http.Server
	unix     net.Listener // the Unix socket, when Config.ListenUnix is set
	draining atomic.Bool
	stopOnce sync.Once
}

// New builds a Server. It does not listen; see Listen.
func New(opts Options) *Server {
	opts.Metrics = metrics.OrNew(opts.Metrics)
	s := &Server{opts: opts, loopback: config.IsLoopback(opts.Config.Listen)}
	s.conns = connlimit.New(opts.Config.HTTP.MaxConnections, opts.Metrics)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	if opts.Config.MetricsListen == "" {
		mux.Handle("GET /metrics", opts.Metrics.Handler())
	} else {
		mm := http.NewServeMux()
		mm.Handle("GET /metrics", opts.Metrics.Handler())
		s.metrics = s.httpServer(mm)
	}
	for _, c := range opts.Components {
		c.Mount(mux)
	}
	var h http.Handler = accessLog(opts.Logger, mux)
	switch {
	case s.loopback:
		h = httpx.HostGuard(s.Port, s.refused, h)
	case opts.Config.ListenUnix != "":
		h = unixHostGuard(s.refused, h)
	}
	s.http = s.httpServer(h)
	return s
}

// httpServer serves h under the connection cap and the slow-client
// bounds: headers, then the body, must arrive in time, each write of a
// response must reach the client in time, and an idle keep-alive
// connection is closed.
func (s *Server) httpServer(h http.Handler) *http.Server {
	cfg := s.opts.Config.HTTP
	return &http.Server{
		Handler:           s.conns.BoundBody(millis(cfg.BodyTimeoutMs), s.conns.BoundWrites(millis(cfg.WriteTimeoutMs), h)),
		ReadHeaderTimeout: millis(cfg.HeaderTimeoutMs),
		IdleTimeout:       millis(cfg.IdleTimeoutMs),
		ConnState:         s.conns.ConnState,
		ConnContext:       s.conns.ConnContext,
		ErrorLog:          slog.NewLogLogger(s.opts.Logger.Handler(), slog.LevelDebug),
	}
}

func millis(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }

// Port is the bound port, or 0 before Listen.
func (s *Server) Port() int { return int(s.port.Load()) }

// Listen binds the configured addresses. A non-loopback address is refused
// unless a launch token is set: the caller checks that (see CheckBind)
// because the token is not part of the config.
func (s *Server) Listen() (net.Listener, net.Listener, error) {
	ln, err := net.Listen("tcp", s.opts.Config.Listen)
	if err != nil {
		return nil, nil, fmt.Errorf("broker: listen: %w", err)
	}
	s.port.Store(int64(ln.Addr().(*net.TCPAddr).Port))
	if path := s.opts.Config.ListenUnix; path != "" {
		uln, err := unixsock.Listen(path, s.unixPeerRefused)
		if err != nil {
			ln.Close()
			return nil, nil, fmt.Errorf("broker: listen_unix: %w", err)
		}
		s.unix = s.conns.Listener(uln)
	}
	if s.metrics == nil {
		return s.conns.Listener(ln), nil, nil
	}
	mln, err := net.Listen("tcp", s.opts.Config.MetricsListen)
	if err != nil {
		ln.Close()
		if s.unix != nil {
			s.unix.Close()
		}
		return nil, nil, fmt.Errorf("broker: listen for metrics: %w", err)
	}
	return s.conns.Listener(ln), s.conns.Listener(mln), nil
}

// unixPeerRefused counts and logs a connection to the Unix socket from
// another user, closed unread.
func (s *Server) unixPeerRefused(uid int) {
	s.opts.Metrics.UnixPeersRefused.Inc()
	s.opts.Logger.Warn("unix socket: a process of another user was refused", "uid", uid)
}

// unixHostGuard is HostGuard's rule for the Unix socket alone, for a
// broker whose TCP listener is not on loopback (it has no Host rule).
func unixHostGuard(refused httpx.Refusal, next http.Handler) http.Handler {
	guarded := httpx.HostGuard(func() int { return -1 }, refused, next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if httpx.OverUnix(r) {
			guarded.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// MinTokenChars is the shortest launch token serve accepts: a shorter one
// is guessable sooner than the 256-bit secrets it guards.
const MinTokenChars = 32

// CheckToken refuses a launch token shorter than MinTokenChars characters;
// an empty token (an inert broker) passes. The error never quotes it.
func CheckToken(token string) error {
	if token != "" && utf8.RuneCountInString(token) < MinTokenChars {
		return ErrShortToken
	}
	return nil
}

// CheckBind refuses a non-loopback listen address without a launch token,
// and the standalone profile without one (the configuration's Validate
// has held its addresses to 127.0.0.1).
func CheckBind(cfg *config.Config, tokenSet bool) error {
	switch {
	case cfg.Standalone && !tokenSet:
		return ErrStandaloneNeedsToken
	case !config.IsLoopback(cfg.Listen) && !tokenSet:
		return ErrPublicBindNeedsToken
	}
	return nil
}

// Serve serves on the listeners until Shutdown. It returns nil after a
// clean shutdown.
func (s *Server) Serve(ln, metricsLn net.Listener) error {
	if metricsLn != nil {
		go func() { _ = s.metrics.Serve(metricsLn) }()
	}
	if s.unix != nil {
		go func() { _ = s.http.Serve(s.unix) }()
	}
	if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("broker: serve: %w", err)
	}
	return nil
}

// Shutdown drains: components stop taking work, the listener closes, HTTP
// requests in flight (tool calls among them) finish, then components
// release what is left. ctx bounds the whole drain; when it ends, the
// connections still open are closed and each component's Close forces
// what it holds (RATIONALE.md, "What does Close do when its context ends?").
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	s.stopOnce.Do(func() {
		s.draining.Store(true)
		for _, c := range s.opts.Components {
			c.Drain()
		}
		err = shutdown(ctx, s.http)
		if s.metrics != nil {
			_ = shutdown(ctx, s.metrics)
		}
		for _, c := range s.opts.Components {
			err = errors.Join(err, c.Close(ctx))
		}
	})
	return err
}

// shutdown lets hs's requests finish until ctx ends, then closes the
// connections left.
func shutdown(ctx context.Context, hs *http.Server) error {
	err := hs.Shutdown(ctx)
	if err != nil && ctx.Err() != nil {
		_ = hs.Close()
		return fmt.Errorf("broker: shutdown: %w", context.Cause(ctx))
	}
	return err
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	status := "ok"
	if s.draining.Load() {
		status = "draining"
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": status})
}

func (s *Server) refused(endpoint string, c contract.Code) {
	s.opts.Metrics.AuthRefused(endpoint, string(c))
}

// unmatched is the access log's pattern for a request no route matched.
const unmatched = "unmatched"

// accessLog logs each request at debug level: method (a standard one, or
// OTHER), the route pattern that matched (set by the mux on r), status and
// duration. It never logs the path, headers or the query string, where
// credentials travel (the token header, cookies, a credential a client put
// in a URL or a path segment, a 404 included): only values the broker
// chose reach the log.
func accessLog(logger *slog.Logger, next http.Handler) http.Handler {
	if !logger.Enabled(context.Background(), slog.LevelDebug) {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		pattern := r.Pattern
		if pattern == "" {
			pattern = unmatched
		}
		method := metrics.LabelIn(r.Method, http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
			http.MethodPatch, http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace)
		logger.Debug("request", "method", method, "pattern", pattern, "status", rec.status,
			"duration_ms", float64(time.Since(start).Microseconds())/1000)
	})
}

// statusRecorder remembers the status a handler wrote. Unwrap lets
// http.ResponseController (and the WebSocket upgrade) reach the
// connection underneath.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
