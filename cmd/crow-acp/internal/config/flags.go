package config

import (
	"flag"
	"fmt"

	"github.com/crow-acp/crow-acp/internal/agent"
	"github.com/crow-acp/crow-acp/internal/imagecheck"
)

// Flags are the command-line flags that override configuration, shared by
// the subcommands that need them.
type Flags struct {
	fs      *flag.FlagSet
	config  string
	model   string
	baseURL string
	db      string
	logFile string
	level   string
	maxLine int
}

// Group selects which configuration flags a subcommand accepts.
type Group int

const (
	FlagsStore Group = 1 << iota // --db
	FlagsModel                   // --model, --base-url
	FlagsLog                     // --log-file, --log-level
	FlagsWire                    // --max-line-bytes
	FlagsAll   = FlagsStore | FlagsModel | FlagsLog | FlagsWire
)

// AddFlags registers --config and the groups asked for on fs. Load reads
// them after fs was parsed.
func AddFlags(fs *flag.FlagSet, groups Group) *Flags {
	cf := &Flags{fs: fs}
	fs.StringVar(&cf.config, "config", "", "configuration file (env CROW_CONFIG; default $XDG_CONFIG_HOME/crow-acp/config.toml)")
	if groups&FlagsModel != 0 {
		fs.StringVar(&cf.model, "model", "", "model name sent to the endpoint (env CROW_MODEL; file: model)")
		fs.StringVar(&cf.baseURL, "base-url", "", "OpenAI-compatible API base URL including /v1 (env OPENAI_BASE_URL; file: providers.NAME.base_url)")
	}
	if groups&FlagsStore != 0 {
		fs.StringVar(&cf.db, "db", "", "session database: a SQLite file, or a postgres:// URL (env CROW_DB; file: database.path)")
	}
	if groups&FlagsLog != 0 {
		fs.StringVar(&cf.logFile, "log-file", "", "write logs to this file (env CROW_LOG_FILE; file: log.file)")
		fs.StringVar(&cf.level, "log-level", "", "debug, info, warn or error (env CROW_LOG_LEVEL; file: log.level)")
	}
	if groups&FlagsWire != 0 {
		fs.IntVar(&cf.maxLine, "max-line-bytes", 0, fmt.Sprintf("largest JSON-RPC message accepted on stdin, in bytes (default: what a prompt within limits.prompt_bytes and limits.prompt_image_bytes needs, %d with theirs)", imagecheck.LineBytes(agent.DefaultMaxPromptBytes, imagecheck.DefaultMaxPromptImageBytes)))
	}
	return cf
}

// set reports whether the flag was given on the command line; nil Flags
// have none.
func (cf *Flags) set(name string) bool {
	if cf == nil {
		return false
	}
	found := false
	cf.fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			found = true
		}
	})
	return found
}

// get is the value of a flag given on the command line.
func (cf *Flags) get(name string) string { return cf.fs.Lookup(name).Value.String() }
