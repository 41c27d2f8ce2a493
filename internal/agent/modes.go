package agent

import "github.com/crow-acp/crow-acp/acp"

// Session modes decide what needs the user's permission (see authorize).
const (
	ModeDefault     = "default"      // ask before edits, commands and MCP tools
	ModeAcceptEdits = "accept_edits" // edits inside the project apply without asking
	ModePlan        = "plan"         // read-only: edits and commands are refused, MCP tools always ask
	ModeBypass      = "bypass"       // nothing asks but file tools outside the project; commands are unconfined
)

var sessionModes = []acp.SessionMode{
	{ID: ModeDefault, Name: "Ask before edits",
		Description: "Reads inside the project run freely; edits, commands and MCP tools ask first."},
	{ID: ModeAcceptEdits, Name: "Auto-accept edits",
		Description: "Edits inside the project apply without asking; commands and MCP tools still ask."},
	{ID: ModePlan, Name: "Read-only planning",
		Description: "Read, search and plan only; edits and commands are refused, MCP tools ask every time."},
	{ID: ModeBypass, Name: "Bypass permissions",
		Description: "Edits, commands and MCP tools run without asking. Commands are not confined: they can read and change any file you can. Only the file tools still ask for paths outside the project."},
}

// ModeFromConfig is the mode named by configuration (permissions.mode), or
// ModeDefault for an unknown name.
func ModeFromConfig(name string) string {
	if validMode(name) {
		return name
	}
	return ModeDefault
}

func currentMode(m sessionMeta) string {
	if validMode(m.Mode) {
		return m.Mode
	}
	return ModeDefault
}

func validMode(id string) bool {
	for _, m := range sessionModes {
		if m.ID == id {
			return true
		}
	}
	return false
}

// modeState is the modes object of session/new and session/load.
func modeState(current string) *acp.SessionModeState {
	if !validMode(current) {
		current = ModeDefault
	}
	return &acp.SessionModeState{CurrentModeID: current, AvailableModes: sessionModes}
}

// modeForModel tells the model what the session's mode permits, so that it
// does not learn it from refused calls.
func modeForModel(mode string) string {
	for _, m := range sessionModes {
		if m.ID != mode {
			continue
		}
		s := m.Name + " (" + m.ID + "). " + m.Description
		switch mode {
		case ModePlan:
			s += " Do not try to edit files or run commands: investigate, then present a plan. The user switches the mode when they want it carried out."
		case ModeDefault, ModeAcceptEdits:
			s += " When the user declines a call, do not repeat it: adapt, or ask what they want."
		}
		return s
	}
	return mode
}
