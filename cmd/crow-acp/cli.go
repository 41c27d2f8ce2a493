package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/permissions"
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e *env, args []string) int
}

// commands in the order `crow-acp --help` lists them. The first is the
// default when no subcommand is named.
func commands() []command {
	return []command{
		{"serve", "speak ACP on stdin/stdout (the default with pipes; editors run this)", runServe},
		{"chat", "converse with the agent in the terminal (the default in a terminal)", runChat},
		{"exec", "run one prompt in the terminal and stream the answer", runExec},
		{"sessions", "list, show, export, delete, verify or rebuild stored sessions", runSessions},
		{"login", "save the model endpoint's API key (what an editor's sign-in runs)", runLogin},
		{"doctor", "check the configuration, database and model endpoint", runDoctor},
		{"config", "show the effective configuration and where each value came from; forget cached windows", runConfig},
		{"permissions", permissions.Summary, func(ctx context.Context, e *env, args []string) int {
			err := permissions.Run(ctx, permissions.Env{Out: e.std.out, Err: e.std.err, Getenv: e.getenv,
				Parse: func(fs *flag.FlagSet, args []string) ([]string, error) { return parseArgs(fs, args, e) }}, args)
			if err != nil {
				return e.fail(err)
			}
			return exitOK
		}},
		{"migrate", "copy every session from one store to another (SQLite, PostgreSQL) and verify it", runMigrate},
		{"version", "print the version", runVersion},
	}
}

// dispatch picks the subcommand. Without one, or when the first argument is
// a flag, crow-acp serves ACP: editors configured before subcommands existed
// keep working. Only a bare "crow-acp" with a terminal on stdin and stdout
// (a person, never an editor's pipes) starts a chat instead.
func dispatch(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		if interactive(e.std) {
			fmt.Fprintln(e.std.err, "crow-acp: starting a chat (editors get the ACP server over pipes; \"crow-acp serve\" forces it)")
			return runChat(ctx, e, nil)
		}
		return runServe(ctx, e, nil)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 && args[0] == "help" {
			return dispatch(ctx, e, []string{args[1], "--help"})
		}
		fmt.Fprint(e.std.out, topUsage())
		return exitOK
	case "-version", "--version":
		return runVersion(ctx, e, args[1:])
	}
	if strings.HasPrefix(args[0], "-") {
		return runServe(ctx, e, args)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, e, args[1:])
		}
	}
	return e.fail(config.Usagef("unknown command %q (see crow-acp --help)", args[0]))
}

func topUsage() string {
	var b strings.Builder
	b.WriteString(`crow-acp: an Agent Client Protocol coding agent.

Editors start it as a subprocess and speak ACP (JSON-RPC, one message per line)
over stdin/stdout. Sessions are stored in a database and survive restarts.

Usage:
  crow-acp [serve] [flags]          speak ACP on stdio (a bare crow-acp in a terminal chats)
  crow-acp <command> [arguments]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-12s %s\n", c.name, c.summary)
	}
	b.WriteString(`
Run "crow-acp <command> --help" for a command's flags.

Configuration (highest precedence first): flags, environment variables, the
file $XDG_CONFIG_HOME/crow-acp/config.toml (~/.config/crow-acp/config.toml),
built-in defaults. "crow-acp config show" prints the result.

Environment (most variables have a key in the file too: config.example.toml
names each one's variable):
  OPENAI_BASE_URL         OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, OpenRouter...)
  OPENAI_API_KEY          API key, sent as a Bearer token; never logged or stored
                          (a provider in the file may name another variable)
  CROW_MODEL              model name
  CROW_DB                 session database: a SQLite path, or a postgres:// URL
  CROW_CONFIG             configuration file path
  CROW_LOG_FILE           log file (serve default: stderr)
  CROW_LOG_LEVEL          debug | info | warn | error
  CROW_MAX_MODEL_CALLS    cap on model requests per prompt turn
  CROW_COMMAND_TIMEOUT    default timeout of run_command (2m0s)
  CROW_TOOL_OUTPUT_LIMIT  bytes of one tool result the model sees (8192)
  CROW_TOOLS              on | off (off: the model gets no tools)
  CROW_SYSTEM_PROMPT      replaces the built-in system prompt
  CROW_SYSTEM_PROMPT_APPEND
                          text added to the system prompt
  CROW_CONTEXT_WINDOW     the model's context window, in tokens
  CROW_OUTPUT_RESERVE     tokens of the window kept free for the reply
  CROW_COMPACT_THRESHOLD  compact when the context reaches this fraction of the window minus the reserve
  CROW_AUTO_COMPACT       false: never compact automatically (an overflow is an error)
  CROW_LEASE_TTL          how long a session stays locked to a process after its last heartbeat

Exit codes:
  0    success
  1    runtime failure (database, model endpoint); doctor: a check failed
  2    bad command line or configuration
  3    the session named does not exist
  4    exec: the turn stopped early (max tokens, max model calls, refusal)
  70   internal error (a bug; the stack is on stderr)
  130  exec: interrupted (Ctrl-C)
`)
	return b.String()
}
