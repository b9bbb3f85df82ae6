package distribute

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// largeLayer is the size from which a transfer reports each quarter.
const largeLayer = 4 << 20

// describe names a descriptor for a progress line: its file, size and
// short digest.
func describe(d ocispec.Descriptor) string {
	name := d.Annotations[ocispec.AnnotationTitle] // the pusher's choice: quoted if odd
	if name == "" {
		name = d.MediaType
	}
	if strings.IndexFunc(name, func(r rune) bool { return r < ' ' || r > '~' }) >= 0 {
		name = strconv.QuoteToASCII(name)
	}
	return fmt.Sprintf("%s (%d bytes, %s)", name, d.Size, d.Digest.String()[:min(len(d.Digest.String()), 19)])
}

// progressf writes one progress line, if there is a writer.
func progressf(w io.Writer, format string, a ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", a...)
	}
}

// progressReader reports each quarter of a transfer as it passes.
type progressReader struct {
	r     io.Reader
	w     io.Writer
	total int64
	done  int64
	shown int64 // quarters reported
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.done += int64(n)
	for p.total > 0 && p.shown < 4 && p.done*4 >= (p.shown+1)*p.total {
		p.shown++
		progressf(p.w, "  %d%% (%d of %d bytes)", p.shown*25, min(p.done, p.total), p.total)
	}
	return n, err
}
