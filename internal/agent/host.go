package agent

import (
	"context"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// builderHost is what the request builder asks of the agent
// (request.Host): each act on a session through the state this process
// keeps for it (request.Session.Holder), or for a session it keeps none of
// (the doctor's count of the fixed prefix) as for one with no turn and no
// lease.
type builderHost struct {
	*core
	auth  *signIn
	tools func(*session, *persistence.Session) []provider.Tool // turns' tool list
}

var _ request.Host = (*builderHost)(nil)

// held is the session's state in this process, or a transient one.
func (h *builderHost) held(r *request.Session) *session {
	if sess, ok := r.Holder.(*session); ok {
		return sess
	}
	return newSession(r.ID)
}

func (h *builderHost) Send(ctx context.Context, r *request.Session, u acp.SessionUpdate) {
	h.sendUpdate(ctx, h.held(r), u)
}

func (h *builderHost) Capabilities() acp.ClientCapabilities { return h.capabilities() }

func (h *builderHost) Record(ctx context.Context, sessionID string, kind persistence.EventKind, data any) {
	h.record(ctx, sessionID, kind, data)
}

func (h *builderHost) Writes(r *request.Session) request.Writer { return h.writes(h.held(r)) }

func (h *builderHost) HoldsLease(r *request.Session) bool { return h.held(r).holdsLease() }

func (h *builderHost) Briefly(ctx context.Context, r *request.Session, fn func(context.Context)) error {
	return h.leases.briefly(ctx, h.held(r), fn)
}

func (h *builderHost) StoreError(op string, err error) error { return storeError(op, err) }

func (h *builderHost) Facts(s *persistence.Session) request.Facts {
	m := decodeMeta(s.Metadata)
	f := request.Facts{Model: m.Model, Mode: currentMode(m), Instructions: m.Instructions, Used: m.Used, Cost: m.Cost}
	if cp := m.SystemPrompt; cp != nil {
		f.ClientPrompt = &request.ClientPrompt{Override: cp.Mode == acp.SystemPromptOverride, Text: cp.Text}
	}
	return f
}

func (h *builderHost) RecordUsage(ctx context.Context, r *request.Session, used int, model request.Model, u provider.Usage) (total float64, err error) {
	_, err = h.updateMeta(ctx, h.held(r), func(_ *persistence.Session, m *sessionMeta) {
		m.Used = used
		if model.Priced() {
			total = m.addCost(model.Currency, model.Cost(u))
		}
	})
	return total, err
}

func (h *builderHost) RememberInstructions(ctx context.Context, r *request.Session, paths []string) error {
	_, err := h.updateMeta(ctx, h.held(r), func(_ *persistence.Session, m *sessionMeta) {
		m.Instructions = append(m.Instructions, paths...)
	})
	return err
}

func (h *builderHost) Tools(r *request.Session, s *persistence.Session) []provider.Tool {
	return h.tools(h.held(r), s)
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
