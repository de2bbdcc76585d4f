package doccheck

import (
	"strings"
	"testing"
)

// TestReadmeEmbedExample: the code README.md's "Embed it" section shows is
// transport/example_embed_test.go from its marker line to the end, so the
// README's program compiles, runs in CI and prints what its Output says.
func TestReadmeEmbedExample(t *testing.T) {
	const marker = "// echoServer sends"
	readme := read(t, "README.md")
	_, sec, ok := strings.Cut(readme, "\n## Embed it\n")
	if !ok {
		t.Fatal(`README.md has no "## Embed it" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	_, code, ok := strings.Cut(sec, "```go\n")
	if !ok {
		t.Fatal(`README.md's "Embed it" section has no go code block`)
	}
	code, _, _ = strings.Cut(code, "```")
	src := read(t, "transport/example_embed_test.go")
	i := strings.Index(src, marker)
	if i < 0 {
		t.Fatalf("transport/example_embed_test.go lost its marker %q", marker)
	}
	want := strings.TrimRight(src[i:], "\n")
	got := strings.TrimRight(code, "\n")
	if got != want {
		gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
		for n := 0; n < max(len(gl), len(wl)); n++ {
			var g, w string
			if n < len(gl) {
				g = gl[n]
			}
			if n < len(wl) {
				w = wl[n]
			}
			if g != w {
				t.Fatalf("README.md's Embed it code differs from transport/example_embed_test.go at its line %d:\nREADME:  %q\nexample: %q", n+1, g, w)
			}
		}
	}
}
