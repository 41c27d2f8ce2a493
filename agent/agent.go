// Package agent is crow-acp's coding agent: sessions, the prompt turn, load
// replay and the model context rebuilt from the store. It is the only package
// that sees the wire (acp), the model (streaming) and the store
// (persistence) together.
package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/compaction"
	"github.com/crow-acp/crow-acp/persistence"
	"github.com/crow-acp/crow-acp/streaming"
)

// Config is what the agent needs to know beyond its dependencies.
type Config struct {
	// Models are the models a session can use (the "model" config option).
	// Empty: just Model, with default attributes.
	Models []Model
	// Model names the default model for new sessions; "" = the first of
	// Models. A name missing from Models is added with default attributes.
	Model        string
	Version      string // reported as agentInfo.version
	SystemPrompt string // "" = DefaultSystemPrompt
	// MaxModelCalls caps model requests within one prompt turn; the turn
	// then ends with stopReason "max_turn_requests". 0 = DefaultMaxModelCalls.
	MaxModelCalls int
	// ListPageSize is the number of sessions per session/list page; 0 =
	// persistence.DefaultListLimit.
	ListPageSize int
	// ModelTitles: after the first turn the session's model names the
	// session (one short extra request); otherwise the title is the start
	// of the first prompt.
	ModelTitles bool
	// Compaction holds the compaction thresholds; nil = compaction.Defaults().
	// The window and output reserve come from each session's Model.
	Compaction *compaction.Settings
}

// DefaultMaxModelCalls is the default cap on model requests per turn.
const DefaultMaxModelCalls = 50

// Agent implements acp.Agent for one connection.
type Agent struct {
	client acp.Client
	store  persistence.Store
	model  streaming.Client
	cfg    Config
	log    *zap.Logger

	compact    compaction.Settings           // thresholds; Window/OutputReserve per model
	counters   map[string]compaction.Counter // by tokenizer name, under mu
	mu         sync.Mutex
	clientCaps acp.ClientCapabilities
	turns      map[string]*turn   // running turns by session id
	budgets    map[string]*budget // compaction state by session id

	metaMu sync.Mutex // serialises read-modify-write of session metadata
}

var (
	_ acp.Agent              = (*Agent)(nil)
	_ acp.SessionLoader      = (*Agent)(nil)
	_ acp.SessionLister      = (*Agent)(nil)
	_ acp.SessionResumer     = (*Agent)(nil)
	_ acp.SessionCloser      = (*Agent)(nil)
	_ acp.SessionDeleter     = (*Agent)(nil)
	_ acp.ConfigOptionSetter = (*Agent)(nil)
)

// New returns an agent that talks to client and keeps everything in store.
func New(client acp.Client, store persistence.Store, model streaming.Client, cfg Config, log *zap.Logger) *Agent {
	if log == nil {
		log = zap.NewNop()
	}
	if cfg.MaxModelCalls <= 0 {
		cfg.MaxModelCalls = DefaultMaxModelCalls
	}
	if cfg.SystemPrompt == "" {
		cfg.SystemPrompt = DefaultSystemPrompt
	}
	cfg.Models, cfg.Model = normalizeModels(cfg.Models, cfg.Model)
	settings := compaction.Defaults()
	if cfg.Compaction != nil {
		settings = *cfg.Compaction
	}
	for _, m := range cfg.Models {
		if m.WindowAssumed && settings.Auto {
			log.Warn("the context window of this model is unknown: automatic compaction is off for it until its window is configured (CROW_CONTEXT_WINDOW, or context_window in [[models]])",
				zap.String("model", m.Name))
		}
	}
	return &Agent{
		client:   client,
		store:    store,
		model:    model,
		cfg:      cfg,
		log:      log,
		compact:  settings,
		counters: make(map[string]compaction.Counter),
		turns:    make(map[string]*turn),
		budgets:  make(map[string]*budget),
	}
}

// Initialize negotiates the protocol version and reports what crow-acp
// really supports.
func (a *Agent) Initialize(_ context.Context, req *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	a.mu.Lock()
	a.clientCaps = req.ClientCapabilities
	a.mu.Unlock()
	return &acp.InitializeResponse{
		// We speak version 1 only: a client asking for a newer one gets the
		// newest we support and decides whether to go on.
		ProtocolVersion: acp.ProtocolVersion,
		AgentCapabilities: acp.AgentCapabilities{
			LoadSession: true,
			PromptCapabilities: acp.PromptCapabilities{
				EmbeddedContext: true,
				Image:           a.anyModelTakesImages(),
			},
			SessionCapabilities: &acp.SessionCapabilities{
				List:                  &acp.Marker{},
				Delete:                &acp.Marker{},
				Resume:                &acp.Marker{},
				Close:                 &acp.Marker{},
				AdditionalDirectories: &acp.Marker{},
			},
		},
		AuthMethods: []acp.AuthMethod{},
		AgentInfo:   &acp.Implementation{Name: "crow-acp", Title: "crow", Version: a.cfg.Version},
	}, nil
}

// Authenticate succeeds: crow-acp advertises no auth methods; the model
// endpoint's key comes from the environment.
func (a *Agent) Authenticate(_ context.Context, req *acp.AuthenticateRequest) (*acp.AuthenticateResponse, error) {
	return &acp.AuthenticateResponse{}, nil
}

// newID returns a random identifier with a prefix. Identity never comes from
// a clock.
func newID(prefix string) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return prefix + hex.EncodeToString(b[:])
}

// storeError maps a persistence error to the wire.
func storeError(op string, err error) error {
	var acpErr *acp.Error
	switch {
	case errors.As(err, &acpErr):
		return err
	case errors.Is(err, persistence.ErrNotFound):
		return acp.ResourceNotFound("%s: %v", op, err)
	case errors.Is(err, context.Canceled):
		return err
	default:
		return acp.InternalError("%s: storage error: %v", op, err)
	}
}
