//go:build race

package broker

// raceEnabled scales the largest tests down under the race detector.
const raceEnabled = true
