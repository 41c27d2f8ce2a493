package compaction

import (
	"encoding/base64"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tiktoken-go/tokenizer/codec"
)

// estimatorSamples are real texts of each kind the estimator must not
// undercount: code, JSON, English prose, CJK and a mix.
func estimatorSamples(t testing.TB) map[string]string {
	t.Helper()
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	samples := map[string]string{
		"code: compaction/token.go": read("token.go"),
		"code: persistence/sqlcore": read("../persistence/internal/sqlcore/message.go"),
		"code: sql":                 read("../migrations/sqlite/0001_init.sql"),
		"json: acp schema":          read("../../testdata/acp/schema.json")[:200000],
		"json: fixture":             read("../../testdata/fixtures/two_turns.txtar"),
		"english: README":           read("../../README.md"),
		"english: lessons":          proseSample,
		"cjk: chinese":              read("testdata/cjk_zh.txt"),
		"cjk: japanese":             read("testdata/cjk_ja.txt"),
		"cjk: korean":               read("testdata/cjk_ko.txt"),
		"mixed: code+cjk+emoji":     read("testdata/mixed.txt"),
		"json: compact numbers":     `[1,22,333,4444,55555,666666,{"a":-1.5e10,"b":null,"c":[true,false]}]`,
		"code: minified js":         `function f(a,b){return a.map(x=>x*b).filter(Boolean).reduce((s,v)=>s+v,0)}if(!window.x){window.x={}}`,
		"english: short":            "Please fix the failing test in parser_test.go.",
		"base64 blob":               base64.StdEncoding.EncodeToString(pseudoRandom(3000)),
		"hex dump":                  hex.EncodeToString(pseudoRandom(2000)),
		"path list":                 "/home/user/src/github.com/crow-acp/crow-acp/internal/fixture/run.go:123:45: undefined: foo",
	}
	matches, _ := filepath.Glob("../agent/*.go")
	var all strings.Builder
	for _, m := range matches {
		all.WriteString(read(m))
	}
	samples["code: agent package"] = all.String()
	return samples
}

const proseSample = `A session can run for days: before any model request would overflow the model's window, the agent compacts
the history, the user keeps working in the same session, and nothing is ever lost: the original messages stay in
the database and can be expanded back. Compaction fired too late or too early, and settings were ignored. Honour
configuration exactly. Leave headroom, and make the summary request itself fit.`

// TestEstimatorNeverUndercounts checks the fallback estimator against both
// offline vocabularies: it may overcount, but never undercount by more than
// 5%, on code, JSON, English and CJK.
func TestEstimatorNeverUndercounts(t *testing.T) {
	encs := []string{EncodingO200k, EncodingCl100k}
	for name, text := range estimatorSamples(t) {
		est := Estimator{}.Count(text)
		for _, enc := range encs {
			c, err := NewCounter("", enc)
			if err != nil {
				t.Fatal(err)
			}
			real := c.Count(text)
			ratio := float64(est) / float64(real)
			t.Logf("%-28s %-12s real %7d estimate %7d ratio %.2f", name, enc, real, est, ratio)
			if ratio < 0.95 {
				t.Errorf("%s (%s): estimate %d undercounts %d tokens by %.1f%%", name, enc, est, real, 100*(1-ratio))
			}
		}
	}
}

func pseudoRandom(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestEncodingForModel(t *testing.T) {
	for model, want := range map[string]string{
		"gpt-4o": EncodingO200k, "gpt-4o-mini": EncodingO200k, "gpt-4o-2024-08-06": EncodingO200k,
		"chatgpt-4o-latest": EncodingO200k, "gpt-4.1": EncodingO200k, "gpt-4.1-nano": EncodingO200k,
		"gpt-5": EncodingO200k, "gpt-5-mini": EncodingO200k, "gpt-5.1": EncodingO200k, "gpt-5.1-codex": EncodingO200k,
		"o1": EncodingO200k, "o1-preview": EncodingO200k, "o3-mini": EncodingO200k, "o4-mini": EncodingO200k,
		"openai/gpt-4o": EncodingO200k, "GPT-4o": EncodingO200k, "ft:gpt-4o-mini:acme::abc123": EncodingO200k,
		"gpt-4": EncodingCl100k, "gpt-4-turbo": EncodingCl100k, "gpt-4-0613": EncodingCl100k,
		"gpt-3.5-turbo": EncodingCl100k, "gpt-35-turbo": EncodingCl100k, "ft:gpt-3.5-turbo:acme::x": EncodingCl100k,
		"text-embedding-3-small": EncodingCl100k,
		"gpt-50":                 "", "gpt-4x": "", "o10": "", "o1x": "", "qwen3:8b": "", "deepseek-chat": "", "glm-4.6": "",
		"anthropic/claude-sonnet-4": "", "llama3.1:8b": "", "": "",
	} {
		if got := EncodingForModel(model); got != want {
			t.Errorf("EncodingForModel(%q) = %q, want %q", model, got, want)
		}
	}
}

func TestNewCounterEncodings(t *testing.T) {
	for _, enc := range Encodings {
		c, err := NewCounter("", enc)
		if err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		if enc != EncodingAuto && c.Name() != enc {
			t.Errorf("NewCounter(%q).Name() = %q", enc, c.Name())
		}
	}
	if c, _ := NewCounter("gpt-4o", ""); c.Name() != EncodingO200k {
		t.Errorf("gpt-4o counts with %s", c.Name())
	}
	if c, _ := NewCounter("qwen3:8b", EncodingAuto); c.Name() != EncodingEstimate {
		t.Errorf("qwen3:8b counts with %s", c.Name())
	}
	if _, err := NewCounter("", "p50k_base"); err == nil || !strings.Contains(err.Error(), "o200k_base") {
		t.Errorf("p50k_base: %v, want an error naming the accepted encodings", err)
	}
}

// TestVocabularyLoadsLazily: choosing a tiktoken encoding (what a process
// does for its default model before session/load) builds no vocabulary;
// the first count builds it, and counts exactly as the vocabulary does.
func TestVocabularyLoadsLazily(t *testing.T) {
	for enc, load := range map[string]func() *codec.Codec{EncodingO200k: codec.NewO200kBase, EncodingCl100k: codec.NewCl100kBase} {
		c, err := NewCounter("", enc)
		if err != nil {
			t.Fatal(err)
		}
		tk := c.(*tiktoken)
		if c.Name() != enc || tk.loaded.Load() {
			t.Fatalf("%s: NewCounter and Name built the vocabulary", enc)
		}
		text := "func main() { fmt.Println(\"héllo, 世界\") } // 12345"
		want, err := load().Count(text)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Count(text); got != want || !tk.loaded.Load() {
			t.Fatalf("%s: count %d (loaded %v), want %d from the vocabulary", enc, got, tk.loaded.Load(), want)
		}
	}
}
