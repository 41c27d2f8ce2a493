package acp

// Notice is the SDK 2.4 `notice` session update: information for the user
// outside the conversation (not history, not replayed). Send it only to a
// client that advertised `session.notices` (SupportsNotices).
type Notice struct {
	Severity    string `json:"severity"` // info, warning, error
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
}

// Update wraps the notice as a session update.
func (n Notice) Update() SessionUpdate {
	return otherUpdate("notice", n)
}

// SupportsNotices reports whether the client advertised `session.notices`.
func (c ClientCapabilities) SupportsNotices() bool {
	return c.Session != nil && advertised(c.Session.Notices)
}
