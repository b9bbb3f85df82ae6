package contract

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"

	"github.com/coder/websocket"
)

// protocolCloseCodes is PROTOCOL section 4, "Close codes (1:1 with error
// codes)", spelled as on the wire.
var protocolCloseCodes = map[string]int{
	"INVALID_CREDENTIALS":       4401,
	"CREDENTIAL_EXPIRED":        4402,
	"INVALID_ORIGIN":            4403,
	"PROTOCOL_VERSION_MISMATCH": 4404,
	"SESSION_MISMATCH":          4405,
	"INVALID_MESSAGE":           4406,
	"UNKNOWN_MESSAGE":           4407,
	"HOST_ALREADY_CONNECTED":    4408,
}

// httpOnly are the codes that never close a socket.
var httpOnly = map[Code]bool{NotFound: true, Unavailable: true}

// TestClosePairsMatchProtocol: the table holds exactly the pairs of
// PROTOCOL section 4.4, and the lookups agree with it both ways.
func TestClosePairsMatchProtocol(t *testing.T) {
	if len(closePairs) != len(protocolCloseCodes) {
		t.Fatalf("%d pairs, PROTOCOL lists %d", len(closePairs), len(protocolCloseCodes))
	}
	for wireCode, wireClose := range protocolCloseCodes {
		c := Code(wireCode)
		if got := c.CloseCode(); int(got) != wireClose {
			t.Errorf("%s closes %d, PROTOCOL says %d", c, got, wireClose)
		}
		if got, ok := CloseCode(wireClose).Code(); !ok || got != c {
			t.Errorf("%d pairs with %q (%v), PROTOCOL says %s", wireClose, got, ok, c)
		}
	}
	for c := range httpOnly {
		if cc := c.CloseCode(); cc != 0 {
			t.Errorf("HTTP-only %s closes %d", c, cc)
		}
	}
	for _, cc := range []CloseCode{CloseNormal, CloseGoingAway, CloseTryAgainLater, 4400, 4409, -1} {
		if c, ok := cc.Code(); ok {
			t.Errorf("%d pairs with %s", cc, c)
		}
	}
}

// TestClosePairsComplete: every Code and every 44xx CloseCode declared in
// codes.go appears in the table exactly once (an HTTP-only code never),
// so a code added without its pair, or paired twice, fails here.
func TestClosePairsComplete(t *testing.T) {
	codes, closes := declared(t)
	seenCode, seenClose := map[Code]int{}, map[CloseCode]int{}
	for _, p := range closePairs {
		seenCode[p.code]++
		seenClose[p.close]++
	}
	for _, c := range codes {
		want := 1
		if httpOnly[c] {
			want = 0
		}
		if seenCode[c] != want {
			t.Errorf("code %s is in the table %d times, want %d", c, seenCode[c], want)
		}
	}
	for _, cc := range closes {
		want := 0
		if cc >= 4000 {
			want = 1
		}
		if seenClose[cc] != want {
			t.Errorf("close code %d is in the table %d times, want %d", cc, seenClose[cc], want)
		}
	}
	if len(seenCode) != len(closePairs) || len(seenClose) != len(closePairs) {
		t.Errorf("the table pairs a code or a close code twice: %v %v", seenCode, seenClose)
	}
}

// declared reads the Code and CloseCode constants of codes.go, so the
// completeness check needs no second list to keep in step.
func declared(t *testing.T) (codes []Code, closes []CloseCode) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "codes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			typ, _ := v.Type.(*ast.Ident)
			if typ == nil || len(v.Values) != len(v.Names) {
				continue
			}
			for _, val := range v.Values {
				lit, ok := val.(*ast.BasicLit)
				if !ok {
					t.Fatalf("codes.go: a %s constant is not a literal", typ.Name)
				}
				switch typ.Name {
				case "Code":
					s, _ := strconv.Unquote(lit.Value)
					codes = append(codes, Code(s))
				case "CloseCode":
					n, _ := strconv.Atoi(lit.Value)
					closes = append(closes, CloseCode(n))
				}
			}
		}
	}
	if len(codes) != len(protocolCloseCodes)+len(httpOnly) {
		t.Fatalf("codes.go declares %d codes: %v", len(codes), codes)
	}
	return codes, closes
}

// TestCloseCodesAreRFC6455: the standard codes are the library's, so a
// conversion to websocket.StatusCode keeps their meaning.
func TestCloseCodesAreRFC6455(t *testing.T) {
	for cc, ws := range map[CloseCode]websocket.StatusCode{
		CloseNormal:        websocket.StatusNormalClosure,
		CloseGoingAway:     websocket.StatusGoingAway,
		CloseTryAgainLater: websocket.StatusTryAgainLater,
	} {
		if websocket.StatusCode(cc) != ws {
			t.Errorf("%d is not %v", cc, ws)
		}
	}
}
