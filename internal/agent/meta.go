package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// sessionMeta is what the agent keeps in persistence.Session.Metadata.
type sessionMeta struct {
	McpServers            []acp.McpServer `json:"mcpServers,omitempty"`
	AdditionalDirectories []string        `json:"additionalDirectories,omitempty"`
	// Model is the session's model ("model" config option); "" = default.
	Model string `json:"model,omitempty"`
	// Cost is the session's cumulative model cost by currency.
	Cost map[string]float64 `json:"cost,omitempty"`
	// Used is the context the last model request used (tokens), shown
	// again when the session is reopened.
	Used int `json:"used,omitempty"`
	// Mode is the session mode (see mode.go); "" = ModeDefault.
	Mode string `json:"mode,omitempty"`
	// SystemPrompt is the client's systemPrompt (sysprompt.go); nil: none.
	SystemPrompt *clientPrompt `json:"systemPrompt,omitempty"`
	// Instructions are the nested instruction files already loaded into
	// the session (paths relative to the repository root).
	Instructions []string `json:"instructions,omitempty"`
	// ForkedFrom: the session this one was forked from (fork.go).
	ForkedFrom *forkOrigin `json:"forkedFrom,omitempty"`
	// Subagent names the subagent parent of a child session (subagent.go).
	Subagent *subagentLink `json:"subagent,omitempty"`
	// TitleByUser: the title was set by the user (session/set_title,
	// `sessions rename`); generated titles never replace it (title.go).
	TitleByUser bool `json:"titleByUser,omitempty"`
	// Archived hides the session from listings unless asked (archive.go).
	Archived bool `json:"archived,omitempty"`
}

func decodeMeta(raw json.RawMessage) sessionMeta {
	var m sessionMeta
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &m) // metadata is ours; a bad blob is an empty one
	}
	return m
}

// encodeMeta is m as stored, without a cost JSON cannot hold (finiteCosts);
// nil if it does not encode, which updateMeta refuses to store.
func encodeMeta(m sessionMeta) json.RawMessage {
	m.Cost = request.FiniteCosts(m.Cost)
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return b
}

// workspaceRoots are the directories the session may work in: its cwd and
// the additionalDirectories the client named. Paths inside any of them
// count as inside the workspace.
func workspaceRoots(s *persistence.Session) []string {
	return append([]string{s.Cwd}, decodeMeta(s.Metadata).AdditionalDirectories...)
}

// updateMeta changes a session's metadata with fn and stores it. Writers in
// this process are serialised so that concurrent changes (a config option
// set while a turn records its cost) do not overwrite each other. s, when
// non-nil, receives the stored session. A change that changes nothing
// (a load in the same directory with the same MCP servers, the model set
// again) writes nothing: no updated_at bump, and on PostgreSQL no dead row
// version a load.
func (a *core) updateMeta(ctx context.Context, sess *session, fn func(s *persistence.Session, m *sessionMeta)) (*persistence.Session, error) {
	sess.meta.Lock()
	defer sess.meta.Unlock()
	s, err := a.store.GetSession(ctx, sess.id)
	if err != nil {
		return nil, err
	}
	was := *s
	m := decodeMeta(s.Metadata)
	fn(s, &m)
	if s.Metadata = encodeMeta(m); s.Metadata == nil {
		// Stored, it would be an empty blob: the mode, cost and
		// everything else of the session gone.
		return nil, errors.New("session metadata does not encode")
	}
	if s.Cwd == was.Cwd && s.Title == was.Title && bytes.Equal(s.Metadata, was.Metadata) {
		return s, nil
	}
	if err := a.writes(sess).UpdateSession(ctx, s); err != nil {
		return nil, err
	}
	return s, nil
}

// addCost adds amount to the session's cost in currency, rounded to a
// billionth (float sums would otherwise show 0.0061600000000000005), and
// returns the new total. A sum that is not a finite amount of 0 or more (a
// NaN price, a price so large the sum overflows) leaves the total as it
// was: JSON holds no NaN or infinity, and metadata that does not encode
// would lose the session's mode with it.
func (m *sessionMeta) addCost(currency string, amount float64) float64 {
	old := m.Cost[currency]
	sum := old + amount
	if r := math.Round(sum*1e9) / 1e9; request.FiniteAmount(r) {
		sum = r
	}
	if !request.FiniteAmount(sum) {
		return old
	}
	if m.Cost == nil {
		m.Cost = make(map[string]float64)
	}
	m.Cost[currency] = sum
	return sum
}

// metaError maps a store error about session id: unknown ids are -32002
// with the id in data, as the protocol asks.
func (a *core) metaError(op, id string, err error) error {
	if errors.Is(err, persistence.ErrNotFound) {
		return &acp.Error{Code: acp.CodeResourceNotFound, Message: unknownSession(id).Error(), Data: map[string]string{"sessionId": id}}
	}
	return storeError(op, err)
}

// SessionMarker is what changing a stored session's marks needs.
type SessionMarker interface {
	GetSession(ctx context.Context, id string) (*persistence.Session, error)
	UpdateSession(ctx context.Context, s *persistence.Session) error
}

func changeStored(ctx context.Context, store SessionMarker, id string, fn func(*persistence.Session, *sessionMeta)) error {
	s, err := store.GetSession(ctx, id)
	if err != nil {
		return err
	}
	m := decodeMeta(s.Metadata)
	fn(s, &m)
	s.Metadata = encodeMeta(m)
	return store.UpdateSession(ctx, s)
}

// SessionCost is a stored session's cumulative model cost by currency
// (none when its models had no prices).
func SessionCost(s *persistence.Session) map[string]float64 { return decodeMeta(s.Metadata).Cost }

// sessionModel is the model a session uses now.
func (a *core) sessionModel(s *persistence.Session) request.Model {
	return a.models.Named(decodeMeta(s.Metadata).Model)
}
