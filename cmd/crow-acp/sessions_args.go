package main

import (
	"context"
	"flag"

	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/sessions"
)

// sessionFlags parses the flags of a sessions subcommand.
func sessionFlags(name, synopsis string, args []string, e *env, define func(fs *flag.FlagSet)) ([]string, *config.Settings, error) {
	fs := newFlagSet("sessions "+name, synopsis)
	if define != nil {
		define(fs)
	}
	cf := config.AddFlags(fs, config.FlagsStore)
	// These commands only read (or delete from) the store: a setting
	// they never use, such as the model endpoint, must not stop them.
	pos, err := parseArgs(fs, args, e)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := config.LoadStore(cf, e.getenv)
	if err != nil {
		return nil, nil, err
	}
	return pos, cfg, nil
}

// oneSession parses "ID" for the subcommands on one session.
func oneSession(name, synopsis string, args []string, e *env, define func(fs *flag.FlagSet)) (*config.Settings, string, error) {
	pos, cfg, err := sessionFlags(name, synopsis, args, e, define)
	if err != nil {
		return nil, "", err
	}
	switch {
	case len(pos) == 0:
		return nil, "", config.Usagef("sessions %s: missing session ID (crow-acp sessions list shows them)", name)
	case len(pos) > 1:
		return nil, "", config.Usagef("sessions %s: unexpected argument %q", name, pos[1])
	}
	return cfg, pos[0], nil
}

// onOne is a subcommand on one session without flags of its own.
func onOne(name, synopsis string, run func(context.Context, *config.Settings, sessions.IO, string) error) func(context.Context, *env, []string) error {
	return func(ctx context.Context, e *env, args []string) error {
		cfg, id, err := oneSession(name, synopsis, args, e, nil)
		if err != nil {
			return err
		}
		return run(ctx, cfg, e.io(), id)
	}
}
