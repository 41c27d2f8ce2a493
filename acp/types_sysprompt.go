package acp

// SystemPrompt is the unstable SDK 2.4 `systemPrompt` of session/new, load
// and resume: instructions the client adds to the agent's own (append) or
// puts in their place (override).
type SystemPrompt struct {
	Mode    string         `json:"mode"`
	Content []ContentBlock `json:"content"`
	Meta    Meta           `json:"_meta,omitempty"`
}

// System prompt modes.
const (
	SystemPromptAppend   = "append"
	SystemPromptOverride = "override"
)

// Validate checks what the schema requires; which modes and blocks the
// agent can apply is the agent's to decide.
func (p *SystemPrompt) Validate() error {
	if p == nil {
		return nil
	}
	if p.Mode == "" {
		return MissingParam("systemPrompt.mode", `use "append" or "override"`)
	}
	if len(p.Content) == 0 {
		return InvalidParams(`The systemPrompt.content array is empty: send at least one text block, or leave systemPrompt out.`)
	}
	return nil
}

// SessionSystemPromptCapabilities advertises `systemPrompt` on session
// lifecycle requests: `{}` means append mode only.
type SessionSystemPromptCapabilities struct {
	Mode *SessionSystemPromptModeCapabilities `json:"mode,omitempty"`
	Meta Meta                                 `json:"_meta,omitempty"`
}

// SessionSystemPromptModeCapabilities lists the modes beyond append.
type SessionSystemPromptModeCapabilities struct {
	Override *Marker `json:"override,omitempty"`
	Meta     Meta    `json:"_meta,omitempty"`
}
