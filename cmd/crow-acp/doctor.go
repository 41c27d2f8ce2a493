package main

import (
	"context"
	"fmt"
	"time"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/doctor"
	"github.com/crow-acp/crow-acp/internal/secret"
	"github.com/crow-acp/crow-acp/internal/termsafe"
)

const doctorUsage = `Usage: crow-acp doctor [--timeout D] [flags]

Checks a set-up, one line per check: the configuration file, the session
database, the model endpoint (reachable, key accepted, model listed), the
tokenizer and the log file. Each line is "ok", "warn", "FAIL" or "skip";
a FAIL line says how to fix it. Exits 0 when nothing failed, 1 otherwise.
`

func runDoctor(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet("doctor", doctorUsage)
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the model endpoint")
	cf := config.AddFlags(fs, config.FlagsStore|config.FlagsModel|config.FlagsLog)
	pos, err := parseArgs(fs, args, e)
	if err == nil {
		err = wantArgs(fs, pos, 0, 0, "")
	}
	if err != nil {
		return e.fail(err)
	}
	red := secret.NewRedactor() // set once the configuration is read
	report := func(checks []doctor.Check) int {
		code := exitOK
		for _, c := range checks {
			// A detail may quote the endpoint (its model list, an error).
			c.Detail, c.Fix = termsafe.Text(red.Redact(c.Detail)), termsafe.Text(red.Redact(c.Fix))
			fmt.Fprintf(e.std.out, "%-5s %-10s %s\n", c.Status, c.Name, c.Detail)
			if c.Fix != "" {
				fmt.Fprintf(e.std.out, "%-16s fix: %s\n", "", c.Fix)
			}
			if c.Status == "FAIL" {
				code = exitError
			}
		}
		return code
	}
	cfg, err := config.Load(cf, e.getenv)
	if err != nil {
		// The doctor reports a broken configuration as a failed check
		// rather than refusing to run.
		return report([]doctor.Check{{Status: "FAIL", Name: "config", Detail: err.Error(),
			Fix: "correct the file or the variable named above (config.example.toml documents every key)"}})
	}
	red = cfg.Redactor() // a password in the base URL, a header value…
	return report(doctor.Run(ctx, cfg, *timeout))
}
