package chat

import (
	"fmt"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

// Status is what the status line shows: the session's model and mode,
// how much of the context window the conversation uses, and what it cost
// when the agent knows. It follows the agent's updates.
type Status struct {
	Model string
	Mode  string
	Used  int       // tokens of the window in use (usage_update)
	Size  int       // the window, in tokens
	Cost  *acp.Cost // nil when unknown
}

// Observe updates the status from a session update.
func (s *Status) Observe(u acp.SessionUpdate) {
	switch {
	case u.UsageUpdate != nil:
		s.Used, s.Size = u.UsageUpdate.Used, u.UsageUpdate.Size
		if u.UsageUpdate.Cost != nil {
			c := *u.UsageUpdate.Cost
			s.Cost = &c
		}
	case u.CurrentModeUpdate != nil:
		s.Mode = u.CurrentModeUpdate.CurrentModeID
	case u.ConfigOptionUpdate != nil:
		s.fromOptions(u.ConfigOptionUpdate.ConfigOptions)
	}
}

// fromOptions reads the model and the mode from the session's config
// options (session/new, session/load, config_option_update).
func (s *Status) fromOptions(opts []acp.SessionConfigOption) {
	for _, o := range opts {
		switch o.Category {
		case "model":
			s.Model = o.CurrentValue
		case "mode":
			s.Mode = o.CurrentValue
		}
	}
}

// fromModes reads the mode of session/new's or session/load's answer.
func (s *Status) fromModes(m *acp.SessionModeState) {
	if m != nil && m.CurrentModeID != "" {
		s.Mode = m.CurrentModeID
	}
}

// Line is the status line for a terminal width wide: the parts that fit,
// most important first. Everything in it is safe to print.
func (s *Status) Line(width int) string {
	var parts []string
	if s.Model != "" {
		parts = append(parts, termsafe.Line(s.Model))
	}
	if s.Mode != "" {
		parts = append(parts, termsafe.Line(s.Mode))
	}
	if s.Size > 0 {
		parts = append(parts, fmt.Sprintf("%s/%s tokens (%d%%)", short(s.Used), short(s.Size), s.Used*100/s.Size))
	}
	if s.Cost != nil {
		parts = append(parts, money(*s.Cost))
	}
	for len(parts) > 0 {
		line := strings.Join(parts, " · ")
		if len([]rune(line)) <= width {
			return line
		}
		parts = parts[:len(parts)-1]
	}
	return ""
}

// short is a token count for people: 950, 12.3k, 128k.
func short(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 100_000:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1000), ".0") + "k"
	default:
		return fmt.Sprintf("%dk", n/1000)
	}
}

func money(c acp.Cost) string {
	if c.Currency == "" || c.Currency == "USD" {
		return fmt.Sprintf("$%.4f", c.Amount)
	}
	return fmt.Sprintf("%.4f %s", c.Amount, termsafe.Line(c.Currency))
}
