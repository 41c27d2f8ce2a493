// Package acp is the Agent Client Protocol on the wire: its types, the line
// framing (one JSON-RPC 2.0 object per line), ordered dispatch of requests
// and notifications, and the error codes. It is the only package of
// crow-acp shaped like the wire, and the only one meant to be imported by
// other modules: Conn serves an agent over a stream, ClientConn speaks to
// one (typed calls, with the agent's own requests served by a Client).
// It imports nothing else of crow-acp.
package acp
