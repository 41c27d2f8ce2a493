package config

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/crow-acp/crow-acp/internal/provider"
)

// The credentials file holds the API keys `crow-acp login` saved, as
// NAME=value lines. It is read like the environment: a key variable that
// the environment does not set is looked up there. It lives beside the
// configuration file ($XDG_CONFIG_HOME/crow-acp/credentials), is written
// 0600 in a 0700 directory, and a copy others can read is refused: a key
// must not leak through a careless chmod or cp.

// maxCredentialsBytes bounds the file: a few keys, never megabytes.
const maxCredentialsBytes = 64 << 10

// credentialsPath is $XDG_CONFIG_HOME/crow-acp/credentials, or
// ~/.config/crow-acp/credentials; "" without a home directory.
func credentialsPath(getenv func(string) string) string {
	if p := defaultConfigPath(getenv); p != "" {
		return filepath.Join(filepath.Dir(p), "credentials")
	}
	return ""
}

// readCredentials returns the file's variables; none when it does not
// exist.
func readCredentials(path string) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("credentials file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("credentials file: %w", err)
	}
	if !st.Mode().IsRegular() || st.Size() > maxCredentialsBytes {
		return nil, fmt.Errorf("credentials file %s is not a small regular file", path)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("credentials file %s can be read by others (mode %#o): run chmod 600 %s", path, st.Mode().Perm(), path)
	}
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4096), maxCredentialsBytes)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, val, ok := strings.Cut(line, "=")
		if !ok || !validVarName(name) {
			return nil, fmt.Errorf("credentials file %s:%d: want NAME=value", path, n)
		}
		vars[name] = val
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("credentials file %s: %w", path, err)
	}
	return vars, nil
}

// SaveCredential sets name=value in the file, keeping its other lines. The
// new file replaces the old one in one rename, so a reader sees either.
// The read, change and rename happen under a lock on path.lock, so
// concurrent logins (an editor's sign-in for several agents at once) all
// keep their keys.
func SaveCredential(path, name, value string) error {
	return rewriteCredential(path, name, name+"="+value+"\n")
}

// RemoveCredential removes name from the file (logout). A file or a name
// that is not there is not an error: the key is gone either way.
func RemoveCredential(path, name string) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return rewriteCredential(path, name, "")
}

// rewriteCredential replaces the line of name with line ("" = none).
func rewriteCredential(path, name, line string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("credentials file: %w", err)
	}
	unlock, err := lockCredentials(path, credentialsLockWait)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := readCredentials(path); err != nil {
		return err
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("credentials file: %w", err)
	}
	var out bytes.Buffer
	for _, line := range strings.Split(string(old), "\n") {
		if k, _, ok := strings.Cut(strings.TrimSpace(line), "="); (ok && k == name) || strings.TrimSpace(line) == "" {
			continue
		}
		out.WriteString(line + "\n")
	}
	out.WriteString(line)
	// CreateTemp makes the file 0600.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".credentials-*")
	if err != nil {
		return fmt.Errorf("credentials file: %w", err)
	}
	defer os.Remove(tmp.Name()) // gone already after the rename
	_, err = tmp.Write(out.Bytes())
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("credentials file: %w", err)
	}
	return nil
}

// credentialsLockWait bounds the wait for another login to finish: it
// holds the lock only while it rewrites a small file.
const credentialsLockWait = 10 * time.Second

// lockCredentials takes the lock beside path (path.lock, kept: removing it
// would let two processes lock different files), waiting at most wait.
func lockCredentials(path string, wait time.Duration) (unlock func(), err error) {
	lockPath := path + ".lock"
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("credentials file: %w", err)
	}
	deadline := time.Now().Add(wait)
	for {
		busy, err := tryLock(f)
		if err == nil && !busy {
			return func() { f.Close() }, nil // closing releases the lock
		}
		if !busy || time.Now().After(deadline) {
			f.Close()
			if busy {
				return nil, fmt.Errorf("credentials file: another crow-acp login held %s for over %s; try again", lockPath, wait)
			}
			return nil, fmt.Errorf("credentials file: lock %s: %w", lockPath, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// keySource finds the API key when it is needed: the environment's, or
// else the credentials file's as it is now, so a key saved by
// `crow-acp login` while crow-acp serves is used from the next request on.
type keySource struct {
	envKey string // the environment's value; wins when set
	name   string // the variable
	path   string // the credentials file; "" = none
}

func (k keySource) key() string {
	if k.envKey != "" {
		return k.envKey
	}
	vars, err := readCredentials(k.path)
	if err != nil {
		return ""
	}
	return vars[k.name]
}

// liveKeyClient is the model client for the key keySource finds at each
// request: rebuilt when the key changed (after a login), else reused.
type liveKeyClient struct {
	keys  keySource
	build func(key string) provider.Client

	mu     sync.Mutex
	key    string
	client provider.Client
}

var _ provider.Client = (*liveKeyClient)(nil)

// Stream implements provider.Client.
func (c *liveKeyClient) Stream(ctx context.Context, req provider.Request, onEvent func(provider.Event) error) (*provider.Result, error) {
	return c.current().Stream(ctx, req, onEvent)
}

func (c *liveKeyClient) current() provider.Client {
	key := c.keys.key()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client == nil || key != c.key {
		c.key, c.client = key, c.build(key)
	}
	return c.client
}

// resolveKey is the key in the environment, else in the credentials file.
func resolveKey(getenv func(string) string, name, credentials string) (Value[string], error) {
	if v := getenv(name); v != "" {
		return Value[string]{V: v, From: Source{Kind: "env", Detail: name}}, nil
	}
	vars, err := readCredentials(credentials)
	if err != nil {
		return Value[string]{}, &Error{err.Error()}
	}
	if v := vars[name]; v != "" {
		return Value[string]{V: v, From: Source{Kind: "file", Detail: credentials + " (crow-acp login)"}}, nil
	}
	return Value[string]{From: Source{Kind: "env", Detail: name + " is not set"}}, nil
}
