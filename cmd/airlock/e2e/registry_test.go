package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// A real OCI registry for the plugin distribution tests: the CNCF
// distribution registry, built from the module proxy (.ci/run builds it
// and exports its path as AIRLOCK_REGISTRY). Without it the tests skip,
// unless AIRLOCK_REQUIRE_REGISTRY is set.

// testRegistry is one registry process on 127.0.0.1.
type testRegistry struct {
	Host string // 127.0.0.1:port
}

// registryUser and registryPassword are the htpasswd account of a
// registry started with auth; registryHash is the password's bcrypt hash
// (cost 4), made once with golang.org/x/crypto/bcrypt.
const (
	registryUser     = "puller"
	registryPassword = "pull-secret-7f3a"
	registryHash     = "$2a$04$UtfcpPjN2MadMPJxzzm/QuXShDDq./t1M3KpNR35bv5zxL7qpBCAi"
)

// startRegistry starts the registry with filesystem storage in a
// temporary folder on 127.0.0.1 (a port it picks), with htpasswd auth when
// auth is set, and stops it at cleanup.
func startRegistry(t *testing.T, auth bool) *testRegistry {
	t.Helper()
	bin := os.Getenv("AIRLOCK_REGISTRY")
	if bin == "" {
		if os.Getenv("AIRLOCK_REQUIRE_REGISTRY") != "" {
			t.Fatal("AIRLOCK_REGISTRY is not set (go install github.com/distribution/distribution/v3/cmd/registry@v3.1.2)")
		}
		t.Skip("AIRLOCK_REGISTRY is not set: no registry to test against (CONTRIBUTING.md)")
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: info
  formatter: text
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: 127.0.0.1:0
`, filepath.Join(dir, "storage"))
	if auth {
		htpasswd := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(htpasswd, []byte(registryUser+":"+registryHash+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg += fmt.Sprintf("auth:\n  htpasswd:\n    realm: airlock-test\n    path: %s\n", htpasswd)
	}
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "serve", cfgPath)
	// No tracing exporter: the registry would otherwise send spans to
	// an OTLP endpoint.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "OTEL_SDK_DISABLED=true", "OTEL_TRACES_EXPORTER=none"}
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting the registry: %v", err)
	}
	var log strings.Builder
	var mu sync.Mutex
	addr := make(chan string, 1)
	done := make(chan struct{})
	listening := regexp.MustCompile(`listening on (127\.0\.0\.1:[0-9]+)`)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		<-done
	})
	r := &testRegistry{}
	select {
	case r.Host = <-addr:
	case <-time.After(30 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the registry did not say where it listens:\n%s", tail(log.String(), 2000))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + r.Host + "/v2/")
		if err == nil {
			resp.Body.Close()
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("the registry at %s does not answer: %v", r.Host, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
