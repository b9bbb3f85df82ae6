package wire

import (
	"encoding/json"
)

// Control messages of the executor channel (PROTOCOL section 6). A frame
// from a peer whose top-level object has a "type" key is a control
// message; any other frame must be an answer envelope.
const (
	TypeHello       = "hello"
	TypeCatalog     = "catalog"
	RoleEnvironment = "environment"
)

// Limits on control messages. A hello is tiny, so the broker reads at most
// MaxHelloBytes from a socket that has not authenticated; a catalog is
// bounded so one peer cannot make the routing table arbitrarily large.
const (
	MaxHelloBytes         = 1024
	MaxBearerLen          = 256
	MaxCatalogDescriptors = 256
)

// Hello is the bearer hello an environment sends first on /channel.
type Hello struct {
	Type   string `json:"type"`
	Role   string `json:"role"`
	Bearer string `json:"bearer"`
}

// IsControl reports whether data is a JSON object with a top-level "type"
// key, which makes it a control message rather than an answer envelope.
// Anything that is not a well-formed object is not a control message; it
// then fails ParseAnswer with its own rule.
func IsControl(data []byte) bool {
	m, err := Members(data)
	if err != nil {
		return false
	}
	_, ok := m["type"]
	return ok
}

// ParseHello validates data as the bearer hello: exactly the keys type,
// role and bearer, each a string; type "hello", role "environment", and a
// bearer of 1 to MaxBearerLen printable characters. Whether the bearer is
// paired is the caller's question.
func ParseHello(data []byte) (Hello, error) {
	if len(data) > MaxHelloBytes {
		return Hello{}, fail(Malformed, "hello over its size bound")
	}
	var raw struct {
		Type   *string `json:"type"`
		Role   *string `json:"role"`
		Bearer *string `json:"bearer"`
	}
	if err := DecodeStrict(data, &raw); err != nil {
		return Hello{}, fail(RuleOf(err), "hello is not type, role and bearer strings")
	}
	if raw.Type == nil || raw.Role == nil || raw.Bearer == nil {
		return Hello{}, fail(Malformed, "hello needs type, role and bearer")
	}
	if *raw.Type != TypeHello {
		return Hello{}, fail(Malformed, "type must be hello")
	}
	if *raw.Role != RoleEnvironment {
		return Hello{}, fail(Malformed, "role must be environment")
	}
	if len(*raw.Bearer) > MaxBearerLen || !ValidID(*raw.Bearer) {
		return Hello{}, fail(Malformed, "bearer must be a short printable string")
	}
	return Hello{Type: TypeHello, Role: RoleEnvironment, Bearer: *raw.Bearer}, nil
}

// catalogDescriptor is a descriptor as a catalog carries it: like a
// /v1/tools entry without executor and sha256, which the broker assigns.
type catalogDescriptor struct {
	DescriptorID string `json:"descriptorId"`
	Tools        []Tool `json:"tools"`
	Bounds       Bounds `json:"bounds"`
}

// ParseCatalog validates data as {"type":"catalog","descriptors":[…]}:
// strict keys at every level, at most MaxCatalogDescriptors descriptors,
// each valid (Descriptor.Validate) and with a distinct id. An empty list is
// a valid catalog (an environment with no tools).
func ParseCatalog(data []byte) ([]Descriptor, error) {
	var raw struct {
		Type        *string              `json:"type"`
		Descriptors *[]catalogDescriptor `json:"descriptors"`
	}
	if err := DecodeStrict(data, &raw); err != nil {
		return nil, fail(RuleOf(err), "catalog does not have the expected shape")
	}
	if raw.Type == nil || *raw.Type != TypeCatalog || raw.Descriptors == nil {
		return nil, fail(Malformed, "a catalog is type catalog with a descriptors array")
	}
	if len(*raw.Descriptors) > MaxCatalogDescriptors {
		return nil, fail(Malformed, "catalog over its descriptor bound")
	}
	out := make([]Descriptor, 0, len(*raw.Descriptors))
	seen := map[string]bool{}
	for _, cd := range *raw.Descriptors {
		d := Descriptor{DescriptorID: cd.DescriptorID, Tools: cd.Tools, Bounds: cd.Bounds}
		if err := d.Validate(); err != nil {
			return nil, fail(Malformed, "a catalog descriptor is not valid")
		}
		if seen[d.DescriptorID] {
			return nil, fail(Malformed, "a descriptor id appears twice in the catalog")
		}
		seen[d.DescriptorID] = true
		out = append(out, d)
	}
	return out, nil
}

// HelloFrame encodes the hello an environment sends.
func HelloFrame(bearer string) []byte {
	data, _ := json.Marshal(Hello{Type: TypeHello, Role: RoleEnvironment, Bearer: bearer})
	return data
}

// CatalogFrame encodes a catalog of ds, leaving out each executor.
func CatalogFrame(ds []Descriptor) []byte {
	list := make([]catalogDescriptor, len(ds))
	for i, d := range ds {
		list[i] = catalogDescriptor{DescriptorID: d.DescriptorID, Tools: d.Tools, Bounds: d.Bounds}
	}
	data, _ := marshal(struct {
		Type        string              `json:"type"`
		Descriptors []catalogDescriptor `json:"descriptors"`
	}{TypeCatalog, list})
	return data
}

// CallFrame encodes c as the call envelope sent on the channel.
func CallFrame(c Call) []byte { return AppendCallFrame(nil, c) }

// AppendCallFrame appends CallFrame(c) to dst, so that a sender can encode
// into a buffer it reuses.
func AppendCallFrame(dst []byte, c Call) []byte {
	if data, ok := appendCall(dst, c); ok {
		return data
	}
	data, _ := marshal(c)
	return append(dst, data...)
}

// AnswerFrame encodes a as the answer envelope sent on the channel.
func AnswerFrame(a Answer) []byte { return AppendAnswerFrame(nil, a) }

// AppendAnswerFrame appends AnswerFrame(a) to dst (Answer.AppendJSON; an
// answer whose observed is not JSON appends nothing, as encoding/json
// would refuse it).
func AppendAnswerFrame(dst []byte, a Answer) []byte {
	out, _ := a.AppendJSON(dst)
	return out
}
