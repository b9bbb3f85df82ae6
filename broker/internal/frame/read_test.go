package frame

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/coder/websocket"

	"github.com/airlock/airlock/broker/internal/frame/frametest"
)

// write sends one message from c without waiting for it to be read.
func write(t *testing.T, c *websocket.Conn, typ websocket.MessageType, data string) {
	t.Helper()
	go func() { _ = c.Write(context.Background(), typ, []byte(data)) }()
}

// TestReadDropsAndGoesOn: a binary or oversized message is drained
// and reported, and the next message reads normally.
func TestReadDropsAndGoesOn(t *testing.T) {
	server, client := frametest.Pair(t)
	const limit = 40000 // over the library's default read limit (32 KiB)
	for _, m := range []struct {
		typ  websocket.MessageType
		data string
		want error
	}{
		{websocket.MessageBinary, "{}", ErrBinary},
		{websocket.MessageText, strings.Repeat("x", limit+1), ErrTooLarge},
		{websocket.MessageText, strings.Repeat("y", limit), nil},
		{websocket.MessageText, "{}", nil},
	} {
		write(t, client, m.typ, m.data)
		got, err := Read(server, limit)
		if !errors.Is(err, m.want) || (err == nil && string(got) != m.data) || (err != nil && !errors.Is(err, ErrDiscarded)) {
			t.Fatalf("%d bytes: got %d bytes, %v; want %v", len(m.data), len(got), err, m.want)
		}
	}
}

// TestReadFirstRefusesBadFirstMessages: a first message that is binary or
// over its bound is reported, not returned.
func TestReadFirstRefusesBadFirstMessages(t *testing.T) {
	for name, typ := range map[string]websocket.MessageType{"binary": websocket.MessageBinary, "oversized": websocket.MessageText} {
		t.Run(name, func(t *testing.T) {
			server, client := frametest.Pair(t)
			data := strings.Repeat("x", 101)
			if typ == websocket.MessageBinary {
				data = "{}"
			}
			write(t, client, typ, data)
			if _, err := ReadFirst(server, 100); !errors.Is(err, ErrDiscarded) {
				t.Fatalf("got %v", err)
			}
		})
	}
	server, client := frametest.Pair(t)
	write(t, client, websocket.MessageText, `{"type":"hello"}`)
	if got, err := ReadFirst(server, 100); err != nil || string(got) != `{"type":"hello"}` {
		t.Fatalf("got %q, %v", got, err)
	}
}

// FuzzReadAtMost checks readAtMost against io.ReadAll of an
// io.LimitReader, whatever the reader's chunking.
func FuzzReadAtMost(f *testing.F) {
	for _, n := range []int{0, 1, 511, 512, 513, 2000} {
		f.Add(bytes.Repeat([]byte("x"), n), int64(512), uint8(0))
		f.Add(bytes.Repeat([]byte("y"), n), int64(513), uint8(1))
		f.Add(bytes.Repeat([]byte("z"), n), int64(1), uint8(2))
	}
	f.Fuzz(func(t *testing.T, data []byte, max int64, mode uint8) {
		if max < 1 || max > 1<<20 {
			return
		}
		reader := func() io.Reader {
			switch mode % 3 {
			case 1:
				return iotest.OneByteReader(bytes.NewReader(data))
			case 2:
				return iotest.DataErrReader(iotest.HalfReader(bytes.NewReader(data)))
			}
			return bytes.NewReader(data)
		}
		want, wantErr := io.ReadAll(io.LimitReader(reader(), max))
		got, err := readAtMost(reader(), max)
		if !bytes.Equal(got, want) || (err == nil) != (wantErr == nil) {
			t.Fatalf("readAtMost(%d bytes, %d) = %d bytes, %v; want %d bytes, %v", len(data), max, len(got), err, len(want), wantErr)
		}
	})
}
