package acptest

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Zed shows a JSON-RPC error as its message followed by the pretty-printed
// error.data, so what the user must know belongs in message, as one
// readable sentence, and data stays small.
const (
	maxErrorMessageRunes = 600
	maxErrorDataBytes    = 512
)

// ReadableError reports why an error frame the agent wrote would read badly
// in an editor: a message that is not one sentence (capital first letter,
// final full stop, one line, bounded) or error.data too big to show under
// it. Frames without an error object pass.
func ReadableError(frame []byte) error {
	var f struct {
		Error *struct {
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal(frame, &f) != nil || f.Error == nil {
		return nil
	}
	msg := f.Error.Message
	first, _ := utf8.DecodeRuneInString(msg)
	switch {
	case msg == "":
		return fmt.Errorf("error message is empty")
	case !unicode.IsUpper(first) && !unicode.IsDigit(first) && first != '`':
		return fmt.Errorf("error message %q does not start a sentence (capital letter)", msg)
	case !strings.HasSuffix(msg, ".") && !strings.HasSuffix(msg, "?"):
		return fmt.Errorf("error message %q does not end a sentence (full stop)", msg)
	case strings.ContainsAny(msg, "\n\r"):
		return fmt.Errorf("error message %q spans lines", msg)
	case utf8.RuneCountInString(msg) > maxErrorMessageRunes:
		return fmt.Errorf("error message is %d characters; keep it under %d", utf8.RuneCountInString(msg), maxErrorMessageRunes)
	case len(f.Error.Data) > maxErrorDataBytes:
		return fmt.Errorf("error.data is %d bytes (Zed prints it under the message); keep it under %d: %s", len(f.Error.Data), maxErrorDataBytes, Truncate(f.Error.Data, 200))
	}
	return nil
}
