package persistence_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoWriteControlInContext reads the store, the frame log and the agent and
// fails on any context.WithValue: what controls a write (the lease's fence,
// the origin) is passed explicitly (Store.WithFence, Recorder.WithOrigin),
// so no write goes unfenced or unattributed because a context lost a value
// on the way (issue 30).
func TestNoWriteControlInContext(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	for _, root := range []string{".", filepath.Join("..", "framelog"), filepath.Join("..", "agent")} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			checked++
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, isIdent := sel.X.(*ast.Ident); isIdent && x.Name == "context" && sel.Sel.Name == "WithValue" {
					t.Errorf("%s: context.WithValue: pass what controls a write explicitly", fset.Position(sel.Pos()))
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 50 {
		t.Fatalf("only %d files read: the walk missed the packages", checked)
	}
}
