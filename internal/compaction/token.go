// Package compaction keeps a session's model context inside the model's
// window: exact token accounting, the policies that shrink a history
// (prune old tool output, summarise, deterministic summary, drop oldest
// turns), and the invariants every result must keep.
//
// It works on the store's domain types and the model interface; it never
// sees the wire protocol. The agent decides when to run it (before every
// model request) and applies the plans it returns to the store.
package compaction

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer/codec"
)

// Counter counts the tokens of a text for one encoding.
type Counter interface {
	// Name identifies the encoding ("o200k_base", "cl100k_base", "estimate").
	// Cached counts are valid only for the name they were made with.
	Name() string
	// Count returns the number of tokens of text.
	Count(text string) int
}

// Encoding names accepted by NewCounter besides tiktoken's own.
const (
	EncodingAuto     = "auto"     // the model's encoding when known, else the estimator
	EncodingEstimate = "estimate" // the CJK-aware character estimator
)

// The offline vocabularies: the two that chat models use. (p50k_base and
// r50k_base belong to retired completion models; leaving them out keeps
// ~3 MB of vocabulary out of the binary.)
const (
	EncodingO200k  = "o200k_base"  // GPT-4o, GPT-4.1, GPT-5, o-series
	EncodingCl100k = "cl100k_base" // GPT-4, GPT-3.5
)

// Encodings lists every encoding name NewCounter accepts.
var Encodings = []string{EncodingAuto, EncodingEstimate, EncodingO200k, EncodingCl100k}

// NewCounter returns the counter for a model. encoding "" or "auto" picks
// the model's tiktoken encoding when it is an OpenAI model and the
// estimator otherwise (local models have tokenizers of their own that no
// offline vocabulary matches; the estimator is deliberately generous).
// o200k_base, cl100k_base or estimate forces that choice.
func NewCounter(model, encoding string) (Counter, error) {
	switch encoding {
	case "", EncodingAuto:
		if enc := EncodingForModel(model); enc != "" {
			return NewCounter("", enc)
		}
		return Estimator{}, nil
	case EncodingEstimate:
		return Estimator{}, nil
	case EncodingO200k:
		return &tiktoken{name: EncodingO200k, load: codec.NewO200kBase}, nil
	case EncodingCl100k:
		return &tiktoken{name: EncodingCl100k, load: codec.NewCl100kBase}, nil
	}
	return nil, fmt.Errorf("tokenizer %q: unknown encoding (use %s)", encoding, strings.Join(Encodings, ", "))
}

// EncodingForModel names the tiktoken encoding of an OpenAI model, also
// under OpenRouter's "openai/" prefix and as a fine-tune ("ft:gpt-4o:org::id"),
// or "" for any other model.
func EncodingForModel(model string) string {
	m := strings.TrimPrefix(strings.ToLower(model), "openai/")
	if base, ok := strings.CutPrefix(m, "ft:"); ok {
		m, _, _ = strings.Cut(base, ":")
	}
	family := func(names ...string) bool {
		for _, n := range names {
			if m == n || strings.HasPrefix(m, n+"-") || strings.HasPrefix(m, n+".") {
				return true
			}
		}
		return false
	}
	switch {
	case family("gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4"):
		return EncodingO200k
	case family("gpt-4", "gpt-3.5", "gpt-35", "davinci-002", "babbage-002", "text-embedding-ada-002", "text-embedding-3"):
		return EncodingCl100k
	}
	return ""
}

// tiktoken counts with an offline BPE vocabulary, built on the first count:
// building o200k takes ~30 ms and ~9 MB, which a process that only lists or
// loads sessions (their counts are stored) never needs to pay.
type tiktoken struct {
	name   string
	load   func() *codec.Codec
	once   sync.Once
	codec  *codec.Codec
	loaded atomic.Bool // for tests: whether the vocabulary was built
}

func (t *tiktoken) Name() string { return t.name }

func (t *tiktoken) Count(text string) int {
	if text == "" {
		return 0
	}
	t.once.Do(func() {
		t.codec = t.load()
		t.loaded.Store(true)
	})
	n, err := t.codec.Count(text)
	if err != nil {
		// Only ErrorModeStrict errors; the default mode never does. Stay
		// safe rather than silent about an impossible case.
		return Estimator{}.Count(text)
	}
	return n
}

// Estimator approximates BPE token counts from characters when no
// vocabulary fits the model. It is calibrated to stay at or above what
// o200k_base and cl100k_base count on English, code, JSON and CJK text
// (tested against both), so a context it accepts is not over the window.
type Estimator struct{}

func (Estimator) Name() string { return EncodingEstimate }

// Count walks the text once, classing runs of characters the way BPE
// pre-tokenisers split them.
func (Estimator) Count(text string) int {
	var tenths int // tokens × 10, to keep fractional weights exact
	for i := 0; i < len(text); {
		n, t := estimateRun(text[i:])
		tenths += t
		i += n
	}
	return (tenths + 9) / 10
}

// estimateRun weighs the run of characters at the start of s (non-empty):
// it returns the run's length in bytes, at least 1, so that Count is linear
// in len(s) whatever the bytes, and its weight in tenths of a token, at
// most maxRunTenths per byte.
func estimateRun(s string) (n, tenths int) {
	if n := blobLen(s); n > 0 {
		// Base64, hex, hashes: BPE finds few merges in random text;
		// base64 runs at about 0.7 tokens per character.
		return n, n * 8
	}
	r, size := utf8.DecodeRuneInString(s)
	switch {
	case isASCIILetter(r):
		// A word: BPE words average ~4 letters per token in English
		// and fewer in identifiers; count one token per 3 letters,
		// at least one.
		n := runOf(s, func(b byte) bool { return isASCIILetter(rune(b)) })
		return n, wordTenths(n)
	case r >= '0' && r <= '9':
		// Digits are split in groups of at most three.
		n := runOf(s, func(b byte) bool { return b >= '0' && b <= '9' })
		return n, 10 * ((n + 2) / 3)
	case r == ' ' || r == '\t':
		// A single space is glued to the next word; longer runs
		// (indentation) take a token per 4.
		n := runOf(s, func(b byte) bool { return b == ' ' || b == '\t' })
		if n > 1 {
			return n, 10 * ((n + 6) / 8)
		}
		return n, 0
	case r == '\n' || r == '\r':
		// A run of line breaks is one token.
		return runOf(s, func(b byte) bool { return b == '\n' || b == '\r' }), 10
	case r < utf8.RuneSelf && isPunct(byte(r)):
		// Punctuation merges in pairs ("()", "{\n", "\":"); count a
		// run at 0.6 per character.
		n := runOf(s, isPunct)
		return n, 4 + 6*n
	case r < utf8.RuneSelf:
		// Any other ASCII byte (control characters, DEL): BPE has no
		// merges for them, so each is a token of its own.
		return 1, 10
	case isCJK(r):
		// Common ideographs and kana are one token, rarer ones two or
		// three byte-level tokens.
		return size, 12
	case unicode.IsLetter(r) || unicode.IsDigit(r):
		return size, 10 // accented and other-script letters
	default:
		return size, 20 // emoji, symbols and invalid bytes: several byte tokens
	}
}

// maxRunTenths bounds estimateRun's weight per byte (an invalid byte).
const maxRunTenths = 20

// runOf returns the length of the run of bytes at the start of s that
// satisfy in (the caller knows s[0] does).
func runOf(s string, in func(byte) bool) int {
	n := 1
	for n < len(s) && in(s[n]) {
		n++
	}
	return n
}

// wordTenths weighs an ASCII word: short words are one token, long ones
// (identifiers) about one per 4 letters.
func wordTenths(n int) int {
	if n <= 4 {
		return 10
	}
	return 10 + (n-4)*10/5
}

// blobLen returns the length of a random-looking run at the start of s
// (at least 24 characters of letters, digits and base64 symbols, with
// both letters and digits), or 0.
func blobLen(s string) int {
	const minBlob = 24
	if len(s) < minBlob {
		return 0
	}
	var letters, digits bool
	n := 0
scan:
	for ; n < len(s); n++ {
		switch b := s[n]; {
		case b >= '0' && b <= '9':
			digits = true
		case b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z':
			letters = true
		case b == '+' || b == '/' || b == '=' || b == '-' || b == '_':
		default:
			break scan
		}
	}
	if n < minBlob || !letters || !digits {
		return 0
	}
	return n
}

func isPunct(b byte) bool {
	return b > ' ' && b < 0x7f && !isASCIILetter(rune(b)) && (b < '0' || b > '9')
}

func isASCIILetter(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_'
}

// isCJK reports ideographs, kana, hangul and CJK punctuation.
func isCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r) ||
		(r >= 0x3000 && r <= 0x303f) || (r >= 0xff00 && r <= 0xffef)
}

// truncate cuts text to about max tokens, keeping the head and marking the
// cut. It never returns more than max tokens by c's count (plus the marker).
func truncate(c Counter, text string, max int) string {
	if max <= 0 {
		return ""
	}
	n := c.Count(text)
	if n <= max {
		return text
	}
	runes := []rune(text)
	keep := len(runes) * max / n
	for keep > 0 {
		head := string(runes[:keep])
		if c.Count(head) <= max {
			return strings.TrimRight(head, " \n") + fmt.Sprintf(" …[%d more tokens cut]", n-c.Count(head))
		}
		keep = keep * 9 / 10
	}
	return ""
}
