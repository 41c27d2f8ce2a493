package agent

import (
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// PrefixRoom is how the part every model request carries fits a window:
// Fixed is the system prompt and tool schemas, Reserve what is kept for
// the reply, Budget what a request may use in all (window − reserve).
type PrefixRoom struct {
	Fixed, Reserve, Budget int
}

// MeasurePrefix counts, the way the agent counts it before every request,
// the fixed part of a new session in cwd with cfg's selected model (the
// built-in tools; an MCP server's tools, connected per session, come on
// top), and how it fits a window of the given size: what `doctor` checks.
func MeasurePrefix(cfg Config, cwd string, window int) PrefixRoom {
	// No endpoint, no store: nothing is asked, cached or written.
	cfg.Providers, cfg.Windows, cfg.FrameLog = nil, nil, nil
	a := New(nil, nil, nil, cfg, nil)
	defer a.Close()
	m := a.models.Named(a.cfg.Model)
	m.ContextWindow = window
	if m.OutputReserve >= window/2 {
		m.OutputReserve = min(request.DefaultOutputReserve, window/4)
	}
	st := a.build.Settings()
	st.Window, st.OutputReserve = window, m.OutputReserve
	s := &persistence.Session{ID: "doctor", Cwd: cwd}
	fixed := a.build.FixedTokens(&request.Session{ID: s.ID}, s, a.build.CounterFor(m))
	return PrefixRoom{Fixed: fixed, Reserve: st.Reserve(), Budget: st.Budget()}
}
