package agent

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// screenshot is a real 1280x800 PNG in base64 (about 1,100 tokens by
// OpenAI's rule).
func screenshot(t *testing.T) string {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 1280, 800))); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// TestOldImagesGoFirst: in a small window, compaction takes the old
// screenshots out of the context in place (their messages keep them; the
// model reads a note instead) before any text is pruned or summarised,
// and the user is told so.
func TestOldImagesGoFirst(t *testing.T) {
	ctx := context.Background()
	a, rec, m := newTestAgent(t, Config{Model: "gpt-4o", Models: []request.Model{{Name: "gpt-4o", ContextWindow: 7000}}})
	// The fake model's count (bytes/4) is close to ours: a blank
	// screenshot compresses to a few KB.
	m.SetFallback(fakemodel.Reply{Text: "It shows the login page."})
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	img := screenshot(t)
	for turn := range 4 {
		_, err := a.Prompt(ctx, &acp.PromptRequest{SessionID: s.SessionID, Prompt: []acp.ContentBlock{
			acp.TextBlock(fmt.Sprintf("Screenshot %d: what changed?", turn)),
			{Image: &acp.ImageContent{MimeType: "image/png", Data: img}}}})
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
	}
	msgs, err := a.store.Messages(ctx, s.SessionID, persistence.MessageFilter{})
	if err != nil {
		t.Fatal(err)
	}
	dropped, kept := 0, 0
	for _, msg := range msgs {
		for _, p := range msg.Parts {
			if p.Type == "image" {
				kept++
			}
		}
		dropped += len(compaction.DroppedParts(&msg))
	}
	if kept != 4 || dropped == 0 {
		t.Fatalf("%d images stored, %d taken out of the context: want all 4 kept, the old ones out", kept, dropped)
	}
	last := string(m.Requests()[len(m.Requests())-1])
	if !strings.Contains(last, "was removed from the context to save space") || !strings.Contains(last, "Screenshot 0: what changed?") {
		t.Errorf("the last request lacks the image note or the first prompt's text (text must stay while images go)")
	}
	if n := strings.Count(last, "data:image/png;base64,"); n != 4-dropped {
		t.Errorf("the last request carries %d images, want %d", n, 4-dropped)
	}
	if list, _ := a.store.Compactions(ctx, s.SessionID); len(list) != 0 {
		t.Errorf("%d text compactions: dropping the old images was enough", len(list))
	}
	if text := rec.agentText(); !strings.Contains(text, "older image") {
		t.Errorf("the user was not told: %q", text)
	}
}

// TestImagesDiscovered: a model of no known family that its endpoint says
// reads images (llama.cpp with a vision projector) gets them once the
// background lookup answers: initialize, sent right away, waits for it
// (briefly) and advertises them and a prompt's
// image waits for the answer rather than being refused. Configured off
// (image=false), the same model refuses images naming the setting.
func TestImagesDiscovered(t *testing.T) {
	yes := true
	for _, c := range []struct {
		name       string
		configured *bool
		want       bool
	}{{"discovered", nil, true}, {"configured off", new(bool), false}} {
		t.Run(c.name, func(t *testing.T) {
			store := newTestStore(t)
			m := fakemodel.Start()
			defer m.Close()
			m.SetDiscovery(fakemodel.Discovery{Flavor: "llama.cpp", Model: "my-vlm", Window: 16384, Images: &yes})
			m.SetFallback(fakemodel.Reply{Text: "A cat."})
			oc := provider.OpenAIConfig{BaseURL: m.URL()}
			cfg := Config{Model: "my-vlm", NoTools: true, Models: []request.Model{{Name: "my-vlm", ImagesConfigured: c.configured}},
				Providers: map[string]request.Provider{"": {Endpoint: m.URL(),
					DiscoverImages: func(ctx context.Context, model string) (provider.DiscoveredImages, error) {
						return provider.DiscoverImages(ctx, oc, model)
					}}}}
			a := New(&recorder{}, store, provider.NewOpenAI(oc), cfg, nil)
			defer a.Close()
			ctx := context.Background()
			// initialize, right at the start, waits (briefly) for the
			// endpoint's answer.
			init, _ := a.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: 1})
			if init.AgentCapabilities.PromptCapabilities.Image != c.want {
				t.Errorf("promptCapabilities.image = %v, want %v", init.AgentCapabilities.PromptCapabilities.Image, c.want)
			}
			s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			_, err = a.Prompt(ctx, &acp.PromptRequest{SessionID: s.SessionID, Prompt: []acp.ContentBlock{
				acp.TextBlock("What is it?"), {Image: &acp.ImageContent{MimeType: "image/png", Data: screenshot(t)}}}})
			if c.want != (err == nil) {
				t.Fatalf("prompt with an image: %v; want accepted %v", err, c.want)
			}
			if !c.want && !strings.Contains(err.Error(), "images = true") {
				t.Errorf("refusal does not name the setting: %v", err)
			}
		})
	}
}
