package contract

import (
	"encoding/json"
	"testing"

	"github.com/airlock/airlock/executors/wire"
)

// The validation as it was before the payload was split in the frame's
// own walk: the frame walked by wire.EachMember, then the payload walked
// again on its own by wire.MembersInterned into a map. Kept as the
// reference FuzzOneWalk holds Validate to.

func validateTwoWalks(f Frame, c Context) (*Message, map[string]json.RawMessage, *Refusal) {
	if f.Binary {
		return nil, nil, invalid(DetailBinaryFrame)
	}
	if f.Oversize {
		return nil, nil, invalid(DetailFrameTooLarge)
	}
	top, r := envelopeMembersTwoWalks(f.Data)
	if r != nil {
		return nil, nil, r
	}
	if !isOne(top.version) {
		return nil, nil, refuse(ProtocolVersionMismatch, DetailProtocolVersion)
	}
	if !stringIs(top.session, c.SessionID) {
		return nil, nil, refuse(SessionMismatch, DetailSessionMismatch)
	}
	m, payload, r := envelopeTwoWalks(top)
	if r != nil {
		return nil, nil, r
	}
	m.Raw = f.Data
	if r := checkType(m, c); r != nil {
		r.RequestID = m.RequestID
		return nil, nil, r
	}
	return m, payload, nil
}

func envelopeTwoWalks(top envelopeFields) (*Message, map[string]json.RawMessage, *Refusal) {
	if top.unknown {
		return nil, nil, invalid(DetailEnvelopeKey)
	}
	typ, ok := internedString(top.typ, typeNames)
	if !ok {
		return nil, nil, invalid(DetailEnvelopeType)
	}
	raw, present := top.payload, top.payload != nil
	if !present {
		return nil, nil, invalid(DetailEnvelopePayload)
	}
	payload, r := objectMembersTwoWalks(raw)
	if r != nil {
		return nil, nil, invalid(DetailEnvelopePayload)
	}
	m := &Message{Type: typ, payloadLen: len(raw)}
	// The checks read payloadFields now; fill them from the map the old
	// walk built, so the checks see what they saw then.
	for k, v := range payload {
		if i, ok := payloadIndex[k]; ok {
			m.payload[i] = v
		}
	}
	if seq, present := top.sequence, top.sequence != nil; present {
		n, ok := intValue(seq)
		if !ok || n < 1 {
			return nil, nil, invalid(DetailEnvelopeSequence)
		}
		m.HostSequence = n
	}
	if id, ok := stringValue(payload["requestId"]); ok && validRequestID(id) {
		m.RequestID = id
	}
	return m, payload, nil
}

func envelopeMembersTwoWalks(data []byte) (envelopeFields, *Refusal) {
	var top envelopeFields
	if r := walkRefusal(wire.EachMember(data, MaxFrameDepth, top.take)); r != nil {
		return envelopeFields{}, r
	}
	return top, nil
}

func objectMembersTwoWalks(data []byte) (map[string]json.RawMessage, *Refusal) {
	m, err := wire.MembersInterned(data, MaxFrameDepth, nil)
	if r := walkRefusal(err); r != nil {
		return nil, r
	}
	return m, nil
}

// FuzzOneWalk: Validate, which walks a frame once and splits its payload
// in that walk, gives every frame, from either role, in the handshake or
// after it, the same verdict as the two walks it replaced: the same
// refusal (code, detail, requestId) or the same message, and the payload
// members the checks read are those the second walk found.
func FuzzOneWalk(f *testing.F) {
	for _, g := range loadGolden(f) {
		if !g.frame.Binary && !g.frame.Oversize {
			f.Add(g.frame.Data, uint8(g.ctx.Role), g.ctx.Handshake)
		}
	}
	f.Add([]byte(`{"protocolVersion":1,"workspaceSessionId":"`+testSession+`","type":"projection","hostSequence":1,"payload":{"nodes":[],"PAYLOAD":{"requestId":"x"}}}`), uint8(Host), false)
	f.Add([]byte(`{"protocolVersion":1,"workspaceSessionId":"`+testSession+`","type":"validateResult","pa\u0079load":{"requestId":"r1","target":{"a":1},"Target":2}}`), uint8(Host), false)
	f.Fuzz(func(t *testing.T, data []byte, role uint8, handshake bool) {
		c := Context{Role: Host, SessionID: testSession, Handshake: handshake}
		if role&1 == 1 {
			c.Role, c.ViewID, c.CanPropose = View, testView, role&2 == 0
		}
		got, r := Validate(Frame{Data: data}, c)
		want, payload, wr := validateTwoWalks(Frame{Data: data}, c)
		if (r == nil) != (wr == nil) {
			t.Fatalf("%q: one walk %+v, two walks %+v", data, r, wr)
		}
		if r != nil {
			if *r != *wr {
				t.Fatalf("%q: one walk refuses %+v, two walks %+v", data, *r, *wr)
			}
			return
		}
		if got.Type != want.Type || got.Spec.From != want.Spec.From || got.Spec.Family != want.Spec.Family || got.Spec.Kind != want.Spec.Kind ||
			got.HostSequence != want.HostSequence || got.RequestID != want.RequestID || got.Target != want.Target ||
			got.ViewID != want.ViewID || string(got.Raw) != string(want.Raw) || got.payloadLen != want.payloadLen {
			t.Fatalf("%q: one walk %+v, two walks %+v", data, got, want)
		}
		for i, k := range payloadKeys {
			if string(got.payload[i]) != string(payload[k]) {
				t.Fatalf("%q: payload %s: one walk %q, two walks %q", data, k, got.payload[i], payload[k])
			}
		}
	})
}
