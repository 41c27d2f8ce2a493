package acp

import "strings"

// Session titles, archive and status, logout and auth status, and the
// prompt response's usage. `logout` and `auth.logout` are stable v1 (SDK
// 2.4); the rest is in the SDK 2.4 unstable schema.

// --- session/set_title (unstable) ---

type SetSessionTitleRequest struct {
	SessionID string `json:"sessionId"`
	Title     string `json:"title"`
	Meta      Meta   `json:"_meta,omitempty"`
}

func (r *SetSessionTitleRequest) Validate() error {
	if err := needSessionID(r.SessionID, "pass the id that session/new or session/list returned"); err != nil {
		return err
	}
	if strings.TrimSpace(r.Title) == "" {
		return InvalidParams("The title is empty: pass the session's new name.")
	}
	return nil
}

// SetSessionTitleResponse carries the title as stored (normalised).
type SetSessionTitleResponse struct {
	Title string `json:"title"`
	Meta  Meta   `json:"_meta,omitempty"`
}

// --- session/archive, session/unarchive (unstable) ---

type ArchiveSessionRequest struct {
	SessionID string `json:"sessionId"`
	Meta      Meta   `json:"_meta,omitempty"`
}

func (r *ArchiveSessionRequest) Validate() error {
	return needSessionID(r.SessionID, fromList)
}

type ArchiveSessionResponse struct {
	Meta Meta `json:"_meta,omitempty"`
}

type UnarchiveSessionRequest struct {
	SessionID string `json:"sessionId"`
	Meta      Meta   `json:"_meta,omitempty"`
}

func (r *UnarchiveSessionRequest) Validate() error {
	return needSessionID(r.SessionID, fromList)
}

type UnarchiveSessionResponse struct {
	Meta Meta `json:"_meta,omitempty"`
}

// Values of ListSessionsRequest.Archived ("" = ArchivedExclude).
const (
	ArchivedExclude = "exclude"
	ArchivedInclude = "include"
	ArchivedOnly    = "only"
)

// --- session/status (unstable) ---

type SessionStatusRequest struct {
	SessionID string `json:"sessionId"`
	Meta      Meta   `json:"_meta,omitempty"`
}

func (r *SessionStatusRequest) Validate() error {
	return needSessionID(r.SessionID, fromList)
}

// Values of SessionStatusResponse.Status.
const (
	SessionOpen  = "open"  // in this agent's memory
	SessionSaved = "saved" // stored; load or resume it
)

type SessionStatusResponse struct {
	Status string `json:"status"`
	Meta   Meta   `json:"_meta,omitempty"`
}

// --- logout (stable), auth/status (unstable) ---

type LogoutRequest struct {
	Meta Meta `json:"_meta,omitempty"`
}

type LogoutResponse struct {
	Meta Meta `json:"_meta,omitempty"`
}

// AgentAuthCapabilities is agentCapabilities.auth: Logout is stable,
// Status unstable.
type AgentAuthCapabilities struct {
	Logout *Marker `json:"logout,omitempty"`
	Status *Marker `json:"status,omitempty"`
	Meta   Meta    `json:"_meta,omitempty"`
}

type AuthStatusRequest struct {
	Meta Meta `json:"_meta,omitempty"`
}

// Values of AuthStatusResponse.State.
const (
	AuthAuthenticated   = "authenticated"
	AuthUnauthenticated = "unauthenticated"
	AuthNotRequired     = "not_required"
	AuthUnknown         = "unknown"
)

type AuthStatusResponse struct {
	State    string        `json:"state"`
	Accounts []AuthAccount `json:"accounts,omitempty"`
	Meta     Meta          `json:"_meta,omitempty"`
}

// AuthAccount names a credential without revealing it.
type AuthAccount struct {
	Label  string `json:"label"`
	Active *bool  `json:"active,omitempty"`
	Meta   Meta   `json:"_meta,omitempty"`
}

// --- the prompt response's usage (unstable) ---

// Usage is the token usage of one prompt turn.
type Usage struct {
	TotalTokens       int  `json:"totalTokens"`
	InputTokens       int  `json:"inputTokens"`
	OutputTokens      int  `json:"outputTokens"`
	ThoughtTokens     *int `json:"thoughtTokens,omitempty"`
	CachedReadTokens  *int `json:"cachedReadTokens,omitempty"`
	CachedWriteTokens *int `json:"cachedWriteTokens,omitempty"`
	Meta              Meta `json:"_meta,omitempty"`
}
