package compaction

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/crow-acp/crow-acp/internal/imagecheck"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// PolicyImages: old images taken out of the context, their messages kept in
// place with a note.
const PolicyImages = "images"

// unknownImageTokens is the cost of an image whose size its header does not
// tell: about a 1000×750 image by either rule below.
const unknownImageTokens = 1000

// ImageTokens is the stated estimate of one image in the window, width and
// height in pixels (0: unknown, then 1,000). It is the larger of the two
// published rules, so that neither provider's count is underestimated:
//
//   - OpenAI (detail "auto"/"high"): scale into 2048×2048, then the short
//     side down to 768; 85 tokens plus 170 per 512-pixel tile;
//   - Anthropic: scale the long side down to 1568 and the area to about
//     1.15 megapixels; width×height/750 tokens (at most about 1,600).
//
// Local vision models count their own way (Qwen2.5-VL: one token per 28×28
// patch, more for a large image); a refusal then teaches the real window.
func ImageTokens(width, height int) int {
	if width <= 0 || height <= 0 {
		return unknownImageTokens
	}
	return max(openAIImageTokens(width, height), anthropicImageTokens(width, height))
}

func openAIImageTokens(w, h int) int {
	fw, fh := float64(w), float64(h)
	if m := max(fw, fh); m > 2048 {
		fw, fh = fw*2048/m, fh*2048/m
	}
	if s := min(fw, fh); s > 768 {
		fw, fh = fw*768/s, fh*768/s
	}
	tiles := ceilDiv(fw, 512) * ceilDiv(fh, 512)
	return 85 + 170*tiles
}

func anthropicImageTokens(w, h int) int {
	fw, fh := float64(w), float64(h)
	if m := max(fw, fh); m > 1568 {
		fw, fh = fw*1568/m, fh*1568/m
	}
	const maxArea = 1600 * 750 // the area Anthropic resizes down to
	if a := fw * fh; a > maxArea {
		return 1600
	}
	return int(fw*fh/750) + 1
}

func ceilDiv(x, d float64) int {
	n := int(x / d)
	if float64(n)*d < x {
		n++
	}
	return max(n, 1)
}

// partTokens is what one image part of a stored message costs: its size
// read from the header of its data.
func partTokens(p persistence.Part) int {
	w, h := imagecheck.DimensionsBase64(p.Data)
	return ImageTokens(w, h)
}

// imageMeta is the mark an image drop leaves in a message's Meta, beside
// whatever else the agent keeps there under "crow".
type imageMeta struct {
	Crow struct {
		DroppedImages []int `json:"droppedImages,omitempty"`
	} `json:"crow"`
}

// DroppedParts lists the indexes of m's image parts taken out of the
// context (DropImages), in order; nil when none.
func DroppedParts(m *persistence.Message) []int {
	if len(m.Meta) == 0 || !strings.Contains(string(m.Meta), "droppedImages") {
		return nil
	}
	var meta imageMeta
	if json.Unmarshal(m.Meta, &meta) != nil {
		return nil
	}
	return meta.Crow.DroppedImages
}

// withDroppedParts returns meta with crow.droppedImages set to parts, every
// other key kept.
func withDroppedParts(meta json.RawMessage, parts []int) (json.RawMessage, error) {
	top := map[string]json.RawMessage{}
	if len(meta) > 0 {
		if err := json.Unmarshal(meta, &top); err != nil {
			return nil, fmt.Errorf("message meta: %w", err)
		}
	}
	crow := map[string]json.RawMessage{}
	if raw, ok := top["crow"]; ok {
		if err := json.Unmarshal(raw, &crow); err != nil {
			return nil, fmt.Errorf("message meta crow: %w", err)
		}
	}
	list, _ := json.Marshal(parts)
	crow["droppedImages"] = list
	top["crow"], _ = json.Marshal(crow)
	return json.Marshal(top)
}

// ImageNote stands in the context for an image taken out of it.
func ImageNote(p persistence.Part) string {
	what := "An image"
	if f := strings.TrimPrefix(p.MimeType, "image/"); f != "" && f != p.MimeType {
		what = "A " + strings.ToUpper(f) + " image"
	}
	if w, h := imagecheck.DimensionsBase64(p.Data); w > 0 {
		what += fmt.Sprintf(" (%d×%d)", w, h)
	}
	return "[" + what + " was removed from the context to save space; ask the user to attach it again if you need it.]"
}

// ContextParts are m's parts as the model reads them: an image taken out
// of the context (DroppedParts) becomes a text part with its ImageNote. The
// stored message keeps the image (replay and export show it).
func ContextParts(m *persistence.Message) []persistence.Part {
	dropped := DroppedParts(m)
	if len(dropped) == 0 {
		return m.Parts
	}
	out := make([]persistence.Part, len(m.Parts))
	for i, p := range m.Parts {
		if p.Type == "image" && slices.Contains(dropped, i) {
			p = persistence.Part{Type: "text", Text: ImageNote(p)}
		}
		out[i] = p
	}
	return out
}

// DroppedImage is one image DropImages took out of the context.
type DroppedImage struct {
	MessageID     int64
	Seq           int64
	Part          int // index in the message's Parts
	MimeType      string
	Width, Height int // 0: unknown
	Tokens        int // what it cost
}

// ImagePlan takes old images out of the context in place: each changed
// message keeps its id, seq, role, content and parts; its Meta marks the
// dropped parts and its TokenCount is counted again. The agent stores each
// with an in-place update and tells the user (ImagesNotice).
type ImagePlan struct {
	Messages                  []persistence.Message // the changed messages, seq order
	Dropped                   []DroppedImage        // oldest first
	TokensBefore, TokensAfter int                   // the whole request, fixed part included
}

// DropImages plans taking old images out of the context, oldest first,
// until the request is at or under target tokens (Settings.TargetTokens;
// 0: every old image). Images of the last PruneProtectTurns user turns (at
// least the newest request) stay. nil: no old image to drop. Images go
// before any text is pruned or summarised: one image costs as much as
// pages of conversation, and the user can attach it again.
func DropImages(c Counter, fixed int, view []persistence.Message, s Settings, target int) (*ImagePlan, error) {
	_, rest := split(view)
	protectFrom := protectedStart(rest, max(s.PruneProtectTurns, 1))
	before := fixed + ViewTokens(c, view)
	tokens := before
	plan := &ImagePlan{TokensBefore: before}
	for i := 0; i < protectFrom; i++ {
		if target > 0 && tokens <= target {
			break
		}
		m := rest[i]
		already := DroppedParts(&m)
		var drop []int
		est := tokens
		for j, p := range m.Parts {
			if p.Type != "image" || slices.Contains(already, j) {
				continue
			}
			if target > 0 && est <= target {
				break
			}
			w, h := imagecheck.DimensionsBase64(p.Data)
			d := DroppedImage{MessageID: m.ID, Seq: m.Seq, Part: j, MimeType: p.MimeType, Width: w, Height: h, Tokens: ImageTokens(w, h)}
			plan.Dropped = append(plan.Dropped, d)
			drop = append(drop, j)
			est -= d.Tokens - c.Count(ImageNote(p))
		}
		if len(drop) == 0 {
			continue
		}
		meta, err := withDroppedParts(m.Meta, append(slices.Clone(already), drop...))
		if err != nil {
			return nil, fmt.Errorf("compaction: images of message %d: %w", m.ID, err)
		}
		changed := m
		changed.Meta = meta
		changed.TokenCount = MessageTokens(c, &changed)
		tokens += changed.TokenCount - m.TokenCount
		plan.Messages = append(plan.Messages, changed)
	}
	if len(plan.Dropped) == 0 {
		return nil, nil
	}
	plan.TokensAfter = tokens
	return plan, nil
}

// protectedStart is the index in rest from which the last turns user turns
// are: nothing from there on is touched.
func protectedStart(rest []persistence.Message, turns int) int {
	ts := Turns(rest)
	from := len(rest)
	users := 0
	for i := len(ts) - 1; i >= 0 && users < turns; i-- {
		from = ts[i].Start
		if rest[ts[i].Start].Role == persistence.RoleUser {
			users++
		}
	}
	return from
}

// CheckImagePlan verifies an image plan against the view it was made
// from: each changed message is one of the view, the same in everything
// but Meta and TokenCount, with fewer tokens; the newest user message is
// not touched; every dropped image is an image part of a changed message.
func CheckImagePlan(view []persistence.Message, p *ImagePlan) error {
	byID := make(map[int64]*persistence.Message, len(view))
	for i := range view {
		byID[view[i].ID] = &view[i]
	}
	_, rest := split(view)
	newest := int64(-1)
	if i := newestUser(rest); i >= 0 {
		newest = rest[i].ID
	}
	changed := make(map[int64]*persistence.Message, len(p.Messages))
	for i := range p.Messages {
		m := &p.Messages[i]
		orig := byID[m.ID]
		switch {
		case orig == nil:
			return fmt.Errorf("changed message %d is not in the view", m.ID)
		case m.ID == newest:
			return fmt.Errorf("the newest user message %d lost an image", m.ID)
		case m.Seq != orig.Seq || m.Role != orig.Role || m.Content != orig.Content || !slices.Equal(m.Parts, orig.Parts):
			return fmt.Errorf("message %d changed beyond its meta", m.ID)
		case m.TokenCount >= orig.TokenCount:
			return fmt.Errorf("message %d does not get smaller (%d -> %d tokens)", m.ID, orig.TokenCount, m.TokenCount)
		}
		changed[m.ID] = m
	}
	for _, d := range p.Dropped {
		m := changed[d.MessageID]
		if m == nil || d.Part < 0 || d.Part >= len(m.Parts) || m.Parts[d.Part].Type != "image" || !slices.Contains(DroppedParts(m), d.Part) {
			return fmt.Errorf("dropped image %d of message %d is not marked in it", d.Part, d.MessageID)
		}
	}
	if p.TokensAfter >= p.TokensBefore {
		return fmt.Errorf("the image plan does not shrink the request (%d -> %d tokens)", p.TokensBefore, p.TokensAfter)
	}
	return nil
}

// ImagesNotice tells the user what DropImages took out, for the agent to
// show; "" for none.
func ImagesNotice(d []DroppedImage) string {
	if len(d) == 0 {
		return ""
	}
	n := 0
	for _, x := range d {
		n += x.Tokens
	}
	what := "1 older image"
	if len(d) > 1 {
		what = fmt.Sprintf("%d older images", len(d))
	}
	return fmt.Sprintf("%s (about %d tokens) taken out of the model's context to make room; the conversation's text is kept. Attach an image again if the model needs to see it.", what, n)
}
