package agent

import (
	"context"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// builderHost is what the request builder asks of the agent
// (request.Host): each act on a session by its id, through the session
// this process keeps (or, for one it does not keep, as sendUpdate and
// writes treat a session with no turn and no lease).
type builderHost struct {
	*core
	auth  *signIn
	tools func(*session, *persistence.Session) []provider.Tool // turns' tool list
}

var _ request.Host = (*builderHost)(nil)

// kept is the session's state in this process, or a transient one.
func (h *builderHost) kept(sessionID string) *session {
	if sess := h.sessions.kept(sessionID); sess != nil {
		return sess
	}
	return newSession(sessionID)
}

func (h *builderHost) Send(ctx context.Context, sessionID string, u acp.SessionUpdate) {
	h.sendUpdate(ctx, h.kept(sessionID), u)
}

func (h *builderHost) Capabilities() acp.ClientCapabilities { return h.capabilities() }

func (h *builderHost) Record(ctx context.Context, sessionID string, kind persistence.EventKind, data any) {
	h.record(ctx, sessionID, kind, data)
}

func (h *builderHost) Writes(sessionID string) request.Writer { return h.writes(h.kept(sessionID)) }

func (h *builderHost) HoldsLease(sessionID string) bool { return h.kept(sessionID).holdsLease() }

func (h *builderHost) Briefly(ctx context.Context, sessionID string, fn func(context.Context)) error {
	return h.leases.briefly(ctx, h.sessions.get(sessionID), fn)
}

func (h *builderHost) StoreError(op string, err error) error { return storeError(op, err) }

func (h *builderHost) Facts(s *persistence.Session) request.Facts {
	m := decodeMeta(s.Metadata)
	f := request.Facts{Model: m.Model, Mode: modeForModel(currentMode(m)), Instructions: m.Instructions, Used: m.Used, Cost: m.Cost}
	if cp := m.SystemPrompt; cp != nil {
		f.ClientPrompt = &request.ClientPrompt{Override: cp.Mode == acp.SystemPromptOverride, Text: cp.Text}
	}
	return f
}

func (h *builderHost) RecordUsage(ctx context.Context, sessionID string, used int, model request.Model, u provider.Usage) (total float64, err error) {
	_, err = h.updateMeta(ctx, h.sessions.get(sessionID), func(_ *persistence.Session, m *sessionMeta) {
		m.Used = used
		if model.Priced() {
			total = m.addCost(model.Currency, model.Cost(u))
		}
	})
	return total, err
}

func (h *builderHost) RememberInstructions(ctx context.Context, sessionID string, paths []string) error {
	_, err := h.updateMeta(ctx, h.sessions.get(sessionID), func(_ *persistence.Session, m *sessionMeta) {
		m.Instructions = append(m.Instructions, paths...)
	})
	return err
}

func (h *builderHost) Tools(sessionID string, s *persistence.Session) []provider.Tool {
	return h.tools(h.kept(sessionID), s)
}

func (h *builderHost) Stream(ctx context.Context, sessionID string, model request.Model, req provider.Request) (*provider.Result, error) {
	res, _, err := h.streamWithRetry(ctx, h.models.ClientFor(model), sessionID, req, nil)
	return res, err
}

func (h *builderHost) EndpointAnswered(model request.Model) {
	if h.auth.defaultEndpoint(model) {
		h.auth.seen.answered() // the endpoint signing in is about (logout.go)
	}
}
