package main

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/tickwire/tickwire/bench"
)

func TestProgressLine(t *testing.T) {
	p := bench.Progress{Index: 6, Total: 43, Rep: 1, Reps: 3, Elapsed: 31 * time.Second, ETA: 72 * time.Second,
		Scenario: bench.Scenario{Profile: bench.ProfileEcho, Transport: bench.KCPFast, Link: bench.Link{Loss: 0.05}}}
	if got, want := progressLine(p), "bench: row 7/43 echo kcp-fast 5% loss rep 2/3 · 0:31 elapsed, ETA 1:12"; got != want {
		t.Errorf("progressLine = %q, want %q", got, want)
	}
	p = bench.Progress{Index: 0, Total: 1, Reps: 1, Scenario: bench.Scenario{Profile: bench.ProfilePPS, Transport: bench.Tickwire, Delivery: bench.Reliable}}
	if got, want := progressLine(p), "bench: row 1/1 pps tickwire reliable · 0:00 elapsed, ETA 0:00"; got != want {
		t.Errorf("progressLine = %q, want %q", got, want)
	}
	var buf bytes.Buffer
	pr := newProgress(&buf, true)
	pr.row(p)
	pr.done()
	if s := buf.String(); !strings.HasPrefix(s, "\r\x1b[Kbench: row 1/1") || !strings.HasSuffix(s, "\r\x1b[K") {
		t.Errorf("terminal progress %q", s)
	}
}

func TestStampOf(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/tickwire/tickwire/cmd/tickwire"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "1a2b3c"}, {Key: "vcs.modified", Value: "true"}}}
	if v, c := stampOf(bi); v != "(devel)" || c != "1a2b3c+modified" {
		t.Errorf("stampOf = %q, %q", v, c)
	}
	bi = &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}
	if v, c := stampOf(bi); v != "v1.2.3" || c != "" {
		t.Errorf("unstamped: %q, %q", v, c)
	}
}
