package load

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestServeFloor: the floor's side of the exchange takes the secret from
// stdin's first line, prints the URL, answers each later line, and stops
// the floor when stdin closes; started with nothing on stdin it says who
// starts it.
func TestServeFloor(t *testing.T) {
	var got string
	stops := 0
	var out strings.Builder
	err := ServeFloor(strings.NewReader("s3cret\nviews\nother\n"), &out, func(secret string) (string, func() error, error) {
		got = secret
		return "http://127.0.0.1:1", func() error { stops++; return nil }, nil
	}, func(q string) string { return "re:" + q })
	if err != nil || got != "s3cret" || stops != 1 {
		t.Fatalf("err %v, secret %q, stopped %d times", err, got, stops)
	}
	if want := "http://127.0.0.1:1\nre:views\nre:other\n"; out.String() != want {
		t.Fatalf("printed %q, want %q", out.String(), want)
	}
	if err := ServeFloor(strings.NewReader(""), io.Discard, nil, nil); !errors.Is(err, errNoSecret) {
		t.Fatalf("no secret: %v", err)
	}
	failed := errors.New("no port")
	if err := ServeFloor(strings.NewReader("s\n"), io.Discard, func(string) (string, func() error, error) { return "", nil, failed }, nil); !errors.Is(err, failed) {
		t.Fatalf("a floor that does not start: %v", err)
	}
}

// TestForwarderFloor: the forwarder served as a floor answers the views
// question as ForwarderViews asks it, and a garbled answer is an error.
func TestForwarderFloor(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- ServeForwarder(inR, outW, 1<<10); outW.Close() }()
	lines := bufio.NewReader(outR)
	if _, err := io.WriteString(inW, NewSecret()+"\n"); err != nil {
		t.Fatal(err)
	}
	url, err := lines.ReadString('\n')
	if err != nil || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("URL %q, %v", url, err)
	}
	ask := func(q string) (string, error) {
		if _, err := io.WriteString(inW, q+"\n"); err != nil {
			return "", err
		}
		l, err := lines.ReadString('\n')
		return strings.TrimSpace(l), err
	}
	if n, err := ForwarderViews(ask)(); err != nil || n != 0 {
		t.Fatalf("views: %d, %v", n, err)
	}
	if l, err := ask("what"); err != nil || l != "?" {
		t.Fatalf("an unknown question: %q, %v", l, err)
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	garbled := func(string) (string, error) { return "many", nil }
	if _, err := ForwarderViews(garbled)(); err == nil || !strings.Contains(err.Error(), `"many"`) {
		t.Fatalf("a garbled answer: %v", err)
	}
}
