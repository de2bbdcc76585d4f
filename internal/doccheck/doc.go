// Package doccheck holds no code of its own: its tests check that the
// repository's documentation says true things about the repository.
//
// They fail on a Markdown link (in README.md, CHANGELOG.md and docs/*.md)
// to a file that does not exist or to an anchor no heading of its target
// produces; on a "WIRE.md §9.5"-style section reference to a numbered
// section that does not exist; on a backticked Go name in those files that
// no package of the repository declares; on any reference, in the
// repository's Markdown or Go files, to a design file outside the
// repository; on a docs/*.md path or "WIRE.md §9.5" reference in a Go
// comment that does not resolve; and on a scenario id (S-xx) cited
// anywhere that docs/SCENARIOS.md does not define, or a test SCENARIOS.md
// names that its package does not declare. They read files only: no network, no go
// command; about a second (a few under -race).
package doccheck
