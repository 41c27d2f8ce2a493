package compaction

import (
	"context"
	"unicode/utf8"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// countPiece is how much text is counted between two checks of the
// context: about a millisecond of work for either counter.
const countPiece = 64 << 10

// CountContext is c.Count(text) that stops with ctx's error when ctx is done,
// checking it every countPiece bytes, so that a cancelled turn never waits
// for a long text to be counted. The text is cut only where a line starts
// with an ASCII letter or digit (no BPE pre-token and no estimator run spans
// such a cut) when one is near, so the sum equals one Count of the whole.
func CountContext(ctx context.Context, c Counter, text string) (int, error) {
	if e, ok := c.(Estimator); ok {
		return e.countContext(ctx, text)
	}
	n := 0
	for len(text) > 0 {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		cut := pieceEnd(text)
		n += c.Count(text[:cut])
		text = text[cut:]
	}
	return n, nil
}

// countContext is Count, checking ctx every countPiece bytes.
func (Estimator) countContext(ctx context.Context, text string) (int, error) {
	tenths, next := 0, 0
	for i := 0; i < len(text); {
		if i >= next {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			next = i + countPiece
		}
		n, t := estimateRun(text[i:])
		tenths += t
		i += n
	}
	return (tenths + 9) / 10, nil
}

// pieceEnd returns where the first piece of text ends: all of it when it is
// short, else the last line start before countPiece that begins with a
// letter or digit, else the last rune boundary before countPiece.
func pieceEnd(text string) int {
	if len(text) <= countPiece {
		return len(text)
	}
	for i := countPiece; i > countPiece/2; i-- {
		if text[i-1] == '\n' && isWordStart(text[i]) {
			return i
		}
	}
	i := countPiece
	for i > 0 && !utf8.RuneStart(text[i]) {
		i--
	}
	if i == 0 {
		return countPiece
	}
	return i
}

func isWordStart(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// MessageTokensContext is MessageTokens, cancellable by ctx.
func MessageTokensContext(ctx context.Context, c Counter, m *persistence.Message) (int, error) {
	n, err := CountContext(ctx, c, m.Content)
	if err != nil {
		return 0, err
	}
	for _, tc := range m.ToolCalls {
		a, err := CountContext(ctx, c, tc.Arguments)
		if err != nil {
			return 0, err
		}
		n += a
	}
	rest := *m
	rest.Content, rest.ToolCalls = "", make([]persistence.ToolCall, len(m.ToolCalls))
	for i, tc := range m.ToolCalls {
		rest.ToolCalls[i] = persistence.ToolCall{ID: tc.ID, Name: tc.Name}
	}
	return n + MessageTokens(c, &rest), nil
}
