package load

import (
	"math"
	"math/bits"
	"time"
)

// histogram records durations in constant memory, however long a run is:
// exact below 64 ns, then 64 buckets per power of two up to about 18
// minutes. A percentile is reported as its bucket's middle, within 1/128
// of the true value; max is kept exactly. A histogram belongs to one
// goroutine; merge them once the goroutines are done.
type histogram struct {
	counts []uint64 // allocated on the first record
	n      uint64
	max    time.Duration
}

const (
	histSubBits = 6
	histSub     = 1 << histSubBits
	// histMax is the largest duration told apart; longer ones are
	// counted in the last bucket (and still set max).
	histMax     = 1<<40 - 1
	histBuckets = (40-histSubBits)<<histSubBits + histSub
)

// bucketOf is v's bucket: v itself below histSub, else the power of two
// and the next histSubBits bits below its leading one.
func bucketOf(v uint64) int {
	if v < histSub {
		return int(v)
	}
	shift := bits.Len64(v) - 1 - histSubBits
	return (shift+1)<<histSubBits + int(v>>shift) - histSub
}

// bucketMid is the middle of bucket i, the value a percentile reports.
func bucketMid(i int) uint64 {
	if i < histSub {
		return uint64(i)
	}
	shift := i>>histSubBits - 1
	low := uint64(histSub+i&(histSub-1)) << shift
	return low + (uint64(1)<<shift)/2
}

func (h *histogram) record(d time.Duration) {
	if h.counts == nil {
		h.counts = make([]uint64, histBuckets)
	}
	v := uint64(max(d, 0))
	h.counts[bucketOf(min(v, histMax))]++
	h.n++
	h.max = max(h.max, d)
}

func (h *histogram) merge(o *histogram) {
	if o.n == 0 {
		return
	}
	if h.counts == nil {
		h.counts = make([]uint64, histBuckets)
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// percentile is the nearest-rank q-quantile (0 < q <= 1): the smallest
// recorded value at or above which lies a fraction q of the records,
// never above max. Zero when nothing was recorded.
func (h *histogram) percentile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := max(uint64(math.Ceil(q*float64(h.n))), 1)
	var seen uint64
	for i, c := range h.counts[:histBuckets-1] {
		if seen += c; seen >= rank {
			return min(time.Duration(bucketMid(i)), h.max)
		}
	}
	return h.max // in the last bucket, which holds everything longer
}
