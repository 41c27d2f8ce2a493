package fakemodel

import (
	"strings"
	"time"
)

// Reply.Endless values: a model that never stops, each in one way the client
// must bound.
const (
	EndlessText      = "text"      // text deltas forever
	EndlessArguments = "arguments" // one tool call whose argument deltas never end
	EndlessEvent     = "event"     // one SSE event whose data: lines never end
	EndlessKeepAlive = "keepalive" // ": keep-alive" comments forever, every 10ms, and no chunk
	EndlessToolCalls = "toolcalls" // new tool calls forever, each a read_file of its own
)

// endlessPiece is what an endless reply writes once, then repeats.
type endlessPiece struct {
	first, repeat string
	pause         time.Duration // between repeats
	numbered      bool          // repeat holds %[1]d, the repeat's number
}

var filler = strings.Repeat("x", 4<<10)

var endlessPieces = map[string]endlessPiece{
	EndlessText: {
		repeat: `data: {"id":"chatcmpl-endless","object":"chat.completion.chunk","created":1700000000,"model":"fake-model","choices":[{"index":0,"delta":{"content":"` + filler + `"}}]}` + "\n\n",
	},
	EndlessArguments: {
		first:  `data: {"id":"chatcmpl-endless","object":"chat.completion.chunk","created":1700000000,"model":"fake-model","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_endless","type":"function","function":{"name":"write_file","arguments":"{\"content\":\""}}]}}]}` + "\n\n",
		repeat: `data: {"id":"chatcmpl-endless","object":"chat.completion.chunk","created":1700000000,"model":"fake-model","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"` + filler + `"}}]}}]}` + "\n\n",
	},
	EndlessEvent: {
		first:  `data: {"id":"chatcmpl-endless","choices":[{"index":0,"delta":{"content":"` + "\n",
		repeat: "data: " + filler + "\n",
	},
	EndlessKeepAlive: {repeat: ": keep-alive\n\n", pause: 10 * time.Millisecond},
	EndlessToolCalls: {
		repeat:   `data: {"id":"chatcmpl-endless","object":"chat.completion.chunk","created":1700000000,"model":"fake-model","choices":[{"index":0,"delta":{"tool_calls":[{"index":%[1]d,"id":"call_%[1]d","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"README.md\"}"}}]}}]}` + "\n\n",
		numbered: true,
	},
}
