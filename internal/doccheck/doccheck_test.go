package doccheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// root is the repository root, seen from this package's directory.
var root = filepath.Join("..", "..")

// docFiles returns the Markdown files whose links and names are checked:
// the root's *.md (README.md, CHANGELOG.md) and docs/*.md, as paths
// relative to the root.
func docFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, pat := range []string{"*.md", "docs/*.md"} {
		m, err := filepath.Glob(filepath.Join(root, pat))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range m {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
	}
	if !slices.Contains(out, "README.md") || !slices.Contains(out, "docs/ARCHITECTURE.md") {
		t.Fatalf("found %v: is the test rooted at the repository?", out)
	}
	return out
}

// repoFiles returns every file of the repository (all three modules) whose
// name ends in one of exts, relative to the root, skipping dot directories.
func repoFiles(t *testing.T, exts ...string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel != "." && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		for _, e := range exts {
			if strings.HasSuffix(p, e) {
				out = append(out, filepath.ToSlash(rel))
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// files caches what read returned: several tests read every file.
var files = map[string]string{}

func read(t *testing.T, rel string) string {
	t.Helper()
	if s, ok := files[rel]; ok {
		return s
	}
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	files[rel] = string(b)
	return string(b)
}

// lineOf returns the 1-based line of byte offset off in s.
func lineOf(s string, off int) int { return strings.Count(s[:off], "\n") + 1 }

var fence = regexp.MustCompile("(?m)^\\s*(```|~~~)")

// prose returns s with fenced code blocks and inline code spans replaced
// by spaces (newlines kept, so offsets and lines still match s).
func prose(s string) string { return blankInline(blankFences(s)) }

// blank returns b with bytes [from, to) but newlines replaced by spaces.
func blankRange(b []byte, from, to int) {
	for i := from; i < to; i++ {
		if b[i] != '\n' {
			b[i] = ' '
		}
	}
}

// blankFences blanks fenced code blocks, from an opening fence line to
// the closing one.
func blankFences(s string) string {
	b := []byte(s)
	blank := func(from, to int) { blankRange(b, from, to) }
	locs := fence.FindAllStringIndex(s, -1)
	for i := 0; i+1 < len(locs); i += 2 {
		end := locs[i+1][1]
		if nl := strings.IndexByte(s[end:], '\n'); nl >= 0 {
			end += nl
		} else {
			end = len(s)
		}
		blank(locs[i][0], end)
	}
	if len(locs)%2 == 1 {
		blank(locs[len(locs)-1][0], len(s))
	}
	return string(b)
}

// blankInline blanks inline code: a run of n backticks up to the next run
// of exactly n.
func blankInline(t string) string {
	b := []byte(t)
	blank := func(from, to int) { blankRange(b, from, to) }
	for i := 0; i < len(t); {
		if t[i] != '`' {
			i++
			continue
		}
		n := 0
		for i+n < len(t) && t[i+n] == '`' {
			n++
		}
		closeAt := -1
		for j := i + n; j < len(t); {
			if t[j] != '`' {
				j++
				continue
			}
			m := 0
			for j+m < len(t) && t[j+m] == '`' {
				m++
			}
			if m == n {
				closeAt = j
				break
			}
			j += m
		}
		if closeAt < 0 {
			i += n
			continue
		}
		blank(i, closeAt+n)
		i = closeAt + n
	}
	return string(b)
}

var (
	heading   = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(.+?)[ \t#]*$`)
	htmlID    = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	mdLink    = regexp.MustCompile(`!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	refLink   = regexp.MustCompile(`(?m)^[ \t]{0,3}\[[^\]]+\]:[ \t]*<?(\S+?)>?(?:[ \t]+"[^"]*")?[ \t]*$`)
	numbered  = regexp.MustCompile(`^(\d+(?:\.\d+)*)\.?\s`)
	sectionRe = regexp.MustCompile(`(?:\b([A-Z][A-Z0-9_]*)(?:\.md)?\s+)?§\s?(\d+(?:\.\d+)*)`)
)

// slug is GitHub's anchor for a heading: lower case, markup and
// punctuation dropped, spaces to hyphens.
func slug(h string) string {
	h = strings.NewReplacer("`", "", "*", "", "[", "", "]", "").Replace(h)
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// docInfo is what a Markdown file offers to references: its anchors and
// its numbered sections ("9.5").
type docInfo struct {
	anchors  map[string]bool
	sections map[string]bool
}

var infoCache = map[string]*docInfo{}

func info(t *testing.T, rel string) *docInfo {
	if d, ok := infoCache[rel]; ok {
		return d
	}
	s := read(t, rel)
	p := blankFences(s)
	d := &docInfo{anchors: map[string]bool{}, sections: map[string]bool{}}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatchIndex(p, -1) {
		text := p[m[2]:m[3]] // code spans are part of a heading's anchor
		a := slug(text)
		if n := seen[a]; n > 0 {
			d.anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			d.anchors[a] = true
		}
		seen[a]++
		if nm := numbered.FindStringSubmatch(text); nm != nil {
			d.sections[nm[1]] = true
		}
	}
	for _, m := range htmlID.FindAllStringSubmatch(s, -1) {
		d.anchors[m[1]] = true
	}
	infoCache[rel] = d
	return d
}

// TestMarkdownLinks: every relative link in README.md, CHANGELOG.md and
// docs/*.md names a file or directory of the repository, and every
// #anchor one of the target's headings.
func TestMarkdownLinks(t *testing.T) {
	links := 0
	for _, doc := range docFiles(t) {
		s := current(doc, read(t, doc))
		p := prose(s)
		var targets [][2]int // offset, and index into p of the target
		for _, m := range mdLink.FindAllStringSubmatchIndex(p, -1) {
			targets = append(targets, [2]int{m[4], m[5]})
		}
		for _, m := range refLink.FindAllStringSubmatchIndex(p, -1) {
			targets = append(targets, [2]int{m[2], m[3]})
		}
		for _, tg := range targets {
			target := p[tg[0]:tg[1]]
			where := fmt.Sprintf("%s:%d", doc, lineOf(s, tg[0]))
			if target == "" {
				t.Errorf("%s: empty link target", where)
				continue
			}
			if u := strings.ToLower(target); strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "mailto:") {
				continue
			}
			links++
			file, anchor, _ := strings.Cut(target, "#")
			dest := doc
			if file != "" {
				dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(doc), file)))
				if dest == ".." || strings.HasPrefix(dest, "../") {
					t.Errorf("%s: link %q leaves the repository", where, target)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
					t.Errorf("%s: link %q: %s does not exist", where, target, dest)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(dest, ".md") {
				t.Errorf("%s: link %q: an anchor into %s, which is not Markdown", where, target, dest)
				continue
			}
			if !info(t, dest).anchors[anchor] {
				t.Errorf("%s: link %q: %s has no heading with anchor #%s", where, target, dest, anchor)
			}
		}
	}
	if links == 0 {
		t.Fatal("no relative links found: the parser is broken")
	}
}

// TestSectionReferences: every "WIRE.md §9.5" (or "ARCHITECTURE §6", or a
// bare "§4" meaning the file it is in, or "§4 and §9" continuing the file
// named before) names a numbered heading of an existing doc.
func TestSectionReferences(t *testing.T) {
	refs := 0
	joiner := regexp.MustCompile(`^[\s,]*(?:and|or|to|–|-)?[\s,]*$`)
	for _, doc := range docFiles(t) {
		s := read(t, doc)
		// Links keep their text: "[WIRE.md](WIRE.md) §4" reads "WIRE.md §4".
		p := mdLink.ReplaceAllStringFunc(prose(s), func(l string) string {
			m := mdLink.FindStringSubmatch(l)
			return m[1] + strings.Repeat(" ", len(l)-len(m[1]))
		})
		lastFile, lastEnd := "", -1
		for _, m := range sectionRe.FindAllStringSubmatchIndex(p, -1) {
			refs++
			target := doc
			switch {
			case m[2] >= 0:
				name := p[m[2]:m[3]]
				target = filepath.ToSlash(filepath.Join(filepath.Dir(doc), name+".md"))
				if _, err := os.Stat(filepath.Join(root, target)); err != nil {
					if alt := "docs/" + name + ".md"; fileExists(alt) {
						target = alt
					} else if name == strings.TrimSuffix(filepath.Base(doc), ".md") {
						target = doc
					} else {
						target = ""
					}
				}
			case lastEnd >= 0 && joiner.MatchString(p[lastEnd:m[0]]):
				target = lastFile
			}
			num := p[m[4]:m[5]]
			where := fmt.Sprintf("%s:%d", doc, lineOf(s, m[0]))
			lastFile, lastEnd = target, m[1]
			if target == "" {
				t.Errorf("%s: %q names no doc of the repository", where, strings.TrimSpace(p[m[0]:m[1]]))
				continue
			}
			if !info(t, target).sections[num] {
				t.Errorf("%s: %q: %s has no section numbered %s", where, strings.TrimSpace(p[m[0]:m[1]]), target, num)
			}
		}
	}
	if refs == 0 {
		t.Fatal("no § references found: the parser is broken")
	}
}

func fileExists(rel string) bool {
	_, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
	return err == nil
}

// outside matches references to design files that live outside the
// repository (the design directory, the shared notes, the style guide). (This file spells them in pieces, so it passes itself.)
var outside = regexp.MustCompile(`\bdesign` + `/|\.\./` + `shared\b|/work` + `/|\bSTYLE` + `(\.md)? habit`)

// TestNoReferencesOutsideRepo: no Markdown or Go file of the repository
// points at a design directory outside it; the scenario ids resolve to
// docs/SCENARIOS.md.
func TestNoReferencesOutsideRepo(t *testing.T) {
	files := repoFiles(t, ".md", ".go")
	for _, f := range files {
		s := read(t, f)
		if !strings.Contains(s, "design") && !strings.Contains(s, "shared") && !strings.Contains(s, "/work") && !strings.Contains(s, "STYLE") {
			continue // the regexp is slow under -race; most files have none
		}
		for _, m := range outside.FindAllStringIndex(s, -1) {
			line := strings.TrimSpace(strings.Split(s, "\n")[lineOf(s, m[0])-1])
			t.Errorf("%s:%d: reference outside the repository: %s", f, lineOf(s, m[0]), line)
		}
	}
	if len(files) < 50 {
		t.Fatalf("only %d files walked: is the test rooted at the repository?", len(files))
	}
}

var (
	scenarioID    = regexp.MustCompile(`\bS-[A-Z]+[0-9]+\b`)
	scenarioHead  = regexp.MustCompile(`(?m)^#{2,6}\s+(S-[A-Z]+[0-9]+)\b`)
	scenarioTests = regexp.MustCompile(`(?ms)^Tests?:(.*?)(?:\n[ \t]*\n|\z)`)
	pkgGroup      = regexp.MustCompile("`([a-z][a-z0-9/]*)`:\\s*((?:`[A-Za-z0-9_]+`[,\\s]*)+)")
	testName      = regexp.MustCompile("`([A-Za-z0-9_]+)`")
)

const scenariosDoc = "docs/SCENARIOS.md"

// TestScenarioIDs: every scenario id cited in a Go or Markdown file has a
// heading in docs/SCENARIOS.md, every heading there is cited somewhere
// else, and every test an entry names ("Tests: `pkg`: `TestX`, …") is a
// function declared in that package's directory.
func TestScenarioIDs(t *testing.T) {
	s := read(t, scenariosDoc)
	defined := map[string]int{} // id -> offset of its heading
	for _, m := range scenarioHead.FindAllStringSubmatchIndex(s, -1) {
		id := s[m[2]:m[3]]
		if _, dup := defined[id]; dup {
			t.Errorf("%s:%d: %s defined twice", scenariosDoc, lineOf(s, m[0]), id)
		}
		defined[id] = m[0]
	}
	if len(defined) == 0 {
		t.Fatalf("%s defines no scenario (headings \"### S-A1 …\")", scenariosDoc)
	}

	cited := map[string]string{} // id -> first place cited
	for _, f := range repoFiles(t, ".go", ".md") {
		if f == scenariosDoc {
			continue
		}
		c := read(t, f)
		if !strings.Contains(c, "S-") {
			continue
		}
		for _, m := range scenarioID.FindAllStringIndex(c, -1) {
			id := c[m[0]:m[1]]
			if _, ok := cited[id]; !ok {
				cited[id] = fmt.Sprintf("%s:%d", f, lineOf(c, m[0]))
			}
		}
	}
	for id, where := range cited {
		if _, ok := defined[id]; !ok {
			t.Errorf("%s: scenario %s is cited but %s does not define it", where, id, scenariosDoc)
		}
	}
	for id, off := range defined {
		if _, ok := cited[id]; !ok {
			t.Errorf("%s:%d: %s is defined but cited nowhere else: drop it, or cite it from its test", scenariosDoc, lineOf(s, off), id)
		}
	}

	// The tests each entry names exist where it says.
	funcs := map[string]map[string]bool{} // dir -> declared funcs
	declared := func(dir string) map[string]bool {
		if m, ok := funcs[dir]; ok {
			return m
		}
		m := map[string]bool{}
		ents, _ := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir)))
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, filepath.FromSlash(dir), e.Name()), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
					m[fd.Name.Name] = true
				}
			}
		}
		funcs[dir] = m
		return m
	}
	// Each entry, from its heading to the next heading, has a Tests
	// paragraph naming at least one test, and each test it names is a
	// function of that package directory.
	heads := regexp.MustCompile(`(?m)^#{1,6}\s`).FindAllStringIndex(s, -1)
	for id, off := range defined {
		end := len(s)
		for _, h := range heads {
			if h[0] > off {
				end = h[0]
				break
			}
		}
		entry := s[off:end]
		where := fmt.Sprintf("%s:%d", scenariosDoc, lineOf(s, off))
		tm := scenarioTests.FindStringSubmatch(entry)
		if tm == nil {
			t.Errorf("%s: %s has no \"Tests: `pkg`: `TestX`\" paragraph", where, id)
			continue
		}
		named := 0
		for _, g := range pkgGroup.FindAllStringSubmatch(tm[1], -1) {
			dir := g[1]
			if !fileExists(dir) {
				t.Errorf("%s: %s: package directory %s does not exist", where, id, dir)
				continue
			}
			for _, tn := range testName.FindAllStringSubmatch(g[2], -1) {
				named++
				if !declared(dir)[tn[1]] {
					t.Errorf("%s: %s: %s declares no func %s", where, id, dir, tn[1])
				}
			}
		}
		if named == 0 {
			t.Errorf("%s: %s names no test", where, id)
		}
	}
}

// goNames is what the repository's Go code declares, all three modules,
// test files included (docs cite tests and benchmarks by name).
type goNames struct {
	pkgs    map[string]map[string]bool // package name -> top-level names
	any     map[string]bool            // every declared name: top-level, method, field
	members map[string]bool            // "Type.Member": methods, fields, interface methods
	fieldTy map[string][]string        // field name -> the type names it has
}

func collectGoNames(t *testing.T) *goNames {
	t.Helper()
	g := &goNames{pkgs: map[string]map[string]bool{}, any: map[string]bool{}, members: map[string]bool{}, fieldTy: map[string][]string{}}
	typeName := func(e ast.Expr) string {
		for {
			switch x := e.(type) {
			case *ast.StarExpr:
				e = x.X
			case *ast.IndexExpr:
				e = x.X
			case *ast.IndexListExpr:
				e = x.X
			case *ast.SelectorExpr:
				return x.Sel.Name
			case *ast.Ident:
				return x.Name
			case *ast.ArrayType:
				e = x.Elt
			default:
				return ""
			}
		}
	}
	for _, f := range repoFiles(t, ".go") {
		file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, filepath.FromSlash(f)), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		pkg := file.Name.Name
		if g.pkgs[pkg] == nil {
			g.pkgs[pkg] = map[string]bool{}
		}
		top := func(n string) { g.pkgs[pkg][n] = true; g.any[n] = true }
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					top(d.Name.Name)
					for _, p := range []string{"Benchmark", "Test", "Fuzz", "Example"} {
						if rest, ok := strings.CutPrefix(d.Name.Name, p); ok && rest != "" {
							g.any[rest] = true // "`SendAck`" for BenchmarkSendAck
						}
					}
					continue
				}
				g.any[d.Name.Name] = true
				g.members[typeName(d.Recv.List[0].Type)+"."+d.Name.Name] = true
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					switch sp := sp.(type) {
					case *ast.ValueSpec:
						for _, n := range sp.Names {
							top(n.Name)
						}
					case *ast.TypeSpec:
						top(sp.Name.Name)
						var fields *ast.FieldList
						switch tt := sp.Type.(type) {
						case *ast.StructType:
							fields = tt.Fields
						case *ast.InterfaceType:
							fields = tt.Methods
						}
						if fields == nil {
							continue
						}
						for _, fl := range fields.List {
							names := fl.Names
							if len(names) == 0 { // embedded: named by its type
								names = []*ast.Ident{{Name: typeName(fl.Type)}}
							}
							for _, n := range names {
								g.any[n.Name] = true
								g.members[sp.Name.Name+"."+n.Name] = true
								if tn := typeName(fl.Type); tn != "" {
									g.fieldTy[n.Name] = append(g.fieldTy[n.Name], tn)
								}
							}
						}
					}
				}
			}
		}
	}
	return g
}

// member reports whether sel (a field or method name) can follow base,
// which is a type name or a field name (then any of the field's types).
func (g *goNames) member(base, sel string) bool {
	if g.members[base+"."+sel] {
		return true
	}
	for _, ty := range g.fieldTy[base] {
		if g.members[ty+"."+sel] {
			return true
		}
	}
	return false
}

// notOurs are backticked names in the docs that are not tickwire's and
// are not in a package the check can resolve: kcp-go's and zstd's
// options, the runtime's GOMAXPROCS, and WIRE.md's placeholders.
var notOurs = map[string]bool{
	"NoDelay": true, "DefaultSnmp": true, // kcp-go, in BENCHMARKS.md
	"WithDecoderMaxMemory": true, // klauspost/compress/zstd
	"GOMAXPROCS":           true,
	"AppendX":              true, "ParseX": true, "P": true, // WIRE.md: "each format X", piece P
}

var goRef = regexp.MustCompile("`([A-Za-z_][A-Za-z0-9_]*(?:\\.[A-Za-z_][A-Za-z0-9_]*)*)(?:\\(|\\[|`)")

// TestGoNames: every backticked Go name in README.md, CHANGELOG.md and
// docs/*.md that looks exported — `Name`, `pkg.Name`, `Type.Member`,
// `pkg.Type.Member`, `Type.Field.Member`, and Type.Member in prose when
// Type is one of ours — is declared by the
// repository's code (names in packages that are not the repository's,
// like `time.Duration`, are skipped). Renaming or unexporting a name the
// docs cite fails here until the docs follow.
func TestGoNames(t *testing.T) {
	g := collectGoNames(t)
	checked := 0
	for _, doc := range docFiles(t) {
		s := current(doc, read(t, doc))
		for _, m := range goRef.FindAllStringSubmatchIndex(s, -1) {
			name := s[m[2]:m[3]]
			parts := strings.Split(name, ".")
			last := parts[len(parts)-1]
			if !unicode.IsUpper(rune(last[0])) || notOurs[name] {
				continue
			}
			if g.pkgs[parts[0]] == nil && unicode.IsLower(rune(parts[0][0])) {
				continue // another package: time.Duration, net.UDPConn
			}
			var ok bool
			switch {
			case len(parts) == 1:
				ok = g.any[name]
			case g.pkgs[parts[0]] != nil: // pkg.Name, pkg.Type.Member, …
				ok = g.pkgs[parts[0]][parts[1]]
				for i := 2; ok && i < len(parts); i++ {
					ok = g.member(parts[i-1], parts[i])
				}
			default: // Type.Member, Type.Field.Member
				ok = true
				for i := 1; ok && i < len(parts); i++ {
					ok = g.member(parts[i-1], parts[i])
				}
			}
			checked++
			if !ok {
				t.Errorf("%s:%d: `%s` is not declared by the repository's Go code", doc, lineOf(s, m[0]), name)
			}
		}
	}
	// Outside code spans too: "Channel.Flush" in prose names a method.
	bases := map[string]bool{}
	for m := range g.members {
		base, _, _ := strings.Cut(m, ".")
		bases[base] = true
	}
	for _, doc := range docFiles(t) {
		s := current(doc, read(t, doc))
		p := prose(s)
		for _, m := range proseRef.FindAllStringSubmatchIndex(p, -1) {
			base, sel := p[m[2]:m[3]], p[m[4]:m[5]]
			if !bases[base] {
				continue // not a type of ours: "U.S.", a file name
			}
			checked++
			if !g.member(base, sel) {
				t.Errorf("%s:%d: %s.%s: %s has no field or method %s", doc, lineOf(s, m[0]), base, sel, base, sel)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d Go names checked: the parser is broken", checked)
	}
}

// current blanks out what a document says about names that no longer
// exist, keeping every offset: in CHANGELOG.md, a "### Removed" section and,
// on a line with a rename arrow, the text before "→" (the old name).
func current(doc, s string) string {
	if filepath.Base(doc) != "CHANGELOG.md" {
		return s
	}
	blank := func(t string) string {
		return strings.Map(func(r rune) rune {
			if r == '\n' {
				return r
			}
			return ' '
		}, t)
	}
	lines := strings.SplitAfter(s, "\n")
	removed := false
	for i, ln := range lines {
		if strings.HasPrefix(ln, "#") {
			removed = strings.HasPrefix(ln, "### Removed")
			continue
		}
		if removed {
			lines[i] = blank(ln)
		} else if before, after, ok := strings.Cut(ln, "→"); ok {
			lines[i] = blank(before) + "→" + after
		}
	}
	return strings.Join(lines, "")
}

var proseRef = regexp.MustCompile(`\b([A-Z][A-Za-z0-9]*)\.([A-Z][A-Za-z0-9]*)\b`)

var (
	goDocPath    = regexp.MustCompile(`\bdocs/[A-Za-z0-9_./-]*[A-Za-z0-9_]\.md(#[a-z0-9_-]+)?`)
	goSectionRef = regexp.MustCompile(`\b([A-Z][A-Z0-9_]*)\.md\s+§\s?(\d+(?:\.\d+)*)`)
)

// TestGoFileDocRefs: the docs Go comments point at exist — a
// "docs/TUNING.md" path (and its #anchor, if any) and a "WIRE.md §9.5"
// section reference.
func TestGoFileDocRefs(t *testing.T) {
	refs := 0
	for _, f := range repoFiles(t, ".go") {
		s := read(t, f)
		if !strings.Contains(s, ".md") {
			continue
		}
		for _, m := range goDocPath.FindAllStringSubmatchIndex(s, -1) {
			refs++
			where := fmt.Sprintf("%s:%d", f, lineOf(s, m[0]))
			path, anchor, _ := strings.Cut(s[m[0]:m[1]], "#")
			if !fileExists(path) {
				t.Errorf("%s: %s does not exist", where, path)
			} else if anchor != "" && !info(t, path).anchors[anchor] {
				t.Errorf("%s: %s has no heading with anchor #%s", where, path, anchor)
			}
		}
		for _, m := range goSectionRef.FindAllStringSubmatchIndex(s, -1) {
			refs++
			where := fmt.Sprintf("%s:%d", f, lineOf(s, m[0]))
			doc := "docs/" + s[m[2]:m[3]] + ".md"
			if !fileExists(doc) {
				t.Errorf("%s: %s does not exist", where, doc)
			} else if num := s[m[4]:m[5]]; !info(t, doc).sections[num] {
				t.Errorf("%s: %s has no section numbered %s", where, doc, num)
			}
		}
	}
	if refs == 0 {
		t.Fatal("no doc references found in Go files: the parser is broken")
	}
}
