//go:build !race

package pool

// raceAllocs is what the race detector adds to a call's round trip allocations: none without it.
const raceAllocs = 0
