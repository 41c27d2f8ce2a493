package agent

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"time"

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
	// Mode is the session mode (see modes.go); "" = ModeDefault.
	Mode string `json:"mode,omitempty"`
	// SystemPrompt is the client's systemPrompt (request.Builder.SystemPrompt); nil: none.
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

// clientPrompt is a client's systemPrompt as stored with the session, so
// that a load or a restart builds the same prompt.
type clientPrompt struct {
	Mode string `json:"mode"` // acp.SystemPromptAppend or acp.SystemPromptOverride
	Text string `json:"text"`
}

// MaxSystemPromptBytes bounds the text of a client's systemPrompt: it is
// stored with the session and sent with every model request. 128 KiB
// (about 32k tokens) is more than any agent's own prompt; eight sessions
// with 24 MiB each once made a 408 MB database.
const MaxSystemPromptBytes = 128 << 10

// parseClientPrompt checks a client's systemPrompt; one the agent cannot
// apply is an error, never silently treated as another mode (the schema's
// MUST). nil: none sent.
func parseClientPrompt(p *acp.SystemPrompt) (*clientPrompt, error) {
	if p == nil {
		return nil, nil
	}
	if p.Mode != acp.SystemPromptAppend && p.Mode != acp.SystemPromptOverride {
		return nil, acp.InvalidParams("systemPrompt.mode %q is not supported: use %q or %q.", p.Mode, acp.SystemPromptAppend, acp.SystemPromptOverride)
	}
	var parts []string
	size := 0
	for i, b := range p.Content {
		if b.Text == nil {
			return nil, acp.InvalidParams("systemPrompt.content[%d] is not a text block: only text blocks are supported.", i)
		}
		parts = append(parts, b.Text.Text)
		size += len(b.Text.Text)
	}
	if size > MaxSystemPromptBytes {
		// data.limit and data.size: the frame log keeps only a marker of
		// the refused request (journal, refusedAsTooLarge).
		e := acp.InvalidParams("systemPrompt is too large: %d bytes of text, the limit is %d (128 KiB); nothing was stored.", size, MaxSystemPromptBytes)
		e.Data = map[string]any{"limit": MaxSystemPromptBytes, "size": size}
		return nil, e
	}
	text := strings.TrimSpace(strings.Join(parts, "\n\n"))
	if text == "" && p.Mode == acp.SystemPromptOverride {
		return nil, acp.InvalidParams("systemPrompt in override mode has no text: send the prompt's text, or leave systemPrompt out.")
	}
	return &clientPrompt{Mode: p.Mode, Text: text}, nil
}

// subagentLink, in a child's session metadata, names the subagent parent:
// the session and the task call that started the child.
type subagentLink struct {
	ParentSessionID  string `json:"parentSessionId"`
	ParentToolCallID string `json:"parentToolCallId"`
}

// forkOrigin, kept in a fork's metadata, is where it came from.
type forkOrigin struct {
	SessionID string    `json:"sessionId"`
	At        time.Time `json:"at"`
}

// isoTime is an ISO 8601 UTC timestamp with millisecond precision.
func isoTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// SubagentParent is the id of the session whose task call started s, ""
// for a session that is not a subagent's child.
func SubagentParent(s *persistence.Session) string {
	if l := decodeMeta(s.Metadata).Subagent; l != nil {
		return l.ParentSessionID
	}
	return ""
}

func isSubagent(s *persistence.Session) bool { return SubagentParent(s) != "" }
