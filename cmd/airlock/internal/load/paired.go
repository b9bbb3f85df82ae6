package load

import (
	"context"
	"fmt"
	"io"
	"iter"

	"github.com/airlock/airlock/broker/channel/rtt"
	"github.com/airlock/airlock/broker/v1client"
	"github.com/airlock/airlock/executors/wire"
)

// floorCallID is the callId the channel frames of the floor carry: a
// broker-assigned id of the length a long run reaches, as BenchmarkCalls
// in broker/channel measures it.
const floorCallID = "b_1000000"

// PairedCalls are the two calls of the paired shape: the same tool and
// args, once on a descriptor a paired environment serves and once on one
// the broker serves itself; Executor is where each lives (GET /v1/tools).
type PairedCalls struct {
	Paired, Local                 wire.Call
	PairedExecutor, LocalExecutor string
}

// Paired measures a paired-environment call beside its floor in one run
// of turns: (a) the call through the broker to the paired descriptor,
// (b) the same call to the local descriptor, (c) one bare loopback
// coder/websocket round trip with frames the size of (a)'s call and
// answer on the channel (package rtt), all at o.Concurrency. The floor is
// local + rtt; the performance target is a paired call at most 1.5 times it.
// A ctx that ends cuts the run short.
func Paired(ctx context.Context, c *v1client.Client, pc PairedCalls, o CallsOptions) (*PairedReport, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	callFrame, answerSize, err := channelFrames(ctx, c, pc.Paired)
	if err != nil {
		return nil, err
	}
	floor, echoLabel, err := startRTT(ctx, answerSize, o)
	if err != nil {
		return nil, err
	}
	defer floor.Close()
	m := newMeter("calls", "paired", "local", "rtt")
	pairedOp, closePaired, err := directOp(c, pc.Paired, o.Concurrency, "broker")
	if err != nil {
		return nil, err
	}
	defer closePaired()
	localOp, closeLocal, err := directOp(c, pc.Local, o.Concurrency, "broker")
	if err != nil {
		return nil, err
	}
	defer closeLocal()
	rttOp := func(ctx context.Context, _ int) (string, error) {
		if err := floor.RoundTrip(ctx, callFrame); err != nil {
			return "", err
		}
		return "ok", nil
	}
	sides := []*callers{newCallers(o.Concurrency, pairedOp, m, 0), newCallers(o.Concurrency, localOp, m, 1),
		newCallers(o.Concurrency, rttOp, m, 2)}
	p := o.plan(true)
	stopProgress := startProgress(m, o.Progress)
	measured := alternate(ctx, p, []side{sides[0], sides[1], sides[2]}, m)
	stopProgress()
	rep := &PairedReport{Command: "calls", Shape: "paired", Broker: c.Base, Tool: pc.Paired.Tool,
		PairedDescriptorID: pc.Paired.DescriptorID, PairedExecutor: pc.PairedExecutor,
		LocalDescriptorID: pc.Local.DescriptorID, LocalExecutor: pc.LocalExecutor,
		Concurrency: o.Concurrency, CallFrameBytes: len(callFrame), AnswerFrameBytes: answerSize,
		RunInfo: RunInfo{DurationSeconds: o.Duration.Seconds(), WarmupSeconds: o.Warmup.Seconds(),
			SliceSeconds: p.slice.Seconds(), Interrupted: ctx.Err() != nil}}
	rep.Paired = sumTallies(fmt.Sprintf("POST /v1/calls to %s, served by %s over /channel", pc.Paired.DescriptorID, pc.PairedExecutor),
		sides[0].tallies, measured[0])
	rep.Local = sumTallies(fmt.Sprintf("POST /v1/calls to %s, served by the broker's own executors", pc.Local.DescriptorID),
		sides[1].tallies, measured[1])
	rep.RTT = sumTallies(fmt.Sprintf("one bare coder/websocket round trip on loopback to %s, %d bytes out, %d back", echoLabel, len(callFrame), answerSize),
		sides[2].tallies, measured[2])
	rep.Floor, rep.Ratios = pairedFloor(&rep.Paired, &rep.Local, &rep.RTT)
	return rep, nil
}

// PairedShapes runs Paired once for each number of callers in shapes, one
// after the other; a run that ctx cut short is the last.
func PairedShapes(ctx context.Context, c *v1client.Client, pc PairedCalls, o CallsOptions, shapes ...int) ([]*PairedReport, error) {
	return eachShape(shapes, o, func(r *PairedReport) bool { return r.Interrupted }, func(o CallsOptions) (*PairedReport, error) {
		return Paired(ctx, c, pc, o)
	})
}

// startRTT connects the rtt side to its echo: in a process of its own
// when o.RTTEcho is set (the environment is one too), else in this
// process. It says which.
func startRTT(ctx context.Context, answerSize int, o CallsOptions) (rttSide, string, error) {
	if o.RTTEcho == nil {
		f, err := rtt.New(ctx, answerSize)
		return f, "an echo in the load tool's process", err
	}
	p, err := o.RTTEcho(ctx, answerSize)
	if err != nil {
		return nil, "", fmt.Errorf("load: %w", err)
	}
	f, err := rtt.Dial(ctx, p.URL, SecretHeader(p.Secret), answerSize)
	if err != nil {
		_ = p.Stop()
		return nil, "", err
	}
	return rttOwnProcess{f, p}, fmt.Sprintf("an echo in its own process (pid %d)", p.PID), nil
}

// rttSide is the floor's round trip, whichever process its echo is in.
type rttSide interface {
	RoundTrip(ctx context.Context, frame []byte) error
	Close()
}

// rttOwnProcess is a floor dialled to an echo process, which Close stops.
type rttOwnProcess struct {
	*rtt.Floor
	p *FloorProcess
}

func (r rttOwnProcess) Close() {
	r.Floor.Close()
	_ = r.p.Stop()
}

// channelFrames makes one call to the paired descriptor and returns the
// call frame the broker puts on the channel for it and the size of the
// answer frame the environment sends back (both under floorCallID).
func channelFrames(ctx context.Context, c *v1client.Client, call wire.Call) (callFrame []byte, answerSize int, err error) {
	a, _, err := c.Call(ctx, call)
	if err != nil {
		return nil, 0, fmt.Errorf("the first call to %s: %w", call.DescriptorID, err)
	}
	out := call
	out.CallID = floorCallID
	a.CallID = floorCallID
	return wire.CallFrame(out), len(wire.AnswerFrame(a)), nil
}

// PairedFloor is local + rtt from the same run: calls/s of one call
// followed by one round trip, 1/(1/local + 1/rtt), and the sum of the
// medians.
type PairedFloor struct {
	CallsPerSecond float64 `json:"callsPerSecond"`
	P50Ms          float64 `json:"p50Ms"`
}

// PairedRatios are paired ÷ (local + rtt). Throughput below 1 and
// TimePerCall and P50 above 1 mean the paired call costs more than its
// floor; the performance target is TimePerCall and P50 at most 1.5.
type PairedRatios struct {
	Throughput  float64 `json:"throughput"`
	TimePerCall float64 `json:"timePerCall"`
	P50         float64 `json:"p50"`
}

// pairedFloor is the floor and the ratios, nil where a side measured
// nothing.
func pairedFloor(paired, local, rtt *CallsFigures) (*PairedFloor, *PairedRatios) {
	if local.CallsPerSecond <= 0 || rtt.CallsPerSecond <= 0 || local.LatencyMs.P50 <= 0 || rtt.LatencyMs.P50 <= 0 {
		return nil, nil
	}
	f := &PairedFloor{CallsPerSecond: 1 / (1/local.CallsPerSecond + 1/rtt.CallsPerSecond),
		P50Ms: local.LatencyMs.P50 + rtt.LatencyMs.P50}
	if paired.CallsPerSecond <= 0 || paired.LatencyMs.P50 <= 0 {
		return f, nil
	}
	return f, &PairedRatios{Throughput: paired.CallsPerSecond / f.CallsPerSecond,
		TimePerCall: f.CallsPerSecond / paired.CallsPerSecond, P50: paired.LatencyMs.P50 / f.P50Ms}
}

// PairedTarget is the performance target's bound on a paired call: at most this many
// times a local call plus one loopback round trip.
const PairedTarget = 1.5

// PairedReport is the report of `airlock load calls --paired-descriptor`.
type PairedReport struct {
	Command            string `json:"command"`
	Shape              string `json:"shape"`
	Broker             string `json:"broker"`
	Tool               string `json:"tool"`
	PairedDescriptorID string `json:"pairedDescriptorId"`
	PairedExecutor     string `json:"pairedExecutor"`
	LocalDescriptorID  string `json:"localDescriptorId"`
	LocalExecutor      string `json:"localExecutor"`
	Concurrency        int    `json:"concurrency"`
	CallFrameBytes     int    `json:"callFrameBytes"`
	AnswerFrameBytes   int    `json:"answerFrameBytes"`
	RunInfo
	Paired CallsFigures  `json:"paired"`
	Local  CallsFigures  `json:"local"`
	RTT    CallsFigures  `json:"rtt"`
	Floor  *PairedFloor  `json:"floor,omitempty"`
	Ratios *PairedRatios `json:"ratios,omitempty"`
}

// Sides lists the measured figures in print order.
func (r *PairedReport) Sides() iter.Seq2[string, *CallsFigures] {
	return func(yield func(string, *CallsFigures) bool) {
		_ = yield("paired", &r.Paired) && yield("local", &r.Local) && yield("rtt", &r.RTT)
	}
}

// Print is the report for a person: the three sides and the floor in one
// table, then the ratio against the target, then the outcomes.
func (r *PairedReport) Print(w io.Writer) {
	r.printHeader(w, fmt.Sprintf("%s on %s, paired descriptor %s (%s) beside local descriptor %s, %d callers",
		r.Tool, r.Broker, r.PairedDescriptorID, r.PairedExecutor, r.LocalDescriptorID, r.Concurrency), true)
	tw := callsTable(w)
	for name, f := range r.Sides() {
		callsRow(tw, len("local + rtt"), name, f)
	}
	if r.Floor != nil {
		fmt.Fprintf(tw, "local + rtt\t-\t%.1f\t%s\t-\t-\t-\t\n", r.Floor.CallsPerSecond, fmtMs(r.Floor.P50Ms))
	}
	tw.Flush()
	fmt.Fprintln(w)
	for name, f := range r.Sides() {
		fmt.Fprintf(w, "%s: %s\n", name, f.Label)
	}
	fmt.Fprintln(w, "local + rtt: calls/s 1/(1/local + 1/rtt), p50 local's + rtt's")
	if r.Ratios == nil {
		fmt.Fprintln(w, "ratio paired/(local + rtt): none (a side measured nothing)")
	} else {
		fmt.Fprintf(w, "ratio paired/(local + rtt): calls/s %.3g× (time per call %.3g×)   p50 %.3g×   (target: time per call and p50 at most %.3g×)\n",
			r.Ratios.Throughput, r.Ratios.TimePerCall, r.Ratios.P50, PairedTarget)
	}
	if !r.Paired.AllOK() || !r.Local.AllOK() {
		fmt.Fprintln(w, "note: not every call was answered ok, so the sides did not do the same work")
	}
	for name, f := range r.Sides() {
		printOutcomes(w, name, f)
	}
}
