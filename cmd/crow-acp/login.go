package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode"

	"golang.org/x/term"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/doctor"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/terminal"
)

const loginUsage = `Usage: crow-acp login [--config FILE] [--base-url URL] [--timeout 10s]

Asks for the API key of the model endpoint (typed without echo on a
terminal; otherwise the first line of stdin), checks it against the endpoint
(GET /models) and saves it in the credentials file beside the configuration
file ($XDG_CONFIG_HOME/crow-acp/credentials, mode 0600), under the name of
its variable (OPENAI_API_KEY, or the provider's api_key_env). crow-acp reads
the key from there whenever that variable is not set in the environment;
a running crow-acp uses it from its next request on.

Editors run this for their sign-in button (ACP terminal auth). A key the
endpoint rejects is not saved (exit 1); an endpoint that cannot be reached
does not stop the key from being saved.
`

// maxKeyBytes bounds a pasted key.
const maxKeyBytes = 4096

func runLogin(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet("login", loginUsage)
	timeout := fs.Duration("timeout", 10*time.Second, "how long to wait for the model endpoint")
	cf := config.AddFlags(fs, config.FlagsModel)
	pos, err := parseArgs(fs, args, e)
	if err == nil {
		err = wantArgs(fs, pos, 0, 0, "")
	}
	if err != nil {
		return e.fail(err)
	}
	cfg, err := config.Load(cf, e.getenv)
	if err != nil {
		return e.fail(err)
	}
	if cfg.Credentials == "" {
		return e.fail(config.Usagef("login: no home directory to keep the credentials file in: set HOME or XDG_CONFIG_HOME"))
	}
	name := cfg.APIKeyEnv.V
	fmt.Fprintf(e.std.err, "API key for %s (saved as %s in %s)\n", cfg.BaseURL.V, name, cfg.Credentials)
	key, err := readKey(e)
	if err != nil {
		return e.fail(err)
	}

	cfg.APIKey = config.Value[string]{V: key, From: config.Source{Kind: "login"}}
	ep := doctor.Endpoint(ctx, cfg, *timeout)[0]
	switch {
	case ep.KeyRejected:
		fmt.Fprintf(e.std.err, "crow-acp: %s; the key was not saved\n", ep.Detail)
		return exitError
	case ep.Status == "FAIL":
		fmt.Fprintf(e.std.err, "warning: the key could not be checked: %s\n", ep.Detail)
	}
	if err := config.SaveCredential(cfg.Credentials, name, key); err != nil {
		return e.fail(err)
	}
	fmt.Fprintf(e.std.err, "Saved. crow-acp uses this key for %s from the next request on.\n", cfg.BaseURL.V)
	if e.getenv(name) != "" {
		fmt.Fprintf(e.std.err, "note: %s is also set in this environment, and wins over the saved key there\n", name)
	}
	return exitOK
}

// readKey reads the key without echo from a terminal, else the first line
// of stdin. Keys are one printable word.
func readKey(e *env) (string, error) {
	var raw string
	if f, ok := e.std.in.(*os.File); ok && terminal.IsTerminal(f) {
		fmt.Fprint(e.std.err, "key: ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(e.std.err)
		if err != nil {
			return "", fmt.Errorf("login: reading the key: %w", err)
		}
		raw = string(b)
	} else {
		line, err := bufio.NewReaderSize(io.LimitReader(e.std.in, maxKeyBytes+2), maxKeyBytes+2).ReadString('\n')
		if err != nil && err != io.EOF {
			return "", fmt.Errorf("login: reading the key: %w", err)
		}
		raw = line
	}
	key := strings.TrimSpace(raw)
	switch {
	case key == "":
		return "", config.Usagef("login: no key given")
	case len(key) > maxKeyBytes:
		return "", config.Usagef("login: the key is longer than %d bytes", maxKeyBytes)
	case strings.IndexFunc(key, func(r rune) bool { return r > unicode.MaxASCII || !unicode.IsPrint(r) || unicode.IsSpace(r) }) >= 0:
		return "", config.Usagef("login: the key must be one word of printable ASCII characters")
	}
	return key, nil
}
