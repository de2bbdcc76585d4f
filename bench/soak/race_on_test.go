//go:build race

package soak

// raceEnabled: the test binary was built with -race.
const raceEnabled = true
