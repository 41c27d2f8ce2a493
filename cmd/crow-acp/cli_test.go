package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/crowtest"
	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/sqlite"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// TestCLI runs every case in testdata/cli: a txtar file whose sections are
// the inputs (args, env, config.toml, sessions, model, stdin) and the
// expected outputs (exit, stdout, stderr), compared exactly after
// replacing run-specific paths. -update rewrites the expected sections.
//
//	args         the command line after "crow-acp" (shell-style quoting)
//	env          KEY=VALUE lines; $TMP, $CWD and $MODEL_URL are expanded
//	config.toml  written to $TMP/config/crow-acp/config.toml (XDG_CONFIG_HOME)
//	sessions     JSON lines {"id","cwd","title","messages":[...]} stored first
//	model        fake model replies, one JSON line each (streaming/fakemodel)
//	stdin        the process's stdin
func TestCLI(t *testing.T) {
	files, err := filepath.Glob("testdata/cli/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases in testdata/cli: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		t.Run(name, func(t *testing.T) {
			runCLICase(t, file)
		})
	}
}

func runCLICase(t *testing.T, file string) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	for _, f := range ar.Files {
		sections[f.Name] = string(f.Data)
	}
	env := fixture.NewEnv(t)
	modelURL := "http://127.0.0.1:9/v1" // nothing listens on the discard port
	if script, ok := sections["model"]; ok {
		m := fakemodel.Start()
		t.Cleanup(m.Close)
		replies, err := fakemodel.ParseScript(strings.NewReader(script))
		if err != nil {
			t.Fatalf("model section: %v", err)
		}
		m.Enqueue(replies...)
		modelURL = m.URL()
	}
	expand := strings.NewReplacer("$TMP", env.Tmp, "$CWD", env.Dir, "$MODEL_URL", modelURL).Replace

	vars := map[string]string{
		"HOME":            filepath.Join(env.Tmp, "home"),
		"XDG_CONFIG_HOME": filepath.Join(env.Tmp, "config"),
		"XDG_DATA_HOME":   filepath.Join(env.Tmp, "data"),
	}
	for _, line := range strings.Split(sections["env"], "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		vars[k] = expand(v)
	}
	if toml, ok := sections["config.toml"]; ok {
		path := filepath.Join(env.Tmp, "config", "crow-acp", "config.toml")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(expand(toml)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if seed, ok := sections["sessions"]; ok {
		seedSessions(t, filepath.Join(env.Tmp, "data", "crow-acp", "crow.db"), expand(seed))
	}
	args, err := splitWords(expand(strings.TrimSpace(sections["args"])))
	if err != nil {
		t.Fatalf("args: %v", err)
	}

	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, stdio{in: strings.NewReader(sections["stdin"]), out: &stdout, err: &stderr},
		func(k string) string { return vars[k] })

	norm := func(s string) string {
		s = strings.ReplaceAll(s, env.Tmp, "$TMP")
		s = strings.ReplaceAll(s, env.Dir, "$CWD")
		s = strings.ReplaceAll(s, modelURL, "$MODEL_URL")
		s = strings.ReplaceAll(s, runtime.Version(), "$GOVERSION")
		s = strings.ReplaceAll(s, runtime.GOOS+"/"+runtime.GOARCH, "$PLATFORM")
		s = crowtest.SessionID.ReplaceAllString(s, "$$SESSION")
		return timeRE.ReplaceAllString(s, "$$TIME")
	}
	got := map[string]string{
		"exit":   strconv.Itoa(code) + "\n",
		"stdout": norm(stdout.String()),
		"stderr": norm(stderr.String()),
	}
	if fixture.Updating() {
		var keep []txtar.File
		for _, f := range ar.Files {
			if _, out := got[f.Name]; !out {
				keep = append(keep, f)
			}
		}
		for _, k := range []string{"exit", "stdout", "stderr"} {
			keep = append(keep, txtar.File{Name: k, Data: []byte(got[k])})
		}
		ar.Files = keep
		if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, k := range []string{"exit", "stdout", "stderr"} {
		want, ok := sections[k]
		if !ok {
			t.Errorf("%s: no %q section (run with -update)", file, k)
			continue
		}
		if got[k] != want {
			t.Errorf("%s: %s differs\n--- want\n%s--- got\n%s", file, k, want, got[k])
		}
	}
}

var timeRE = regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}| UTC)?`)

// seedSessions stores the sessions of a "sessions" section.
func seedSessions(t *testing.T, dbPath, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dbPath), 0o700); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store, err := sqlite.Open(ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, line := range strings.Split(data, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var s struct {
			ID       string
			Cwd      string
			Title    string
			Metadata json.RawMessage // the agent's session metadata, as stored
			Messages []*persistence.Message
			// Compact applies a compaction of the messages with these seqs.
			Compact *struct {
				Seqs    []int64
				Summary string
			}
		}
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("sessions section: %v: %s", err, line)
		}
		if err := store.CreateSession(ctx, &persistence.Session{ID: s.ID, Cwd: s.Cwd, Title: s.Title, Metadata: s.Metadata}); err != nil {
			t.Fatal(err)
		}
		for _, m := range s.Messages {
			if m.Status == "" {
				m.Status = persistence.StatusComplete
			}
		}
		if len(s.Messages) > 0 {
			if err := store.AppendMessages(ctx, s.ID, s.Messages...); err != nil {
				t.Fatal(err)
			}
		}
		if c := s.Compact; c != nil {
			rec := &persistence.Compaction{SessionID: s.ID, Policy: "summarize", TokensBefore: 1000, TokensAfter: 200}
			for _, m := range s.Messages {
				if slices.Contains(c.Seqs, m.Seq) {
					rec.CompactedIDs = append(rec.CompactedIDs, m.ID)
				} else {
					rec.KeptIDs = append(rec.KeptIDs, m.ID)
				}
			}
			sum := &persistence.Message{Role: persistence.RoleSummary, Content: c.Summary, Status: persistence.StatusComplete}
			if err := store.Compact(ctx, rec, []*persistence.Message{sum}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// splitWords splits a command line like a POSIX shell would for simple
// quoting: 'single', "double" (with \" and \\), and bare words.
func splitWords(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, strconv.ErrSyntax
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, strconv.ErrSyntax
			}
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}
