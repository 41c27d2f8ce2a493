package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

const root = "../.."

// TestRegistryEntry: the entry is valid against the registry's schema (URI
// formats asserted), names every target's archive, and the committed
// packaging/registry/agent.json is what `make release` generates for its
// version.
func TestRegistryEntry(t *testing.T) {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	schema, err := c.Compile(filepath.Join(root, "testdata", "registry", "agent.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join(root, "packaging", "registry", "agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Version string }
	if err := json.Unmarshal(committed, &got); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := run([]string{"registry", "-version", got.Version, "-root", root, "-out", out}, io.Discard); err != nil {
		t.Fatal(err)
	}
	generated, err := os.ReadFile(filepath.Join(out, "agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(generated, committed) {
		t.Errorf("packaging/registry/agent.json is not what make release generates for %s:\n%s", got.Version, generated)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(generated))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(doc); err != nil {
		t.Fatalf("agent.json is not valid against the registry schema: %v", err)
	}
	e := registryEntry(got.Version)
	if len(e.Distribution.Binary) != len(targets) {
		t.Errorf("%d binary targets, want %d", len(e.Distribution.Binary), len(targets))
	}
	if _, err := os.Stat(filepath.Join(out, "icon.svg")); err != nil {
		t.Error("no icon.svg beside agent.json")
	}
	// Issue 29: no npx distribution, which would run a node_modules/crow-acp
	// committed in the project the editor opened.
	if bytes.Contains(generated, []byte(`"npx"`)) {
		t.Error("agent.json offers npx, which runs a project's own node_modules/crow-acp")
	}
}

// TestLauncherDependsOnEveryPlatform: the launcher's optional dependencies
// are exactly the platform packages, at the launcher's version.
func TestLauncherDependsOnEveryPlatform(t *testing.T) {
	out := t.TempDir()
	if err := run([]string{"npm-launcher", "-version", "1.2.3", "-root", root, "-out", out}, io.Discard); err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Name, Version        string
		Bin                  map[string]string
		OptionalDependencies map[string]string
	}
	b, err := os.ReadFile(filepath.Join(out, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	var deps, want []string
	for name, v := range pkg.OptionalDependencies {
		if v != "1.2.3" {
			t.Errorf("%s@%s, want 1.2.3", name, v)
		}
		deps = append(deps, name)
	}
	for _, tg := range targets {
		want = append(want, "@crow-acp/"+tg.npm)
	}
	slices.Sort(deps)
	slices.Sort(want)
	if pkg.Name != "crow-acp" || pkg.Version != "1.2.3" || !slices.Equal(deps, want) {
		t.Errorf("launcher %s@%s depends on %v, want %v", pkg.Name, pkg.Version, deps, want)
	}
	st, err := os.Stat(filepath.Join(out, pkg.Bin["crow-acp"]))
	if err != nil || st.Mode()&0o100 == 0 {
		t.Errorf("bin %s: %v (mode %v)", pkg.Bin["crow-acp"], err, st)
	}
}

func TestVersionMustBeSemver(t *testing.T) {
	for _, v := range []string{"", "1.2", "v1.2.3", "1.2.3 ", "1.2.3/../x"} {
		if err := run([]string{"archive", "-version", v, "-platform", "linux-x86_64"}, io.Discard); err == nil {
			t.Errorf("version %q accepted", v)
		}
	}
	var b bytes.Buffer
	if err := run([]string{"archive", "-version", "1.2.3-rc.1", "-platform", "windows-x86_64"}, &b); err != nil || b.String() != "crow-acp-1.2.3-rc.1-x86_64-pc-windows-gnu.zip\n" {
		t.Errorf("archive name %q, %v", b.String(), err)
	}
}

// TestIcon: the registry wants a 16x16 SVG that takes the editor's colour
// (currentColor) and names no colour of its own.
func TestIcon(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "packaging", "registry", "icon.svg"))
	if err != nil {
		t.Fatal(err)
	}
	var svg struct {
		XMLName xml.Name
		Width   string `xml:"width,attr"`
		Height  string `xml:"height,attr"`
		ViewBox string `xml:"viewBox,attr"`
		Fill    string `xml:"fill,attr"`
	}
	if err := xml.Unmarshal(b, &svg); err != nil {
		t.Fatal(err)
	}
	if svg.XMLName.Local != "svg" || svg.Width != "16" || svg.Height != "16" || svg.ViewBox != "0 0 16 16" || svg.Fill != "currentColor" {
		t.Errorf("icon.svg: %+v; want a 16x16 svg filled with currentColor", svg)
	}
	if colour := regexp.MustCompile(`#[0-9a-fA-F]{3,8}\b|rgb\(|(fill|stroke)="(?:[a-z]+)"`).Find(bytes.ReplaceAll(b, []byte(`"currentColor"`), nil)); colour != nil {
		t.Errorf("icon.svg names a colour of its own: %s", colour)
	}
}
