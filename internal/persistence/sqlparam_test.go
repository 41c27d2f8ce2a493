package persistence_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// queryMethods are the database/sql and pgx methods that take SQL text.
var queryMethods = map[string]bool{
	"Exec": true, "ExecContext": true, "Query": true, "QueryContext": true,
	"QueryRow": true, "QueryRowContext": true, "Prepare": true, "PrepareContext": true,
}

// TestSQLIsParameterised reads the store implementations and fails on any
// query whose SQL text is not a compile-time constant: values must travel
// as parameters ($1, ?), never be spliced into the text.
func TestSQLIsParameterised(t *testing.T) {
	for _, dir := range []string{"sqlite", "postgres", filepath.Join("internal", "sqlcore")} {
		fset := token.NewFileSet()
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		var files []*ast.File
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		queries := 0
		{
			consts := constNames(files)
			for _, f := range files {
				for _, d := range f.Decls {
					fn, ok := d.(*ast.FuncDecl)
					if !ok || fn.Body == nil {
						continue
					}
					ast.Inspect(fn.Body, func(n ast.Node) bool {
						call, ok := n.(*ast.CallExpr)
						if !ok {
							return true
						}
						sel, ok := call.Fun.(*ast.SelectorExpr)
						if !ok || !queryMethods[sel.Sel.Name] || len(call.Args) == 0 || preparedStmt(sel.X) {
							return true
						}
						arg := call.Args[0]
						if isContext(arg) {
							if len(call.Args) < 2 {
								return true
							}
							arg = call.Args[1]
						}
						queries++
						if !constant(arg, consts, fn.Body) && !passThrough(arg, fn) {
							t.Errorf("%s: %s builds its SQL from run-time values: pass them as parameters",
								fset.Position(arg.Pos()), sel.Sel.Name)
						}
						return true
					})
				}
			}
		}
		// The backends keep only their batch inserts and Open; sqlcore
		// holds the rest.
		if want := map[string]int{"sqlite": 2, "postgres": 2}[dir]; queries < max(want, 1) || (want == 0 && queries < 40) {
			t.Errorf("%s: only %d queries found: the scan is not seeing the code", dir, queries)
		}
	}
}

// passThrough accepts an adapter (a method itself named Exec, Query...)
// handing on the SQL text it was given, as it is or rewritten by a method
// call (sqlcore fills its fragments and numbers its placeholders): the
// check holds at the adapter's callers, which this test scans too.
func passThrough(e ast.Expr, fn *ast.FuncDecl) bool {
	if !queryMethods[fn.Name.Name] || fn.Type.Params == nil {
		return false
	}
	if call, ok := e.(*ast.CallExpr); ok && len(call.Args) == 1 {
		e = call.Args[0]
	}
	id, ok := e.(*ast.Ident)
	if !ok {
		return false
	}
	for _, f := range fn.Type.Params.List {
		for _, n := range f.Names {
			if n.Name == id.Name {
				if t, ok := f.Type.(*ast.Ident); ok && t.Name == "string" {
					return true
				}
			}
		}
	}
	return false
}

func isContext(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && (id.Name == "ctx" || strings.HasSuffix(id.Name, "Ctx"))
}

// constNames are the names declared const anywhere in the package.
func constNames(files []*ast.File) map[string]bool {
	out := make(map[string]bool)
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if d, ok := n.(*ast.GenDecl); ok && d.Tok == token.CONST {
				for _, s := range d.Specs {
					for _, id := range s.(*ast.ValueSpec).Names {
						out[id.Name] = true
					}
				}
			}
			return true
		})
	}
	return out
}

// preparedStmt: a *sql.Stmt's Exec/Query take values only (its SQL was
// checked where it was prepared). Statements are named stmt by convention.
func preparedStmt(recv ast.Expr) bool {
	id, ok := recv.(*ast.Ident)
	return ok && strings.HasPrefix(strings.ToLower(id.Name), "stmt")
}

// constant reports whether e is SQL text fixed at compile time: string
// constants joined with +, a local variable only ever assigned such text
// (queries grown with optional constant clauses; not within body nil), or
// a migration file's embedded SQL (f.SQL).
func constant(e ast.Expr, consts map[string]bool, body *ast.BlockStmt) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return e.Kind == token.STRING
	case *ast.Ident:
		return consts[e.Name] || body != nil && constantVar(e.Name, consts, body)
	case *ast.ParenExpr:
		return constant(e.X, consts, body)
	case *ast.BinaryExpr:
		return e.Op == token.ADD && constant(e.X, consts, body) && constant(e.Y, consts, body)
	case *ast.SelectorExpr:
		return e.Sel.Name == "SQL" // embedded migration files
	}
	return false
}

// constantVar reports whether every assignment to name in body is constant
// text (and there is at least one).
func constantVar(name string, consts map[string]bool, body *ast.BlockStmt) bool {
	assigned, ok := 0, true
	ast.Inspect(body, func(n ast.Node) bool {
		as, isAssign := n.(*ast.AssignStmt)
		if !isAssign || len(as.Lhs) != len(as.Rhs) {
			return true
		}
		for i, l := range as.Lhs {
			if id, isID := l.(*ast.Ident); isID && id.Name == name {
				assigned++
				rhs, ok2 := as.Rhs[i], true
				if id, self := rhs.(*ast.Ident); self && id.Name == name {
					ok2 = false
				} else {
					ok2 = constant(rhs, consts, nil)
				}
				ok = ok && ok2
			}
		}
		return true
	})
	return assigned > 0 && ok
}
