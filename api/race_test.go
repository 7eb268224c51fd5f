//go:build race

package api

// raceEnabled: the test binary runs under the race detector.
const raceEnabled = true
