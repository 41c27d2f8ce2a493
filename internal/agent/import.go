package agent

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// MaxImportedIDBytes bounds the id of a session read from a file.
const MaxImportedIDBytes = 128

// AsImported makes s, a session read from a file for `crow-acp sessions
// import`, what a session this agent created would be, before it is
// stored: the file is anyone's, and its metadata would otherwise grant
// rights (a mode), read files (instruction paths), replace the system
// prompt or hide the session (a subagent link). Its id must be a plain
// token and its directory an absolute path (else an error: it is not
// stored); its title is normalised as a user's; its metadata is rebuilt
// with the mode a new session starts in (defaultMode, permissions.mode)
// and only what grants nothing: the cost so far (finite amounts under a
// currency code), the last context size, and whether the user set the
// title. Everything else is dropped: the model (a new session's is the
// configured default), the system prompt, instruction files, MCP servers
// and directories (a client names them again when it opens the session),
// fork and subagent links, the archive mark, and any key this version does
// not know. docs/security.md lists each field.
func AsImported(s *persistence.Session, defaultMode string) error {
	if !importableID(s.ID) {
		return fmt.Errorf("session id %q is not one crow-acp gives (letters, digits, '_', '-', '.' or ':', at most %d bytes): not imported", s.ID, MaxImportedIDBytes)
	}
	if s.Cwd != "" && (!filepath.IsAbs(s.Cwd) || strings.ContainsFunc(s.Cwd, unicode.IsControl)) {
		return errors.New("the session's directory is not an absolute path without control characters: not imported")
	}
	s.Title = NormalizeTitle(s.Title)
	in := decodeMeta(s.Metadata)
	out := sessionMeta{
		Mode:        ModeFromConfig(defaultMode),
		Cost:        importedCosts(in.Cost),
		Used:        min(max(in.Used, 0), math.MaxInt32),
		TitleByUser: in.TitleByUser && s.Title != "",
	}
	if s.Metadata = encodeMeta(out); s.Metadata == nil {
		return errors.New("the session's metadata does not encode")
	}
	return nil
}

// importableID reports whether id looks like the ids crow-acp gives
// (newID: a prefix and hex) or a client or older build might have: a
// short token that prints as it is on any terminal.
func importableID(id string) bool {
	if id == "" || len(id) > MaxImportedIDBytes {
		return false
	}
	for _, c := range []byte(id) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-', c == '.', c == ':':
		default:
			return false
		}
	}
	return true
}

// importedCosts keeps the costs finiteAmount accepts under a currency
// code (up to 8 ASCII letters or digits: ISO 4217 codes, or a short name):
// the code is printed by sessions show.
func importedCosts(cost map[string]float64) map[string]float64 {
	var out map[string]float64
	for currency, v := range request.FiniteCosts(cost) {
		if len(currency) == 0 || len(currency) > 8 || strings.ContainsFunc(currency, func(r rune) bool {
			return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
		}) {
			continue
		}
		if out == nil {
			out = make(map[string]float64)
		}
		out[currency] = v
	}
	return out
}
