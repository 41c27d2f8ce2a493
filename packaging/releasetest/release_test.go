//go:build release

package releasetest

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/crow-acp/crow-acp/internal/acptest"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

const version = "9.8.7"

const reply = "Hello from the fake model."

func TestRelease(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dist, regOut := t.TempDir(), t.TempDir()
	mustRun(t, root, nil, "make", "--no-print-directory", "release", "VERSION="+version, "DIST="+dist, "REGISTRY_OUT="+regOut)

	model := fakemodel.Start()
	t.Cleanup(model.Close)
	model.SetFallback(fakemodel.Reply{Text: reply})
	home, emptyPath := t.TempDir(), t.TempDir()
	// Nothing of this machine: no Go (PATH is an empty directory), no
	// configuration (HOME is empty), only the endpoint.
	env := []string{"HOME=" + home, "PATH=" + emptyPath, "OPENAI_BASE_URL=" + model.URL(), "CROW_MODEL=" + fakemodel.ModelID}

	entry := checkRegistryEntry(t, root, filepath.Join(dist, "registry", "agent.json"))
	if b, _ := os.ReadFile(filepath.Join(regOut, "agent.json")); !bytes.Equal(b, mustRead(t, filepath.Join(dist, "registry", "agent.json"))) {
		t.Error("REGISTRY_OUT/agent.json differs from the one in dist")
	}
	mustRun(t, dist, nil, "sha256sum", "--quiet", "-c", "SHA256SUMS")

	var bin string
	for _, platform := range []string{"linux-x86_64", "linux-aarch64"} {
		archive := filepath.Base(entry.Distribution.Binary[platform].Archive)
		dir := t.TempDir()
		unpack(t, filepath.Join(dist, archive), dir)
		exe := filepath.Join(dir, strings.TrimPrefix(entry.Distribution.Binary[platform].Cmd, "./"))
		checkStatic(t, exe, map[string]elf.Machine{"linux-x86_64": elf.EM_X86_64, "linux-aarch64": elf.EM_AARCH64}[platform])
		if platform == "linux-x86_64" {
			bin = exe
		} else if qemu, err := exec.LookPath("qemu-aarch64-static"); err == nil {
			out := mustRun(t, dir, []string{}, qemu, exe, "--version")
			if !strings.HasPrefix(out, "crow-acp "+version+" ") {
				t.Errorf("aarch64 --version under qemu: %q", out)
			}
			t.Logf("aarch64 binary runs under %s: %s", qemu, strings.TrimSpace(out))
		} else {
			t.Logf("qemu-aarch64-static is not installed: the aarch64 binary was checked (static, AArch64) but not run")
		}
	}

	t.Run("archive", func(t *testing.T) {
		for _, args := range [][]string{{"--version"}, {"version"}} {
			out := mustRun(t, t.TempDir(), []string{}, bin, args...) // a truly empty environment
			if !strings.HasPrefix(out, "crow-acp "+version+" (") {
				t.Errorf("%v: %q, want the stamped version %s", args, out, version)
			}
		}
		out := mustRun(t, t.TempDir(), env, bin, "doctor")
		for _, want := range []string{"ok    endpoint", "ok    model"} {
			if !strings.Contains(out, want) {
				t.Errorf("doctor lacks %q:\n%s", want, out)
			}
		}
		session(t, exec.Command(bin), env)
	})

	t.Run("registry auth check", func(t *testing.T) {
		script := `import importlib.util, json, pathlib, sys
spec = importlib.util.spec_from_file_location("client", sys.argv[1])
client = importlib.util.module_from_spec(spec)
spec.loader.exec_module(client)
r = client.run_auth_check([sys.argv[2]], pathlib.Path(sys.argv[3]), timeout=30)
print(json.dumps({"success": r.success, "error": r.error, "types": [m.type for m in r.auth_methods]}))
`
		out := mustRun(t, root, nil, "python3", "-c", script, filepath.Join(root, "testdata", "registry", "auth-check-client.py"), bin, t.TempDir())
		var res struct {
			Success bool
			Error   *string
			Types   []string
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || !res.Success || !slices.Contains(res.Types, "terminal") {
			t.Fatalf("the registry's auth check: %s (%v); want success with a terminal method", out, err)
		}
	})

	t.Run("npm", func(t *testing.T) {
		npmEnv := npmEnvironment(t)
		prefix := t.TempDir()
		mustRun(t, prefix, npmEnv, "npm", "install", "--offline", "--no-audit", "--no-fund", "--no-package-lock",
			filepath.Join(dist, "npm", "crow-acp-"+version+".tgz"), filepath.Join(dist, "npm", "crow-acp-linux-x64-"+version+".tgz"))
		out := mustRun(t, prefix, npmEnv, "npx", "crow-acp", "--version")
		if !strings.HasPrefix(out, "crow-acp "+version+" (") {
			t.Fatalf("npx crow-acp --version: %q", out)
		}
		withModel := append(slices.Clone(npmEnv), env[2:]...)
		withModel = append(withModel, "HOME="+home)
		cmd := exec.Command("npx", "crow-acp")
		cmd.Dir = prefix
		session(t, cmd, withModel)
		if out := mustRun(t, prefix, withModel, "npx", "crow-acp", "exec", "say hello"); !strings.Contains(out, reply) {
			t.Errorf("npx crow-acp exec: %q, want the model's reply", out)
		}
	})

	t.Run("startup", func(t *testing.T) {
		dev := filepath.Join(t.TempDir(), "crow-acp")
		mustRun(t, root, nil, "go", "build", "-o", dev, "./cmd/crow-acp") // what make build does
		archive, build := startup(t, bin, dev, env)
		// A measurement, not an assertion: timings on a shared machine vary.
		fmt.Printf("startup, exec to initialize answered, %d starts each: archive %v; make build %v (archive/build: median %.2f, fastest %.2f)\n",
			startupRuns, archive, build, float64(archive.median)/float64(build.median), float64(archive.min)/float64(build.min))
	})
}

// entryJSON is the part of agent.json the test reads.
type entryJSON struct {
	Version      string
	Distribution struct {
		Binary map[string]struct{ Archive, Cmd string }
		NPX    *struct{ Package string }
	}
}

// checkRegistryEntry validates agent.json against the registry's schema,
// with URI formats asserted.
func checkRegistryEntry(t *testing.T, root, path string) entryJSON {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	schema, err := c.Compile(filepath.Join(root, "testdata", "registry", "agent.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(mustRead(t, path)))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(doc); err != nil {
		t.Fatalf("agent.json is not valid against the registry schema: %v", err)
	}
	var e entryJSON
	if err := json.Unmarshal(mustRead(t, path), &e); err != nil {
		t.Fatal(err)
	}
	if e.Version != version || e.Distribution.NPX != nil {
		t.Fatalf("agent.json: version %q, want %s and no npx distribution (it would run a project's own node_modules/crow-acp)", e.Version, version)
	}
	return e
}

// unpack extracts a .tar.gz, which must hold exactly the binary, LICENSE
// and README.md.
func unpack(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		out, err := os.OpenFile(filepath.Join(dir, filepath.Base(h.Name)), os.O_CREATE|os.O_WRONLY|os.O_EXCL, os.FileMode(h.Mode)&0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, tr); err != nil {
			t.Fatal(err)
		}
		out.Close()
	}
	sort.Strings(names)
	if strings.Join(names, " ") != "LICENSE README.md crow-acp" {
		t.Fatalf("%s holds %v", filepath.Base(archive), names)
	}
}

// checkStatic: the binary needs no dynamic loader, so no libc of the host.
func checkStatic(t *testing.T, exe string, machine elf.Machine) {
	t.Helper()
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != machine {
		t.Errorf("%s is for %v, want %v", exe, f.Machine, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s is dynamically linked (it names an interpreter)", exe)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v", exe, libs)
	}
}

// npmEnvironment: node and npm on PATH, no user configuration, and a
// registry that cannot be reached, so anything fetched would fail.
func npmEnvironment(t *testing.T) []string {
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatal("npm is not installed")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed")
	}
	return []string{"PATH=" + filepath.Dir(npm) + string(os.PathListSeparator) + filepath.Dir(node), "HOME=" + t.TempDir(),
		"npm_config_cache=" + t.TempDir(), "npm_config_registry=http://127.0.0.1:9/", "npm_config_offline=true",
		"npm_config_update_notifier=false", "npm_config_userconfig=" + filepath.Join(t.TempDir(), "npmrc")}
}

// client drives an agent over its stdio and checks every frame it writes
// against the ACP schema.
type client struct {
	t       *testing.T
	in      io.WriteCloser
	lines   chan []byte
	methods map[string]string
	schema  *acptest.Validator
	reply   strings.Builder // the agent_message_chunk texts
}

// validator checks frames against the ACP schema; compiled once, before any
// start-up is timed.
var validator *acptest.Validator

func start(t *testing.T, cmd *exec.Cmd, env []string) (*client, func()) {
	t.Helper()
	if validator == nil {
		validator = acptest.MustValidator(t)
	}
	cmd.Env = env
	if cmd.Dir == "" {
		cmd.Dir = t.TempDir()
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &client{t: t, in: in, lines: make(chan []byte, 256), methods: map[string]string{}, schema: validator}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 32<<20)
		for sc.Scan() {
			c.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(c.lines)
	}()
	return c, func() {
		in.Close()
		for range c.lines {
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("agent exit: %v\n%s", err, stderr.String())
		}
	}
}

// call sends a request and returns its result, failing on an error.
func (c *client) call(id int, method string, params string) json.RawMessage {
	c.t.Helper()
	c.methods[fmt.Sprint(id)] = method
	fmt.Fprintf(c.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("%s: the agent closed stdout", method)
			}
			if err := c.schema.ValidateAgentFrame(line, func(id json.RawMessage) string { return c.methods[string(id)] }); err != nil {
				c.t.Fatalf("frame not valid against the ACP schema: %v", err)
			}
			var f struct {
				ID     *int
				Method string
				Result json.RawMessage
				Error  json.RawMessage
				Params json.RawMessage
			}
			if err := json.Unmarshal(line, &f); err != nil {
				c.t.Fatal(err)
			}
			var u struct {
				Update struct {
					SessionUpdate string
					Content       struct{ Text string }
				}
			}
			if f.Method == "session/update" && json.Unmarshal(f.Params, &u) == nil && u.Update.SessionUpdate == "agent_message_chunk" {
				c.reply.WriteString(u.Update.Content.Text)
			}
			if f.ID != nil && *f.ID == id && f.Method == "" {
				if f.Error != nil {
					c.t.Fatalf("%s: %s", method, f.Error)
				}
				return f.Result
			}
		case <-deadline:
			c.t.Fatalf("%s: no answer within 30s", method)
		}
	}
}

// session runs initialize, session/new and one prompt against cmd.
func session(t *testing.T, cmd *exec.Cmd, env []string) {
	t.Helper()
	c, stop := start(t, cmd, env)
	defer stop()
	var init struct{ AgentInfo struct{ Version string } }
	mustJSON(t, c.call(0, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`), &init)
	if init.AgentInfo.Version != version {
		t.Errorf("agentInfo.version %q, want %s", init.AgentInfo.Version, version)
	}
	cwd, _ := json.Marshal(t.TempDir())
	var created struct{ SessionID string }
	mustJSON(t, c.call(1, "session/new", `{"cwd":`+string(cwd)+`,"mcpServers":[]}`), &created)
	var done struct{ StopReason string }
	mustJSON(t, c.call(2, "session/prompt", `{"sessionId":"`+created.SessionID+`","prompt":[{"type":"text","text":"hi"}]}`), &done)
	if done.StopReason != "end_turn" || c.reply.String() != reply {
		t.Errorf("prompt: stopReason %q, streamed %q; want end_turn and the model's reply", done.StopReason, c.reply.String())
	}
}

// startupRuns is how many starts of each binary are timed.
const startupRuns = 31

// timing is the median and the fastest of a binary's timed starts; the
// fastest is the least disturbed by other work on the machine.
type timing struct{ median, min time.Duration }

func (x timing) String() string { return fmt.Sprintf("median %v, fastest %v", x.median, x.min) }

// startup times exec to the initialize answer of a and of b, started in
// turn so that a change in the machine's load hits both.
func startup(t *testing.T, a, b string, env []string) (timing, timing) {
	var da, db []time.Duration
	for range startupRuns {
		da = append(da, startOnce(t, a, env))
		db = append(db, startOnce(t, b, env))
	}
	summary := func(ds []time.Duration) timing {
		slices.Sort(ds)
		return timing{ds[len(ds)/2], ds[0]}
	}
	return summary(da), summary(db)
}

func startOnce(t *testing.T, bin string, env []string) time.Duration {
	began := time.Now()
	c, stop := start(t, exec.Command(bin), env)
	c.call(0, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	d := time.Since(began)
	stop()
	return d
}

func mustRun(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = env
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s%s", name, args, err, out, stderr.String())
	}
	return string(out)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}
