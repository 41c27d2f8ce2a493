package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Issue 29 findings 4 and 6, wiring: with HOME holding the workspace, the
// agent protects crow-acp's configuration, credentials, database and log
// files, and redacts from model text every key it knows (the credentials
// file's included) and credential header values, but not an ordinary
// header value such as a title.
func TestOwnFilesAndModelTextSecrets(t *testing.T) {
	dir := t.TempDir()
	creds := filepath.Join(dir, ".config", "crow-acp", "credentials")
	if err := os.MkdirAll(filepath.Dir(creds), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(creds, []byte("OTHER_API_KEY=sk-other-provider-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := `[providers.p]
base_url = "http://127.0.0.1:1/v1"
headers = { "X-Title" = "crow-acp-title", "Authorization" = "Bearer tok-header-0123456789" }
[log]
file = "` + filepath.Join(dir, "crow.log") + `"
`
	cfg, file, err := loadTestConfigIn(t, dir, doc, map[string]string{"OPENAI_API_KEY": "sk-env-key-0123456789", "CROW_DB": filepath.Join(dir, "crow.db")})
	if err != nil {
		t.Fatal(err)
	}
	ac := cfg.Agent("test")
	for _, f := range []string{file, creds, filepath.Join(dir, "crow.db"), filepath.Join(dir, "crow.log")} {
		if !slices.Contains(ac.ProtectedFiles, f) {
			t.Errorf("%s is not protected: %v", f, ac.ProtectedFiles)
		}
	}
	secrets := strings.Join(ac.Secrets(), "\n")
	for _, want := range []string{"sk-env-key-0123456789", "sk-other-provider-0123456789", "tok-header-0123456789"} {
		if !strings.Contains(secrets, want) {
			t.Errorf("model text is not redacted of %s", want)
		}
	}
	if strings.Contains(secrets, "crow-acp-title") {
		t.Error("an ordinary header value would be redacted from model text")
	}
}
