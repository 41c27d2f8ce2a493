package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loadTestConfig loads doc as the configuration file with vars as the
// whole environment (HOME is a fresh directory).
func loadTestConfig(t *testing.T, doc string, vars map[string]string) (*Settings, error) {
	t.Helper()
	cfg, _, err := loadTestConfigIn(t, t.TempDir(), doc, vars)
	return cfg, err
}

// loadTestConfigIn writes doc to a file in dir named after the test and
// loads it with vars as the whole environment and HOME set to dir.
func loadTestConfigIn(t *testing.T, dir, doc string, vars map[string]string) (*Settings, string, error) {
	t.Helper()
	file := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+".toml")
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	cf := AddFlags(fs, FlagsAll)
	if err := fs.Parse([]string{"--config", file}); err != nil {
		t.Fatal(err)
	}
	all := map[string]string{"HOME": dir}
	for k, v := range vars {
		all[k] = v
	}
	cfg, err := Load(cf, func(k string) string { return all[k] })
	return cfg, file, err
}

// Issue 13 case 5, wiring: every provider's api_key_env is dropped from
// the child environment (not only the selected one), so are the defaults
// and anything holding the key's value; [shell_environment_policy] adds
// excludes and set values and is listed by config show.
func TestShellEnvironmentPolicyConfig(t *testing.T) {
	secrets := map[string]string{"ACME_API_KEY": "sk-acme-1111", "OTHER_CRED_ENV": "other-2222", "PGPASSWORD": "pg-3333",
		"MY_PRIVATE": "mine-4444", "COPY_OF_KEY": "sk-acme-1111"}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("ORDINARY", "kept-5555")
	doc := `model = "m"
provider = "acme"
[providers.acme]
base_url = "http://127.0.0.1:1/v1"
api_key_env = "ACME_API_KEY"
[providers.other]
base_url = "http://127.0.0.1:2/v1"
api_key_env = "OTHER_CRED_ENV"
[shell_environment_policy]
exclude = ["MY_*"]
set = { BUILD_MODE = "ci" }
`
	cfg, err := loadTestConfig(t, doc, secrets)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(cfg.Agent("test").ChildEnv, "\n")
	for k, v := range secrets {
		if strings.Contains(got, v) {
			t.Errorf("the child environment holds %s", k)
		}
	}
	if !strings.Contains(got, "ORDINARY=kept-5555") || !strings.Contains(got, "BUILD_MODE=ci") {
		t.Errorf("child environment lost ordinary or set variables:\n%s", got)
	}
	shown := map[string]string{}
	for _, r := range cfg.Rows() {
		shown[r.Key] = r.Value
	}
	if ex := shown["shell_environment_policy.exclude"]; !strings.Contains(ex, "MY_*") || !strings.Contains(ex, "OTHER_CRED_ENV") || !strings.Contains(ex, "*TOKEN*") {
		t.Errorf("config show exclude: %q", ex)
	}
	if shown["shell_environment_policy.set"] != "BUILD_MODE" || shown["shell_environment_policy.inherit"] != "all" {
		t.Errorf("config show: %v", shown)
	}
	if _, err := loadTestConfig(t, "[shell_environment_policy]\ninherit = \"some\"\n", nil); err == nil || !strings.Contains(err.Error(), "shell_environment_policy.inherit") {
		t.Errorf("bad inherit: %v", err)
	}
}
