package acp

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The ACP schema has several tagged unions (a discriminator field next to the
// variant's own fields). In Go they are structs of pointers, exactly one set;
// marshalTagged/unmarshalTagged do the tag bookkeeping once for all of them.

// marshalTagged marshals v and inserts `"key":"tag"` as its first field.
func marshalTagged(key, tag string, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	head, _ := json.Marshal(tag)
	var b bytes.Buffer
	b.Grow(len(body) + len(key) + len(head) + 4)
	b.WriteString(`{"` + key + `":`)
	b.Write(head)
	if inner := bytes.TrimSpace(body[1 : len(body)-1]); len(inner) > 0 {
		b.WriteByte(',')
		b.Write(inner)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// readTag returns the string value of key in the JSON object data.
func readTag(data []byte, key string) (string, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return "", err
	}
	raw, ok := fields[key]
	if !ok {
		return "", nil
	}
	var tag string
	if err := json.Unmarshal(raw, &tag); err != nil {
		return "", fmt.Errorf("%q must be a string", key)
	}
	return tag, nil
}

// newVariant sets *p to a new T, the variant being decoded, and returns it.
func newVariant[T any](p **T) any {
	*p = new(T)
	return *p
}

// --- ContentBlock ---

type TextContent struct {
	Text        string          `json:"text"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Meta        Meta            `json:"_meta,omitempty"`
}

type ImageContent struct {
	Data        string          `json:"data"`
	MimeType    string          `json:"mimeType"`
	URI         string          `json:"uri,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Meta        Meta            `json:"_meta,omitempty"`
}

type AudioContent struct {
	Data        string          `json:"data"`
	MimeType    string          `json:"mimeType"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Meta        Meta            `json:"_meta,omitempty"`
}

type ResourceLink struct {
	URI         string          `json:"uri"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MimeType    string          `json:"mimeType,omitempty"`
	Size        *int64          `json:"size,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Meta        Meta            `json:"_meta,omitempty"`
}

// EmbeddedResourceContents is either text (Text set) or blob (Blob set).
type EmbeddedResourceContents struct {
	URI      string  `json:"uri"`
	MimeType string  `json:"mimeType,omitempty"`
	Text     *string `json:"text,omitempty"`
	Blob     *string `json:"blob,omitempty"`
	Meta     Meta    `json:"_meta,omitempty"`
}

type EmbeddedResource struct {
	Resource    EmbeddedResourceContents `json:"resource"`
	Annotations json.RawMessage          `json:"annotations,omitempty"`
	Meta        Meta                     `json:"_meta,omitempty"`
}

// ContentBlock is the `type`-tagged union of prompt and message content.
type ContentBlock struct {
	Text         *TextContent
	Image        *ImageContent
	Audio        *AudioContent
	ResourceLink *ResourceLink
	Resource     *EmbeddedResource
}

// TextBlock is a text content block.
func TextBlock(text string) ContentBlock {
	return ContentBlock{Text: &TextContent{Text: text}}
}

func (c ContentBlock) MarshalJSON() ([]byte, error) {
	switch {
	case c.Text != nil:
		return marshalTagged("type", "text", c.Text)
	case c.Image != nil:
		return marshalTagged("type", "image", c.Image)
	case c.Audio != nil:
		return marshalTagged("type", "audio", c.Audio)
	case c.ResourceLink != nil:
		return marshalTagged("type", "resource_link", c.ResourceLink)
	case c.Resource != nil:
		return marshalTagged("type", "resource", c.Resource)
	}
	return nil, fmt.Errorf("acp: empty ContentBlock")
}

// contentRequired are the fields the schema requires of each content block
// type: a block without them is refused rather than read as empty.
var contentRequired = map[string][]string{
	"text":          {"text"},
	"image":         {"data", "mimeType"},
	"audio":         {"data", "mimeType"},
	"resource_link": {"uri", "name"},
	"resource":      {"resource"},
}

func (c *ContentBlock) UnmarshalJSON(data []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return fmt.Errorf("content block: %w", err)
	}
	var tag string
	if raw, ok := fields["type"]; ok && json.Unmarshal(raw, &tag) != nil {
		return fmt.Errorf("content block: \"type\" must be a string")
	}
	for _, f := range contentRequired[tag] {
		if _, ok := fields[f]; !ok {
			return fmt.Errorf("content block: a %q block needs %q", tag, f)
		}
	}
	*c = ContentBlock{}
	var v any
	switch tag {
	case "text":
		v = newVariant(&c.Text)
	case "image":
		v = newVariant(&c.Image)
	case "audio":
		v = newVariant(&c.Audio)
	case "resource_link":
		v = newVariant(&c.ResourceLink)
	case "resource":
		v = newVariant(&c.Resource)
	case "":
		return fmt.Errorf("content block: missing \"type\"")
	default:
		return fmt.Errorf("content block: unknown type %q", tag)
	}
	return json.Unmarshal(data, v)
}

// --- ToolCallContent ---

type Diff struct {
	Path    string  `json:"path"`
	OldText *string `json:"oldText,omitempty"` // nil: a new file
	NewText string  `json:"newText"`
	Meta    Meta    `json:"_meta,omitempty"`
}

type ContentWrapper struct {
	Content ContentBlock `json:"content"`
	Meta    Meta         `json:"_meta,omitempty"`
}

type TerminalContent struct {
	TerminalID string `json:"terminalId"`
	Meta       Meta   `json:"_meta,omitempty"`
}

// ToolCallContent is the `type`-tagged union shown inside a tool call.
type ToolCallContent struct {
	Content  *ContentWrapper
	Diff     *Diff
	Terminal *TerminalContent
}

// ToolText is tool-call content holding plain text.
func ToolText(text string) ToolCallContent {
	return ToolCallContent{Content: &ContentWrapper{Content: TextBlock(text)}}
}

func (c ToolCallContent) MarshalJSON() ([]byte, error) {
	switch {
	case c.Content != nil:
		return marshalTagged("type", "content", c.Content)
	case c.Diff != nil:
		return marshalTagged("type", "diff", c.Diff)
	case c.Terminal != nil:
		return marshalTagged("type", "terminal", c.Terminal)
	}
	return nil, fmt.Errorf("acp: empty ToolCallContent")
}

func (c *ToolCallContent) UnmarshalJSON(data []byte) error {
	tag, err := readTag(data, "type")
	if err != nil {
		return fmt.Errorf("tool call content: %w", err)
	}
	*c = ToolCallContent{}
	var v any
	switch tag {
	case "content":
		v = newVariant(&c.Content)
	case "diff":
		v = newVariant(&c.Diff)
	case "terminal":
		v = newVariant(&c.Terminal)
	default:
		return fmt.Errorf("tool call content: unknown type %q", tag)
	}
	return json.Unmarshal(data, v)
}

// --- SessionUpdate ---

// SessionUpdate is the `sessionUpdate`-tagged union carried by session/update.
type SessionUpdate struct {
	UserMessageChunk        *ContentChunk
	AgentMessageChunk       *ContentChunk
	AgentThoughtChunk       *ContentChunk
	ToolCall                *ToolCall
	ToolCallUpdate          *ToolCallUpdate
	Plan                    *Plan
	AvailableCommandsUpdate *AvailableCommandsUpdate
	CurrentModeUpdate       *CurrentModeUpdate
	ConfigOptionUpdate      *ConfigOptionUpdate
	SessionInfoUpdate       *SessionInfoUpdate
	UsageUpdate             *UsageUpdate
	// Other carries an update kind this package has no type for (for example
	// the SDK 2.4 `compaction_update`), already tagged; sent verbatim.
	Other json.RawMessage
}

func (u SessionUpdate) variant() (string, any) {
	switch {
	case u.UserMessageChunk != nil:
		return "user_message_chunk", u.UserMessageChunk
	case u.AgentMessageChunk != nil:
		return "agent_message_chunk", u.AgentMessageChunk
	case u.AgentThoughtChunk != nil:
		return "agent_thought_chunk", u.AgentThoughtChunk
	case u.ToolCall != nil:
		return "tool_call", u.ToolCall
	case u.ToolCallUpdate != nil:
		return "tool_call_update", u.ToolCallUpdate
	case u.Plan != nil:
		return "plan", u.Plan
	case u.AvailableCommandsUpdate != nil:
		return "available_commands_update", u.AvailableCommandsUpdate
	case u.CurrentModeUpdate != nil:
		return "current_mode_update", u.CurrentModeUpdate
	case u.ConfigOptionUpdate != nil:
		return "config_option_update", u.ConfigOptionUpdate
	case u.SessionInfoUpdate != nil:
		return "session_info_update", u.SessionInfoUpdate
	case u.UsageUpdate != nil:
		return "usage_update", u.UsageUpdate
	}
	return "", nil
}

// otherUpdate carries v, an update kind without a field here, tagged in
// Other. v holds strings, numbers and content blocks: marshalling cannot fail.
func otherUpdate(tag string, v any) SessionUpdate {
	tagged, err := marshalTagged("sessionUpdate", tag, v)
	if err != nil {
		panic(fmt.Sprintf("acp: tag %s: %v", tag, err))
	}
	return SessionUpdate{Other: tagged}
}

// Kind is the wire tag of the update ("agent_message_chunk", ...).
func (u SessionUpdate) Kind() string {
	if tag, _ := u.variant(); tag != "" {
		return tag
	}
	if u.Other != nil {
		tag, _ := readTag(u.Other, "sessionUpdate")
		return tag
	}
	return ""
}

func (u SessionUpdate) MarshalJSON() ([]byte, error) {
	if tag, v := u.variant(); v != nil {
		return marshalTagged("sessionUpdate", tag, v)
	}
	if u.Other != nil {
		return u.Other, nil
	}
	return nil, fmt.Errorf("acp: empty SessionUpdate")
}

func (u *SessionUpdate) UnmarshalJSON(data []byte) error {
	tag, err := readTag(data, "sessionUpdate")
	if err != nil {
		return fmt.Errorf("session update: %w", err)
	}
	*u = SessionUpdate{}
	var v any
	switch tag {
	case "user_message_chunk":
		v = newVariant(&u.UserMessageChunk)
	case "agent_message_chunk":
		v = newVariant(&u.AgentMessageChunk)
	case "agent_thought_chunk":
		v = newVariant(&u.AgentThoughtChunk)
	case "tool_call":
		v = newVariant(&u.ToolCall)
	case "tool_call_update":
		v = newVariant(&u.ToolCallUpdate)
	case "plan":
		v = newVariant(&u.Plan)
	case "available_commands_update":
		v = newVariant(&u.AvailableCommandsUpdate)
	case "current_mode_update":
		v = newVariant(&u.CurrentModeUpdate)
	case "config_option_update":
		v = newVariant(&u.ConfigOptionUpdate)
	case "session_info_update":
		v = newVariant(&u.SessionInfoUpdate)
	case "usage_update":
		v = newVariant(&u.UsageUpdate)
	case "":
		return fmt.Errorf("session update: missing \"sessionUpdate\"")
	default:
		u.Other = append(json.RawMessage(nil), data...)
		return nil
	}
	return json.Unmarshal(data, v)
}
