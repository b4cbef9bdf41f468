package ragmem_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxImportable is the most exported identifiers the importable packages
// (not main, not under internal/) may offer between them: issue 26's
// ceiling for a small front door. Machinery goes behind internal/.
const maxImportable = 500

// exportedDecls counts the exported identifiers one file declares (funcs,
// methods of exported types, types, vars and consts) and lists its exported
// type aliases.
func exportedDecls(f *ast.File) (n int, aliases []string) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv != nil && len(d.Recv.List) == 1 {
				t := d.Recv.List[0].Type
				if s, ok := t.(*ast.StarExpr); ok {
					t = s.X
				}
				if ix, ok := t.(*ast.IndexExpr); ok {
					t = ix.X
				}
				if id, ok := t.(*ast.Ident); ok && !id.IsExported() {
					continue
				}
			}
			n++
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch sp := s.(type) {
				case *ast.TypeSpec:
					if sp.Name.IsExported() {
						n++
						if sp.Assign.IsValid() {
							aliases = append(aliases, sp.Name.Name)
						}
					}
				case *ast.ValueSpec:
					for _, id := range sp.Names {
						if id.IsExported() {
							n++
						}
					}
				}
			}
		}
	}
	return n, aliases
}

// TestFrontDoorIsSmall: every type has one name, in its home package (no
// exported type alias in an importable package: rag's methods take
// index.Document, not a second rag.Document), and the importable packages
// together export at most maxImportable identifiers.
func TestFrontDoorIsSmall(t *testing.T) {
	total := 0
	per := map[string]int{}
	err := filepath.WalkDir(".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			base := d.Name()
			if name != "." && (base == "internal" || base == "testdata" || base == "node_modules" || strings.HasPrefix(base, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" || strings.HasSuffix(f.Name.Name, "_test") {
			return nil
		}
		n, aliases := exportedDecls(f)
		for _, a := range aliases {
			t.Errorf("%s: type %s is an alias: a type has one name, in its home package", name, a)
		}
		total += n
		per[filepath.ToSlash(filepath.Dir(name))] += n
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if per["rag"] == 0 || per["index"] == 0 {
		t.Fatalf("no exported identifiers found in rag or index (%v); is the walk looking at the tree?", per)
	}
	if total > maxImportable {
		t.Errorf("the importable packages export %d identifiers, more than %d (%v): unexport what only the module uses, or move it under internal/", total, maxImportable, per)
	}
	t.Logf("importable identifiers: %d %v", total, per)
}
