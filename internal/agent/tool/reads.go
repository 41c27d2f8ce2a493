package tool

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
)

// Reads remembers, for one session, the files the model has seen: what it
// read, wrote or edited, by content hash. write_file refuses to overwrite
// a file the model has not seen, or one that changed since (judged by
// content, not mtime), so a model never replaces what it does not know.
//
// It lives in the agent's per-session state, in memory only: after a
// restart (or session/load in a new process) the model reads a file again
// before overwriting it.
type Reads struct {
	mu    sync.Mutex
	files map[string]*seenFile
	kept  int // bytes of text held, bounded by maxReadsText
}

type seenFile struct {
	hash  [32]byte
	known bool   // the whole content was seen (a partial read through the client is not)
	text  string // the content, when small enough to keep (to show what changed)
}

// Bounds of what Reads keeps: texts up to maxSeenText each and maxReadsText
// in all (beyond that only hashes), and at most maxReadsFiles files.
const (
	maxSeenText   = 256 << 10
	maxReadsText  = 8 << 20
	maxReadsFiles = 4096
)

// NewReads returns an empty tracker.
func NewReads() *Reads { return &Reads{files: map[string]*seenFile{}} }

// saw records the whole content of the file at abs as the model knows it.
func (r *Reads) saw(abs, text string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drop(abs)
	if len(r.files) >= maxReadsFiles {
		for k := range r.files { // forget an arbitrary one: a re-read restores it
			r.drop(k)
			break
		}
	}
	s := &seenFile{hash: sha256.Sum256([]byte(text)), known: true}
	if len(text) <= maxSeenText && r.kept+len(text) <= maxReadsText {
		s.text, r.kept = text, r.kept+len(text)
	}
	r.files[abs] = s
}

// sawPart records a read of part of the file whose whole content was not
// fetched: the model has looked at it, but a change cannot be judged.
func (r *Reads) sawPart(abs string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.files[abs]; !ok && len(r.files) < maxReadsFiles {
		r.files[abs] = &seenFile{}
	}
}

func (r *Reads) drop(abs string) {
	if s := r.files[abs]; s != nil {
		r.kept -= len(s.text)
		delete(r.files, abs)
	}
}

func (r *Reads) lookup(abs string) (seenFile, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.files[abs]
	if !ok {
		return seenFile{}, false
	}
	return *s, true
}

// staleness says why the model may not overwrite the file at p whose
// current content is text: never seen, or changed since. "" when it may.
func (r *Reads) staleness(p Path, text string) string {
	if r == nil {
		return ""
	}
	s, ok := r.lookup(p.Abs)
	switch {
	case !ok:
		return fmt.Sprintf("%s exists and has not been read in this session; call read_file on it first (or change it with edit_file), so nothing in it is lost.", p.Display)
	case s.known && s.hash != sha256.Sum256([]byte(text)):
		return fmt.Sprintf("%s changed since you last read it; call read_file again before overwriting it.%s", p.Display, changedRegion(s.text, text))
	}
	return ""
}

// changedSince shows how the file changed since the model saw it, for an
// edit that failed to match; "" when it has not or the old text is not kept.
func (r *Reads) changedSince(p Path, text string) string {
	if r == nil {
		return ""
	}
	s, ok := r.lookup(p.Abs)
	if !ok || !s.known || s.hash == sha256.Sum256([]byte(text)) {
		return ""
	}
	return " The file changed since you read it." + changedRegion(s.text, text)
}

// changedRegion shows the lines of now that differ from before (common
// leading and trailing lines cut), at most 30.
func changedRegion(before, now string) string {
	if before == "" {
		return ""
	}
	b, n := strings.SplitAfter(before, "\n"), splitFileLines(now)
	nt := make([]string, len(n))
	for i, l := range n {
		nt[i] = strings.TrimSuffix(strings.TrimSuffix(l.text, "\r"), "\n")
	}
	for i := range b {
		b[i] = strings.TrimRight(b[i], "\r\n")
	}
	if len(b) > 0 && b[len(b)-1] == "" {
		b = b[:len(b)-1]
	}
	pre := 0
	for pre < len(b) && pre < len(nt) && b[pre] == nt[pre] {
		pre++
	}
	suf := 0
	for suf < len(b)-pre && suf < len(nt)-pre && b[len(b)-1-suf] == nt[len(nt)-1-suf] {
		suf++
	}
	from, to := pre, len(nt)-suf
	if from >= to {
		return fmt.Sprintf(" Lines were removed after line %d.", pre)
	}
	more := ""
	if to-from > 30 {
		to, more = from+30, "\n…"
	}
	return fmt.Sprintf(" Now at lines %d-%d:\n%s%s", from+1, len(nt)-suf, showLines(n, from, to), more)
}

// forget drops a file that was deleted.
func (r *Reads) forget(abs string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drop(abs)
}
