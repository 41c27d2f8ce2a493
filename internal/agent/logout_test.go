package agent

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/provider/fakemodel"
)

// fakeKeys is a credentials file and an environment in memory.
type fakeKeys struct {
	mu           sync.Mutex
	env, stored  string
	logoutCalled int
}

func (k *fakeKeys) auth() *Auth {
	return &Auth{KeyVariable: "OPENAI_API_KEY",
		HasKey: func() bool { k.mu.Lock(); defer k.mu.Unlock(); return k.env != "" || k.stored != "" },
		KeyFrom: func() string {
			k.mu.Lock()
			defer k.mu.Unlock()
			switch {
			case k.env != "":
				return KeyFromEnv
			case k.stored != "":
				return KeyFromLogin
			}
			return ""
		},
		Logout: func() error { k.mu.Lock(); defer k.mu.Unlock(); k.stored = ""; k.logoutCalled++; return nil },
	}
}

func authState(t *testing.T, a *Agent) (string, []acp.AuthAccount) {
	t.Helper()
	res, err := a.AuthStatus(context.Background(), &acp.AuthStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return res.State, res.Accounts
}

// Logout removes the stored key and auth/status follows what is known:
// a key is set (authenticated), none is (unauthenticated), the endpoint
// answered without one (not_required), it refused one (unauthenticated).
func TestLogoutAndAuthStatus(t *testing.T) {
	ctx := context.Background()
	keys := &fakeKeys{stored: "sk-stored"}
	a, _, m := newTestAgent(t, Config{Model: "m", Auth: keys.auth()}, fakemodel.Reply{Text: "ok"}, fakemodel.Reply{Status: 401})
	caps := a.auth.authCapabilities()
	if caps == nil || caps.Logout == nil || caps.Status == nil {
		t.Fatalf("auth capabilities %+v", caps)
	}
	state, accounts := authState(t, a)
	if state != acp.AuthAuthenticated || len(accounts) != 1 || accounts[0].Label != "OPENAI_API_KEY saved by crow-acp login" {
		t.Fatalf("with a stored key: %s %+v", state, accounts)
	}
	if _, err := a.Logout(ctx, &acp.LogoutRequest{}); err != nil {
		t.Fatal(err)
	}
	if state, accounts = authState(t, a); state != acp.AuthUnauthenticated || accounts != nil || keys.logoutCalled != 1 {
		t.Fatalf("after logout: %s %+v (logout called %d times)", state, accounts, keys.logoutCalled)
	}
	s, err := a.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	prompt := &acp.PromptRequest{SessionID: s.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock("hi")}}
	if _, err := a.Prompt(ctx, prompt); err != nil {
		t.Fatal(err)
	}
	if state, _ = authState(t, a); state != acp.AuthNotRequired {
		t.Fatalf("after an answer without a key: %s", state)
	}
	wantCode(t, mustFail(a.Prompt(ctx, prompt)), acp.CodeAuthRequired)
	if state, _ = authState(t, a); state != acp.AuthUnauthenticated {
		t.Fatalf("after a 401: %s", state)
	}
	if n := len(m.Requests()); n != 2 {
		t.Fatalf("%d model requests", n)
	}

	// A key in the environment cannot be signed out of from here: logout
	// says so, and what to do.
	keys.env, keys.stored = "sk-env", "sk-stored"
	e := wantCode(t, mustFail(a.Logout(ctx, &acp.LogoutRequest{})), acp.CodeInvalidRequest)
	if keys.stored != "" || !strings.Contains(e.Message, "OPENAI_API_KEY is set in crow-acp's environment") {
		t.Fatalf("logout with an environment key: stored %q, %v", keys.stored, e)
	}

	// Without auth configured neither method is offered.
	b, _, _ := newTestAgent(t, Config{Model: "m"})
	if b.auth.authCapabilities() != nil {
		t.Fatal("auth capabilities without auth")
	}
	wantCode(t, mustFail(b.Logout(ctx, &acp.LogoutRequest{})), acp.CodeMethodNotFound)
}
