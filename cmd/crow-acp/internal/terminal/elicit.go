package terminal

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

var _ acp.Elicitor = (*UI)(nil)

// CreateElicitation asks the person the agent's question (ask_user, or an
// MCP server's form) field by field: a choice by its number, text as
// typed, an optional field skipped with an empty line. Without a terminal
// nobody can answer: it is declined, and said so (--yes answers
// permissions, never questions). The question's text is the model's or a
// server's: it is shown through termsafe. Like a permission question, a
// $/cancel_request is not acted on while the person types.
func (ui *UI) CreateElicitation(_ context.Context, req *acp.CreateElicitationRequest) (*acp.CreateElicitationResponse, error) {
	ui.mu.Lock()
	defer ui.mu.Unlock()
	message := strings.TrimRight(termsafe.Text(req.Message), "\n")
	if req.Mode != acp.ElicitForm || req.RequestedSchema == nil {
		ui.noteLocked("✗ not shown: %s — exec shows only forms", oneLine(req.Message, 200))
		return &acp.CreateElicitationResponse{Action: acp.ElicitDecline}, nil
	}
	if !ui.inTTY && ui.opt.ReadLine == nil { // the chat reads answers from its input, terminal or not
		ui.noteLocked("✗ not answered: %s — exec cannot ask without a terminal; the agent is told you declined", oneLine(req.Message, 200))
		return &acp.CreateElicitationResponse{Action: acp.ElicitDecline}, nil
	}
	ui.stopSpinLocked()
	ui.endThoughtLocked()
	ui.breakLineLocked()
	lines := strings.Split(message, "\n")
	fmt.Fprintf(ui.errw, "? %s\n", lines[0])
	ui.writeBlockLocked(lines[1:], maxShownLines, "", "")
	schema := req.RequestedSchema
	names := make([]string, 0, len(schema.Properties))
	for name := range schema.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	content := map[string]json.RawMessage{}
	for _, name := range names {
		v, ok := ui.askFieldLocked(name, schema.Properties[name], slices.Contains(schema.Required, name))
		if !ok {
			ui.noteLocked("✗ not answered: %s", oneLine(req.Message, 200))
			return &acp.CreateElicitationResponse{Action: acp.ElicitCancel}, nil
		}
		if v != nil {
			content[name] = v
		}
	}
	ui.startSpinLocked("working")
	return &acp.CreateElicitationResponse{Action: acp.ElicitAccept, Content: content}, nil
}

// askFieldLocked reads one field until it is valid: its JSON value, nil
// for an optional field left empty, and false when stdin ended.
func (ui *UI) askFieldLocked(name string, p acp.ElicitationProperty, required bool) (json.RawMessage, bool) {
	label := termsafe.Line(p.Title)
	if label == "" {
		label = termsafe.Line(name)
	}
	if p.Description != "" {
		label += " — " + termsafe.Line(p.Description)
	}
	choices := fieldChoices(p)
	for i, c := range choices {
		fmt.Fprintf(ui.errw, "  %d) %s\n", i+1, termsafe.Line(c.Title))
	}
	hint := ""
	switch {
	case p.Type == "array":
		hint = fmt.Sprintf("numbers 1-%d, separated by commas", len(choices))
	case len(choices) > 0:
		hint = fmt.Sprintf("1-%d", len(choices))
	case p.Type == "boolean":
		hint = "y/n"
	}
	if !required {
		hint = strings.TrimPrefix(hint+", or empty to skip", ", ")
	}
	for {
		prompt := label + ": "
		if hint != "" {
			prompt = fmt.Sprintf("%s (%s): ", label, hint)
		}
		line, err := ui.readAnswerLocked(prompt)
		if err != nil && line == "" {
			fmt.Fprintln(ui.errw)
			return nil, false
		}
		line = strings.TrimSpace(line)
		if line == "" {
			if !required {
				return nil, true
			}
			continue
		}
		if v := parseField(p, choices, line); v != nil {
			return v, true
		}
	}
}

// fieldChoices are the options of a choice or multi-select field.
func fieldChoices(p acp.ElicitationProperty) []acp.EnumOption {
	oneOf, enum := p.OneOf, p.Enum
	if p.Type == "array" && p.Items != nil {
		oneOf, enum = p.Items.AnyOf, p.Items.Enum
	}
	if len(oneOf) > 0 {
		return oneOf
	}
	out := make([]acp.EnumOption, len(enum))
	for i, e := range enum {
		out[i] = acp.EnumOption{Const: e, Title: e}
	}
	return out
}

// parseField is the typed line as the field's JSON value, or nil.
func parseField(p acp.ElicitationProperty, choices []acp.EnumOption, line string) json.RawMessage {
	pick := func(s string) (string, bool) {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > len(choices) {
			return "", false
		}
		return choices[n-1].Const, true
	}
	var v any
	switch {
	case p.Type == "array":
		var picked []string
		for _, s := range strings.Split(line, ",") {
			c, ok := pick(s)
			if !ok {
				return nil
			}
			picked = append(picked, c)
		}
		v = picked
	case len(choices) > 0:
		c, ok := pick(line)
		if !ok {
			return nil
		}
		v = c
	case p.Type == "boolean":
		switch strings.ToLower(line) {
		case "y", "yes":
			v = true
		case "n", "no":
			v = false
		default:
			return nil
		}
	case p.Type == "integer":
		n, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			return nil
		}
		v = n
	case p.Type == "number":
		f, err := strconv.ParseFloat(line, 64)
		if err != nil {
			return nil
		}
		v = f
	default:
		v = line
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
