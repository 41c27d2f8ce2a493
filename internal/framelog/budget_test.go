package framelog

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/deflate"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// packed is a body in the stored packed form of an outbound run, whatever
// plain holds (the prefix, then DEFLATE).
func packed(plain []byte) []byte { return deflate.Pack("\x00deflate\n", plain) }

// TestCraftedBodiesStayWithinTheBudget: rows a damaged or hostile database
// holds, read back from a real SQLite file, fail with an error naming their
// event, and the read allocates about its budget, not what they claim: a
// small record claiming a huge size, a DEFLATE bomb, and many large runs
// that each fit the budget but not together (each frame costs its bytes
// and persistence.FrameCost).
func TestCraftedBodiesStayWithinTheBudget(t *testing.T) {
	const budget = 16 << 20
	run := bytes.Repeat([]byte(`{"jsonrpc":"2.0","method":"session/update"}`+"\n"), 6<<20/44)
	huge := fmt.Sprintf(`{"sent":{"frames":1,"crc32c":"00000000","data":%q}}`,
		base64.StdEncoding.EncodeToString([]byte("ol\xff\xff\xff\xff\xff\xff\xff\xff\x7f{}")))
	frame := func(body []byte) *persistence.Event {
		return &persistence.Event{Kind: persistence.EventNotification, Direction: persistence.DirOut, Method: "session/update", Body: body}
	}
	cases := []struct {
		name    string
		evs     []*persistence.Event
		badSeq  int
		message string
	}{
		{"claim", []*persistence.Event{frame([]byte(`{"jsonrpc":"2.0"}`)),
			frame(packed([]byte{0, 2, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 'x'}))}, 2, "corrupt"},
		{"load claim", []*persistence.Event{{Kind: persistence.EventSessionLoaded, Body: []byte(huge)}}, 1, "damaged load record"},
		{"bomb", []*persistence.Event{frame(packed(make([]byte, 128<<20)))}, 1, "budget"},
		{"many", []*persistence.Event{frame(packed(run)), frame(packed(run)), frame(packed(run)), frame(packed(run))}, 2, "budget of 16777216 bytes"},
	}
	store, _ := openStore(t)
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, e := range c.evs {
				e.Stream = c.name
			}
			if err := store.AppendEvents(ctx, c.evs...); err != nil {
				t.Fatal(err)
			}
			evs, err := store.Events(ctx, c.name, persistence.EventFilter{})
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err = framesWithin(evs, persistence.NewBudget(budget))
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("event %d", c.badSeq)) || !strings.Contains(err.Error(), c.message) {
				t.Fatalf("read: %v; want an error naming event %d (%s)", err, c.badSeq, c.message)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 4*budget && !raceEnabled {
				t.Errorf("the read allocated %d MiB for a budget of %d MiB", n>>20, budget>>20)
			}
		})
	}
}
