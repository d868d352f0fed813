//go:build !race

package state

// raceEnabled: the race detector changes what escapes to the heap.
const raceEnabled = false
