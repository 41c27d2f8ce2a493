package agent

import (
	"errors"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/imagecheck"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// checkPromptSize refuses a prompt larger than the configured caps, before
// anything is stored or sent to the model: its images by their own limits
// (imagecheck.CheckPrompt: strict base64, the MIME type against the bytes,
// each image and all of them), the rest by limits.prompt_bytes.
func (tr *turns) checkPromptSize(parts []persistence.Part) error {
	var images []imagecheck.Input
	n := 0
	for _, p := range parts {
		if p.Type == "image" {
			images = append(images, imagecheck.Input{MimeType: p.MimeType, Data: p.Data})
			n += len(p.URI)
			continue
		}
		n += len(p.Text) + len(p.Data) + len(p.URI) + len(p.Name)
	}
	if _, err := imagecheck.CheckPrompt(images, tr.cfg.Images); err != nil {
		return imageError(err)
	}
	if limit := tr.cfg.MaxPromptBytes; n > limit {
		e := acp.InvalidParams("The prompt is too large: %d bytes, the limit is %d (setting limits.prompt_bytes, env CROW_MAX_PROMPT_BYTES); nothing was stored.", n, limit)
		e.Data = map[string]any{"limit": limit, "size": n}
		return e
	}
	return nil
}

// imageError is -32602 for an image refused, with what is wrong in data.
func imageError(err error) error {
	var ie *imagecheck.Error
	if !errors.As(err, &ie) {
		return acp.InvalidParams("%s", err.Error())
	}
	e := acp.InvalidParams("%s", ie.Error())
	e.Data = map[string]any{"index": ie.Index, "problem": string(ie.Problem), "size": ie.Size, "limit": ie.Limit}
	return e
}

// tooManyTurns is the error for a prompt over the concurrency cap.
func (tr *turns) tooManyTurns() error {
	limit := tr.cfg.MaxConcurrentTurns
	e := acp.InvalidRequest("Too many sessions are running a prompt: the limit is %d at once (setting limits.active_sessions, env CROW_MAX_CONCURRENT_SESSIONS); wait for one to finish or cancel it.", limit)
	e.Data = map[string]any{"limit": limit}
	return e
}
