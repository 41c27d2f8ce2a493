package agent

import (
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// sessionModel is the model a session uses now.
func (a *Agent) sessionModel(s *persistence.Session) request.Model {
	return a.models.Named(decodeMeta(s.Metadata).Model)
}

// windowSource reports a model's effective context window and where it
// came from (Model.WindowSource), for tests.
func (a *Agent) windowSource(model string) (int, string) {
	m := a.models.Named(model)
	return m.ContextWindow, m.WindowSource
}
