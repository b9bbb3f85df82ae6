package executors

import (
	"context"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/airlock/airlock/config/plugincfg"
	"github.com/airlock/airlock/executors/wire"
)

// hostModuleName is the import module guests use for broker services.
const hostModuleName = "airlock"

// Per-call bounds on the log host function, and on the log lines of
// config_get asks for undeclared names.
const (
	maxLogLines       = 64
	maxLogLineBytes   = 2048
	maxUndeclaredLogs = 8
)

// hostModule defines the "airlock" import module (plugins/sdk/ABI.md has
// the contract):
//
//	fetch(req_ptr, req_len i32) -> resp_len i32
//	fetch_read(buf_ptr, buf_len i32) -> copied i32
//	log(msg_ptr, msg_len i32)
//	config_get(name_ptr, name_len, buf_ptr, buf_len i32) -> value_len i32
//
// Each function finds its call in the context; a refusal is recorded
// there and ends the call by panicking out of the guest.
func (r *Runtime) hostModule() wazero.HostModuleBuilder {
	b := r.wz.NewHostModuleBuilder(hostModuleName)
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(r.hostFetch), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		WithParameterNames("req_ptr", "req_len").
		Export("fetch")
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostFetchRead), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		WithParameterNames("buf_ptr", "buf_len").
		Export("fetch_read")
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostLog), []api.ValueType{i32, i32}, nil).
		WithParameterNames("msg_ptr", "msg_len").
		Export("log")
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostConfigGet), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		WithParameterNames("name_ptr", "name_len", "buf_ptr", "buf_len").
		Export("config_get")
	return b
}

// callOf returns the call running in ctx; a host function called outside
// a call (which the executor never does) fails the guest.
func callOf(ctx context.Context) *callState {
	s := stateFrom(ctx)
	if s == nil {
		panic(&refusal{rule: wire.ExecThrew})
	}
	return s
}

// guestBytes reads len bytes at ptr, ending the call as exec-threw if the
// guest passed a range outside its memory.
func guestBytes(s *callState, m api.Module, ptr, n uint64) []byte {
	b, ok := m.Memory().Read(uint32(ptr), uint32(n))
	if !ok {
		s.stop(wire.ExecThrew)
	}
	return b
}

func (r *Runtime) hostFetch(ctx context.Context, m api.Module, stack []uint64) {
	s := callOf(ctx)
	req := guestBytes(s, m, stack[0], stack[1])
	s.pending = r.fetch(s, req)
	stack[0] = uint64(uint32(len(s.pending)))
}

// hostFetchRead copies up to buf_len bytes of the pending response and
// discards it.
func hostFetchRead(ctx context.Context, m api.Module, stack []uint64) {
	s := callOf(ctx)
	n := min(uint64(len(s.pending)), uint64(uint32(stack[1])))
	if n > 0 && !m.Memory().Write(uint32(stack[0]), s.pending[:n]) {
		s.stop(wire.ExecThrew)
	}
	s.pending = nil
	stack[0] = n
}

// hostLog writes one guest line to the operator's log, at most
// maxLogLines per call and maxLogLineBytes each.
func hostLog(ctx context.Context, m api.Module, stack []uint64) {
	s := callOf(ctx)
	s.logLines++
	if s.logLines > maxLogLines {
		if s.logLines == maxLogLines+1 {
			s.logger().Info("guest log limit reached; further lines dropped")
		}
		return
	}
	msg := guestBytes(s, m, stack[0], min(stack[1], maxLogLineBytes))
	s.logger().Info("guest log", "line", strings.ToValidUTF8(string(msg), "\uFFFD"))
}

// configNotFound is config_get's answer for a name that is not declared
// or not set.
const configNotFound = -1

// hostConfigGet answers config_get: the length of the operator's value
// of a declared name, with as much of it as fits copied to buf, or -1
// when the name is not declared in plugin.json or the operator did not
// set it. An ask for an undeclared name is logged with the name (never a
// value), at most maxUndeclaredLogs times a call. See PROTOCOL section
// 8.4.
func hostConfigGet(ctx context.Context, m api.Module, stack []uint64) {
	s := callOf(ctx)
	nameLen := uint64(uint32(stack[1]))
	name := string(guestBytes(s, m, stack[0], min(nameLen, plugincfg.MaxNameBytes+1)))
	if nameLen > plugincfg.MaxNameBytes || !s.p.config[name] {
		s.undeclaredConfig(name)
		stack[0] = api.EncodeI32(configNotFound)
		return
	}
	if s.values == nil {
		s.values = s.p.rt.values.Load()
	}
	v, ok := s.values.Get(s.p.d.DescriptorID, name)
	if !ok {
		stack[0] = api.EncodeI32(configNotFound)
		return
	}
	n := min(uint64(len(v)), uint64(uint32(stack[3])))
	if n > 0 && !m.Memory().WriteString(uint32(stack[2]), v[:n]) {
		s.stop(wire.ExecThrew)
	}
	stack[0] = api.EncodeI32(int32(len(v)))
}

// undeclaredConfig tells the operator that the guest asked for a name its
// plugin.json does not declare (it was answered not found).
func (s *callState) undeclaredConfig(name string) {
	s.undeclared++
	if s.undeclared > maxUndeclaredLogs {
		return
	}
	s.logger().Warn("guest asked for a config name plugin.json does not declare; answered not found",
		"name", strings.ToValidUTF8(name, "\uFFFD"))
}
