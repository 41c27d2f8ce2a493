package main

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// releaseURL is where the release archives of a version are downloaded from.
const releaseURL = "https://github.com/crow-acp/crow-acp/releases/download/v"

// entry is an ACP registry entry (testdata/registry/agent.schema.json).
type entry struct {
	ID           string       `json:"id"`
	Name         string       `json:"name"`
	Version      string       `json:"version"`
	Description  string       `json:"description"`
	Repository   string       `json:"repository"`
	Authors      []string     `json:"authors"`
	License      string       `json:"license"`
	Distribution distribution `json:"distribution"`
}

// distribution lists only the release archives. An npx entry is left out
// on purpose: editors start agents in the project folder, and npx runs
// the crow-acp it finds in that project's node_modules first (pinned
// version or not: a planted package.json claims any), so a repository
// that commits node_modules/crow-acp would run its own code. The archives
// cover every platform the npm packages do.
type distribution struct {
	Binary map[string]binaryTarget `json:"binary"`
}

type binaryTarget struct {
	Archive string `json:"archive"`
	Cmd     string `json:"cmd"`
}

// registryEntry lists every target's archive at version. Started with no arguments crow-acp speaks ACP on stdio.
func registryEntry(version string) entry {
	e := entry{
		ID:          "crow-acp",
		Name:        "crow",
		Version:     version,
		Description: "Coding agent for any OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, DeepSeek...), with sessions kept in SQLite or PostgreSQL",
		Repository:  "https://github.com/crow-acp/crow-acp",
		Authors:     []string{"crow-acp contributors"},
		License:     "Apache-2.0",
		Distribution: distribution{
			Binary: map[string]binaryTarget{},
		},
	}
	for _, t := range targets {
		e.Distribution.Binary[t.registry] = binaryTarget{Archive: releaseURL + version + "/" + t.archive(version), Cmd: "./" + t.exe}
	}
	return e
}

// writeRegistry writes out/agent.json and the icon beside it, the layout of
// an agent's directory in the registry.
func writeRegistry(version, root, out string) error {
	b, err := json.MarshalIndent(registryEntry(version), "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "agent.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	icon := filepath.Join(root, "packaging", "registry", "icon.svg")
	if dst := filepath.Join(out, "icon.svg"); !sameFile(icon, dst) {
		return copyFile(icon, dst, 0o644)
	}
	return nil
}

func sameFile(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}
