package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// A config option is a per-session setting the client shows as a selector
// (session/new, load and resume return them; session/set_config_option
// changes one). Values persist in the session's metadata.
type configOption struct {
	id, name, description, category string
	// values lists the choices, in display order.
	values func(a *core) []acp.SessionConfigSelectOption
	// current is the session's value.
	current func(a *core, m sessionMeta) string
	// set applies value (already checked against values) to the session
	// and persists it.
	set func(ctx context.Context, a *Agent, sess *session, value string) error
}

// Config option ids.
const (
	configModel = "model"
	configMode  = "mode"
)

// configOptionList is every option, in priority order. The mode selector
// is kept in step with session/set_mode and current_mode_update (mode.go).
func (a *lifecycle) configOptionList() []configOption {
	return []configOption{modelOption, modeOption}
}

var modelOption = configOption{
	id:          configModel,
	name:        "Model",
	description: "The model that answers in this session",
	category:    "model",
	values: func(a *core) []acp.SessionConfigSelectOption {
		out := make([]acp.SessionConfigSelectOption, 0, len(a.cfg.Models))
		for _, m := range a.cfg.Models {
			// The window in use: discovered or learned from the endpoint
			// once known, not only the configured or assumed one.
			m = a.models.WithLearnedWindow(m)
			out = append(out, acp.SessionConfigSelectOption{Value: m.Name, Name: m.DisplayName(), Description: modelDescription(m)})
		}
		return out
	},
	current: func(a *core, m sessionMeta) string { return a.models.Named(m.Model).Name },
	set: func(ctx context.Context, a *Agent, sess *session, value string) error {
		_, err := a.updateMeta(ctx, sess, func(_ *persistence.Session, m *sessionMeta) { m.Model = value })
		return err
	},
}

func modelDescription(m request.Model) string {
	d := fmt.Sprintf("%s-token context", tokens(m.ContextWindow))
	switch {
	case m.WindowAssumed:
		d = "context window not known yet (not configured; asked from the endpoint)"
	case strings.HasPrefix(m.WindowSource, "discovered"):
		d += " (told by the server)"
	case strings.HasPrefix(m.WindowSource, request.LearnedPrefix):
		d += " (learned from the server)"
	}
	if m.Images {
		d += ", accepts images"
	}
	if m.Priced() {
		d += fmt.Sprintf(", %g/%g %s per million tokens in/out", m.InputPrice, m.OutputPrice, m.Currency)
	}
	return d
}

// tokens renders a token count the way model cards do: 128k, 1M, 4096.
func tokens(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	default:
		return fmt.Sprint(n)
	}
}

// configOptions is the wire form of every option with the session's values.
func (a *lifecycle) configOptions(m sessionMeta) []acp.SessionConfigOption {
	opts := a.configOptionList()
	out := make([]acp.SessionConfigOption, 0, len(opts))
	for _, o := range opts {
		out = append(out, acp.SessionConfigOption{
			ID:           o.id,
			Name:         o.name,
			Description:  o.description,
			Category:     o.category,
			Type:         "select",
			CurrentValue: o.current(a.core, m),
			Options:      o.values(a.core),
		})
	}
	return out
}

// SetSessionConfigOption changes one option, persists it with the session
// and answers with the full list.
func (a *Agent) SetSessionConfigOption(ctx context.Context, req *acp.SetSessionConfigOptionRequest) (*acp.SetSessionConfigOptionResponse, error) {
	var opt *configOption
	for _, o := range a.lifecycle.configOptionList() {
		if o.id == req.ConfigID {
			opt = &o
			break
		}
	}
	if opt == nil {
		return nil, acp.InvalidParams("Unknown config option %q: the session's configOptions list the ids it accepts.", req.ConfigID)
	}
	value, err := req.StringValue()
	if err != nil {
		return nil, err
	}
	valid := false
	for _, v := range opt.values(a.core) {
		valid = valid || v.Value == value
	}
	if !valid {
		return nil, acp.InvalidParams("Config option %q has no value %q; pick one of its listed values.", req.ConfigID, value)
	}
	persistCtx := context.WithoutCancel(ctx)
	sess := a.sessions.get(req.SessionID)
	err = opt.set(persistCtx, a, sess, value)
	var s *persistence.Session
	if err == nil {
		s, err = a.store.GetSession(persistCtx, req.SessionID)
	}
	var acpErr *acp.Error
	switch {
	case errors.As(err, &acpErr):
		return nil, err
	case errors.Is(err, persistence.ErrNotFound):
		return nil, unknownSession(req.SessionID)
	case err != nil:
		return nil, storeError("set config option", err)
	}
	if opt.id == configModel {
		// The context meter's window changes with the model.
		if u := a.build.lastUsage(s); u != nil {
			acp.AfterResponse(ctx, func() { a.sendUpdate(ctx, sess, acp.SessionUpdate{UsageUpdate: u}) })
		}
	}
	a.log.Info("config option set", zap.String("session", s.ID), zap.String("option", opt.id), zap.String("value", value))
	return &acp.SetSessionConfigOptionResponse{ConfigOptions: a.lifecycle.configOptions(decodeMeta(s.Metadata))}, nil
}
