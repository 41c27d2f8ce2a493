package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCredentialsFile pins how keys are kept: beside the configuration,
// read like the environment (which wins), other lines kept on save, and a
// copy others can read refused.
func TestCredentialsFile(t *testing.T) {
	dir := t.TempDir()
	getenv := func(env map[string]string) func(string) string { return func(k string) string { return env[k] } }
	path := credentialsPath(getenv(map[string]string{"XDG_CONFIG_HOME": dir}))
	if want := filepath.Join(dir, "crow-acp", "credentials"); path != want {
		t.Fatalf("path %s, want %s", path, want)
	}
	if err := SaveCredential(path, "DEEPSEEK_API_KEY", "sk-ds"); err != nil {
		t.Fatal(err)
	}
	if err := SaveCredential(path, "OPENAI_API_KEY", "sk-old"); err != nil {
		t.Fatal(err)
	}
	if err := SaveCredential(path, "OPENAI_API_KEY", "sk-new"); err != nil {
		t.Fatal(err)
	}
	vars, err := readCredentials(path)
	if err != nil || len(vars) != 2 || vars["OPENAI_API_KEY"] != "sk-new" || vars["DEEPSEEK_API_KEY"] != "sk-ds" {
		t.Fatalf("read back %v, %v", vars, err)
	}
	v, err := resolveKey(getenv(nil), "OPENAI_API_KEY", path)
	if err != nil || v.V != "sk-new" || v.From.Kind != "file" {
		t.Fatalf("without the variable: %+v, %v; want the file's key", v, err)
	}
	v, err = resolveKey(getenv(map[string]string{"OPENAI_API_KEY": "sk-env"}), "OPENAI_API_KEY", path)
	if err != nil || v.V != "sk-env" || v.From.Kind != "env" {
		t.Fatalf("with the variable: %+v, %v; want the environment's key", v, err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := resolveKey(getenv(nil), "OPENAI_API_KEY", path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a world-readable file: %v, want a refusal naming chmod 600", err)
	}
}

// Logout removes one key and keeps the others; the auth the agent gets
// says where the key comes from and signs out of the saved one only.
func TestLogoutRemovesTheSavedKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "crow-acp", "credentials")
	if err := RemoveCredential(path, "OPENAI_API_KEY"); err != nil {
		t.Fatalf("logout without a credentials file: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("logout created the credentials file: %v", err)
	}
	for k, v := range map[string]string{"DEEPSEEK_API_KEY": "sk-ds", "OPENAI_API_KEY": "sk-old"} {
		if err := SaveCredential(path, k, v); err != nil {
			t.Fatal(err)
		}
	}
	cfg, _, err := loadTestConfigIn(t, dir, "", map[string]string{"XDG_CONFIG_HOME": dir})
	if err != nil {
		t.Fatal(err)
	}
	auth := cfg.Agent("test").Auth
	if auth == nil || auth.Logout == nil || !auth.HasKey() || auth.KeyFrom() != "login" {
		t.Fatalf("with a saved key: %+v", auth)
	}
	if err := auth.Logout(); err != nil {
		t.Fatal(err)
	}
	vars, err := readCredentials(path)
	if err != nil || len(vars) != 1 || vars["DEEPSEEK_API_KEY"] != "sk-ds" {
		t.Fatalf("after logout: %v, %v; want only the other key", vars, err)
	}
	if auth.HasKey() || auth.KeyFrom() != "" {
		t.Fatal("a key is still found after logout")
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file after logout: %v %v", err, st)
	}
}
