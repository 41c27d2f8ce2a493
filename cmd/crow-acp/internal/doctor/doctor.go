// Package doctor checks a set-up the way crow-acp will use it: the
// configuration file, the session database, the model endpoint (reachable,
// key accepted, model listed, its context window), the tokenizer and the
// log file. Each check says what is wrong and how to fix it; cmd/crow-acp
// prints them.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/transcript"
	"github.com/crow-acp/crow-acp/internal/agent"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/compaction"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/persistence/backend"
	"github.com/crow-acp/crow-acp/internal/provider"
)

var plural = transcript.Plural

// Check is one line of the doctor's report.
type Check struct {
	Status string // ok, warn, FAIL, skip
	Name   string
	Detail string
	Fix    string
	// KeyRejected: the endpoint answered 401/403 (login does not save
	// such a key).
	KeyRejected bool
}

// Run makes every check of cfg, in the order the report lists them;
// timeout bounds the requests to the model endpoint.
func Run(ctx context.Context, cfg *config.Settings, timeout time.Duration) []Check {
	checks := []Check{checkConfigFile(cfg), checkDatabase(ctx, cfg)}
	checks = append(checks, Endpoint(ctx, cfg, timeout)...)
	return append(checks, checkTokenizer(cfg), checkLog(cfg))
}

func checkConfigFile(cfg *config.Settings) Check {
	c := Check{Status: "ok", Name: "config"}
	switch {
	case cfg.FileFound:
		c.Detail = fmt.Sprintf("%s (%s)", cfg.File, plural(len(cfg.Models), "model"))
	case cfg.File == "":
		c.Detail = "no configuration file (no home directory); using environment and defaults"
	default:
		c.Detail = fmt.Sprintf("no file at %s; using environment and defaults (config.example.toml shows every key)", cfg.File)
	}
	return c
}

func checkDatabase(ctx context.Context, cfg *config.Settings) Check {
	c := Check{Name: "database"}
	path := backend.Describe(cfg.DB.V) // never a password
	if cfg.LocalDB() {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			dir := existingParent(filepath.Dir(path))
			if err := writableDir(dir); err != nil {
				c.Status, c.Detail = "FAIL", fmt.Sprintf("%s does not exist and cannot be created: %v", path, err)
				c.Fix = "set database.path, CROW_DB or --db to a writable location"
				return c
			}
			c.Status, c.Detail = "ok", path+" does not exist yet; it is created on first use"
			return c
		}
	}
	store, err := cfg.OpenStore(ctx)
	if err != nil {
		c.Status, c.Detail = "FAIL", err.Error()
		c.Fix = fmt.Sprintf("check the file's permissions and free space, or point database.path / CROW_DB elsewhere (now from %s)", cfg.DB.From)
		return c
	}
	defer store.Close()
	n, err := countSessions(ctx, store)
	if err != nil {
		c.Status, c.Detail = "FAIL", fmt.Sprintf("%s: %v", path, err)
		c.Fix = "the database may be damaged: back it up and run crow-acp sessions list to see what is readable"
		return c
	}
	c.Status, c.Detail = "ok", fmt.Sprintf("%s (%s)", path, plural(n, "session"))
	return c
}

// sessionLister is what the database check reads of the store.
type sessionLister interface {
	ListSessions(ctx context.Context, opts persistence.ListSessionsOptions) ([]persistence.Session, string, error)
}

func countSessions(ctx context.Context, store sessionLister) (int, error) {
	n, cursor := 0, ""
	for {
		ss, next, err := store.ListSessions(ctx, persistence.ListSessionsOptions{Limit: persistence.MaxListLimit, Cursor: cursor})
		if err != nil {
			return 0, err
		}
		n += len(ss)
		if next == "" {
			return n, nil
		}
		cursor = next
	}
}

// Endpoint asks GET {base}/models the way the model client would
// (provider.ListModels): it proves the endpoint is reachable, that the key
// is accepted, and tells whether the model is served.
func Endpoint(ctx context.Context, cfg *config.Settings, timeout time.Duration) []Check {
	ep := Check{Name: "endpoint"}
	model := Check{Name: "model"}
	base := strings.TrimRight(cfg.BaseURL.V, "/")
	urlFix := fmt.Sprintf("start the model server, or set the endpoint with OPENAI_BASE_URL, --base-url or providers.NAME.base_url (now from %s)", cfg.BaseURL.From)
	listFix := "check that the base URL is the API root including /v1 " + fmt.Sprintf("(now from %s)", cfg.BaseURL.From)

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ids, err := provider.ListModels(ctx, cfg.ClientConfig(cfg.Provider.V))
	var status *provider.StatusError
	switch {
	case errors.As(err, &status) && (status.Code == http.StatusUnauthorized || status.Code == http.StatusForbidden):
		ep.Status = "FAIL"
		ep.Detail = fmt.Sprintf("%s rejected the API key (HTTP %d)", base, status.Code)
		if cfg.APIKey.V == "" {
			ep.Detail = fmt.Sprintf("%s wants an API key (HTTP %d) and %s is empty", base, status.Code, cfg.APIKeyEnv.V)
		}
		ep.Fix = fmt.Sprintf("run crow-acp login, or export %s with a valid key for this endpoint", cfg.APIKeyEnv.V)
		ep.KeyRejected = true
		return []Check{ep, skip(model, cfg.Model.V)}
	case errors.As(err, &status) && status.Code == http.StatusNotFound:
		ep.Status, ep.Detail = "warn", fmt.Sprintf("%s is reachable but does not list models (GET /models: 404); the model name cannot be checked", base)
		return []Check{ep, skip(model, cfg.Model.V)}
	case errors.As(err, &status):
		ep.Status, ep.Detail, ep.Fix = "FAIL", fmt.Sprintf("%s answered GET /models with HTTP %d", base, status.Code), listFix
		return []Check{ep, skip(model, cfg.Model.V)}
	case errors.Is(err, provider.ErrNotModelList):
		ep.Status, ep.Detail, ep.Fix = "FAIL", fmt.Sprintf("%s/models did not answer with an OpenAI model list", base), listFix
		return []Check{ep, skip(model, cfg.Model.V)}
	case err != nil:
		ep.Status, ep.Detail, ep.Fix = "FAIL", fmt.Sprintf("%s: %s", base, netReason(err, timeout)), urlFix
		return []Check{ep, skip(model, cfg.Model.V)}
	}
	keyNote := "no API key sent"
	if cfg.APIKey.V != "" {
		keyNote = "API key accepted"
	}
	ep.Status, ep.Detail = "ok", fmt.Sprintf("%s reachable, %s, %s listed", base, keyNote, plural(len(ids), "model"))

	found := false
	for _, id := range ids {
		if id == cfg.Model.V {
			found = true
		}
	}
	switch {
	case found:
		model.Status, model.Detail = "ok", cfg.Model.V+" is served"
	case len(ids) == 0:
		model.Status, model.Detail = "warn", cfg.Model.V+": the endpoint lists no models, so the name cannot be checked"
	default:
		model.Status = "FAIL"
		model.Detail = fmt.Sprintf("%s is not among the models the endpoint lists: %s", cfg.Model.V, listSome(ids, 8))
		model.Fix = fmt.Sprintf("set model in the configuration file, CROW_MODEL or --model to one of them (now from %s)", cfg.Model.From)
	}
	out := []Check{ep, model}
	if model.Status == "ok" {
		out = append(out, checkWindow(ctx, cfg))
	}
	return out
}

func skip(c Check, model string) Check {
	c.Status, c.Detail = "skip", model+": the endpoint could not be asked"
	return c
}

// netReason says why a request failed in words that do not depend on the
// operating system's error strings.
func netReason(err error, timeout time.Duration) string {
	var dnsErr *net.DNSError
	var urlErr *url.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused (nothing listens there)"
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Sprintf("no answer within %s", timeout)
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("unknown host %q", dnsErr.Name)
	case errors.As(err, &urlErr):
		return urlErr.Err.Error()
	default:
		return err.Error()
	}
}

func listSome(ids []string, n int) string {
	if len(ids) <= n {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:n], ", ") + fmt.Sprintf(" and %d more", len(ids)-n)
}

// checkTokenizer loads the token counter compaction will use for the
// model (the same constructor the agent calls) and counts a sample.
func checkTokenizer(cfg *config.Settings) Check {
	c := Check{Name: "tokenizer"}
	enc, from := compaction.EncodingAuto, "the default"
	if cfg.Selected != nil && cfg.Selected.Tokenizer != "" {
		enc, from = cfg.Selected.Tokenizer, fmt.Sprintf("[[models]] %s", cfg.Selected.Name)
	}
	counter, err := compaction.NewCounter(cfg.Model.V, enc)
	if err != nil {
		c.Status, c.Detail = "FAIL", fmt.Sprintf("%s (set in %s): %v", enc, from, err)
		c.Fix = "set tokenizer to one of " + strings.Join(compaction.Encodings, ", ")
		return c
	}
	if n := counter.Count("crow-acp counts tokens offline."); n <= 0 {
		c.Status, c.Detail = "FAIL", fmt.Sprintf("%s: counted %d tokens in a sample", counter.Name(), n)
		return c
	}
	name := counter.Name()
	switch {
	case name == compaction.EncodingEstimate && enc != compaction.EncodingEstimate:
		c.Detail = fmt.Sprintf("estimate (auto, %s): %s has no known vocabulary, so tokens are estimated generously", from, cfg.Model.V)
	case enc == compaction.EncodingAuto:
		c.Detail = fmt.Sprintf("%s (auto, %s: the encoding of %s)", name, from, cfg.Model.V)
	default:
		c.Detail = fmt.Sprintf("%s (set in %s)", name, from)
	}
	c.Status = "ok"
	return c
}

func checkLog(cfg *config.Settings) Check {
	c := Check{Name: "log"}
	if cfg.LogFile.V == "" {
		c.Status, c.Detail = "ok", "serve logs to stderr (editors keep it); set log.file or CROW_LOG_FILE to keep a file"
		return c
	}
	dir := filepath.Dir(cfg.LogFile.V)
	if err := writableDir(existingParent(dir)); err != nil {
		c.Status, c.Detail = "FAIL", fmt.Sprintf("%s: cannot create it: %v", cfg.LogFile.V, err)
		c.Fix = fmt.Sprintf("set log.file or CROW_LOG_FILE to a writable path (now from %s)", cfg.LogFile.From)
		return c
	}
	if f, err := os.OpenFile(cfg.LogFile.V, os.O_WRONLY|os.O_APPEND, 0); err == nil {
		f.Close()
	} else if !errors.Is(err, os.ErrNotExist) {
		c.Status, c.Detail = "FAIL", fmt.Sprintf("%s: %v", cfg.LogFile.V, err)
		c.Fix = fmt.Sprintf("fix its permissions, or set log.file or CROW_LOG_FILE elsewhere (now from %s)", cfg.LogFile.From)
		return c
	}
	c.Status, c.Detail = "ok", cfg.LogFile.V+" (JSON lines, "+cfg.LogLevel.V+" and above)"
	return c
}

// existingParent returns dir or its nearest existing ancestor.
func existingParent(dir string) string {
	for {
		if _, err := os.Stat(dir); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		dir = parent
	}
}

// writableDir checks that files can be created in dir.
func writableDir(dir string) error {
	f, err := os.CreateTemp(dir, ".crow-doctor-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// checkWindow reports the selected model's context window and where it
// comes from, by the rule a new agent process applies: the configuration,
// the window the agent cached from the endpoint, crow-acp's table of known
// models, or the endpoint itself (asked the way the agent asks it, see
// provider.DiscoverWindow). It then checks that the part every request
// carries (system prompt and tool schemas, counted as the agent counts
// them) leaves room for a conversation in that window.
func checkWindow(ctx context.Context, cfg *config.Settings) Check {
	c := Check{Name: "window", Status: "ok"}
	model := cfg.Model.V
	var cached *persistence.ModelWindow
	if w, ok := cfg.CachedWindow(ctx); ok {
		cached = &w
	}
	configured, from := cfg.ConfiguredWindow()
	window, source := request.EffectiveWindow(model, configured, cached)
	switch {
	case source == request.WindowConfigured:
		c.Detail = fmt.Sprintf("%d tokens for %s (configured: %s)", window, model, from)
	case cached != nil && source == cached.Source:
		c.Detail = fmt.Sprintf("%d tokens for %s (%s; cached in the session database, crow-acp config forget-window clears it)", window, model, source)
	case source == request.WindowBuiltIn:
		c.Detail = fmt.Sprintf("%d tokens for %s (built in: crow-acp knows this model)", window, model)
	default:
		w, err := provider.DiscoverWindow(ctx, cfg.ClientConfig(cfg.Provider.V), model)
		switch {
		case err != nil:
			c.Status = "warn"
			c.Detail = "no context window configured for " + model + " and the endpoint does not tell it: compaction cannot know when the context is full"
			c.Fix = "add a [[models]] entry with context_window, or set CROW_CONTEXT_WINDOW"
			return c
		case w.Tokens < request.MinLearnedWindow:
			c.Status = "warn"
			c.Detail = fmt.Sprintf("the endpoint claims a %d-token window for %s (%s), under the %d-token floor: crow-acp ignores it", w.Tokens, model, w.Source, request.MinLearnedWindow)
			c.Fix = "check the model server's context setting, or set CROW_CONTEXT_WINDOW"
			return c
		}
		window, source = w.Tokens, "discovered: "+w.Source
		c.Detail = fmt.Sprintf("%d tokens for %s (%s)", window, model, source)
	}
	return fitPrefix(c, cfg, window, source)
}

// fitPrefix fails the window check when the fixed part of every request
// does not fit the window, and warns when it leaves under a quarter of it
// for the conversation.
func fitPrefix(c Check, cfg *config.Settings, window int, source string) Check {
	cwd, _ := os.Getwd()
	ac := cfg.Agent("doctor")
	room := agent.MeasurePrefix(ac, cwd, window)
	left := room.Budget - room.Fixed
	if left >= window/4 {
		return c // the count is left out: it changes with every prompt or tool edit
	}
	c.Status = "warn"
	if left <= 0 {
		c.Status = "FAIL"
	}
	c.Detail += fmt.Sprintf("; the system prompt and tool schemas alone take %d tokens, leaving %d for the conversation after %d reserved for the reply",
		room.Fixed, max(left, 0), room.Reserve)
	need := 8192
	for need < 4*room.Fixed+room.Reserve {
		need *= 2
	}
	tools := ""
	if !ac.NoTools {
		tools = `, or turn the tools off (CROW_TOOLS=off, or tools = "off" in the configuration file)`
	}
	switch {
	case strings.HasPrefix(source, "discovered") || strings.HasPrefix(source, "learned from"):
		server := "restart the model server with a larger context"
		if strings.Contains(source, "llama.cpp") {
			server = fmt.Sprintf("restart llama-server with a larger context (-c %d)", need)
		}
		c.Fix = fmt.Sprintf("the window is the server's own, so raising CROW_CONTEXT_WINDOW would only earn its refusal: %s and then run crow-acp config forget-window%s", server, tools)
	default:
		c.Fix = fmt.Sprintf("set a larger context_window (CROW_CONTEXT_WINDOW), %d or more, if the model's server takes it%s", need, tools)
	}
	return c
}
