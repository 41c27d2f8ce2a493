package agent

import (
	"context"
	"errors"
	"path"
	"strings"
	"unicode"

	"go.uber.org/zap"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/persistence"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// maxTitleRunes bounds a derived title; session lists show one line.
const maxTitleRunes = 60

// titleAfterPrompt gives an untitled session a title taken from the prompt
// (locally: no model call, no cost, no delay), stores it, and tells the
// client with session_info_update. session/list shows it from then on.
// It reports whether it titled the session.
func (tr *turns) titleAfterPrompt(ctx context.Context, sess *session, s *persistence.Session, parts []persistence.Part) bool {
	if s.Title != "" {
		return false
	}
	return tr.setTitle(ctx, sess, s, "", deriveTitle(parts))
}

// setTitle replaces the session's title old with title (unless someone
// changed it meanwhile), stores it and sends session_info_update.
func (tr *turns) setTitle(ctx context.Context, sess *session, s *persistence.Session, old, title string) bool {
	if title == "" || title == old {
		return false
	}
	sess.meta.Lock()
	cur, err := tr.store.GetSession(ctx, s.ID)
	// A title the user chose is never replaced by a generated one.
	changed := err == nil && cur.Title == old && !decodeMeta(cur.Metadata).TitleByUser
	if changed {
		cur.Title = title
		err = tr.writes(sess).UpdateSession(ctx, cur)
	}
	sess.meta.Unlock()
	if err != nil {
		tr.log.Warn("cannot store the session title", zap.String("session", s.ID), zap.Error(err))
		return false
	}
	if !changed {
		return false // titled meanwhile
	}
	s.Title = title
	updated := isoTime(cur.UpdatedAt)
	tr.sendUpdate(ctx, sess, acp.SessionUpdate{SessionInfoUpdate: &acp.SessionInfoUpdate{Title: &title, UpdatedAt: &updated}})
	return true
}

// titlePrompt asks the model for a title; the first prompt follows it.
const titlePrompt = `Name this coding conversation from its first request. Answer with the title only: at most 6 words, no quotes, no trailing punctuation.`

// titleFromModel asks the session's model for a better title after the
// first turn and replaces the local one with it. Any failure keeps the
// local title: a title is never worth failing a turn for. The request's
// cost is added to the session's; it is not the session's context, so it
// sends no usage_update.
func (tr *turns) titleFromModel(ctx, persistCtx context.Context, sess *session, s *persistence.Session, request string) {
	model := tr.sessionModel(s)
	if r := []rune(request); len(r) > 2000 {
		request = string(r[:2000])
	}
	req := provider.Request{
		Model: model.Name,
		Messages: []provider.Message{
			{Role: provider.RoleSystem, Content: titlePrompt},
			{Role: provider.RoleUser, Content: request},
		},
		MaxTokens:   32,
		InlineThink: model.InlineThink,
	}
	res, _, err := tr.streamWithRetry(ctx, tr.models.ClientFor(model), s.ID, req, nil)
	if res != nil && res.Usage != nil && model.Priced() {
		u := res.Usage
		_, _ = tr.updateMeta(persistCtx, sess, func(_ *persistence.Session, m *sessionMeta) {
			m.addCost(model.Currency, model.Cost(*u))
		})
	}
	if err != nil {
		tr.log.Debug("no title from the model; keeping the local one", zap.String("session", s.ID), zap.Error(err))
		return
	}
	tr.setTitle(persistCtx, sess, s, s.Title, cleanModelTitle(res.Text))
}

// cleanModelTitle keeps the first line of a model's answer without quotes,
// markdown, a "Title:" label or trailing punctuation.
func cleanModelTitle(text string) string {
	const decoration = "#*_`\"'“”‘’ \t"
	for _, line := range strings.Split(text, "\n") {
		for prev := ""; prev != line; {
			prev = line
			line = strings.Trim(line, decoration)
			line = strings.TrimRight(line, ".!:;,")
			if len(line) >= 6 && strings.EqualFold(line[:6], "title:") {
				line = line[6:]
			}
		}
		if line != "" {
			return shorten(strings.Join(strings.Fields(line), " "), maxTitleRunes)
		}
	}
	return ""
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

// MaxUserTitleRunes bounds a title the user sets; longer ones are cut.
const MaxUserTitleRunes = 200

// NormalizeTitle is a user's title as stored: control characters dropped,
// whitespace collapsed to single spaces, at most MaxUserTitleRunes runes.
// "" means the title is unusable (empty after that).
func NormalizeTitle(title string) string {
	title = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(title, ""))
	title = strings.Join(strings.Fields(title), " ")
	if r := []rune(title); len(r) > MaxUserTitleRunes {
		title = strings.TrimRightFunc(string(r[:MaxUserTitleRunes]), unicode.IsSpace)
	}
	return title
}

// RetitleStored sets the user's title of a stored session, for the
// `sessions rename` command, as session/set_title does; it returns the
// title as stored. A running crow-acp sees it at its next read of the
// session.
func RetitleStored(ctx context.Context, store SessionMarker, id, title string) (string, error) {
	title = NormalizeTitle(title)
	if title == "" {
		return "", errors.New("the title is empty once control characters and spaces are removed")
	}
	err := changeStored(ctx, store, id, func(s *persistence.Session, m *sessionMeta) {
		s.Title, m.TitleByUser = title, true
	})
	return title, err
}

var _ acp.SessionTitler = (*Agent)(nil)
