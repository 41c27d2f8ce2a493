// Package safegit runs git for crow-acp's own purposes (the prompt's git
// facts, snapshots of a work tree) on repositories it does not trust: a
// cloned or unpacked workspace whose .git/config, or a file it includes,
// names commands. Nothing a repository's or the user's git configuration
// names runs: the settings below, given on git's command scope (which
// wins over every file), switch each such command off. A run is bounded
// in time and in the output kept, writes no optional locks, starts no
// pager, editor or prompt, and uses no transport.
//
// What is switched off, each checked against git's source (convert.c,
// fsmonitor-settings.c, hook.c, path.c, transport.c, promisor-remote.c,
// editor.c):
//
//   - filters: filter.<name>.clean, smudge and process set to "" for every
//     filter the configuration names (apply_filter runs a command only
//     when it is non-empty) and required to false (so a missing filter is
//     not an error). The names come from `git config --list`, read first
//     with the same environment, includes and conditional includes
//     resolved; a list too long to read whole is an error, not a guess.
//   - core.fsmonitor=false: a boolean false disables the monitor, hook or
//     daemon (a string would name the hook).
//   - hooks: core.hooksPath=/dev/null (no hook is found beneath it),
//     hook.<name>.enabled=false for every configured hook (git 2.54's
//     hooks from the configuration), and GIT_OPTIONAL_LOCKS=0 so `status`
//     does not write the index (whose write runs post-index-change).
//   - transports: protocol.allow=never and protocol.<name>.allow=never
//     for every protocol the configuration allows (a per-protocol setting
//     wins over protocol.allow), so no ssh command, remote helper or
//     credential helper starts; GIT_NO_LAZY_FETCH=1 (git 2.45) keeps a
//     partial clone from fetching a missing object.
//   - submodules: submodule.recurse=false; a command that compares work
//     trees must also pass --ignore-submodules=all, since a submodule's
//     own configuration was not read here.
//   - no pager (--no-pager), editor (GIT_EDITOR=: is never started), or
//     terminal prompt; gc.auto=0 and maintenance.auto=false.
//
// Commands that show differences also need --no-ext-diff and
// --no-textconv: an empty diff.external or textconv is not "none" to git.
//
// The environment keeps everything but git's own variables: GIT_DIR,
// GIT_WORK_TREE, GIT_EXTERNAL_DIFF, GIT_SSH_COMMAND, GIT_EXEC_PATH and the
// rest are dropped (a caller sets the ones it means in Cmd.Extra), except
// the user's choice of configuration files (GIT_CONFIG_GLOBAL,
// GIT_CONFIG_SYSTEM, GIT_CONFIG_NOSYSTEM), GIT_CEILING_DIRECTORIES and
// the user's GIT_CONFIG_COUNT pairs, which the settings above follow.
package safegit

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	// DefaultTimeout bounds a run (the configuration check and the
	// command together) when Cmd.Timeout is 0.
	DefaultTimeout = 5 * time.Second
	// DefaultMaxOutput is the standard output kept when Cmd.MaxOutput is 0.
	DefaultMaxOutput = 1 << 20
	// maxConfigList bounds `git config --list`: a configuration longer
	// than this is refused rather than half read.
	maxConfigList = 1 << 20
	// maxNames bounds the filters, hooks and protocols switched off: each
	// is a few variables of git's environment.
	maxNames = 1000
	// maxUserPairs bounds the user's GIT_CONFIG_COUNT pairs kept.
	maxUserPairs = 1000
	// stderrCap is how much of git's stderr an error quotes.
	stderrCap = 2 << 10
)

// Settings are the configuration every run has, whatever the repository
// names. Disable adds those for the filters, hooks and protocols a
// configuration names.
var Settings = [][2]string{
	// Git uses a bare repository only when named (GIT_DIR, --git-dir): a
	// folder planted with HEAD, config, objects/ and refs/ is never picked
	// up by a run in or below it.
	{"safe.bareRepository", "explicit"},
	{"core.fsmonitor", "false"},
	{"core.hooksPath", os.DevNull},
	{"protocol.allow", "never"},
	{"submodule.recurse", "false"},
	{"gc.auto", "0"},
	{"maintenance.auto", "false"},
}

// fixedEnv is set on every run, after the caller's environment.
var fixedEnv = []string{
	"GIT_OPTIONAL_LOCKS=0", // no index refresh written, so no post-index-change
	"GIT_NO_LAZY_FETCH=1",
	"GIT_TERMINAL_PROMPT=0",
	"GIT_ASKPASS=", // empty: not run (prompt.c)
	"GIT_EDITOR=:", // ":" is never started (editor.c)
	"GIT_SEQUENCE_EDITOR=:",
	"GIT_PAGER=cat",
	"LC_ALL=C", // messages and output in one language
}

// keptGitVars are git's variables a run keeps from the caller's
// environment: the user's choice of configuration files and of where
// discovery stops. The GIT_CONFIG_COUNT pairs are kept separately.
var keptGitVars = map[string]bool{
	"GIT_CONFIG_GLOBAL":               true,
	"GIT_CONFIG_SYSTEM":               true,
	"GIT_CONFIG_NOSYSTEM":             true,
	"GIT_CEILING_DIRECTORIES":         true,
	"GIT_DISCOVERY_ACROSS_FILESYSTEM": true,
}

// Cmd is one git command.
type Cmd struct {
	Dir  string   // where git runs
	Args []string // git's arguments, after the global options safegit adds
	// Env is the environment to start from (nil: this process's); git's
	// own variables are dropped from it as the package says.
	Env []string
	// Extra are variables set after that cleaning: GIT_DIR, GIT_WORK_TREE,
	// GIT_INDEX_FILE for a repository of the caller's own.
	Extra     []string
	Stdin     io.Reader     // nil: none
	Timeout   time.Duration // 0: DefaultTimeout
	MaxOutput int           // stdout kept; 0: DefaultMaxOutput
}

// Result is what a command wrote.
type Result struct {
	Stdout []byte // at most MaxOutput bytes
	Cut    bool   // stdout was longer: Stdout is its start
}

// ErrTimeout is the error of a run that took longer than its timeout; the
// error also wraps context.DeadlineExceeded.
var ErrTimeout = errors.New("git took too long")

// Run runs the command: first `git config --list` to learn what the
// configuration names, then the command with all of it switched off. An
// error wraps exec.ErrNotFound when git is not installed, and ErrTimeout
// when the run took longer than its timeout.
func (c Cmd) Run(ctx context.Context) (Result, error) {
	timeout := cmp.Or(c.Timeout, DefaultTimeout)
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("%w (%s)", ErrTimeout, timeout))
	defer cancel()
	env := cleanEnv(c.Env, c.Extra)
	pairs := append(userPairs(c.Env), Settings...)
	list, err := c.run(ctx, withPairs(env, pairs), nil, maxConfigList, "config", "--null", "--list")
	if err != nil {
		return Result{}, fmt.Errorf("reading the git configuration: %w", err)
	}
	if list.Cut {
		return Result{}, fmt.Errorf("the git configuration is longer than %d bytes: not checked, so not run", maxConfigList)
	}
	off, err := Disable(list.Stdout)
	if err != nil {
		return Result{}, err
	}
	return c.run(ctx, withPairs(env, append(pairs, off...)), c.Stdin, cmp.Or(c.MaxOutput, DefaultMaxOutput), c.Args...)
}

// run starts git in its own process group, killed whole when ctx ends.
func (c Cmd) run(ctx context.Context, env []string, stdin io.Reader, maxOut int, args ...string) (Result, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"--no-pager"}, args...)...)
	cmd.Dir = c.Dir
	cmd.Env = env
	cmd.Stdin = stdin
	out := &capped{max: maxOut}
	errOut := &capped{max: stderrCap}
	cmd.Stdout, cmd.Stderr = out, errOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 100 * time.Millisecond // a child holding the pipes open
	err := cmd.Run()
	res := Result{Stdout: out.buf.Bytes(), Cut: out.cut}
	switch {
	case err == nil:
		return res, nil
	case ctx.Err() != nil:
		return res, fmt.Errorf("git %s: %w: %w", name(args), context.Cause(ctx), ctx.Err())
	case errors.Is(err, exec.ErrNotFound):
		return res, fmt.Errorf("git is not installed: %w", err)
	}
	if msg := strings.TrimSpace(errOut.buf.String()); msg != "" {
		return res, fmt.Errorf("git %s: %w: %s", name(args), err, msg)
	}
	return res, fmt.Errorf("git %s: %w", name(args), err)
}

// name is the git command of args, for messages.
func name(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// Disable returns the settings that switch off what a configuration
// listed by `git config --null --list` names: every filter's commands,
// every configured hook and every protocol allowed by name.
func Disable(list []byte) ([][2]string, error) {
	var out [][2]string
	seen := map[string]bool{}
	for _, rec := range bytes.Split(list, []byte{0}) {
		key, _, _ := strings.Cut(string(rec), "\n")
		section, sub, ok := subsection(key)
		if !ok || seen[section+"."+sub] {
			continue
		}
		var add [][2]string
		switch section {
		case "filter":
			p := "filter." + sub
			add = [][2]string{{p + ".clean", ""}, {p + ".smudge", ""}, {p + ".process", ""}, {p + ".required", "false"}}
		case "hook":
			add = [][2]string{{"hook." + sub + ".enabled", "false"}}
		case "protocol":
			add = [][2]string{{"protocol." + sub + ".allow", "never"}}
		default:
			continue
		}
		if len(seen) == maxNames {
			return nil, fmt.Errorf("the git configuration names more than %d filters, hooks and protocols: not run", maxNames)
		}
		seen[section+"."+sub] = true
		out = append(out, add...)
	}
	return out, nil
}

// subsection splits a three-part key (section.subsection.name, as git
// lists it: section and name in lower case, the subsection as written and
// possibly holding dots) into its section and subsection.
func subsection(key string) (section, sub string, ok bool) {
	section, rest, ok := strings.Cut(key, ".")
	if !ok {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return "", "", false
	}
	return section, rest[:i], true
}

// cleanEnv is env (nil: this process's) without git's variables except
// keptGitVars and the config pairs (added back by withPairs), then extra,
// then fixedEnv.
func cleanEnv(env, extra []string) []string {
	if env == nil {
		env = os.Environ()
	}
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") && !keptGitVars[k] {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, extra...)
	return append(out, fixedEnv...)
}

// userPairs are the complete GIT_CONFIG_COUNT pairs of env (nil: this
// process's).
func userPairs(env []string) [][2]string {
	if env == nil {
		env = os.Environ()
	}
	vars := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "GIT_CONFIG_") {
			vars[k] = v
		}
	}
	n, err := strconv.Atoi(vars["GIT_CONFIG_COUNT"])
	if err != nil || n <= 0 || n > maxUserPairs {
		return nil
	}
	var pairs [][2]string
	for i := range n {
		k, okK := vars["GIT_CONFIG_KEY_"+strconv.Itoa(i)]
		v, okV := vars["GIT_CONFIG_VALUE_"+strconv.Itoa(i)]
		if okK && okV && k != "" {
			pairs = append(pairs, [2]string{k, v})
		}
	}
	return pairs
}

// withPairs is env with pairs as its GIT_CONFIG_COUNT settings (env holds
// none: cleanEnv dropped them).
func withPairs(env []string, pairs [][2]string) []string {
	out := append(env[:len(env):len(env)], "GIT_CONFIG_COUNT="+strconv.Itoa(len(pairs)))
	for i, kv := range pairs {
		n := strconv.Itoa(i)
		out = append(out, "GIT_CONFIG_KEY_"+n+"="+kv[0], "GIT_CONFIG_VALUE_"+n+"="+kv[1])
	}
	return out
}

// capped keeps the first max bytes written to it and drops the rest. The
// buffer is not embedded: io.Copy would call its ReadFrom, which reads
// everything.
type capped struct {
	buf bytes.Buffer
	max int
	cut bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		c.cut = true
		c.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return c.buf.Write(p)
}
