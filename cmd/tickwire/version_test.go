package main

import (
	"bytes"
	"context"
	"runtime/debug"
	"strings"
	"testing"
)

// versionReport turns build information into the four lines --version
// prints: a release build names its tags, a checkout build its replace
// and revision, a go run build says that no revision was stamped.
func TestVersionReport(t *testing.T) {
	settings := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	cases := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{
			name: "release",
			bi: debug.BuildInfo{
				GoVersion: "go1.26.2",
				Main:      debug.Module{Path: "github.com/tickwire/tickwire/cmd/tickwire", Version: "v0.1.0"},
				Deps:      []*debug.Module{{Path: "github.com/tickwire/tickwire/bench", Version: "v0.1.0"}, {Path: libraryPath, Version: "v0.1.0"}},
				Settings:  settings("GOOS", "linux", "GOARCH", "arm64"),
			},
			want: "tickwire v0.1.0 github.com/tickwire/tickwire/cmd/tickwire\n" +
				"library  v0.1.0 github.com/tickwire/tickwire\n" +
				"vcs      no revision stamped (go build in a git checkout stamps one; go run, go test and -buildvcs=false do not)\n" +
				"go       go1.26.2 linux/arm64\n",
		},
		{
			name: "checkout, modified",
			bi: debug.BuildInfo{
				GoVersion: "go1.26.8",
				Main:      debug.Module{Path: "github.com/tickwire/tickwire/cmd/tickwire", Version: "(devel)"},
				Deps:      []*debug.Module{{Path: libraryPath, Version: "v0.0.0-00010101000000-000000000000", Replace: &debug.Module{Path: "../..", Version: "(devel)"}}},
				Settings: settings("GOOS", "linux", "GOARCH", "amd64", "vcs", "git",
					"vcs.revision", "7a999cbd6cddbcd1489dd4ffc6f7b203f4427915", "vcs.time", "2026-12-01T23:13:38Z", "vcs.modified", "true"),
			},
			want: "tickwire (devel) github.com/tickwire/tickwire/cmd/tickwire\n" +
				"library  v0.0.0-00010101000000-000000000000 github.com/tickwire/tickwire => ../..\n" +
				"vcs      git 7a999cbd6cddbcd1489dd4ffc6f7b203f4427915 2026-12-01T23:13:38Z (modified)\n" +
				"go       go1.26.8 linux/amd64\n",
		},
		{
			name: "workspace, clean",
			bi: debug.BuildInfo{
				GoVersion: "go1.26.8",
				Main:      debug.Module{Path: "github.com/tickwire/tickwire/cmd/tickwire"},
				Deps:      []*debug.Module{{Path: libraryPath, Version: "(devel)"}},
				Settings:  settings("vcs", "git", "vcs.revision", "aef16fa", "vcs.modified", "false"),
			},
			want: "tickwire (devel) github.com/tickwire/tickwire/cmd/tickwire\n" +
				"library  (devel) github.com/tickwire/tickwire\n" +
				"vcs      git aef16fa\n" +
				"go       go1.26.8\n",
		},
		{
			name: "no library",
			bi:   debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "example.com/other", Version: "v1.2.3"}},
			want: "tickwire v1.2.3 example.com/other\n" +
				"library  not linked\n" +
				"vcs      no revision stamped (go build in a git checkout stamps one; go run, go test and -buildvcs=false do not)\n" +
				"go       go1.26.8\n",
		},
	}
	for _, c := range cases {
		if got := versionReport(&c.bi); got != c.want {
			t.Errorf("%s:\ngot\n%swant\n%s", c.name, got, c.want)
		}
	}
}

// --version and the version subcommand print this test binary's build
// information: the CLI module and the library it links; a stray argument
// is a usage error.
func TestVersionCommand(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("no build information in the test binary")
	}
	want := versionReport(bi)
	if !strings.Contains(want, "library  ") || strings.Contains(want, "not linked") {
		t.Fatalf("the test binary's report does not name the library:\n%s", want)
	}
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version"}} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != exitOK {
			t.Fatalf("%v: exit %d, stderr %q", args, code, stderr.String())
		}
		if stdout.String() != want {
			t.Errorf("%v printed\n%swant\n%s", args, stdout.String(), want)
		}
		if !strings.HasPrefix(stdout.String(), "tickwire ") {
			t.Errorf("%v: first line %q", args, strings.SplitN(stdout.String(), "\n", 2)[0])
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"version", "extra"}, &stdout, &stderr); code != exitUsage {
		t.Errorf("version extra: exit %d, want %d", code, exitUsage)
	}
	if !strings.Contains(stderr.String(), `unexpected argument "extra"`) {
		t.Errorf("version extra: stderr %q", stderr.String())
	}
}
