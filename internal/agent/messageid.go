package agent

import (
	"strconv"

	"github.com/crow-acp/crow-acp/internal/persistence"
)

// messageID is the ACP messageId of a stored message, sent on every chunk
// of it, live and on replay. It is derived from the message's place in its
// session (seq, assigned once by the store, never reused), so a message
// keeps its id across replays and restarts. Clients that merge consecutive
// chunks (Zed merges unless two ids differ) keep two user messages apart.
func messageID(m *persistence.Message) string {
	var b [24]byte // one allocation, not two: a replay makes one per message
	return string(strconv.AppendInt(append(b[:0], "msg_"...), m.Seq, 10))
}
