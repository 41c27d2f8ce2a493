package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/crow-acp/crow-acp/acp"
)

// config is the effective configuration: flags > environment > defaults.
type config struct {
	baseURL      string
	apiKey       string // from OPENAI_API_KEY only: flags show up in `ps`
	model        string
	dbPath       string
	logFile      string
	logLevel     string
	maxLineBytes int
	showVersion  bool
}

const defaultModel = "gpt-4o-mini"

// errHelp means --help was asked for and printed.
var errHelp = errors.New("help requested")

// usageError is a configuration mistake; the process exits with exitUsage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// parseConfig reads flags over environment over defaults. --help prints to
// stdout (it was asked for); mistakes go to the caller as usageError.
func parseConfig(args []string, getenv func(string) string, stdout io.Writer) (*config, error) {
	cfg := &config{
		baseURL:      getenv("OPENAI_BASE_URL"),
		apiKey:       getenv("OPENAI_API_KEY"),
		model:        firstNonEmpty(getenv("CROW_MODEL"), defaultModel),
		dbPath:       firstNonEmpty(getenv("CROW_DB"), defaultDBPath(getenv)),
		logFile:      getenv("CROW_LOG_FILE"),
		logLevel:     firstNonEmpty(getenv("CROW_LOG_LEVEL"), "info"),
		maxLineBytes: acp.DefaultMaxLineBytes,
	}
	fs := flag.NewFlagSet("crow-acp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.baseURL, "base-url", cfg.baseURL, "OpenAI-compatible API base URL, e.g. http://127.0.0.1:11434/v1 (env OPENAI_BASE_URL; default https://api.openai.com/v1)")
	fs.StringVar(&cfg.model, "model", cfg.model, "model name sent to the endpoint (env CROW_MODEL)")
	fs.StringVar(&cfg.dbPath, "db", cfg.dbPath, "SQLite database file holding every session (env CROW_DB)")
	fs.StringVar(&cfg.logFile, "log-file", cfg.logFile, "write logs to this file instead of stderr (env CROW_LOG_FILE)")
	fs.StringVar(&cfg.logLevel, "log-level", cfg.logLevel, "debug, info, warn or error (env CROW_LOG_LEVEL)")
	fs.IntVar(&cfg.maxLineBytes, "max-line-bytes", cfg.maxLineBytes, "largest JSON-RPC message accepted on stdin, in bytes")
	fs.BoolVar(&cfg.showVersion, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usageText)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil, errHelp
		}
		return nil, &usageError{err.Error() + " (see crow-acp --help)"}
	}
	if fs.NArg() > 0 {
		return nil, &usageError{fmt.Sprintf("unexpected argument %q (see crow-acp --help)", fs.Arg(0))}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func (c *config) validate() error {
	switch c.logLevel {
	case "debug", "info", "warn", "error":
	default:
		return &usageError{fmt.Sprintf("invalid log level %q: use debug, info, warn or error", c.logLevel)}
	}
	if c.maxLineBytes < 1024 {
		return &usageError{fmt.Sprintf("--max-line-bytes %d is too small (at least 1024)", c.maxLineBytes)}
	}
	if c.baseURL != "" && !strings.HasPrefix(c.baseURL, "http://") && !strings.HasPrefix(c.baseURL, "https://") {
		return &usageError{fmt.Sprintf("invalid base URL %q: it must start with http:// or https://", c.baseURL)}
	}
	if c.dbPath == "" {
		return &usageError{"no database path: set CROW_DB or --db (no home directory to default to)"}
	}
	return nil
}

const usageText = `crow-acp: an Agent Client Protocol coding agent.

Editors start it as a subprocess and speak ACP (JSON-RPC, one message per line)
over stdin/stdout. Sessions are stored in SQLite and survive restarts.

Usage:
  crow-acp [flags]

Environment:
  OPENAI_BASE_URL   OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, OpenRouter...)
  OPENAI_API_KEY    API key, sent as a Bearer token; never logged or stored
  CROW_MODEL        model name
  CROW_DB           SQLite database path
  CROW_LOG_FILE     log file (default: stderr)
  CROW_LOG_LEVEL    debug | info | warn | error

Flags:
`

// defaultDBPath is $XDG_DATA_HOME/crow-acp/crow.db, or
// ~/.local/share/crow-acp/crow.db.
func defaultDBPath(getenv func(string) string) string {
	if dir := getenv("XDG_DATA_HOME"); dir != "" && filepath.IsAbs(dir) {
		return filepath.Join(dir, "crow-acp", "crow.db")
	}
	home := getenv("HOME")
	if home == "" {
		if h, err := os.UserHomeDir(); err == nil {
			home = h
		}
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".local", "share", "crow-acp", "crow.db")
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func exitCodeFor(err error, stderr io.Writer) int {
	var ue *usageError
	switch {
	case errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "crow-acp: %v\n", err)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "crow-acp: %v\n", err)
		return exitError
	}
}

func writeLine(w io.Writer, s string) { fmt.Fprintln(w, s) }
