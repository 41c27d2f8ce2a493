package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// userParts converts a prompt to stored parts. Block types the agent did not
// advertise, or that the session's model cannot read, are refused with
// -32602 rather than silently dropped.
func userParts(blocks []acp.ContentBlock, model request.Model) ([]persistence.Part, error) {
	parts := make([]persistence.Part, 0, len(blocks))
	for i, b := range blocks {
		switch {
		case b.Text != nil:
			parts = append(parts, persistence.Part{Type: "text", Text: b.Text.Text})
		case b.ResourceLink != nil:
			l := b.ResourceLink
			parts = append(parts, persistence.Part{Type: "resource_link", URI: l.URI, Name: l.Name, MimeType: l.MimeType})
		case b.Resource != nil:
			r := b.Resource.Resource
			p := persistence.Part{Type: "resource", URI: r.URI, MimeType: r.MimeType}
			switch {
			case r.Text != nil:
				p.Text = *r.Text
			case r.Blob != nil:
				p.Data = *r.Blob
			}
			parts = append(parts, p)
		case b.Image != nil:
			img := b.Image
			if !model.Images {
				return nil, noImages(i, model)
			}
			parts = append(parts, persistence.Part{Type: "image", MimeType: img.MimeType, Data: img.Data, URI: img.URI})
		case b.Audio != nil:
			return nil, acp.InvalidParams("Prompt block %d: audio prompts are not supported; send text, images or resources.", i)
		default:
			return nil, acp.InvalidParams("Prompt block %d is empty; remove it or give it content.", i)
		}
	}
	if len(parts) == 0 {
		return nil, acp.InvalidParams("The prompt is empty; send at least one content block with text, an image or a resource.")
	}
	return parts, nil
}

// noImages refuses an image for a model that does not read it, naming
// what decided and the setting that changes it.
func noImages(block int, model request.Model) error {
	e := acp.InvalidParams("Prompt block %d: the session's model %s does not read images (%s). If it does, set images = true for it in the models table (config.toml [[models]]; image=true in CROW_MODELS); or pick a model that reads images with the \"model\" config option. Nothing was stored.",
		block, model.Name, model.ImagesSource)
	e.Data = map[string]any{"index": block, "problem": "model", "setting": "images"}
	return e
}

// hasImage reports whether a prompt holds an image block.
func hasImage(blocks []acp.ContentBlock) bool {
	for _, b := range blocks {
		if b.Image != nil {
			return true
		}
	}
	return false
}

// storedParts is what a user message keeps of its blocks beside its text: a
// prompt of one text block is its Content alone (replay shows the same
// block), which halves what a plain prompt stores and reads back.
func storedParts(parts []persistence.Part) []persistence.Part {
	if len(parts) == 1 && parts[0].Type == "text" {
		return nil
	}
	return parts
}

// modelText is the text the model reads for a user message.
func modelText(parts []persistence.Part) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "image" {
			continue // sent as an image part (see imageParts)
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		switch p.Type {
		case "text":
			b.WriteString(p.Text)
		case "resource_link":
			fmt.Fprintf(&b, "[Referenced resource: %s (%s)]", p.Name, p.URI)
		case "resource":
			if p.Data != "" {
				fmt.Fprintf(&b, "[Attached binary resource %s (%s), %d base64 bytes, not shown]", p.URI, p.MimeType, len(p.Data))
			} else {
				fmt.Fprintf(&b, "<resource uri=%q>\n%s\n</resource>", p.URI, p.Text)
			}
		}
	}
	return b.String()
}

// partBlock turns a stored part back into the block the client sent.
func partBlock(p persistence.Part) acp.ContentBlock {
	switch p.Type {
	case "resource_link":
		return acp.ContentBlock{ResourceLink: &acp.ResourceLink{URI: p.URI, Name: p.Name, MimeType: p.MimeType}}
	case "resource":
		res := acp.EmbeddedResourceContents{URI: p.URI, MimeType: p.MimeType}
		if p.Data != "" {
			res.Blob = &p.Data
		} else {
			text := p.Text
			res.Text = &text
		}
		return acp.ContentBlock{Resource: &acp.EmbeddedResource{Resource: res}}
	case "image":
		return acp.ContentBlock{Image: &acp.ImageContent{Data: p.Data, MimeType: p.MimeType, URI: p.URI}}
	default:
		return acp.TextBlock(p.Text)
	}
}

// withoutImages replaces the images in msgs with a note, for a model that
// cannot read them (the session switched models after an image prompt).
func withoutImages(msgs []provider.Message) []provider.Message {
	for i, m := range msgs {
		if len(m.Parts) == 0 {
			continue
		}
		kept := m.Parts[:0:0]
		dropped := 0
		for _, p := range m.Parts {
			if p.Type == "image" {
				dropped++
				continue
			}
			kept = append(kept, p)
		}
		if dropped > 0 {
			msgs[i].Parts = kept
			msgs[i].Content += fmt.Sprintf("\n\n[%d image(s) omitted: the current model does not accept images]", dropped)
		}
	}
	return msgs
}

// countTokens stores the message's token count with it, so that the next
// request's context needs no recount (and no write to cache one). The
// stored row keeps the encoding it was first written with; a reply is
// always counted with the one counter of its turn.
func countTokens(c compaction.Counter, m *persistence.Message) {
	if c != nil {
		m.TokenCount, m.TokenEncoding = compaction.MessageTokens(c, m), c.Name()
	}
}

// countTokensContext is countTokens that gives up when ctx is done,
// leaving the message uncounted.
func countTokensContext(ctx context.Context, c compaction.Counter, m *persistence.Message) {
	if c == nil {
		return
	}
	if n, err := compaction.MessageTokensContext(ctx, c, m); err == nil {
		m.TokenCount, m.TokenEncoding = n, c.Name()
	}
}
