package main

import (
	"slices"
	"time"
)

// percentile returns the q-quantile (0..1) of sorted durations, nearest rank.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

type latencies struct {
	P50, P90, P99, Max, Mean float64 // microseconds
}

func summarise(d []time.Duration) latencies {
	slices.Sort(d)
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	us := func(x time.Duration) float64 { return float64(x.Nanoseconds()) / 1e3 }
	l := latencies{P50: us(percentile(d, .50)), P90: us(percentile(d, .90)), P99: us(percentile(d, .99))}
	if len(d) > 0 {
		l.Max = us(d[len(d)-1])
		l.Mean = us(sum / time.Duration(len(d)))
	}
	return l
}
