//go:build race

package pool

// raceAllocs is what the race detector adds to a call's round trip allocations.
const raceAllocs = 1
