package acp

import (
	"context"
	"encoding/json"
)

// Elicitation (stable since SDK 2.4): the agent asks the client to show the
// user a form (or a URL) and answer with what the user entered. Only a
// client that advertised `elicitation.form` (or `.url`) is asked.

// ElicitationCapabilities is the client's `elicitation` capability: each
// mode present (`{}`) is supported.
type ElicitationCapabilities struct {
	Form *Marker `json:"form,omitempty"`
	URL  *Marker `json:"url,omitempty"`
	Meta Meta    `json:"_meta,omitempty"`
}

// ElicitsForm reports whether the client advertised form elicitation.
func (c ClientCapabilities) ElicitsForm() bool {
	return c.Elicitation != nil && c.Elicitation.Form != nil
}

// ElicitsURL reports whether the client advertised URL elicitation.
func (c ClientCapabilities) ElicitsURL() bool {
	return c.Elicitation != nil && c.Elicitation.URL != nil
}

// Elicitation modes.
const (
	ElicitForm = "form"
	ElicitURL  = "url"
)

// Elicitation actions of the user.
const (
	ElicitAccept  = "accept"
	ElicitDecline = "decline"
	ElicitCancel  = "cancel"
)

// CreateElicitationRequest is elicitation/create, session-scoped (crow-acp
// never elicits outside a session), optionally tied to a tool call.
type CreateElicitationRequest struct {
	Mode       string `json:"mode"`
	SessionID  string `json:"sessionId"`
	ToolCallID string `json:"toolCallId,omitempty"`
	Message    string `json:"message"`
	// RequestedSchema is the form (mode "form").
	RequestedSchema *ElicitationSchema `json:"requestedSchema,omitempty"`
	// ElicitationID and URL are the page to open (mode "url").
	ElicitationID string `json:"elicitationId,omitempty"`
	URL           string `json:"url,omitempty"`
	Meta          Meta   `json:"_meta,omitempty"`
}

// ElicitationSchema is a flat object schema of primitive properties.
type ElicitationSchema struct {
	Type        string                         `json:"type"` // always "object"
	Title       string                         `json:"title,omitempty"`
	Description string                         `json:"description,omitempty"`
	Properties  map[string]ElicitationProperty `json:"properties"`
	Required    []string                       `json:"required,omitempty"`
}

// ElicitationProperty is one form field: type string (an enum when Enum or
// OneOf is set), number, integer, boolean, or array (a multi-select).
type ElicitationProperty struct {
	Type        string `json:"type"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// Default is a value of the property's type.
	Default json.RawMessage `json:"default,omitempty"`
	// string
	MinLength *uint32      `json:"minLength,omitempty"`
	MaxLength *uint32      `json:"maxLength,omitempty"`
	Format    string       `json:"format,omitempty"`  // email, uri, date, date-time
	Pattern   string       `json:"pattern,omitempty"` // a regular expression the value must match
	Enum      []string     `json:"enum,omitempty"`
	OneOf     []EnumOption `json:"oneOf,omitempty"`
	// number, integer
	Minimum *float64 `json:"minimum,omitempty"`
	Maximum *float64 `json:"maximum,omitempty"`
	// array
	MinItems *uint64           `json:"minItems,omitempty"`
	MaxItems *uint64           `json:"maxItems,omitempty"`
	Items    *MultiSelectItems `json:"items,omitempty"`
}

// EnumOption is a titled choice.
type EnumOption struct {
	Const       string `json:"const"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
}

// MultiSelectItems are the choices of an array property: `{type:"string",
// enum}` or titled `{anyOf}`.
type MultiSelectItems struct {
	Type  string       `json:"type,omitempty"`
	Enum  []string     `json:"enum,omitempty"`
	AnyOf []EnumOption `json:"anyOf,omitempty"`
}

// CreateElicitationResponse is the user's answer. Content holds the form's
// values (strings, numbers, booleans, string arrays) when Action is accept.
type CreateElicitationResponse struct {
	Action  string                     `json:"action"`
	Content map[string]json.RawMessage `json:"content,omitempty"`
	Meta    Meta                       `json:"_meta,omitempty"`
}

// CompleteElicitationNotification is elicitation/complete: the URL-mode
// elicitation ElicitationID has finished.
type CompleteElicitationNotification struct {
	ElicitationID string `json:"elicitationId"`
	Meta          Meta   `json:"_meta,omitempty"`
}

// CreateElicitation sends elicitation/create. A mode the client did not
// advertise is refused without sending anything (-32601).
func (c *Conn) CreateElicitation(ctx context.Context, req *CreateElicitationRequest) (*CreateElicitationResponse, error) {
	caps := c.ClientCapabilities()
	switch {
	case req.Mode == ElicitForm && !caps.ElicitsForm():
		return nil, errNotAdvertised("elicitation/create", "elicitation.form")
	case req.Mode == ElicitURL && !caps.ElicitsURL():
		return nil, errNotAdvertised("elicitation/create", "elicitation.url")
	case req.Mode != ElicitForm && req.Mode != ElicitURL:
		return nil, InvalidParams("crow-acp sends only form and url elicitations, not %q.", req.Mode)
	}
	return callFor[CreateElicitationResponse](ctx, c.call, "elicitation/create", req)
}

// CompleteElicitation sends elicitation/complete.
func (c *Conn) CompleteElicitation(_ context.Context, n *CompleteElicitationNotification) error {
	if !c.ClientCapabilities().ElicitsURL() {
		return errNotAdvertised("elicitation/complete", "elicitation.url")
	}
	return c.stream.writeNotification("elicitation/complete", n)
}

// Elicitor is a client that answers elicitation/create (a ClientConn's
// handler implements it to serve the agent's questions; *Conn implements
// it to ask the client).
type Elicitor interface {
	CreateElicitation(ctx context.Context, req *CreateElicitationRequest) (*CreateElicitationResponse, error)
}

var _ Elicitor = (*Conn)(nil)

// serveElicitation routes elicitation/create to a handler that implements
// Elicitor; any other answers -32601.
func serveElicitation(ctx context.Context, h Client, raw json.RawMessage) (any, error) {
	e, ok := h.(Elicitor)
	if !ok {
		return nil, MethodNotFound("elicitation/create")
	}
	p := new(CreateElicitationRequest)
	if err := decodeParams(raw, p); err != nil {
		return nil, err
	}
	return e.CreateElicitation(ctx, p)
}
