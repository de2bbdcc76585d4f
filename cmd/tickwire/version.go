package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// libraryPath is the module path of the tickwire library, whose version
// the version report names beside the CLI's own.
const libraryPath = "github.com/tickwire/tickwire"

// runVersion is the version subcommand (and --version): it prints what
// runtime/debug.ReadBuildInfo says about this binary.
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tickwire version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: tickwire version   (or tickwire --version)")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Prints the CLI module's version, the library version it was built with,")
		fmt.Fprintln(stderr, "the VCS revision and time (when the binary was stamped), and the Go version.")
	}
	if code := parseArgs(fs, args, stderr); code >= 0 {
		return code
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		fmt.Fprintln(stdout, "tickwire: no build information (built without module support)")
		return exitOK
	}
	fmt.Fprint(stdout, versionReport(bi))
	return exitOK
}

// versionReport formats bi as a few lines:
//
//	tickwire (devel) github.com/tickwire/tickwire/cmd/tickwire
//	library  (devel) github.com/tickwire/tickwire => ../..
//	vcs      git 1a2b3c4d5e6f 2026-12-01T23:30:00Z (modified)
//	go       go1.26.2 linux/amd64
//
// The first line is the CLI module's version: a release tag
// (cmd/tickwire/vX.Y.Z) when installed with go install …@vX.Y.Z, a
// pseudo-version or "(devel)" when built from a checkout. The library line
// is the library module the binary was built with (inside the repository,
// the replace directive or go.work points it at the checkout). The vcs
// line names the commit when the go command stamped the binary (go build
// in a git checkout; not go run, go test or -buildvcs=false).
func versionReport(bi *debug.BuildInfo) string {
	var b strings.Builder
	version := func(v string) string {
		if v == "" {
			return "(devel)"
		}
		return v
	}
	fmt.Fprintf(&b, "tickwire %s %s\n", version(bi.Main.Version), bi.Main.Path)
	lib := "not linked"
	if bi.Main.Path == libraryPath {
		lib = version(bi.Main.Version) + " " + libraryPath + " (the main module)"
	}
	for _, d := range bi.Deps {
		if d.Path != libraryPath {
			continue
		}
		lib = version(d.Version) + " " + d.Path
		if d.Replace != nil {
			lib += " => " + d.Replace.Path
			if v := d.Replace.Version; v != "" && v != "(devel)" {
				lib += " " + d.Replace.Version
			}
		}
	}
	fmt.Fprintf(&b, "library  %s\n", lib)
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		line := settings["vcs"] + " " + rev
		if t := settings["vcs.time"]; t != "" {
			line += " " + t
		}
		if settings["vcs.modified"] == "true" {
			line += " (modified)"
		}
		fmt.Fprintf(&b, "vcs      %s\n", strings.TrimSpace(line))
	} else {
		fmt.Fprintf(&b, "vcs      no revision stamped (go build in a git checkout stamps one; go run, go test and -buildvcs=false do not)\n")
	}
	goLine := bi.GoVersion
	if os, arch := settings["GOOS"], settings["GOARCH"]; os != "" && arch != "" {
		goLine += " " + os + "/" + arch
	}
	fmt.Fprintf(&b, "go       %s\n", goLine)
	return b.String()
}

// buildStamp returns what the version report says of this binary, for
// the bench's JSON: the CLI module's version ("(devel)" from a
// checkout) and the VCS revision ("" when not stamped; "+modified"
// appended for a dirty tree).
func buildStamp() (version, commit string) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "", ""
	}
	return stampOf(bi)
}

// stampOf is buildStamp of bi.
func stampOf(bi *debug.BuildInfo) (version, commit string) {
	version = bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if commit != "" && modified {
		commit += "+modified"
	}
	return version, commit
}
