package acp

import (
	"encoding/json"
	"strings"
)

// The connection remembers what the client advertised in initialize and
// refuses, without sending anything, calls to client methods it did not
// advertise: an agent bug then surfaces as an error in the agent instead of
// a request the client cannot handle.

// errNotAdvertised is the error for such a call (-32601, as the client
// would answer).
func errNotAdvertised(method, capability string) *Error {
	return newError(CodeMethodNotFound, "The client did not advertise %s, so %s may not be called.", capability, method)
}

// noteInitialize records the client's capabilities from initialize params.
func (c *Conn) noteInitialize(params json.RawMessage) {
	var req InitializeRequest
	if decodeParams(params, &req) != nil {
		return
	}
	caps := req.ClientCapabilities
	c.clientCaps.Store(&caps)
}

// checkAdvertised reports whether the client may be sent method.
func (c *Conn) checkAdvertised(method string) error {
	caps := c.clientCaps.Load()
	if caps == nil {
		caps = &ClientCapabilities{} // before initialize nothing is advertised
	}
	switch {
	case method == "fs/read_text_file" && !caps.FS.ReadTextFile:
		return errNotAdvertised(method, "fs.readTextFile")
	case method == "fs/write_text_file" && !caps.FS.WriteTextFile:
		return errNotAdvertised(method, "fs.writeTextFile")
	case strings.HasPrefix(method, "terminal/") && !caps.Terminal:
		return errNotAdvertised(method, "terminal")
	}
	return nil
}

// ClientCapabilities returns what the client advertised in its last
// initialize (zero before it).
func (c *Conn) ClientCapabilities() ClientCapabilities {
	if caps := c.clientCaps.Load(); caps != nil {
		return *caps
	}
	return ClientCapabilities{}
}

// checkUpdateKind gates session update kinds outside the stable v1 schema
// (those carried in SessionUpdate.Other) on the client capability that
// announces them: the SDK 2.4 `notice` needs session.notices, the
// compaction updates need session.compaction. Anything else is refused.
func (c *Conn) checkUpdateKind(kind string) error {
	caps := c.ClientCapabilities()
	var ok bool
	switch kind {
	case "notice":
		ok = caps.SupportsNotices()
	case "subagent_update":
		ok = caps.SupportsSubagents()
	case "compaction_update", "compaction_summary_chunk":
		ok = caps.Session != nil && advertised(caps.Session.Compaction)
	}
	if !ok {
		return newError(CodeMethodNotFound, "The client did not advertise support for %q session updates.", kind)
	}
	return nil
}
