package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/airlock/airlock/broker/contract"
	"github.com/airlock/airlock/broker/v1client"
	"github.com/airlock/airlock/executors/wire"
)

// maxAnswerBytes bounds an answer read into memory, as v1client does.
const maxAnswerBytes = 64 << 20

// directCaller is one caller's own keep-alive HTTP/1.1 connection to the
// broker: the request is written and the answer read on the caller's
// goroutine, where net/http's transport hands every request to a writer
// goroutine and every response back from a reader goroutine (two wake-ups
// per call, which on two shared cores cost as much as the call's own
// work). It is still a whole, honest call: the token header, a fresh
// callId, the body read to its end and held to wire.ParseAnswer.
// RATIONALE.md, "Why does `airlock load calls` speak HTTP/1.1 itself?"
type directCaller struct {
	peer              string // what its errors call the server: "broker", "bare HTTP floor"
	network           string // "tcp", or "unix" for the broker's Unix socket
	addr, host, token string
	head, tail        []byte // the call's JSON around its callId value
	idPrefix          []byte // the quoted callId prefix, without its closing quote

	conn net.Conn
	br   *bufio.Reader
	env  []byte // the call envelope being sent, reused
	req  []byte // the request being written, reused
	body []byte // the answer being read, reused
}

// newDirectCallers prepares n callers of call on the server at c.Base
// (over c.Socket when it is set), which their errors call peer.
func newDirectCallers(c *v1client.Client, call wire.Call, n int, peer string) ([]*directCaller, error) {
	u, err := url.Parse(c.Base)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("load: the %s URL %q is not http://HOST:PORT", peer, c.Base)
	}
	prefix := call.CallID + "_"
	blank := call
	blank.CallID = ""
	enc, err := json.Marshal(blank)
	if err != nil {
		return nil, err
	}
	head, tail, ok := bytes.Cut(enc, []byte(`"callId":""`))
	if !ok {
		return nil, errors.New("load: the call does not encode with a callId")
	}
	quoted, _ := json.Marshal(prefix)
	network, addr := "tcp", u.Host
	if c.Socket != "" {
		network, addr = "unix", c.Socket
	}
	out := make([]*directCaller, n)
	for w := range out {
		id := append(bytes.Clone(quoted[:len(quoted)-1]), strconv.Itoa(w)+"_"...)
		out[w] = &directCaller{peer: peer, network: network, addr: addr, host: u.Host, token: c.Token,
			head: append(bytes.Clone(head), `"callId":`...), tail: tail, idPrefix: id}
	}
	return out, nil
}

// call posts the call numbered seq and returns its validated answer,
// whose Observed is only valid until the next call. A connection that
// failed is closed; the next call dials a new one.
func (d *directCaller) call(ctx context.Context, seq int64) (wire.Answer, error) {
	a, err := d.roundTrip(ctx, seq)
	if err != nil {
		d.close()
	}
	return a, err
}

func (d *directCaller) roundTrip(ctx context.Context, seq int64) (wire.Answer, error) {
	if d.conn == nil {
		var dialer net.Dialer
		conn, err := dialer.DialContext(ctx, d.network, d.addr)
		if err != nil {
			return wire.Answer{}, fmt.Errorf("%s unreachable: %w", d.peer, err)
		}
		d.conn, d.br = conn, bufio.NewReaderSize(conn, 16<<10)
	}
	deadline := time.Now().Add(callTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	if err := d.conn.SetDeadline(deadline); err != nil {
		return wire.Answer{}, err
	}
	stop := context.AfterFunc(ctx, func() { _ = d.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	call := append(d.env[:0], d.head...)
	call = append(call, d.idPrefix...)
	call = strconv.AppendInt(call, seq, 10)
	call = append(call, '"')
	call = append(call, d.tail...)
	d.env = call
	r := append(d.req[:0], "POST /v1/calls HTTP/1.1\r\nHost: "...)
	r = append(r, d.host...)
	r = append(r, "\r\n"+contract.TokenHeader+": "...)
	r = append(r, d.token...)
	r = append(r, "\r\nContent-Type: application/json\r\nContent-Length: "...)
	r = strconv.AppendInt(r, int64(len(call)), 10)
	r = append(r, "\r\n\r\n"...)
	r = append(r, call...)
	d.req = r
	if _, err := d.conn.Write(r); err != nil {
		return wire.Answer{}, err
	}

	resp, err := http.ReadResponse(d.br, nil)
	if err != nil {
		return wire.Answer{}, err
	}
	data, err := d.readBody(resp)
	if err != nil {
		return wire.Answer{}, err
	}
	if resp.Close {
		d.close()
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusBadRequest {
		return wire.Answer{}, fmt.Errorf("%s answered %s: %s", d.peer, resp.Status, excerpt(data))
	}
	a, err := wire.ParseAnswer(data)
	if err != nil {
		return wire.Answer{}, fmt.Errorf("the %s's answer is not a valid envelope: %w", d.peer, err)
	}
	return a, nil
}

// readBody reads the whole answer into the caller's buffer.
func (d *directCaller) readBody(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	if resp.ContentLength > maxAnswerBytes {
		return nil, fmt.Errorf("the %s's answer is over %d bytes", d.peer, maxAnswerBytes)
	}
	buf := bytes.NewBuffer(d.body[:0])
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength))
	}
	n, err := buf.ReadFrom(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return nil, err
	}
	if n > maxAnswerBytes {
		return nil, fmt.Errorf("the %s's answer is over %d bytes", d.peer, maxAnswerBytes)
	}
	d.body = buf.Bytes()
	return d.body, nil
}

// excerpt is the start of an answer that is not an envelope, for an
// error: the HTTP floor says why a call failed only in its body.
func excerpt(body []byte) string {
	return strings.TrimSpace(string(body[:min(len(body), 200)]))
}

func (d *directCaller) close() {
	if d.conn != nil {
		_ = d.conn.Close()
		d.conn, d.br = nil, nil
	}
}

// directOp posts the call from each caller on its own connection, each
// call with its own callId (unique per caller and call, for the broker's
// logs). Caller w only ever touches its own directCaller. The returned
// func closes the connections. Errors call the server peer.
func directOp(c *v1client.Client, call wire.Call, callers int, peer string) (callOp, func(), error) {
	ds, err := newDirectCallers(c, call, callers, peer)
	if err != nil {
		return nil, nil, err
	}
	seq := make([]int64, callers)
	op := func(ctx context.Context, w int) (string, error) {
		seq[w]++
		a, err := ds[w].call(ctx, seq[w])
		switch {
		case err != nil:
			return "", err
		case a.OK:
			return "ok", nil
		}
		return string(a.Refused), nil
	}
	closeAll := func() {
		for _, d := range ds {
			d.close()
		}
	}
	return op, closeAll, nil
}
