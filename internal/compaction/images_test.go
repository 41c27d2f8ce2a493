package compaction

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// pngData is the base64 of a w×h PNG (blank: it encodes fast).
func pngData(t testing.TB, w, h int) string {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// TestImageTokens: each provider's rule gives its documented examples, and
// the estimate is the larger of the two.
func TestImageTokens(t *testing.T) {
	// OpenAI's vision guide: 1024×1024 is 765 tokens, 2048×4096 is 1105.
	if n := openAIImageTokens(1024, 1024); n != 765 {
		t.Errorf("OpenAI 1024×1024: %d, want 765", n)
	}
	if n := openAIImageTokens(2048, 4096); n != 1105 {
		t.Errorf("OpenAI 2048×4096: %d, want 1105", n)
	}
	// Anthropic's vision guide: 1092×1092 is about 1590 tokens (w·h/750).
	if n := anthropicImageTokens(1092, 1092); n < 1585 || n > 1600 {
		t.Errorf("Anthropic 1092×1092: %d, want about 1590", n)
	}
	for _, c := range []struct{ w, h, want int }{
		{512, 512, 350},    // Anthropic's 349.5 over OpenAI's one tile (255)
		{1024, 1024, 1399}, // Anthropic's over OpenAI's 765
		{2880, 1800, 1600}, // a Retina screenshot: Anthropic's cap over OpenAI's 1105
		{100, 4000, 765},   // a tall strip: OpenAI's four tiles over Anthropic's 82
		{0, 0, 1000},       // size unknown
		{-1, 5, 1000},      // nonsense
	} {
		if n := ImageTokens(c.w, c.h); n != c.want {
			t.Errorf("ImageTokens(%d, %d) = %d, want %d", c.w, c.h, n, c.want)
		}
	}
}

// TestMessageTokensImages: an image counts by the size in its header, one
// without a readable header by the fixed estimate, a dropped one by its
// note.
func TestMessageTokensImages(t *testing.T) {
	c := Estimator{}
	text := persistence.Message{Role: persistence.RoleUser, Content: "What is this?"}
	base := MessageTokens(c, &text)
	m := text
	m.Parts = []persistence.Part{{Type: "text", Text: "What is this?"}, {Type: "image", MimeType: "image/png", Data: pngData(t, 1024, 1024)}}
	if n := MessageTokens(c, &m); n != base+1399 {
		t.Errorf("a 1024×1024 PNG: %d tokens, want %d", n, base+1399)
	}
	m.Parts[1].Data = "iVBORw0KGgo=" // the signature alone: no size
	if n := MessageTokens(c, &m); n != base+1000 {
		t.Errorf("an image of unknown size: %d tokens, want %d", n, base+1000)
	}
	m.Parts[1].Data = pngData(t, 1024, 1024)
	m.Meta = json.RawMessage(`{"crow":{"droppedImages":[1]}}`)
	note := ImageNote(m.Parts[1])
	if !strings.Contains(note, "PNG image (1024×1024)") {
		t.Errorf("note: %q", note)
	}
	if n := MessageTokens(c, &m); n != base+c.Count(note) {
		t.Errorf("a dropped image: %d tokens, want %d", n, base+c.Count(note))
	}
}

// imageView is a session of four turns, each user message with one or two
// 1024×1024 images (1,399 tokens each), each answered.
func imageView(t *testing.T, c Counter) []persistence.Message {
	img := persistence.Part{Type: "image", MimeType: "image/png", Data: pngData(t, 1024, 1024)}
	var view []persistence.Message
	add := func(m persistence.Message) {
		m.ID, m.Seq, m.IsActive, m.Status = int64(len(view)+1), int64(len(view)+1), true, persistence.StatusComplete
		m.TokenCount = MessageTokens(c, &m)
		view = append(view, m)
	}
	add(persistence.Message{Role: persistence.RoleUser, Content: "first", Parts: []persistence.Part{{Type: "text", Text: "first"}, img, img},
		Meta: json.RawMessage(`{"crow":{"messageId":"m1"},"other":1}`)})
	add(persistence.Message{Role: persistence.RoleAssistant, Content: "two screenshots of the login page"})
	add(persistence.Message{Role: persistence.RoleUser, Content: "second", Parts: []persistence.Part{{Type: "text", Text: "second"}, img}})
	add(persistence.Message{Role: persistence.RoleAssistant, Content: "the error dialog"})
	add(persistence.Message{Role: persistence.RoleUser, Content: "newest", Parts: []persistence.Part{{Type: "text", Text: "newest"}, img}})
	return view
}

// applyImagesInMemory is the agent's in-place update on a slice.
func applyImagesInMemory(view []persistence.Message, p *ImagePlan) []persistence.Message {
	out := append([]persistence.Message(nil), view...)
	for _, m := range p.Messages {
		for i := range out {
			if out[i].ID == m.ID {
				out[i] = m
			}
		}
	}
	return out
}

// TestDropImages: old images go oldest first, only as many as the target
// needs; the newest request's image stays; the message keeps its place,
// text, parts and other meta; the context shows a note instead.
func TestDropImages(t *testing.T) {
	c := Estimator{}
	view := imageView(t, c)
	s := Defaults()
	s.PruneProtectTurns = 1
	const fixed = 100
	before := fixed + ViewTokens(c, view)

	// Every old image (target 0).
	p, err := DropImages(c, fixed, view, s, 0)
	if err != nil || p == nil {
		t.Fatalf("DropImages: %v, %v", p, err)
	}
	if err := CheckImagePlan(view, p); err != nil {
		t.Fatal(err)
	}
	if len(p.Dropped) != 3 || p.Dropped[0].MessageID != 1 || p.Dropped[0].Part != 1 || p.Dropped[1].Part != 2 || p.Dropped[2].MessageID != 3 {
		t.Fatalf("dropped: %+v", p.Dropped)
	}
	if d := p.Dropped[0]; d.Width != 1024 || d.Height != 1024 || d.Tokens != 1399 || d.MimeType != "image/png" {
		t.Errorf("what is said of an image: %+v", d)
	}
	after := applyImagesInMemory(view, p)
	if got := fixed + ViewTokens(c, after); got != p.TokensAfter || p.TokensBefore != before || got > before-3*1300 {
		t.Errorf("tokens: plan %d -> %d, view now %d (was %d)", p.TokensBefore, p.TokensAfter, got, before)
	}
	first := after[0]
	if first.Seq != 1 || len(first.Parts) != 3 || first.Parts[1].Data != view[0].Parts[1].Data {
		t.Errorf("the stored message lost its place or its image: %+v", first)
	}
	var meta map[string]any
	if err := json.Unmarshal(first.Meta, &meta); err != nil || meta["other"] != 1.0 || meta["crow"].(map[string]any)["messageId"] != "m1" {
		t.Errorf("other meta lost: %s", first.Meta)
	}
	parts := ContextParts(&first)
	if parts[0].Text != "first" || parts[1].Type != "text" || !strings.Contains(parts[1].Text, "removed from the context") || parts[2].Type != "text" {
		t.Errorf("context parts: %+v", parts)
	}
	if got := ContextParts(&after[4]); got[1].Type != "image" {
		t.Errorf("the newest request's image was dropped: %+v", got)
	}
	if !strings.HasPrefix(ImagesNotice(p.Dropped), "3 older images (about 4197 tokens) taken out") {
		t.Errorf("notice: %q", ImagesNotice(p.Dropped))
	}
	// Run again: nothing more to drop.
	if again, err := DropImages(c, fixed, after, s, 0); again != nil || err != nil {
		t.Errorf("dropped twice: %+v, %v", again, err)
	}

	// Only as many as the target needs: the first image is not enough,
	// the second is.
	p, err = DropImages(c, fixed, view, s, before-1500)
	if err != nil || p == nil || len(p.Dropped) != 2 || len(p.Messages) != 1 || p.TokensAfter > before-1500 {
		t.Fatalf("to a target: %+v, %v", p, err)
	}
	if err := CheckImagePlan(view, p); err != nil {
		t.Fatal(err)
	}
	// Already under the target: nothing.
	if p, _ := DropImages(c, fixed, view, s, before); p != nil {
		t.Errorf("dropped under the target: %+v", p.Dropped)
	}
	// The default protects the last two user turns: only the first
	// message's images go.
	if p, _ := DropImages(c, fixed, view, Defaults(), 0); p == nil || len(p.Dropped) != 2 || p.Dropped[1].MessageID != 1 {
		t.Errorf("two turns protected: %+v", p)
	}
}

// TestCheckImagePlan: a plan that touches the newest request, changes a
// message's text or does not shrink it is refused.
func TestCheckImagePlan(t *testing.T) {
	c := Estimator{}
	view := imageView(t, c)
	s := Defaults()
	s.PruneProtectTurns = 1
	good, _ := DropImages(c, 0, view, s, 0)
	bad := func(edit func(p *ImagePlan)) *ImagePlan {
		p := *good
		p.Messages = append([]persistence.Message(nil), good.Messages...)
		p.Dropped = append([]DroppedImage(nil), good.Dropped...)
		edit(&p)
		return &p
	}
	for name, p := range map[string]*ImagePlan{
		"newest": bad(func(p *ImagePlan) {
			m := view[4]
			m.Meta, _ = withDroppedParts(nil, []int{1})
			m.TokenCount = MessageTokens(c, &m)
			p.Messages = append(p.Messages, m)
		}),
		"text changed":   bad(func(p *ImagePlan) { p.Messages[0].Content = "edited" }),
		"not smaller":    bad(func(p *ImagePlan) { p.Messages[0].TokenCount = view[0].TokenCount }),
		"unmarked image": bad(func(p *ImagePlan) { p.Dropped[0].Part = 0 }),
		"no saving":      bad(func(p *ImagePlan) { p.TokensAfter = p.TokensBefore }),
	} {
		if err := CheckImagePlan(view, p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := CheckImagePlan(view, good); err != nil {
		t.Fatal(err)
	}
}

// TestCompactorDropsImagesFirst: over the threshold because of images, an
// automatic run takes old images out and touches no text; without
// ApplyImages it leaves them and compacts text instead.
func TestCompactorDropsImagesFirst(t *testing.T) {
	c := Estimator{}
	view := imageView(t, c)
	s := Defaults()
	s.Window = 8000 // budget 6000, threshold 5400, target 3600
	const fixed = 100
	if n := fixed + ViewTokens(c, view); n <= s.Trigger() {
		t.Fatalf("the view (%d tokens) is not over the threshold %d", n, s.Trigger())
	}
	cur := view
	x := &Compactor{Counter: c, Settings: s,
		Apply: func(ctx context.Context, p *Plan) ([]persistence.Message, error) {
			t.Fatalf("text compacted (%s) though dropping images was enough", p.Policy)
			return nil, nil
		},
		ApplyImages: func(ctx context.Context, p *ImagePlan) ([]persistence.Message, error) {
			cur = applyImagesInMemory(cur, p)
			return cur, nil
		},
	}
	res, err := x.Run(t.Context(), Request{View: view, Fixed: fixed})
	if err != nil || res.Images == nil || len(res.Plans) != 0 || res.Tokens > s.TargetTokens() {
		t.Fatalf("run: %+v, %v", res, err)
	}
	if len(res.Images.Dropped) != 2 || res.Images.Dropped[0].MessageID != 1 {
		t.Errorf("dropped: %+v", res.Images.Dropped)
	}
	for _, m := range cur {
		if m.Content != view[m.ID-1].Content {
			t.Errorf("message %d's text changed", m.ID)
		}
	}

	// Without ApplyImages, images stay and text is compacted.
	var plans []*Plan
	next := int64(100)
	cur = view
	x = &Compactor{Counter: c, Settings: s, Apply: func(ctx context.Context, p *Plan) ([]persistence.Message, error) {
		plans = append(plans, p)
		cur = applyInMemory(cur, p, &next)
		return cur, nil
	}}
	res, err = x.Run(t.Context(), Request{View: view, Fixed: fixed})
	if res.Images != nil || len(plans) == 0 {
		t.Fatalf("without ApplyImages: %+v, %v", res, err)
	}
}
