package tool

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
)

// Issue 13 case 5: commands and MCP stdio servers must not inherit
// crow-acp's secrets: the variable a provider's api_key_env names,
// OPENAI_API_KEY, PG* passwords, CROW_* and names like *KEY*, *SECRET*,
// *TOKEN*, *PASSWORD*. An `env` command's output is stored and sent to the
// model.
func TestChildEnvDropsSecrets(t *testing.T) {
	secrets := map[string]string{
		"ACME_API_KEY": "sk-acme-0001", "OPENAI_API_KEY": "sk-openai-0002", "PGPASSWORD": "pg-0003",
		"PGPASSFILE": "/home/u/.pgpass-0004", "CROW_DB": "postgres://u:pw-0005@h/db", "GITHUB_TOKEN": "ghp-0006",
		"AWS_SECRET_ACCESS_KEY": "aws-0007", "MYSQL_PASSWORD": "my-0008", "PROVIDER_CRED": "cred-0009",
		"INNOCENT_NAME": "holds sk-acme-0001 inside",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("HARMLESS_SETTING", "kept-0010")
	policy := EnvPolicy{SecretNames: []string{"PROVIDER_CRED"}, SecretValues: []string{"sk-acme-0001"}}

	root := t.TempDir()
	env := &Env{Roots: ResolveRoots([]string{root}), ChildEnv: policy.Environ(osEnviron())}
	act, err := runCommand{}.Prepare(env, json.RawMessage(`{"command":"env"}`))
	if err != nil {
		t.Fatal(err)
	}
	out := act.Run(context.Background(), nil).Output
	for k, v := range secrets {
		if strings.Contains(out, v) {
			t.Errorf("run_command env shows %s", k)
		}
	}
	if !strings.Contains(out, "kept-0010") {
		t.Errorf("an ordinary variable was dropped:\n%s", out)
	}

	// Without a configured policy, the defaults still apply.
	env.ChildEnv = nil
	out = act.Run(context.Background(), nil).Output
	for _, k := range []string{"ACME_API_KEY", "OPENAI_API_KEY", "PGPASSWORD", "CROW_DB", "GITHUB_TOKEN"} {
		if strings.Contains(out, "\n"+k+"=") {
			t.Errorf("run_command env shows %s with the default policy", k)
		}
	}

	// An MCP stdio server: its stderr reaches the user and the model in the
	// failure message.
	set := ConnectMCP([]acp.McpServer{{Name: "leak", Command: "sh", Args: []string{"-c",
		`echo "got $ACME_API_KEY $PGPASSWORD $OPENAI_API_KEY $PROVIDER_CRED $GITHUB_TOKEN $HARMLESS_SETTING" >&2; exit 1`}}},
		MCPOptions{Version: "test", Env: policy.Environ(osEnviron())})
	defer set.Close()
	set.Wait(context.Background())
	failures := strings.Join(set.TakeFailures(), "\n")
	if !strings.Contains(failures, "kept-0010") {
		t.Fatalf("the server's stderr was not seen: %s", failures)
	}
	for k, v := range secrets {
		if strings.Contains(failures, v) {
			t.Errorf("an MCP stdio server got %s: %s", k, failures)
		}
	}
}

func TestEnvPolicyOptions(t *testing.T) {
	parent := []string{"PATH=/bin", "HOME=/h", "LANG=C", "EDITOR=vi", "MY_A=1", "MY_B=2", "API_TOKEN=t"}
	// Every child gets git's safe.bareRepository=explicit (issue 29).
	const git = "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.bareRepository GIT_CONFIG_VALUE_0=explicit "
	for _, c := range []struct {
		p    EnvPolicy
		want string
	}{
		{EnvPolicy{}, "EDITOR=vi " + git + "HOME=/h LANG=C MY_A=1 MY_B=2 PATH=/bin"},
		{EnvPolicy{Inherit: "core"}, git + "HOME=/h LANG=C PATH=/bin"},
		{EnvPolicy{Inherit: "none", Set: map[string]string{"X": "1"}}, git + "X=1"},
		{EnvPolicy{Exclude: []string{"my_*"}}, "EDITOR=vi " + git + "HOME=/h LANG=C PATH=/bin"},
		{EnvPolicy{IncludeOnly: []string{"PATH", "MY_*"}, Set: map[string]string{"MY_C": "3", "Z": "z"}}, git + "MY_A=1 MY_B=2 MY_C=3 PATH=/bin"},
		{EnvPolicy{Set: map[string]string{"API_TOKEN": "given"}}, "API_TOKEN=given EDITOR=vi " + git + "HOME=/h LANG=C MY_A=1 MY_B=2 PATH=/bin"},
	} {
		if got := strings.Join(c.p.Environ(parent), " "); got != c.want {
			t.Errorf("%+v: %s, want %s", c.p, got, c.want)
		}
	}
}

// Commands never wait for a pager, an editor or a credential prompt: the
// non-interactive settings replace whatever the parent had.
func TestCommandsRunNonInteractive(t *testing.T) {
	env := &Env{Roots: ResolveRoots([]string{t.TempDir()}), ChildEnv: []string{"PAGER=less", "KEEP=1", "PATH=" + os.Getenv("PATH")}}
	act, err := runCommand{}.Prepare(env, []byte(`{"command":"echo $PAGER $GIT_PAGER $LESS $GIT_TERMINAL_PROMPT $KEEP"}`))
	if err != nil {
		t.Fatal(err)
	}
	res := act.Run(context.Background(), func([]acp.ToolCallContent) {})
	if !strings.Contains(res.Output, "cat cat -FRX 0 1") {
		t.Fatalf("output %q", res.Output)
	}
}
