package agent

import (
	"github.com/crow-acp/crow-acp/internal/provider"
	"github.com/crow-acp/crow-acp/internal/secret"
)

// redactReply wraps a reply's event handler so that no known secret (an
// API key the endpoint echoes, a key the model read somewhere) reaches the
// client, the store or an export: text and reasoning pass through a
// secret.Stream each, which holds back a possible start of a secret until
// the next delta. finish sends what is held back once the stream ended and
// redacts the result's accumulated text, which the stored reply is made of.
func (tr *turns) redactReply(onEvent func(provider.Event) error) (wrapped func(provider.Event) error, finish func(*provider.Result)) {
	var secrets []string
	if tr.cfg.Secrets != nil {
		secrets = tr.cfg.Secrets()
	}
	text, reasoning := secret.NewStream(secrets...), secret.NewStream(secrets...)
	var failed bool
	send := func(ev provider.Event) error {
		if ev.Text == "" {
			return nil
		}
		err := onEvent(ev)
		failed = failed || err != nil
		return err
	}
	wrapped = func(ev provider.Event) error {
		switch ev.Kind {
		case provider.EventText:
			ev.Text = text.Write(ev.Text)
		case provider.EventReasoning:
			ev.Text = reasoning.Write(ev.Text)
		default:
			return onEvent(ev)
		}
		return send(ev)
	}
	finish = func(res *provider.Result) {
		if !failed {
			_ = send(provider.Event{Kind: provider.EventText, Text: text.Flush()})
			_ = send(provider.Event{Kind: provider.EventReasoning, Text: reasoning.Flush()})
		}
		if res != nil {
			res.Text, res.Reasoning = text.Text(res.Text), reasoning.Text(res.Reasoning)
		}
	}
	return wrapped, finish
}
