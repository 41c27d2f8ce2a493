package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/transcript"
	"github.com/crow-acp/crow-acp/internal/agent/request"
)

const configUsage = `Usage: crow-acp config show [--json] [flags]
       crow-acp config forget-window [--model M] [--all] [flags]

show prints the effective configuration: each setting, its value and where
the value came from (flag, env, file:line, database or default).
Precedence: flags > environment > configuration file > defaults. Secrets
are masked. context_window is the window a new process uses for the
selected model and its source: configured, cached from the endpoint
(discovered, or learned from a refusal or a truncation), built in, or
asked from the endpoint at start.

forget-window deletes the context window crow-acp cached for the selected
model (--model) on its endpoint, or every cached window with --all: the
next process asks the endpoint again. A running agent keeps what it
learned until it exits.
`

func runConfig(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet("config", configUsage)
	asJSON := fs.Bool("json", false, "show: print JSON instead of a table")
	all := fs.Bool("all", false, "forget-window: forget every cached window, of every endpoint and model")
	cf := config.AddFlags(fs, config.FlagsAll)
	pos, err := parseArgs(fs, args, e)
	if err == nil {
		err = wantArgs(fs, pos, 1, 1, `subcommand ("show" or "forget-window")`)
	}
	if err == nil && pos[0] != "show" && pos[0] != "forget-window" {
		err = config.Usagef("config: unknown subcommand %q: use \"show\" or \"forget-window\" (see crow-acp config --help)", pos[0])
	}
	if err != nil {
		return e.fail(err)
	}
	cfg, err := config.Load(cf, e.getenv)
	if err != nil {
		return e.fail(err)
	}
	if pos[0] == "forget-window" {
		return forgetWindow(ctx, e, cfg, *all)
	}
	rows := cfg.WithCachedWindow(ctx, cfg.Rows())
	if *asJSON {
		type jsonRow struct {
			Key    string `json:"key"`
			Value  string `json:"value"`
			Source string `json:"source"`
		}
		out := struct {
			File      string             `json:"file"`
			FileFound bool               `json:"fileFound"`
			Settings  []jsonRow          `json:"settings"`
			Models    []config.ModelSpec `json:"models"`
		}{File: cfg.File, FileFound: cfg.FileFound, Settings: []jsonRow{}, Models: cfg.Models}
		for _, r := range rows {
			out.Settings = append(out.Settings, jsonRow{r.Key, r.Value, r.From.String()})
		}
		if out.Models == nil {
			out.Models = []config.ModelSpec{}
		}
		enc := json.NewEncoder(e.std.out)
		enc.SetIndent("", "  ")
		_ = enc.Encode(out)
		return exitOK
	}
	fmt.Fprintf(e.std.out, "configuration file: %s\n\n", cfg.FileStatus())
	// Values and sources hold paths of any length: only the key column is
	// aligned, so that lines stay short and stable.
	width := 0
	for _, r := range rows {
		width = max(width, len(r.Key))
	}
	for _, r := range rows {
		fmt.Fprintf(e.std.out, "%-*s  %s  (%s)\n", width, r.Key, r.Value, r.From)
	}
	if len(cfg.Models) > 0 {
		from := cfg.File
		if cfg.ModelsFrom.Kind == "env" {
			from = cfg.ModelsFrom.String()
		}
		fmt.Fprintf(e.std.out, "\nmodels (%s):\n", from)
		tw := tabwriter.NewWriter(e.std.out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  NAME\tPROVIDER\tWINDOW\tRESERVE\tTOKENIZER\tIMAGES\tUSD/1M IN\tOUT\tCACHED IN\tLINE")
		for _, m := range cfg.Models {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", m.Name, orDash(m.Provider),
				intOrDash(m.ContextWindow), intOrDash(m.OutputReserve), orDash(m.Tokenizer), m.ImagesShown(),
				priceOrDash(m.InputPrice), priceOrDash(m.OutputPrice), priceOrDash(m.CachedInputPrice), m.Line)
		}
		_ = tw.Flush()
		for _, m := range cfg.Models {
			if in, cached, out, ok := request.BuiltinPrice(m.Name); ok && !m.PricesSet && (m.Currency == "" || m.Currency == request.DefaultCurrency) {
				fmt.Fprintf(e.std.out, "  %s: built-in list price %s in, %s cached, %s out USD per 1M tokens (read %s; set prices to replace it)\n",
					m.Name, priceOrDash(in), priceOrDash(cached), priceOrDash(out), request.BuiltinPricesRead)
			}
		}
	}
	return exitOK
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func intOrDash(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

func priceOrDash(p float64) string {
	if p == 0 {
		return "-"
	}
	return strconv.FormatFloat(p, 'f', -1, 64)
}

// forgetWindow deletes cached context windows and says what was deleted.
func forgetWindow(ctx context.Context, e *env, cfg *config.Settings, all bool) int {
	what := fmt.Sprintf("%s on %s", cfg.Model.V, cfg.BaseURL.V)
	var before string
	if w, ok := cfg.CachedWindow(ctx); ok && !all {
		before = fmt.Sprintf(": %d tokens (%s)", w.Tokens, w.Source)
	}
	n, err := cfg.ForgetWindows(ctx, all)
	if err != nil {
		return e.fail(err)
	}
	switch {
	case all:
		fmt.Fprintf(e.std.out, "forgot %s\n", transcript.Plural(n, "cached context window"))
	case n == 0:
		fmt.Fprintf(e.std.out, "no context window is cached for %s\n", what)
	default:
		fmt.Fprintf(e.std.out, "forgot the cached context window of %s%s\n", what, before)
	}
	return exitOK
}
