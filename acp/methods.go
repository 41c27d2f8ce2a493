package acp

import (
	"bytes"
	"context"
	"encoding/json"
)

// Optional agent methods. An agent advertises what it implements in its
// capabilities; the dispatcher answers -32601 for the rest.

// SessionLoader implements session/load.
type SessionLoader interface {
	LoadSession(ctx context.Context, req *LoadSessionRequest) (*LoadSessionResponse, error)
}

// SessionLister implements session/list.
type SessionLister interface {
	ListSessions(ctx context.Context, req *ListSessionsRequest) (*ListSessionsResponse, error)
}

// SessionResumer implements session/resume.
type SessionResumer interface {
	ResumeSession(ctx context.Context, req *ResumeSessionRequest) (*ResumeSessionResponse, error)
}

// SessionCloser implements session/close.
type SessionCloser interface {
	CloseSession(ctx context.Context, req *CloseSessionRequest) (*CloseSessionResponse, error)
}

// SessionDeleter implements session/delete.
type SessionDeleter interface {
	DeleteSession(ctx context.Context, req *DeleteSessionRequest) (*DeleteSessionResponse, error)
}

// ConfigOptionSetter implements session/set_config_option.
type ConfigOptionSetter interface {
	SetSessionConfigOption(ctx context.Context, req *SetSessionConfigOptionRequest) (*SetSessionConfigOptionResponse, error)
}

// SessionTitler implements session/set_title.
type SessionTitler interface {
	SetSessionTitle(ctx context.Context, req *SetSessionTitleRequest) (*SetSessionTitleResponse, error)
}

// SessionArchiver implements session/archive and session/unarchive.
type SessionArchiver interface {
	ArchiveSession(ctx context.Context, req *ArchiveSessionRequest) (*ArchiveSessionResponse, error)
	UnarchiveSession(ctx context.Context, req *UnarchiveSessionRequest) (*UnarchiveSessionResponse, error)
}

// SessionStatuser implements session/status.
type SessionStatuser interface {
	SessionStatus(ctx context.Context, req *SessionStatusRequest) (*SessionStatusResponse, error)
}

// LogoutHandler implements logout and auth/status.
type LogoutHandler interface {
	Logout(ctx context.Context, req *LogoutRequest) (*LogoutResponse, error)
	AuthStatus(ctx context.Context, req *AuthStatusRequest) (*AuthStatusResponse, error)
}

// ExtMethodHandler handles extension requests (methods starting with "_").
type ExtMethodHandler interface {
	HandleExtMethod(ctx context.Context, method string, params json.RawMessage) (any, error)
}

// ExtNotificationHandler handles extension notifications.
type ExtNotificationHandler interface {
	HandleExtNotification(ctx context.Context, method string, params json.RawMessage)
}

// method is one entry of the dispatch table.
type method struct {
	// async methods run on their own goroutine; the rest run one at a time
	// in arrival order (see Conn.dispatch). Every request may be cancelled
	// with $/cancel_request: its context ends, with ErrRequestCancelled as
	// the cause.
	async bool
	call  func(ctx context.Context, a Agent, params json.RawMessage) (any, error)
}

// methods maps every agent method crow-acp knows to its handler. Adding a
// method is one line here plus the interface it binds to.
var methods = map[string]method{
	"initialize":                route(bindOptional[Agent](Agent.Initialize)),
	"authenticate":              route(bindOptional[Agent](Agent.Authenticate)),
	"session/new":               route(bindOptional[Agent](Agent.NewSession)),
	"session/load":              route(bindOptional[SessionLoader](SessionLoader.LoadSession)),
	"session/list":              route(bindOptional[SessionLister](SessionLister.ListSessions)),
	"session/resume":            route(bindOptional[SessionResumer](SessionResumer.ResumeSession)),
	"session/close":             route(bindOptional[SessionCloser](SessionCloser.CloseSession)),
	"session/delete":            route(bindOptional[SessionDeleter](SessionDeleter.DeleteSession)),
	"session/fork":              route(bindOptional[SessionForker](SessionForker.ForkSession)),
	"session/set_config_option": route(bindOptional[ConfigOptionSetter](ConfigOptionSetter.SetSessionConfigOption)),
	"session/set_mode":          route(bindOptional[ModeSetter](ModeSetter.SetSessionMode)),
	"session/set_title":         route(bindOptional[SessionTitler](SessionTitler.SetSessionTitle)),
	"session/archive":           route(bindOptional[SessionArchiver](SessionArchiver.ArchiveSession)),
	"session/unarchive":         route(bindOptional[SessionArchiver](SessionArchiver.UnarchiveSession)),
	"session/status":            route(bindOptional[SessionStatuser](SessionStatuser.SessionStatus)),
	"logout":                    route(bindOptional[LogoutHandler](LogoutHandler.Logout)),
	"auth/status":               route(bindOptional[LogoutHandler](LogoutHandler.AuthStatus)),
	"session/prompt":            async(route(bindOptional[Agent](Agent.Prompt))),
}

// bindOptional binds a method of an optional interface I: nil when the agent
// does not implement I.
func bindOptional[I any, P, R any](fn func(I, context.Context, *P) (*R, error)) func(Agent) func(context.Context, *P) (*R, error) {
	return func(a Agent) func(context.Context, *P) (*R, error) {
		impl, ok := a.(I)
		if !ok {
			return nil
		}
		return func(ctx context.Context, p *P) (*R, error) { return fn(impl, ctx, p) }
	}
}

func async(m method) method {
	m.async = true
	return m
}

// route builds a table entry: decode params into P, validate, call the
// method bound from the agent (nil: not implemented).
func route[P, R any](bind func(Agent) func(context.Context, *P) (*R, error)) method {
	return method{call: func(ctx context.Context, a Agent, raw json.RawMessage) (any, error) {
		fn := bind(a)
		if fn == nil {
			return nil, &Error{Code: CodeMethodNotFound, Message: "This method is not implemented by crow-acp; the initialize response lists what it supports."}
		}
		return serveParams(ctx, raw, fn)
	}}
}

// serveParams decodes params into P, validates them if P has a Validate
// method, and calls fn; an empty result is {}, never null.
func serveParams[P, R any](ctx context.Context, raw json.RawMessage, fn func(context.Context, *P) (*R, error)) (any, error) {
	p := new(P)
	if err := decodeParams(raw, p); err != nil {
		return nil, err
	}
	if v, ok := any(p).(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return nil, err
		}
	}
	r, err := fn(ctx, p)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return struct{}{}, nil
	}
	return r, nil
}

func extensionMethod(name string) method {
	return method{call: func(ctx context.Context, a Agent, raw json.RawMessage) (any, error) {
		return callExtension(ctx, a, name, raw)
	}}
}

// callExtension serves an extension request ("_" method) with h's
// HandleExtMethod, on either side of a connection; a nil result is {}.
func callExtension(ctx context.Context, h any, name string, raw json.RawMessage) (any, error) {
	ext, ok := h.(ExtMethodHandler)
	if !ok {
		return nil, MethodNotFound(name)
	}
	res, err := ext.HandleExtMethod(ctx, name, raw)
	if err == nil && res == nil {
		res = struct{}{}
	}
	return res, err
}

// decodeParams decodes params into v; a missing params object counts as {}.
func decodeParams(raw json.RawMessage, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if raw[0] != '{' {
		return InvalidParams("Invalid params: expected a JSON object.")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return ParamsError(err)
	}
	return nil
}
