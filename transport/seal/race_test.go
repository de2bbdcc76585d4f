//go:build race

package seal

// raceEnabled is true under the race detector, which makes every AEAD
// call expensive; the heaviest tests then sample instead of covering all.
const raceEnabled = true
