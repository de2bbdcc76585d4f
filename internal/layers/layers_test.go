package layers

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/tickwire/tickwire/"

// allowed is the layering of docs/ARCHITECTURE.md as data: for every
// package of the library module, the tickwire packages and the third-party
// module prefixes its non-test files may import. A package missing from the
// table fails the test, so a new package states its place in the stack.
var allowed = map[string][]string{
	"wire":                        {},
	"ackmap":                      {"wire"},
	"internal/sockaddr":           {"golang.org/x/sys/"},
	"internal/layers":             {},
	"internal/doccheck":           {},
	"transport/fragment":          {"wire"},
	"transport/socket":            {},
	"transport/socket/udp":        {"transport/socket", "internal/sockaddr", "golang.org/x/sys/"},
	"transport/socket/gnetudp":    {"transport/socket", "internal/sockaddr", "golang.org/x/sys/", "github.com/panjf2000/gnet/v2"},
	"transport/socket/sockettest": {"transport/socket"},
	"transport/socket/pconn":      {"transport/socket"},
	"transport/simlink":           {"transport/socket"},
	"transport/seal":              {"golang.org/x/crypto/"},
	"transport/token":             {"golang.org/x/crypto/"},
	"transport":                   {"wire", "ackmap", "transport/fragment", "transport/socket", "transport/seal", "transport/token"},
	"rollback":                    {"wire", "github.com/klauspost/compress/"},
	"rollback/link":               {"rollback", "transport", "wire", "github.com/klauspost/compress/"},
}

// libraryModules are the nested modules that belong to the library (an
// optional backend with dependencies of its own), walked like the root.
var libraryModules = map[string]bool{"transport/socket/gnetudp": true}

// TestLayering parses the imports of every non-test file of the library
// module (all build tags: the rule does not depend on the platform) and
// fails on any import the table does not allow.
func TestLayering(t *testing.T) {
	root := filepath.Join("..", "..")
	imports := map[string]map[string]bool{} // package -> imports
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if rel != "." {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && !libraryModules[filepath.ToSlash(rel)] {
					return filepath.SkipDir // another module (bench, the CLI)
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(rel))
		if imports[pkg] == nil {
			imports[pkg] = map[string]bool{}
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			imports[pkg][p] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(imports) < len(allowed)-1 {
		t.Fatalf("found %d packages, the table names %d: is the walk rooted at the module?", len(imports), len(allowed))
	}
	for pkg, ims := range imports {
		ok, known := allowed[pkg]
		if !known {
			t.Errorf("package %s is not in the layering table: add it with the packages it may import", pkg)
			continue
		}
		for im := range ims {
			if !permitted(im, ok) {
				t.Errorf("%s imports %s; it may import only %v (and the standard library)", pkg, im, ok)
			}
		}
	}
}

// permitted reports whether import path im is allowed by list: the
// standard library always is, a tickwire package only when listed by its
// path inside the module, anything else when a listed prefix matches.
func permitted(im string, list []string) bool {
	first, _, _ := strings.Cut(im, "/")
	if !strings.Contains(first, ".") {
		return true // standard library
	}
	if rest, ok := strings.CutPrefix(im, module); ok {
		return slices.Contains(list, rest)
	}
	for _, p := range list {
		if strings.Contains(p, ".") && (im == strings.TrimSuffix(p, "/") || strings.HasPrefix(im, strings.TrimSuffix(p, "/")+"/")) {
			return true
		}
	}
	return false
}

// TestPermitted pins the matching rules the layering test relies on.
func TestPermitted(t *testing.T) {
	cases := []struct {
		im   string
		list []string
		want bool
	}{
		{"fmt", nil, true},
		{"net/netip", nil, true},
		{module + "wire", []string{"wire"}, true},
		{module + "transport", []string{"wire"}, false},
		{module + "transport/socket", []string{"transport"}, false},
		{"golang.org/x/sys/unix", []string{"golang.org/x/sys/"}, true},
		{"golang.org/x/sysfoo", []string{"golang.org/x/sys/"}, false},
		{"github.com/panjf2000/gnet/v2", []string{"github.com/panjf2000/gnet/v2"}, true},
		{"github.com/xtaci/kcp-go/v5", []string{"github.com/panjf2000/gnet/v2"}, false},
	}
	for _, c := range cases {
		if got := permitted(c.im, c.list); got != c.want {
			t.Errorf("permitted(%q, %v) = %v, want %v", c.im, c.list, got, c.want)
		}
	}
}
