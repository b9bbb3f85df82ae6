package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	"github.com/airlock/airlock/config/pluginid"
)

// Tool is one tool a descriptor declares. OutputSchema is optional: when
// set, every observation of the tool is held to it before any caller
// reads it (output-invalid otherwise), and MCP lists it.
type Tool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
}

// Bounds are what a descriptor is allowed to do per call. Callers echo them
// in boundsEcho; the executor compares as canonical JSON.
type Bounds struct {
	TimeoutMs      int      `json:"timeoutMs"`
	MemoryMiB      int      `json:"memoryMiB"`
	MaxOutputBytes int      `json:"maxOutputBytes"`
	MaxRequests    int      `json:"maxRequests"`
	AllowedHosts   []string `json:"allowedHosts"`
	Roots          []string `json:"roots"`
}

// Descriptor is an admitted set of tools with their bounds, as listed by
// GET /v1/tools and advertised in a channel catalog. Executor is set by the
// broker when it lists descriptors and is empty in a catalog. SHA256 is
// the hex SHA-256 of a local plugin's module, which the broker checked
// against plugin.json before it admitted it; it is empty for a peer's
// descriptor (the broker never saw that module) and in a catalog. Signer
// is set by the catalog that admitted a signed plugin (PROTOCOL section
// 8.5) and, like Executor, is not part of a channel catalog
// (CatalogFrame, ParseCatalog).
type Descriptor struct {
	DescriptorID string  `json:"descriptorId"`
	Executor     string  `json:"executor,omitempty"`
	SHA256       string  `json:"sha256,omitempty"`
	Tools        []Tool  `json:"tools"`
	Bounds       Bounds  `json:"bounds"`
	Signer       *Signer `json:"signer,omitempty"`
	// Source is where `airlock plugin pull` installed the plugin from
	// (PROTOCOL section 8.1); absent for a folder dropped in by hand and
	// for a peer's descriptor. Like Signer, the catalog sets it.
	Source *PluginSource `json:"source,omitempty"`
}

// Limits on descriptors. They bound what an operator can ask of the broker,
// not what a tool usually needs.
const (
	MaxTimeoutMs      = 10 * 60 * 1000
	MaxMemoryMiB      = 4096
	MaxOutputBytes    = 64 << 20
	MaxRequests       = 10000
	MaxTools          = 64
	MaxDescriptionLen = 4096
)

// MaxPeerFrameBytes bounds one frame from an authenticated peer (an answer
// or a catalog, PROTOCOL section 6.7), and so a catalog the broker
// remembers on disk: the largest observation a descriptor may declare,
// plus room for the envelope.
const MaxPeerFrameBytes = MaxOutputBytes + 1<<20

var (
	toolNamePattern  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`)
	rootNamePattern  = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	hostLabelPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
)

// ValidToolName reports whether name may name a tool. A '.' is not
// allowed: MCP qualifies a tool as <descriptorId>.<tool> (PROTOCOL section
// 11), and a tool named like another's qualified name could take its place.
func ValidToolName(name string) bool { return toolNamePattern.MatchString(name) }

// Validate checks a descriptor's shape: ids, unique tool names, schema
// objects and bounds. It does not compile schemas; executors do.
func (d *Descriptor) Validate() error {
	if !pluginid.Valid(d.DescriptorID) {
		return fmt.Errorf("descriptor id must match %s", pluginid.Pattern)
	}
	if len(d.Tools) == 0 || len(d.Tools) > MaxTools {
		return fmt.Errorf("descriptor must declare 1 to %d tools", MaxTools)
	}
	seen := map[string]bool{}
	for _, t := range d.Tools {
		if !toolNamePattern.MatchString(t.Name) {
			return fmt.Errorf("tool name must match %s", toolNamePattern)
		}
		if seen[t.Name] {
			return fmt.Errorf("tool %s declared twice", t.Name)
		}
		seen[t.Name] = true
		if len(t.Description) > MaxDescriptionLen {
			return fmt.Errorf("tool %s: description over %d bytes", t.Name, MaxDescriptionLen)
		}
		if _, ok := asObject(t.InputSchema); !ok {
			return fmt.Errorf("tool %s: inputSchema must be an object", t.Name)
		}
		if t.OutputSchema != nil && !objectSchema(t.OutputSchema) {
			return fmt.Errorf(`tool %s: outputSchema must be a schema object with "type": "object"`, t.Name)
		}
	}
	return d.Bounds.Validate()
}

// objectSchema reports whether schema is a JSON object whose "type" is
// "object": an outputSchema describes structuredContent, which MCP
// requires to be an object.
func objectSchema(schema json.RawMessage) bool {
	m, err := Members(schema)
	if err != nil {
		return false
	}
	var typ string
	return json.Unmarshal(m["type"], &typ) == nil && typ == "object"
}

// Tool returns the declared tool called name.
func (d *Descriptor) Tool(name string) (Tool, bool) {
	for _, t := range d.Tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// Validate checks each bound's range and the form of hosts and roots.
func (b *Bounds) Validate() error {
	switch {
	case b.TimeoutMs < 1 || b.TimeoutMs > MaxTimeoutMs:
		return fmt.Errorf("bounds.timeoutMs must be 1 to %d", MaxTimeoutMs)
	case b.MemoryMiB < 1 || b.MemoryMiB > MaxMemoryMiB:
		return fmt.Errorf("bounds.memoryMiB must be 1 to %d", MaxMemoryMiB)
	case b.MaxOutputBytes < 1 || b.MaxOutputBytes > MaxOutputBytes:
		return fmt.Errorf("bounds.maxOutputBytes must be 1 to %d", MaxOutputBytes)
	case b.MaxRequests < 0 || b.MaxRequests > MaxRequests:
		return fmt.Errorf("bounds.maxRequests must be 0 to %d", MaxRequests)
	}
	if err := unique("bounds.allowedHosts", b.AllowedHosts, ValidHost); err != nil {
		return err
	}
	return unique("bounds.roots", b.Roots, rootNamePattern.MatchString)
}

func unique(what string, items []string, valid func(string) bool) error {
	seen := map[string]bool{}
	for _, s := range items {
		if !valid(s) {
			return fmt.Errorf("%s: an entry is not valid", what)
		}
		if seen[s] {
			return fmt.Errorf("%s: an entry appears twice", what)
		}
		seen[s] = true
	}
	return nil
}

// ValidHost reports whether s is an allowlist entry: a lower-case DNS name,
// an IPv4 address or a bracketed IPv6 address, with an optional port.
// Matching is exact, so there are no wildcards.
func ValidHost(s string) bool {
	host, port := s, ""
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return false
		}
		if strings.Contains(host, ":") && !strings.HasPrefix(s, "[") {
			return false
		}
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host = s[1 : len(s)-1]
		if ip := net.ParseIP(host); ip == nil || ip.To4() != nil {
			return false
		}
		return true
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.To4() != nil || strings.HasPrefix(s, "[")
	}
	if len(host) == 0 || len(host) > 253 {
		return false
	}
	for _, label := range strings.Split(host, ".") {
		if !hostLabelPattern.MatchString(label) {
			return false
		}
	}
	return true
}

// normalized returns b with nil lists as empty lists, so that the JSON
// form is the same whether a list was absent or empty.
func (b Bounds) normalized() Bounds {
	if b.AllowedHosts == nil {
		b.AllowedHosts = []string{}
	}
	if b.Roots == nil {
		b.Roots = []string{}
	}
	return b
}

// MarshalJSON encodes the bounds with empty lists rather than null.
func (b Bounds) MarshalJSON() ([]byte, error) {
	type plain Bounds
	return json.Marshal(plain(b.normalized()))
}

// Canonical returns the canonical JSON of the bounds, which boundsEcho
// must equal.
func (b Bounds) Canonical() []byte {
	data, _ := json.Marshal(b)
	c, _ := Canonical(data)
	return c
}

// EchoCheck compares a call's boundsEcho with one descriptor's bounds:
// the echo matches when it equals the bounds as canonical JSON. It is the
// comparison every executor makes (bounds-mismatch otherwise). It holds
// the bounds' two forms that callers echo byte for byte (the canonical
// one, and json.Marshal's, which GET /v1/tools lists), so that most calls
// match without canonicalizing their echo.
type EchoCheck struct{ canon, listed []byte }

// EchoCheck is the comparison of boundsEcho with b; make it once per
// descriptor.
func (b Bounds) EchoCheck() EchoCheck {
	listed, _ := json.Marshal(b)
	return EchoCheck{canon: b.Canonical(), listed: listed}
}

// Matches reports whether echo equals the bounds as canonical JSON.
func (e EchoCheck) Matches(echo json.RawMessage) bool {
	if bytes.Equal(echo, e.canon) || bytes.Equal(echo, e.listed) {
		return true
	}
	c, err := Canonical(echo)
	return err == nil && bytes.Equal(c, e.canon)
}
