// Package acptest holds test helpers for the ACP wire: a validator that checks
// every JSON-RPC frame against the official ACP JSON Schema vendored in the
// repository's testdata/acp directory.
//
// It works on bytes only, so it can check any peer (the in-process agent, the
// built binary, or a fixture's own client frames).
//
//	v := acptest.MustValidator(t)
//	err := v.ValidateAgentFrame(line, func(id json.RawMessage) string {
//		return sentMethods[string(id)] // method of the client request with this id
//	})
package acptest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema files inside the repository's testdata/acp directory.
const (
	// StableSchema is ACP v1, schema release 1.21.0: what crow-acp must speak.
	StableSchema = "schema.json"
	// SDKSchema is the newer v1 schema bundled with @agentclientprotocol/sdk 2.4.0.
	SDKSchema = "sdk-2.4.0/v1/schema.json"
)

// Sides as written in the schema's `x-side` keys.
const (
	sideAgent    = "agent"    // implemented by the agent: the client calls it
	sideClient   = "client"   // implemented by the client: the agent calls it
	sideProtocol = "protocol" // either direction ($/cancel_request)
)

// SchemaFile returns the absolute path of name inside the repository's
// testdata/acp directory (e.g. SchemaFile(StableSchema)). The directory is
// found from this source file, so it works from any test package; if the
// source path is unavailable (-trimpath), it walks up from the working
// directory to the module root.
func SchemaFile(name string) string {
	return filepath.Join(repoRoot(), "testdata", "acp", filepath.FromSlash(name))
}

const modulePath = "github.com/crow-acp/crow-acp"

func repoRoot() string {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		root := filepath.Join(filepath.Dir(file), "..", "..")
		if isModuleRoot(root) {
			return filepath.Clean(root)
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for {
		if isModuleRoot(dir) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "."
		}
		dir = parent
	}
}

func isModuleRoot(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	first, _, _ := bytes.Cut(data, []byte("\n"))
	return strings.TrimSpace(string(first)) == "module "+modulePath
}

// Validator checks JSON-RPC frames against one ACP schema. It is safe for
// concurrent use.
type Validator struct {
	path    string
	root    *jsonschema.Schema
	errDef  *jsonschema.Schema
	methods map[string]map[string]*method // x-side -> x-method -> defs
}

// method holds the compiled definitions of one wire method on one side.
type method struct {
	params, result, notification *def
}

type def struct {
	name   string
	schema *jsonschema.Schema
}

var (
	stableOnce sync.Once
	stable     *Validator
	stableErr  error
)

// MustValidator returns the shared validator for the stable schema
// (testdata/acp/schema.json), failing tb if it cannot be compiled.
func MustValidator(tb testing.TB) *Validator {
	tb.Helper()
	stableOnce.Do(func() { stable, stableErr = NewValidator(SchemaFile(StableSchema)) })
	if stableErr != nil {
		tb.Fatalf("acptest: %v", stableErr)
	}
	return stable
}

// NewValidator compiles the ACP schema at schemaPath (use SchemaFile to name a
// vendored one). Methods are mapped to definitions through the `x-side` and
// `x-method` keys of `$defs`: names ending in Request give params, Response
// the result and Notification a notification's params.
func NewValidator(schemaPath string) (*Validator, error) {
	abs, err := filepath.Abs(schemaPath)
	if err != nil {
		return nil, fmt.Errorf("acptest: schema path: %w", err)
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, fmt.Errorf("acptest: open schema: %w", err)
	}
	doc, err := jsonschema.UnmarshalJSON(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("acptest: parse schema %s: %w", abs, err)
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("acptest: schema %s is not an object", abs)
	}
	defs, _ := top["$defs"].(map[string]any)
	if len(defs) == 0 {
		return nil, fmt.Errorf("acptest: schema %s has no $defs", abs)
	}

	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	for _, f := range numberFormats {
		c.RegisterFormat(f)
	}
	c.AssertFormat()
	url := "file://" + filepath.ToSlash(abs)
	if !strings.HasPrefix(filepath.ToSlash(abs), "/") {
		url = "file:///" + filepath.ToSlash(abs)
	}
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("acptest: add schema: %w", err)
	}
	compile := func(name string) (*def, error) {
		s, err := c.Compile(url + "#/$defs/" + name)
		if err != nil {
			return nil, fmt.Errorf("acptest: compile %s: %w", name, err)
		}
		return &def{name: name, schema: s}, nil
	}

	v := &Validator{path: abs, methods: map[string]map[string]*method{}}
	if v.root, err = c.Compile(url); err != nil {
		return nil, fmt.Errorf("acptest: compile %s: %w", abs, err)
	}
	errDef, err := compile("Error")
	if err != nil {
		return nil, err
	}
	v.errDef = errDef.schema

	names := make([]string, 0, len(defs))
	for name := range defs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		d, _ := defs[name].(map[string]any)
		side, _ := d["x-side"].(string)
		wire, _ := d["x-method"].(string)
		if side == "" || wire == "" {
			continue
		}
		cd, err := compile(name)
		if err != nil {
			return nil, err
		}
		if v.methods[side] == nil {
			v.methods[side] = map[string]*method{}
		}
		m := v.methods[side][wire]
		if m == nil {
			m = &method{}
			v.methods[side][wire] = m
		}
		switch {
		case strings.HasSuffix(name, "Request"):
			m.params = cd
		case strings.HasSuffix(name, "Response"):
			m.result = cd
		case strings.HasSuffix(name, "Notification"):
			m.notification = cd
		default:
			return nil, fmt.Errorf("acptest: %s: cannot tell request, response or notification from $defs name %q", abs, name)
		}
	}
	if len(v.methods[sideAgent]) == 0 || len(v.methods[sideClient]) == 0 {
		return nil, fmt.Errorf("acptest: %s: no x-side/x-method definitions found", abs)
	}
	return v, nil
}

// Path is the absolute path of the schema file.
func (v *Validator) Path() string { return v.path }

// Violation is a frame that breaks JSON-RPC framing or the ACP schema.
type Violation struct {
	From    string   // who wrote the frame: "agent" or "client"
	Frame   []byte   // the frame as written
	Def     string   // what was checked: a $defs name, "root" (the whole schema) or "JSON-RPC"
	Pointer string   // JSON pointer of the first failing value in the frame ("" = the frame)
	Details []string // one line per problem, "pointer: message"
}

func (e *Violation) Error() string {
	var b strings.Builder
	if e.Def == "JSON-RPC" {
		fmt.Fprintf(&b, "%s frame violates JSON-RPC", e.From)
	} else {
		fmt.Fprintf(&b, "%s frame violates the ACP schema (%s)", e.From, e.Def)
	}
	if len(e.Details) == 1 {
		b.WriteString(": ")
		if e.Def == "JSON-RPC" && e.Pointer != "" {
			b.WriteString(e.Pointer + ": ")
		}
		b.WriteString(e.Details[0])
	} else {
		for _, d := range e.Details {
			b.WriteString("\n  - ")
			b.WriteString(d)
		}
	}
	b.WriteString("\n  frame: ")
	b.WriteString(Truncate(e.Frame, 600))
	return b.String()
}

// Truncate returns frame as a string without its trailing newline, cut to
// about max bytes.
func Truncate(frame []byte, max int) string {
	s := strings.TrimRight(string(frame), "\r\n")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:cut], len(s))
}

// ValidateAgentFrame checks one line written by the agent: a single JSON
// object with "jsonrpc":"2.0", valid against the root schema, and precisely:
//
//   - a response: `error` against the Error definition, or `result` against
//     the response definition of the client request it answers;
//     requestMethod maps the echoed id (compact JSON) to that request's
//     method (requestMethod may be nil); "" (unknown) and extension methods
//     ("_...") check the envelope only;
//   - a request: params against the client-side request definition;
//   - a notification: params against its definition (session/update,
//     elicitation/complete, $/cancel_request).
//
// A method the agent may not send (unknown, or one the client sends) is a
// violation unless it is an extension method. The error is a *Violation.
func (v *Validator) ValidateAgentFrame(frame []byte, requestMethod func(id json.RawMessage) string) error {
	return v.validate(sideAgent, frame, requestMethod)
}

// ValidateClientFrame is ValidateAgentFrame for frames a client (a test
// fixture) sends to the agent: requests and notifications against the
// agent-side definitions, responses against the result definition of the
// agent's request; requestMethod maps an id to the method of the agent's
// request.
func (v *Validator) ValidateClientFrame(frame []byte, requestMethod func(id json.RawMessage) string) error {
	return v.validate(sideClient, frame, requestMethod)
}

// validate checks a frame written by from ("agent" or "client").
func (v *Validator) validate(from string, frame []byte, requestMethod func(id json.RawMessage) string) error {
	// The peer implements the methods the writer calls.
	peer := sideClient
	if from == sideClient {
		peer = sideAgent
	}
	bad := func(ptr, format string, args ...any) error {
		return &Violation{From: from, Frame: frame, Def: "JSON-RPC", Pointer: ptr,
			Details: []string{fmt.Sprintf(format, args...)}}
	}

	trimmed := bytes.TrimRight(frame, "\r\n")
	if t := bytes.TrimSpace(trimmed); len(t) == 0 || t[0] != '{' {
		return bad("", "not a JSON object")
	}
	if !utf8.Valid(trimmed) {
		return bad("", "not valid UTF-8")
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &env); err != nil {
		return bad("", "not a single JSON object: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(trimmed))
	if err != nil {
		return bad("", "not a single JSON object: %v", err)
	}
	obj := inst.(map[string]any)
	if string(env["jsonrpc"]) != `"2.0"` {
		return bad("/jsonrpc", `"jsonrpc" must be "2.0", got %s`, orMissing(env["jsonrpc"]))
	}
	for k := range env {
		switch k {
		case "jsonrpc", "id", "method", "params", "result", "error":
		default:
			return bad("/"+k, "unexpected member %q in a JSON-RPC message", k)
		}
	}
	_, hasID := env["id"]
	_, hasResult := env["result"]
	_, hasError := env["error"]
	rawMethod, hasMethod := env["method"]

	var m string
	if hasMethod {
		if err := json.Unmarshal(rawMethod, &m); err != nil {
			return bad("/method", "method must be a string, got %s", rawMethod)
		}
		if hasResult || hasError {
			return bad("", "a message with a method must not carry result or error")
		}
	}

	// Precise check first: its messages are far more useful than the root's.
	var precise error
	switch {
	case hasMethod && hasID: // request
		precise = v.checkCall(from, frame, m, obj, peer, false)
	case hasMethod: // notification
		precise = v.checkCall(from, frame, m, obj, peer, true)
	case hasResult && hasError:
		return bad("", "a response must carry exactly one of result and error")
	case hasResult || hasError:
		if !hasID {
			return bad("", "a response must carry an id")
		}
		if hasError {
			precise = v.check(from, frame, "Error", v.errDef, "/error", obj["error"])
			break
		}
		id := json.RawMessage(compact(env["id"]))
		name := ""
		if requestMethod != nil {
			name = requestMethod(id)
		}
		if name == "" || strings.HasPrefix(name, "_") {
			break
		}
		md := v.methods[from][name]
		if md == nil || md.result == nil {
			return bad("/result", "response to %q, which is not an %s-side method in the schema", name, from)
		}
		precise = v.check(from, frame, md.result.name, md.result.schema, "/result", obj["result"])
	default:
		return bad("", "neither a request, a notification nor a response (no method, result or error)")
	}
	if precise != nil {
		return precise
	}
	return v.check(from, frame, "root", v.root, "", obj)
}

// checkCall validates a request or notification written by from, calling a
// method that peer implements.
func (v *Validator) checkCall(from string, frame []byte, name string, obj map[string]any, peer string, notification bool) error {
	if strings.HasPrefix(name, "_") {
		return nil // extension method: envelope only
	}
	var d *def
	if md := v.methods[peer][name]; md != nil {
		if notification {
			d = md.notification
		} else {
			d = md.params
		}
	}
	if d == nil && notification {
		if md := v.methods[sideProtocol][name]; md != nil {
			d = md.notification
		}
	}
	if d == nil {
		kindName := "request"
		if notification {
			kindName = "notification"
		}
		return &Violation{From: from, Frame: frame, Def: "JSON-RPC", Pointer: "/method",
			Details: []string{fmt.Sprintf("%q is not a %s the %s may send (not a %s-side %s in the schema)", name, kindName, from, peer, kindName)}}
	}
	return v.check(from, frame, d.name, d.schema, "/params", obj["params"])
}

// check validates value (found at ptr in the frame) against s.
func (v *Validator) check(from string, frame []byte, defName string, s *jsonschema.Schema, ptr string, value any) error {
	err := s.Validate(value)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &Violation{From: from, Frame: frame, Def: defName, Pointer: ptr, Details: []string{err.Error()}}
	}
	details, first := summarize(ve, ptr)
	return &Violation{From: from, Frame: frame, Def: defName, Pointer: first, Details: details}
}

func orMissing(raw json.RawMessage) string {
	if raw == nil {
		return "nothing"
	}
	return string(raw)
}

func compact(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// --- error summary ---

var printer = message.NewPrinter(language.English)

// maxDetails caps the problems listed in one Violation.
const maxDetails = 6

// summarize turns the library's error tree into a few "pointer: message"
// lines. Branches of anyOf/oneOf rejected by their discriminator (a const or
// enum on the value or one of its direct properties, or the wrong type of
// the value itself) are dropped when another branch got further; if none
// did, only the discriminator mismatches are kept and merged ("must be one
// of ..."). The deepest locations come first.
func summarize(ve *jsonschema.ValidationError, prefix string) (details []string, first string) {
	ls := leaves(ve)
	type group struct {
		loc    []string
		consts []string
		types  []string
		got    string
		msgs   []string
	}
	var groups []*group
	byLoc := map[string]*group{}
	for _, l := range ls {
		key := strings.Join(l.InstanceLocation, "\x00")
		g := byLoc[key]
		if g == nil {
			g = &group{loc: l.InstanceLocation}
			byLoc[key] = g
			groups = append(groups, g)
		}
		switch k := l.ErrorKind.(type) {
		case *kind.Const:
			g.consts = appendUnique(g.consts, display(k.Want))
			g.got = display(k.Got)
		case *kind.Enum:
			for _, w := range k.Want {
				g.consts = appendUnique(g.consts, display(w))
			}
			g.got = display(k.Got)
		case *kind.Type:
			for _, w := range k.Want {
				g.types = appendUnique(g.types, w)
			}
			if g.got == "" {
				g.got = k.Got
			}
		default:
			g.msgs = appendUnique(g.msgs, k.LocalizedString(printer))
		}
	}
	sort.SliceStable(groups, func(i, j int) bool { return len(groups[i].loc) > len(groups[j].loc) })
	for _, g := range groups {
		ptr := prefix + pointer(g.loc)
		if first == "" {
			first = ptr
		}
		var msgs []string
		switch {
		case len(g.consts) == 1:
			msgs = append(msgs, fmt.Sprintf("value must be %s, got %s", g.consts[0], g.got))
		case len(g.consts) > 1:
			msgs = append(msgs, fmt.Sprintf("value must be one of %s, got %s", strings.Join(g.consts, ", "), g.got))
		}
		if len(g.types) > 0 && len(g.consts) == 0 {
			msgs = append(msgs, fmt.Sprintf("got %s, want %s", g.got, strings.Join(g.types, " or ")))
		}
		msgs = append(msgs, g.msgs...)
		at := ptr
		if at == "" {
			at = "(frame)"
		}
		for _, m := range msgs {
			details = append(details, at+": "+m)
		}
	}
	if first == "" {
		first = prefix
	}
	if len(details) == 0 {
		details = []string{prefix + ": " + ve.ErrorKind.LocalizedString(printer)}
	}
	if len(details) > maxDetails {
		n := len(details) - maxDetails
		details = append(details[:maxDetails:maxDetails], fmt.Sprintf("... and %d more", n))
	}
	return details, first
}

// leaves returns the failing leaf errors of e, pruning anyOf/oneOf branches
// that were rejected by a discriminator.
func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	switch e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		var kept, rejected []*jsonschema.ValidationError
		for _, c := range e.Causes {
			ls := leaves(c)
			if discriminated(ls, e.InstanceLocation) {
				rejected = append(rejected, ls...)
			} else {
				kept = append(kept, ls...)
			}
		}
		if len(kept) > 0 {
			return kept
		}
		var out []*jsonschema.ValidationError
		for _, l := range rejected {
			if isDiscriminator(l, e.InstanceLocation) {
				out = append(out, l)
			}
		}
		return out
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

func discriminated(ls []*jsonschema.ValidationError, at []string) bool {
	for _, l := range ls {
		if isDiscriminator(l, at) {
			return true
		}
	}
	return false
}

// isDiscriminator reports whether l rejects its branch at the value at (or a
// direct property of it) by const, enum or type.
func isDiscriminator(l *jsonschema.ValidationError, at []string) bool {
	loc := l.InstanceLocation
	if len(loc) < len(at) || !equalTokens(loc[:len(at)], at) {
		return false
	}
	switch l.ErrorKind.(type) {
	case *kind.Const, *kind.Enum:
		return len(loc) <= len(at)+1
	case *kind.Type:
		return len(loc) == len(at)
	}
	return false
}

func equalTokens(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		b.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return b.String()
}

func display(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(data) > 80 {
		return string(data[:80]) + "…"
	}
	return string(data)
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// --- number formats used by the schema (Rust integer and float types) ---

var numberFormats = []*jsonschema.Format{
	intFormat("int32", -1<<31, 1<<31-1),
	intFormat("uint16", 0, 1<<16-1),
	intFormat("uint32", 0, 1<<32-1),
	intFormat("int64", -1<<63, 1<<63-1),
	uintFormat("uint64"),
	{Name: "double", Validate: func(any) error { return nil }},
	{Name: "float", Validate: func(any) error { return nil }},
}

func intFormat(name string, lo, hi int64) *jsonschema.Format {
	min, max := big.NewRat(lo, 1), big.NewRat(hi, 1)
	return &jsonschema.Format{Name: name, Validate: func(v any) error {
		r, ok := number(v)
		if !ok {
			return nil // formats only constrain numbers
		}
		if !r.IsInt() {
			return fmt.Errorf("%s is not an integer", r.RatString())
		}
		if r.Cmp(min) < 0 || r.Cmp(max) > 0 {
			return fmt.Errorf("%s is out of range for %s", r.RatString(), name)
		}
		return nil
	}}
}

func uintFormat(name string) *jsonschema.Format {
	max := new(big.Rat).SetInt(new(big.Int).SetUint64(1<<64 - 1))
	return &jsonschema.Format{Name: name, Validate: func(v any) error {
		r, ok := number(v)
		if !ok {
			return nil
		}
		if !r.IsInt() || r.Sign() < 0 || r.Cmp(max) > 0 {
			return fmt.Errorf("%s is out of range for %s", r.RatString(), name)
		}
		return nil
	}}
}

func number(v any) (*big.Rat, bool) {
	var s string
	switch n := v.(type) {
	case json.Number:
		s = string(n)
	case float64:
		return new(big.Rat).SetFloat64(n), true
	case int:
		return big.NewRat(int64(n), 1), true
	case int64:
		return big.NewRat(n, 1), true
	default:
		return nil, false
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}
