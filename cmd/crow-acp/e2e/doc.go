// Package e2e tests the built crow-acp binary from the outside, the way
// editors, terminals and scripts run it: over pipes (startProc for raw
// frames, startACP for crow-acp's own client), on a pseudo-terminal
// (startPty), or one command line at a time (command). The binary is built
// once for the whole package and removed when its tests end. The tests
// that run crow-acp in process, through its run(), are in cmd/crow-acp; what
// both share is in cmd/crow-acp/internal/crowtest.
//
//	go test ./cmd/crow-acp/e2e -run TestChatTerminal
package e2e
