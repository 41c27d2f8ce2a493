package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crow-acp/crow-acp/acp"
)

// An MCP server's elicitation/create is passed through to the user while
// one of its tool calls runs, tied to that call, with ask_user's fallbacks
// (Ask): a form where the client takes forms, a permission request for a
// single choice, and otherwise "cancel" (the user was never asked). A
// server is untrusted: its request is re-built from a bounded, typed copy,
// it may ask only during its own tool call (whose timeout bounds the wait)
// and only MaxMCPQuestionsPerCall times per call.
const (
	MaxMCPElicitSchemaBytes = 16 << 10
	MaxMCPElicitFields      = 16
	MaxMCPQuestionsPerCall  = 3
	maxElicitText           = 1024 // a title or description, bytes
	maxElicitOptions        = 64
	maxElicitNameBytes      = 64
	maxElicitURLBytes       = 2048
	maxForwardedURLs        = 16 // URL elicitations awaiting completion, per server
	// maxPatternRetries: a form answer that does not match a field's
	// pattern is asked again this many times, then refused.
	maxPatternRetries = 2
)

// mcpAsker routes one MCP server's elicitations to the tool call running.
type mcpAsker struct {
	server string

	mu     sync.Mutex
	call   *mcpCall
	urlIDs map[string]*Env // URL elicitations forwarded, by id
}

// mcpCall is a tool call of the server in progress.
type mcpCall struct {
	ctx    context.Context
	env    *Env
	callID string
	asked  int
	notes  []string // what the model is told beside the server's result
}

// clientOptions are the MCP client's: elicitations come to the asker.
// Servers are offered forms and, when the ACP client takes them, URLs.
func (a *mcpAsker) clientOptions(urlElicit bool) *mcp.ClientOptions {
	opts := &mcp.ClientOptions{ElicitationHandler: a.elicit, ElicitationCompleteHandler: a.complete}
	if urlElicit {
		// Setting Capabilities drops the SDK's default roots capability:
		// keep it as it was, whichever client the server talks to.
		//lint:ignore SA1019 the same roots capability as without URL elicitation
		opts.Capabilities = &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{ListChanged: true},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}}
	}
	return opts
}

// during makes the server's elicitations go to the call callID until the
// returned func runs; that returns the notes for the model about them
// (a request refused, and why).
func (a *mcpAsker) during(ctx context.Context, env *Env, callID string) func() []string {
	call := &mcpCall{ctx: ctx, env: env, callID: callID}
	a.mu.Lock()
	a.call = call
	a.mu.Unlock()
	return func() []string {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.call == call {
			a.call = nil
		}
		return slices.Clone(call.notes) // a handler still running may add one
	}
}

// note adds a note for the model to the call.
func (a *mcpAsker) note(call *mcpCall, format string, args ...any) {
	a.mu.Lock()
	call.notes = append(call.notes, fmt.Sprintf(format, args...))
	a.mu.Unlock()
}

// notAsked is the answer when the user was not asked.
var notAsked = &mcp.ElicitResult{Action: acp.ElicitCancel}

// elicit is the MCP client's ElicitationHandler.
func (a *mcpAsker) elicit(req context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a.mu.Lock()
	call := a.call
	ok := call != nil && call.asked < MaxMCPQuestionsPerCall
	if ok {
		call.asked++
	}
	a.mu.Unlock()
	if !ok || r == nil || r.Params == nil {
		return notAsked, nil
	}
	// The question ends with the tool call (its timeout, the turn's
	// cancel) or when the server withdraws it.
	ctx, cancel := context.WithCancel(call.ctx)
	defer cancel()
	stop := context.AfterFunc(req, cancel)
	defer stop()

	p := r.Params
	message := fmt.Sprintf("MCP server %q asks: %s", a.server, cutBytes(strings.TrimSpace(p.Message), MaxQuestionBytes))
	if p.Mode == acp.ElicitURL {
		return a.forwardURL(ctx, call, message, p)
	}
	raw, err := json.Marshal(p.RequestedSchema)
	if err != nil {
		return notAsked, nil
	}
	schema, err := ParseElicitSchema(raw)
	if err != nil {
		return nil, fmt.Errorf("crow-acp does not show this form: %v", err)
	}
	q := &Question{Message: message, Schema: schema}
	q.Field, q.Choices = singleChoice(schema)
	var ans Answer
	for try := 0; ; try++ {
		ans = Ask(ctx, call.env, call.callID, q)
		if ans.Err != nil || ans.Cancelled || ans.Action == "" {
			return notAsked, nil
		}
		if ans.Action != acp.ElicitAccept {
			return &mcp.ElicitResult{Action: ans.Action}, nil
		}
		field, value := patternMismatch(schema, ans.Content)
		if field == "" {
			break
		}
		// The server's SDK would refuse the answer (and the user's work
		// with it): the user is asked again, their answer kept to edit.
		pattern := schema.Properties[field].Pattern
		if try == maxPatternRetries {
			a.note(call, "Note: the user's answers to field %q did not match the pattern %q the server requires; crow-acp asked %d times and sent none.", field, pattern, try+1)
			return nil, fmt.Errorf("the user's answer to field %q does not match its pattern %q (asked %d times); nothing was sent", field, pattern, try+1)
		}
		q = askAgain(q, message, field, value)
	}
	res := &mcp.ElicitResult{Action: ans.Action, Content: map[string]any{}}
	for k, v := range ans.Content {
		var x any
		if _, known := schema.Properties[k]; known && json.Unmarshal(v, &x) == nil {
			res.Content[k] = x
		}
	}
	return res, nil
}

// patternMismatch is the first field of the answer whose text does not
// match the field's pattern (Go's regexp, as the MCP SDK checks it), and
// that text; "" when every one matches.
func patternMismatch(schema *acp.ElicitationSchema, content map[string]json.RawMessage) (field, value string) {
	for name, p := range schema.Properties {
		var s string
		if p.Pattern == "" || json.Unmarshal(content[name], &s) != nil {
			continue
		}
		if re, err := regexp.Compile(p.Pattern); err == nil && !re.MatchString(s) {
			return name, s
		}
	}
	return "", ""
}

// askAgain is q asked again after the answer value to field did not match
// its pattern: the message says so, and the form holds the answer to edit.
func askAgain(q *Question, message, field, value string) *Question {
	schema := *q.Schema
	schema.Properties = maps.Clone(q.Schema.Properties)
	p := schema.Properties[field]
	if len(value) <= maxElicitText {
		p.Default = mustJSON(value)
	}
	schema.Properties[field] = p
	title := p.Title
	if title == "" {
		title = field
	}
	again := *q
	again.Schema = &schema
	again.Message = fmt.Sprintf("Your answer to %q does not match the format the server requires (the pattern %s); correct it, please.\n\n%s", title, p.Pattern, message)
	return &again
}

// forwardURL passes a URL elicitation to a client that takes them. A URL
// that could mislead the user about where it goes is declined, and the
// model told why; the user is shown the host.
func (a *mcpAsker) forwardURL(ctx context.Context, call *mcpCall, message string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	env := call.env
	if env.ElicitURL == nil || p.ElicitationID == "" || len(p.ElicitationID) > maxElicitNameBytes {
		return notAsked, nil
	}
	host, why := checkElicitURL(p.URL)
	if why != "" {
		a.note(call, "Note: crow-acp declined the server's request to open %q: %s.", cutBytes(p.URL, maxElicitURLBytes), why)
		return &mcp.ElicitResult{Action: acp.ElicitDecline}, nil
	}
	message = fmt.Sprintf("%s\n\nThe page is on %s.", message, host)
	a.mu.Lock()
	if a.urlIDs == nil {
		a.urlIDs = map[string]*Env{}
	}
	full := len(a.urlIDs) >= maxForwardedURLs
	if !full {
		a.urlIDs[p.ElicitationID] = env
	}
	a.mu.Unlock()
	if full {
		return notAsked, nil
	}
	res, err := env.ElicitURL(ctx, &acp.CreateElicitationRequest{Mode: acp.ElicitURL, SessionID: env.SessionID,
		ToolCallID: call.callID, Message: message, ElicitationID: p.ElicitationID, URL: p.URL})
	if err != nil || res.Action != acp.ElicitAccept {
		a.forget(p.ElicitationID)
		if err != nil {
			return notAsked, nil
		}
		return &mcp.ElicitResult{Action: res.Action}, nil
	}
	return &mcp.ElicitResult{Action: acp.ElicitAccept}, nil
}

// complete is the MCP client's ElicitationCompleteHandler: the server says
// a URL elicitation it sent is done; the client is told if it was shown.
func (a *mcpAsker) complete(ctx context.Context, r *mcp.ElicitationCompleteNotificationRequest) {
	if r == nil || r.Params == nil {
		return
	}
	env := a.forget(r.Params.ElicitationID)
	if env != nil && env.CompleteElicitation != nil {
		_ = env.CompleteElicitation(ctx, &acp.CompleteElicitationNotification{ElicitationID: r.Params.ElicitationID})
	}
}

func (a *mcpAsker) forget(id string) *Env {
	a.mu.Lock()
	defer a.mu.Unlock()
	env := a.urlIDs[id]
	delete(a.urlIDs, id)
	return env
}

// checkElicitURL returns the host of a URL a user may be sent to, or why
// not: a server could dress a page on one host as another's. It must be
// https (http only on the loopback), in canonical form (no spaces or raw
// control characters: the schema's uri format holds), without userinfo
// ("https://github.com@evil.example/" goes to evil.example), and with a
// plain ASCII host: no IDN or punycode ("xn--") label, which can look like
// another name, and no percent-encoding.
func checkElicitURL(s string) (host, why string) {
	if len(s) > maxElicitURLBytes {
		return "", fmt.Sprintf("the URL is longer than %d bytes", maxElicitURLBytes)
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "" || u.String() != s:
		return "", "it is not a URL in canonical form with a host"
	case u.User != nil:
		return "", fmt.Sprintf("it names a user before an @ (userinfo), which can make a page on %s look like another site's", u.Hostname())
	case strings.Contains(rawAuthority(s), "%"):
		return "", "its host is percent-encoded, which can hide the real one"
	case !isPlainHost(u.Hostname()):
		return "", "its host is an internationalised (IDN or punycode) name, which can look like another site's"
	case u.Scheme == "https":
	case u.Scheme == "http" && isLoopback(u.Hostname()):
	default:
		return "", "it is not https (http is taken only on this machine's loopback)"
	}
	return u.Host, ""
}

// rawAuthority is the authority of URL s as written (url.Parse decodes
// the host's percent-escapes).
func rawAuthority(s string) string {
	_, rest, _ := strings.Cut(s, "://")
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// isPlainHost reports a host of ASCII letters, digits, '-', '.' (or an
// IPv6 literal's hex and ':') without a punycode label.
func isPlainHost(h string) bool {
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == ':') {
			return false
		}
	}
	for label := range strings.SplitSeq(h, ".") {
		if len(label) >= 4 && strings.EqualFold(label[:4], "xn--") {
			return false
		}
	}
	return h != ""
}

// isLoopback reports localhost or a loopback IP address.
func isLoopback(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// singleChoice reports the field and choices of a form that is one choice:
// a single string enum or boolean property.
func singleChoice(s *acp.ElicitationSchema) (string, []Choice) {
	if len(s.Properties) != 1 {
		return "", nil
	}
	for name, p := range s.Properties {
		var out []Choice
		switch {
		case p.Type == "boolean":
			out = []Choice{{Title: "Yes", Value: json.RawMessage("true")}, {Title: "No", Value: json.RawMessage("false")}}
		case p.Type == "string" && len(p.OneOf) > 0:
			for _, o := range p.OneOf {
				out = append(out, Choice{Title: o.Title, Value: mustJSON(o.Const)})
			}
		case p.Type == "string" && len(p.Enum) > 0:
			for _, e := range p.Enum {
				out = append(out, Choice{Title: e, Value: mustJSON(e)})
			}
		}
		if len(out) > MaxChoices {
			return "", nil
		}
		return name, out
	}
	return "", nil
}

// ParseElicitSchema reads an MCP server's requestedSchema (untrusted) into
// the ACP form schema: a flat object of at most MaxMCPElicitFields
// properties of the schema's five types, every text and list bounded.
// What the ACP schema has no place for (nested schemas, unknown keys) is
// dropped; a default of the wrong type too. A pattern is kept when Go's
// regexp compiles it, else the form is refused.
func ParseElicitSchema(raw []byte) (*acp.ElicitationSchema, error) {
	if len(raw) > MaxMCPElicitSchemaBytes {
		return nil, fmt.Errorf("the form's schema is %d bytes (at most %d)", len(raw), MaxMCPElicitSchemaBytes)
	}
	var in struct {
		Type        string                     `json:"type"`
		Title       string                     `json:"title"`
		Description string                     `json:"description"`
		Properties  map[string]json.RawMessage `json:"properties"`
		Required    []string                   `json:"required"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("the form's schema is not a JSON object: %v", err)
	}
	switch {
	case in.Type != "" && in.Type != "object":
		return nil, fmt.Errorf("the form's schema has type %q, not object", in.Type)
	case len(in.Properties) == 0:
		return nil, errors.New("the form has no fields")
	case len(in.Properties) > MaxMCPElicitFields:
		return nil, fmt.Errorf("the form has %d fields (at most %d)", len(in.Properties), MaxMCPElicitFields)
	}
	out := &acp.ElicitationSchema{Type: "object", Title: cutBytes(in.Title, maxElicitText),
		Description: cutBytes(in.Description, maxElicitText), Properties: map[string]acp.ElicitationProperty{}}
	for name, rawProp := range in.Properties {
		if name == "" || len(name) > maxElicitNameBytes {
			return nil, fmt.Errorf("a field name is empty or longer than %d bytes", maxElicitNameBytes)
		}
		p, err := parseElicitProperty(rawProp)
		if err != nil {
			return nil, fmt.Errorf("field %q: %v", cutBytes(name, maxElicitNameBytes), err)
		}
		out.Properties[name] = p
	}
	seen := map[string]bool{}
	for _, r := range in.Required {
		if _, ok := out.Properties[r]; ok && !seen[r] {
			seen[r] = true
			out.Required = append(out.Required, r)
		}
	}
	return out, nil
}

func parseElicitProperty(raw json.RawMessage) (acp.ElicitationProperty, error) {
	var p acp.ElicitationProperty
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, fmt.Errorf("not a property schema: %v", err)
	}
	out := acp.ElicitationProperty{Type: p.Type, Title: cutBytes(p.Title, maxElicitText), Description: cutBytes(p.Description, maxElicitText)}
	switch p.Type {
	case "string":
		out.MinLength, out.MaxLength = p.MinLength, p.MaxLength
		switch p.Format {
		case "email", "uri", "date", "date-time":
			out.Format = p.Format
		}
		var err error
		if out.Pattern, err = checkedPattern(p.Pattern); err != nil {
			return out, err
		}
		if out.Enum, err = boundedEnum(p.Enum); err != nil {
			return out, err
		}
		if out.OneOf, err = boundedOptions(p.OneOf); err != nil {
			return out, err
		}
		var d string
		if json.Unmarshal(p.Default, &d) == nil && len(d) <= maxElicitText {
			out.Default = mustJSON(d)
		}
	case "number", "integer":
		out.Minimum, out.Maximum = finite(p.Minimum, p.Type), finite(p.Maximum, p.Type)
		var d float64
		if json.Unmarshal(p.Default, &d) == nil && finite(&d, p.Type) != nil {
			out.Default = mustJSON(d)
		}
	case "boolean":
		var d bool
		if json.Unmarshal(p.Default, &d) == nil {
			out.Default = mustJSON(d)
		}
	case "array":
		if p.Items == nil {
			return out, errors.New("a multi-select without items")
		}
		out.MinItems, out.MaxItems = p.MinItems, p.MaxItems
		items := &acp.MultiSelectItems{}
		var err error
		if items.AnyOf, err = boundedOptions(p.Items.AnyOf); err != nil {
			return out, err
		}
		if len(items.AnyOf) == 0 {
			items.Type = "string"
			if items.Enum, err = boundedEnum(p.Items.Enum); err != nil {
				return out, err
			}
			if len(items.Enum) == 0 {
				return out, errors.New("a multi-select without choices")
			}
		}
		out.Items = items
		var d []string
		if json.Unmarshal(p.Default, &d) == nil && len(d) <= maxElicitOptions {
			if b, err := boundedEnum(d); err == nil {
				out.Default = mustJSON(b)
			}
		}
	default:
		return out, fmt.Errorf("type %q is not a form field type", cutBytes(p.Type, 32))
	}
	return out, nil
}

// checkedPattern is a field's pattern, passed on (the client may check it)
// and checked against the answer here as the server's SDK checks it, with
// Go's regexp. One that does not compile is refused before the user is
// asked: the SDK could not check the answer and would drop it.
func checkedPattern(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	if len(p) > maxElicitText {
		return "", fmt.Errorf("a pattern of %d bytes (at most %d)", len(p), maxElicitText)
	}
	if _, err := regexp.Compile(p); err != nil {
		return "", fmt.Errorf("pattern %q is not a regular expression crow-acp can check the answer with (Go's RE2 syntax: no lookaround or backreferences)", cutBytes(p, 200))
	}
	return p, nil
}

func boundedEnum(in []string) ([]string, error) {
	if len(in) > maxElicitOptions {
		return nil, fmt.Errorf("%d choices (at most %d)", len(in), maxElicitOptions)
	}
	for _, e := range in {
		if len(e) > MaxChoiceBytes {
			return nil, fmt.Errorf("a choice is %d bytes (at most %d)", len(e), MaxChoiceBytes)
		}
	}
	return in, nil
}

func boundedOptions(in []acp.EnumOption) ([]acp.EnumOption, error) {
	if len(in) > maxElicitOptions {
		return nil, fmt.Errorf("%d choices (at most %d)", len(in), maxElicitOptions)
	}
	out := make([]acp.EnumOption, 0, len(in))
	for _, o := range in {
		if len(o.Const) > MaxChoiceBytes {
			return nil, fmt.Errorf("a choice is %d bytes (at most %d)", len(o.Const), MaxChoiceBytes)
		}
		title := cutBytes(o.Title, MaxChoiceBytes)
		if title == "" {
			title = o.Const
		}
		out = append(out, acp.EnumOption{Const: o.Const, Title: title, Description: cutBytes(o.Description, maxElicitText)})
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// finite is v when it is a finite number (a whole one for an integer).
func finite(v *float64, typ string) *float64 {
	if v == nil || math.IsInf(*v, 0) || math.IsNaN(*v) || typ == "integer" && (*v != math.Trunc(*v) || math.Abs(*v) > 1<<53) {
		return nil
	}
	return v
}

// cutBytes cuts s to at most n bytes on a rune boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
