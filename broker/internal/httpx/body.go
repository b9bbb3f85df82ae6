package httpx

import (
	"net/http"
	"sync"
)

// WriteEncoded writes a JSON body that the caller encoded itself (with
// the headers every response carries) from a pooled buffer: encode
// appends the body to the buffer it is given and returns it, or an error
// for a 500 as WriteJSON answers. The buffer goes back to the pool once
// the body is written, so encode must not keep it.
func WriteEncoded(w http.ResponseWriter, status int, encode func([]byte) ([]byte, error)) {
	bp := bodyPool.Get().(*[]byte)
	body, err := encode((*bp)[:0])
	if err != nil {
		status, body = http.StatusInternalServerError, append(body[:0], internalError...)
	}
	writeBody(w, status, append(body, '\n'))
	if cap(body) <= maxPooledBody {
		*bp = body[:0]
		bodyPool.Put(bp)
	}
}

// maxPooledBody is the largest buffer kept for reuse: a rare large answer
// is not held on to.
const maxPooledBody = 64 << 10

const internalError = `{"error":{"code":"INTERNAL","message":"internal error"}}`

var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}
