package main

import (
	"fmt"
	"math"
	"time"
)

// Flag range checks. Each returns nil, or an error naming the flag, the
// value given and the range it must be in, so the message always says
// what the check checks ("--mtu 100: want 576 to 1472"). A zero that the
// bench package would read as "default" is refused where the flag's
// default is not zero: on the command line it is a mistake.

// firstErr returns the first non-nil error of errs.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// intIn wants lo ≤ v ≤ hi.
func intIn(flag string, v, lo, hi int) error {
	if v < lo || v > hi {
		return fmt.Errorf("--%s %d: want %d to %d", flag, v, lo, hi)
	}
	return nil
}

// intAtLeast wants v ≥ lo.
func intAtLeast(flag string, v, lo int) error {
	if v < lo {
		return fmt.Errorf("--%s %d: want at least %d", flag, v, lo)
	}
	return nil
}

// zeroOrIn wants v = 0 (the default, said by zero) or lo ≤ v ≤ hi.
func zeroOrIn(flag string, v, lo, hi int, zero string) error {
	if v != 0 && (v < lo || v > hi) {
		return fmt.Errorf("--%s %d: want 0 (%s) or %d to %d", flag, v, zero, lo, hi)
	}
	return nil
}

// percent wants 0 ≤ v ≤ 100 (NaN is out of range).
func percent(flag string, v float64) error {
	if !(v >= 0 && v <= 100) {
		return fmt.Errorf("--%s %v: want 0 to 100 (percent)", flag, v)
	}
	return nil
}

// positive wants a finite v > 0, at most hi when hi > 0.
func positive(flag string, v, hi float64) error {
	switch {
	case hi > 0 && !(v > 0 && v <= hi):
		return fmt.Errorf("--%s %v: want more than 0 and at most %v", flag, v, hi)
	case !(v > 0) || math.IsInf(v, 1):
		return fmt.Errorf("--%s %v: want more than 0 (and finite)", flag, v)
	}
	return nil
}

// burstLen wants a finite mean loss-run length of at least 1.
func burstLen(flag string, v float64) error {
	if !(v >= 1) || math.IsInf(v, 1) {
		return fmt.Errorf("--%s %v: want at least 1 (1: independent loss) and finite", flag, v)
	}
	return nil
}

// durationIn wants lo ≤ d ≤ hi.
func durationIn(flag string, d, lo, hi time.Duration) error {
	if d < lo || d > hi {
		return fmt.Errorf("--%s %v: want %v to %v", flag, d, lo, hi)
	}
	return nil
}

// nonNegative wants d ≥ 0.
func nonNegative(flag string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("--%s %v: want 0 or more", flag, d)
	}
	return nil
}

// positiveDuration wants 0 < d, and d ≤ hi when hi > 0.
func positiveDuration(flag string, d, hi time.Duration) error {
	switch {
	case hi > 0 && (d <= 0 || d > hi):
		return fmt.Errorf("--%s %v: want more than 0 and at most %v", flag, d, hi)
	case d <= 0:
		return fmt.Errorf("--%s %v: want more than 0", flag, d)
	}
	return nil
}
