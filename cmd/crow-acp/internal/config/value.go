package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Source says where a setting's value came from, for `config show` and for
// error messages.
type Source struct {
	Kind   string // "default", "file", "env", "flag"
	Detail string // file:line, the variable or the flag
}

func (s Source) String() string {
	if s.Detail == "" {
		return s.Kind
	}
	return s.Kind + " " + s.Detail
}

var fromDefault = Source{Kind: "default"}

// Value is one resolved setting.
type Value[T any] struct {
	V    T
	From Source
}

// Error is a mistake on the command line or in the configuration (a flag,
// an argument, a variable, the file): the command exits with its usage
// status.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// Usagef is an *Error.
func Usagef(format string, args ...any) error { return &Error{fmt.Sprintf(format, args...)} }

// resolver applies the precedence rule to one setting.
type resolver struct {
	cf     *Flags
	getenv func(string) string
	fileAt func(key string) Source
}

// str resolves a string setting. An empty flag or env name means the layer
// does not exist for this setting.
func (r resolver) str(flagName, envName string, file *string, fileKey, def string) Value[string] {
	if flagName != "" && r.cf.set(flagName) {
		return Value[string]{V: r.cf.get(flagName), From: Source{Kind: "flag", Detail: "--" + flagName}}
	}
	if envName != "" {
		if v := r.getenv(envName); v != "" {
			return Value[string]{V: v, From: Source{Kind: "env", Detail: envName}}
		}
	}
	if file != nil {
		return Value[string]{V: *file, From: r.fileAt(fileKey)}
	}
	return Value[string]{V: def, From: fromDefault}
}

func (r resolver) int(flagName, envName string, file *int, fileKey string, def int) (Value[int], error) {
	s := r.str(flagName, envName, nil, "", "")
	if s.From.Kind == "default" {
		if file != nil {
			return Value[int]{V: *file, From: r.fileAt(fileKey)}, nil
		}
		return Value[int]{V: def, From: fromDefault}, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s.V))
	if err != nil {
		return Value[int]{}, Usagef("%s: %q is not a whole number", s.From, s.V)
	}
	return Value[int]{V: n, From: s.From}, nil
}

func (r resolver) float(flagName, envName string, file *float64, fileKey string, def float64) (Value[float64], error) {
	s := r.str(flagName, envName, nil, "", "")
	if s.From.Kind == "default" {
		if file != nil {
			return Value[float64]{V: *file, From: r.fileAt(fileKey)}, nil
		}
		return Value[float64]{V: def, From: fromDefault}, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s.V), 64)
	if err != nil {
		return Value[float64]{}, Usagef("%s: %q is not a number", s.From, s.V)
	}
	return Value[float64]{V: f, From: s.From}, nil
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// duration resolves a duration setting written like "500ms" or "2m".
func (r resolver) duration(envName string, file *string, fileKey string, def time.Duration) (Value[time.Duration], error) {
	s := r.str("", envName, file, fileKey, "")
	if s.From.Kind == "default" {
		return Value[time.Duration]{V: def, From: fromDefault}, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(s.V))
	if err != nil {
		return Value[time.Duration]{}, Usagef("%s: %q is not a duration (e.g. 500ms, 2m)", s.From, s.V)
	}
	return Value[time.Duration]{V: d, From: s.From}, nil
}

// Row is one line of `config show`: a setting by its file key, its value
// (secrets masked) and where the value came from.
type Row struct {
	Key, Value string
	From       Source
}
