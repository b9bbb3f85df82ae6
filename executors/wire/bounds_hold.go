package wire

// OutputFits reports whether a compact observation is within the bounds'
// maxOutputBytes. It is the one output bound of the broker: the local
// executor applies it to a module's compacted stdout, and the executor
// channel to the compacted observed of a page's or an environment's
// answer, so both kinds of executor are held to the same rule.
func (b Bounds) OutputFits(observed []byte) bool { return len(observed) <= b.MaxOutputBytes }

// BudgetAgrees reports whether an answer's budget could have come from a
// call under these bounds: absent (budget is optional), or with
// requestsLimit equal to maxRequests and requestsUsed not over it. A
// budget that disagrees is a lie about the call's fetch accounting, which
// the caller would otherwise trust.
func (b Bounds) BudgetAgrees(g *Budget) bool {
	return g == nil || (g.RequestsLimit == b.MaxRequests && g.RequestsUsed <= g.RequestsLimit)
}
