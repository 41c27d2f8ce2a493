package acptest

import (
	"sync"
	"testing"
)

var named sync.Map // schema name -> *namedValidator

type namedValidator struct {
	once sync.Once
	v    *Validator
	err  error
}

// MustValidatorFor returns the shared validator for a vendored schema named
// relative to testdata/acp (e.g. SDKSchema), failing tb if it cannot be
// compiled. MustValidatorFor(tb, StableSchema) is MustValidator(tb).
func MustValidatorFor(tb testing.TB, name string) *Validator {
	tb.Helper()
	if name == StableSchema {
		return MustValidator(tb)
	}
	e, _ := named.LoadOrStore(name, &namedValidator{})
	nv := e.(*namedValidator)
	nv.once.Do(func() { nv.v, nv.err = NewValidator(SchemaFile(name)) })
	if nv.err != nil {
		tb.Fatalf("acptest: %v", nv.err)
	}
	return nv.v
}
