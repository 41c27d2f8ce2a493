package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/internal/fixture"
	"github.com/crow-acp/crow-acp/streaming/fakemodel"
)

// TestSDKClientMeta runs testdata/sdkclient/meta.mjs: the official
// TypeScript SDK client (2.4.0) drives the real binary through titles,
// archive, status, auth/status, logout and the prompt's usage and cost,
// parsing every answer with the SDK's own types. It needs node and a
// directory with the SDK installed (npm install @agentclientprotocol/sdk@2.4.0),
// named by CROW_SDK_DIR; without them it is skipped.
func TestSDKClientMeta(t *testing.T) {
	sdk := os.Getenv("CROW_SDK_DIR")
	node, err := exec.LookPath("node")
	if sdk == "" || err != nil {
		t.Skip("set CROW_SDK_DIR to a directory with @agentclientprotocol/sdk@2.4.0 installed, and have node on PATH")
	}
	if _, err := os.Stat(filepath.Join(sdk, "node_modules", "@agentclientprotocol", "sdk")); err != nil {
		t.Skipf("CROW_SDK_DIR: %v", err)
	}
	bin := fixture.BuildBinary(t, "github.com/crow-acp/crow-acp/cmd/crow-acp")
	model := fakemodel.Start()
	t.Cleanup(model.Close)
	model.Enqueue(fakemodel.Reply{Text: "Sure.", Chunks: 1})
	src, err := os.ReadFile("../../testdata/sdkclient/meta.mjs")
	if err != nil {
		t.Fatal(err)
	}
	// ES modules resolve packages from the script's own directory.
	script, err := os.CreateTemp(sdk, "crow-meta-*.mjs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(script.Name()) })
	if _, err := script.Write(src); err != nil {
		t.Fatal(err)
	}
	script.Close()
	out, err := exec.Command(node, script.Name(), bin, model.URL(), t.TempDir()).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("the SDK client failed: %v\n%s", err, out)
	}
}
