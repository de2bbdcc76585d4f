//go:build !race

package fragment

// raceEnabled is true under the race detector, which makes every copied
// byte expensive; the heaviest tests then sample instead of covering all.
const raceEnabled = false
