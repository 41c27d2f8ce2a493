package agent

import (
	"context"
	"path"
	"strings"
	"unicode"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/persistence"
)

// maxTitleRunes bounds a derived title; session lists show one line.
const maxTitleRunes = 60

// titleAfterPrompt gives an untitled session a title taken from the prompt
// (locally: no model call, no cost, no delay), stores it, and tells the
// client with session_info_update. session/list shows it from then on.
func (a *Agent) titleAfterPrompt(ctx context.Context, s *persistence.Session, parts []persistence.Part) {
	if s.Title != "" {
		return
	}
	title := deriveTitle(parts)
	if title == "" {
		return
	}
	a.metaMu.Lock()
	cur, err := a.store.GetSession(ctx, s.ID)
	if err == nil && cur.Title == "" {
		cur.Title = title
		err = a.store.UpdateSession(ctx, cur)
	}
	a.metaMu.Unlock()
	if err != nil {
		a.log.Warn("cannot store the session title", zap.String("session", s.ID), zap.Error(err))
		return
	}
	if cur.Title != title {
		return // titled meanwhile
	}
	s.Title = title
	updated := isoTime(cur.UpdatedAt)
	a.sendUpdate(ctx, s.ID, acp.SessionUpdate{SessionInfoUpdate: &acp.SessionInfoUpdate{Title: &title, UpdatedAt: &updated}})
}

// deriveTitle is the first line of the prompt's text, whitespace collapsed
// and cut at a word boundary; a prompt without text is named after the
// first resource it references.
func deriveTitle(parts []persistence.Part) string {
	for _, p := range parts {
		if p.Type != "text" {
			continue
		}
		for _, line := range strings.Split(p.Text, "\n") {
			if t := strings.Join(strings.Fields(line), " "); t != "" {
				return shorten(t, maxTitleRunes)
			}
		}
	}
	for _, p := range parts {
		name := p.Name
		if name == "" && p.URI != "" {
			name = path.Base(p.URI)
		}
		if name != "" && name != "." && name != "/" {
			return shorten(name, maxTitleRunes)
		}
	}
	return ""
}

// shorten cuts s to at most n runes, at the last space when there is one in
// the second half, and marks the cut with "…".
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	cut := r[:n-1]
	if i := lastSpace(cut); i > n/2 {
		cut = cut[:i]
	}
	return strings.TrimRightFunc(string(cut), func(c rune) bool { return unicode.IsSpace(c) || unicode.IsPunct(c) }) + "…"
}

func lastSpace(r []rune) int {
	for i := len(r) - 1; i >= 0; i-- {
		if unicode.IsSpace(r[i]) {
			return i
		}
	}
	return -1
}
