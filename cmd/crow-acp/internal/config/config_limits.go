package config

import (
	"fmt"
	"strconv"
	"time"

	"github.com/crow-acp/crow-acp/internal/agent"
	"github.com/crow-acp/crow-acp/internal/imagecheck"
	"github.com/crow-acp/crow-acp/internal/provider"
)

// limitsConfig is the resolved [limits] and [requests] settings.
type limitsConfig struct {
	promptBytes    Value[int]
	imageBytes     Value[int]
	promptImages   Value[int]
	activeSessions Value[int]
	retries        Value[int]
	retryDelay     Value[time.Duration]
	idleTimeout    Value[time.Duration]
	replyBytes     Value[int]
	argumentBytes  Value[int]
	eventBytes     Value[int]
	timeout        Value[time.Duration]
	subagents      Value[int]
	subagentSteps  Value[int]
	subagentTokens Value[int]
	subagentsTurn  Value[int]
}

func loadLimits(r resolver, l limitsFile, q requestsFile) (limitsConfig, error) {
	var c limitsConfig
	var err error
	if c.promptBytes, err = r.int("", "CROW_MAX_PROMPT_BYTES", l.PromptBytes, "limits.prompt_bytes", agent.DefaultMaxPromptBytes); err != nil {
		return c, err
	}
	if c.activeSessions, err = r.int("", "CROW_MAX_CONCURRENT_SESSIONS", l.ActiveSessions, "limits.active_sessions", agent.DefaultMaxConcurrentTurns); err != nil {
		return c, err
	}
	if c.retries, err = r.int("", "CROW_MODEL_RETRIES", q.Retries, "requests.retries", agent.DefaultRetryPolicy.MaxAttempts-1); err != nil {
		return c, err
	}
	if c.retryDelay, err = r.duration("CROW_MODEL_RETRY_DELAY", q.RetryDelay, "requests.retry_delay", agent.DefaultRetryPolicy.BaseDelay); err != nil {
		return c, err
	}
	if c.idleTimeout, err = r.duration("CROW_MODEL_IDLE_TIMEOUT", q.IdleTimeout, "requests.idle_timeout", provider.DefaultIdleTimeout); err != nil {
		return c, err
	}
	if c.timeout, err = r.duration("CROW_MODEL_TIMEOUT", q.Timeout, "requests.timeout", provider.DefaultTimeout); err != nil {
		return c, err
	}
	for _, b := range []struct {
		v    *Value[int]
		env  string
		file *int
		key  string
		def  int
	}{
		{&c.imageBytes, "CROW_MAX_IMAGE_BYTES", l.ImageBytes, "limits.image_bytes", imagecheck.DefaultMaxImageBytes},
		{&c.promptImages, "CROW_MAX_PROMPT_IMAGE_BYTES", l.PromptImageBytes, "limits.prompt_image_bytes", imagecheck.DefaultMaxPromptImageBytes},
		{&c.replyBytes, "CROW_MAX_REPLY_BYTES", l.ReplyBytes, "limits.reply_bytes", provider.DefaultMaxReplyBytes},
		{&c.argumentBytes, "CROW_MAX_ARGUMENTS_BYTES", l.ArgumentBytes, "limits.arguments_bytes", provider.DefaultMaxArgumentBytes},
		{&c.eventBytes, "CROW_MAX_EVENT_BYTES", l.EventBytes, "limits.event_bytes", provider.DefaultMaxEventBytes},
		{&c.subagents, "CROW_MAX_SUBAGENTS", l.Subagents, "limits.subagents", agent.DefaultMaxSubagents},
		{&c.subagentSteps, "CROW_SUBAGENT_STEPS", l.SubagentSteps, "limits.subagent_steps", agent.DefaultSubagentSteps},
		{&c.subagentTokens, "CROW_SUBAGENT_TOKENS", l.SubagentTokens, "limits.subagent_tokens", agent.DefaultSubagentTokens},
		{&c.subagentsTurn, "CROW_SUBAGENTS_PER_TURN", l.SubagentsTurn, "limits.subagents_per_turn", agent.DefaultSubagentsPerTurn},
	} {
		if *b.v, err = r.int("", b.env, b.file, b.key, b.def); err != nil {
			return c, err
		}
	}
	return c, nil
}

func (c limitsConfig) validate() error {
	if c.promptBytes.V < 1024 {
		return Usagef("prompt size limit %d bytes is too small: at least 1024 (from %s)", c.promptBytes.V, c.promptBytes.From)
	}
	if err := checkImageLimits(c.imageBytes.V, c.promptImages.V); err != nil {
		return Usagef("%v (from %s, %s)", err, c.imageBytes.From, c.promptImages.From)
	}
	if c.activeSessions.V < 1 {
		return Usagef("concurrent sessions limit %d: must be at least 1 (from %s)", c.activeSessions.V, c.activeSessions.From)
	}
	if n := c.retries.V; n < 0 || n > 10 {
		return Usagef("model retries %d: use 0 to 10 (from %s)", n, c.retries.From)
	}
	if d := c.retryDelay.V; d < time.Millisecond || d > time.Minute {
		return Usagef("model retry delay %s: use 1ms to 1m (from %s)", d, c.retryDelay.From)
	}
	if d := c.idleTimeout.V; d < 100*time.Millisecond {
		return Usagef("model idle timeout %s is too short: at least 100ms (from %s)", d, c.idleTimeout.From)
	}
	if d := c.timeout.V; d < time.Second {
		return Usagef("model request timeout %s is too short: at least 1s (from %s)", d, c.timeout.From)
	}
	for _, b := range []Value[int]{c.replyBytes, c.argumentBytes, c.eventBytes} {
		if b.V < 1024 {
			return Usagef("model output limit %d bytes is too small: at least 1024 (from %s)", b.V, b.From)
		}
	}
	if n := c.subagents.V; n < 0 || n > 64 {
		return Usagef("subagents limit %d: use 0 (no task tool) to 64 (from %s)", n, c.subagents.From)
	}
	if n := c.subagentSteps.V; n < 1 {
		return Usagef("subagent steps limit %d: must be at least 1 (from %s)", n, c.subagentSteps.From)
	}
	if n := c.subagentTokens.V; n < 1000 {
		return Usagef("subagent tokens limit %d is too small: at least 1000 (from %s)", n, c.subagentTokens.From)
	}
	if n := c.subagentsTurn.V; n < 1 || n > 64 {
		return Usagef("subagents per turn limit %d: use 1 to 64 (from %s)", n, c.subagentsTurn.From)
	}
	return nil
}

// validateFile checks the file's values, naming their lines.
func (l limitsFile) validateFile(f *loadedFile, q requestsFile) error {
	if v := l.PromptBytes; v != nil && *v < 1024 {
		return f.errorAt("limits.prompt_bytes", "%d is too small (at least 1024)", *v)
	}
	if v := l.ActiveSessions; v != nil && *v < 1 {
		return f.errorAt("limits.active_sessions", "must be at least 1")
	}
	if l.ImageBytes != nil || l.PromptImageBytes != nil {
		one, all := deref(l.ImageBytes, imagecheck.DefaultMaxImageBytes), deref(l.PromptImageBytes, imagecheck.DefaultMaxPromptImageBytes)
		if err := checkImageLimits(one, all); err != nil {
			key := "limits.prompt_image_bytes"
			if l.ImageBytes != nil && (one < 1024 || one > maxImageBytes) {
				key = "limits.image_bytes"
			}
			return f.errorAt(key, "%v", err)
		}
	}
	for _, b := range []struct {
		key string
		v   *int
	}{{"limits.reply_bytes", l.ReplyBytes}, {"limits.arguments_bytes", l.ArgumentBytes}, {"limits.event_bytes", l.EventBytes}} {
		if b.v != nil && *b.v < 1024 {
			return f.errorAt(b.key, "%d is too small (at least 1024)", *b.v)
		}
	}
	if v := q.Retries; v != nil && (*v < 0 || *v > 10) {
		return f.errorAt("requests.retries", "%d is out of range: 0 to 10", *v)
	}
	for _, d := range []struct {
		key string
		v   *string
	}{{"requests.retry_delay", q.RetryDelay}, {"requests.idle_timeout", q.IdleTimeout}, {"requests.timeout", q.Timeout}} {
		if d.v == nil {
			continue
		}
		if _, err := time.ParseDuration(*d.v); err != nil {
			return f.errorAt(d.key, "%q is not a duration (e.g. \"500ms\", \"2m\")", *d.v)
		}
	}
	return nil
}

// maxImageBytes bounds the image limits: the line that carries a prompt's
// images in base64 (imagecheck.LineBytes) stays under 1 GiB.
const maxImageBytes = 512 << 20

// checkImageLimits: one image and a prompt's images each from 1 KiB to
// 512 MiB, and a prompt may hold at least one image.
func checkImageLimits(one, all int) error {
	switch {
	case one < 1024 || one > maxImageBytes:
		return fmt.Errorf("image size limit %d bytes: use 1024 to %d", one, maxImageBytes)
	case all < 1024 || all > maxImageBytes:
		return fmt.Errorf("prompt image limit %d bytes: use 1024 to %d", all, maxImageBytes)
	case all < one:
		return fmt.Errorf("prompt image limit %d bytes is smaller than one image's (%d)", all, one)
	}
	return nil
}

// lineBytesDefault is the line a prompt within the limits needs: its
// images in base64 and its text (imagecheck.LineBytes).
func (c limitsConfig) lineBytesDefault() int {
	return imagecheck.LineBytes(c.promptBytes.V, c.promptImages.V)
}

func (c limitsConfig) rows() []Row {
	return []Row{
		{"limits.prompt_bytes", strconv.Itoa(c.promptBytes.V), c.promptBytes.From},
		{"limits.image_bytes", strconv.Itoa(c.imageBytes.V), c.imageBytes.From},
		{"limits.prompt_image_bytes", strconv.Itoa(c.promptImages.V), c.promptImages.From},
		{"limits.active_sessions", strconv.Itoa(c.activeSessions.V), c.activeSessions.From},
		{"limits.reply_bytes", strconv.Itoa(c.replyBytes.V), c.replyBytes.From},
		{"limits.arguments_bytes", strconv.Itoa(c.argumentBytes.V), c.argumentBytes.From},
		{"limits.event_bytes", strconv.Itoa(c.eventBytes.V), c.eventBytes.From},
		{"limits.subagents", strconv.Itoa(c.subagents.V), c.subagents.From},
		{"limits.subagent_steps", strconv.Itoa(c.subagentSteps.V), c.subagentSteps.From},
		{"limits.subagent_tokens", strconv.Itoa(c.subagentTokens.V), c.subagentTokens.From},
		{"limits.subagents_per_turn", strconv.Itoa(c.subagentsTurn.V), c.subagentsTurn.From},
		{"requests.retries", strconv.Itoa(c.retries.V), c.retries.From},
		{"requests.retry_delay", c.retryDelay.V.String(), c.retryDelay.From},
		{"requests.idle_timeout", c.idleTimeout.V.String(), c.idleTimeout.From},
		{"requests.timeout", c.timeout.V.String(), c.timeout.From},
	}
}

// applyModel copies the bounds of one model request into the client's
// configuration.
func (c limitsConfig) applyModel(oc *provider.OpenAIConfig) {
	oc.IdleTimeout, oc.Timeout = c.idleTimeout.V, c.timeout.V
	oc.MaxReplyBytes, oc.MaxArgumentBytes, oc.MaxEventBytes = c.replyBytes.V, c.argumentBytes.V, c.eventBytes.V
}

// apply copies the settings into the agent's configuration.
func (c limitsConfig) apply(ac *agent.Config) {
	ac.MaxPromptBytes = c.promptBytes.V
	ac.Images = imagecheck.Limits{ImageBytes: c.imageBytes.V, PromptImageBytes: c.promptImages.V}
	ac.MaxConcurrentTurns = c.activeSessions.V
	ac.Retry.MaxAttempts = c.retries.V + 1
	ac.Retry.BaseDelay = c.retryDelay.V
	ac.Subagents = agent.SubagentLimits{MaxConcurrent: c.subagents.V, MaxSteps: c.subagentSteps.V, MaxTokens: c.subagentTokens.V, PerTurn: c.subagentsTurn.V}
	if c.subagents.V == 0 {
		ac.Subagents.MaxConcurrent = -1 // off
	}
}
