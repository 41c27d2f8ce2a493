package agent

import (
	"context"
	"errors"
	"time"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/internal/agent/request"
	"github.com/crow-acp/crow-acp/internal/persistence"
)

// Prompt runs one turn: the user message is committed before the model is
// called, every streamed delta is forwarded as it arrives, and the reply is
// committed when the stream ends, partial or not.
func (a *Agent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	s, err := a.store.GetSession(ctx, req.SessionID)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, unknownSession(req.SessionID)
	}
	if err != nil {
		return nil, storeError("prompt", err)
	}
	model := a.sessionModel(s)
	if hasImage(req.Prompt) && !model.Images {
		// The endpoint may still be telling whether it reads images
		// (bounded: 5 s).
		a.models.AwaitImages(ctx, model.Name)
		model = a.sessionModel(s)
	}
	parts, err := userParts(req.Prompt, model)
	if err != nil {
		return nil, err
	}
	if err := a.turns.checkPromptSize(parts); err != nil {
		return nil, err
	}
	if fl, ok := a.cfg.FrameLog.(interface{ PromptAccepted(string) }); ok {
		// Within its limits: the frame log need not hold it for a refusal.
		fl.PromptAccepted(s.ID)
	}
	sess, turnCtx, err := a.turns.beginTurn(ctx, s.ID)
	if err != nil {
		return nil, err
	}
	type answer struct {
		res *acp.PromptResponse
		err error
	}
	ended := make(chan answer, 1)
	go func() {
		var ans answer
		ans.err = acp.Safely(a.log, "the prompt turn", func() (err error) {
			ans.res, err = a.turns.runPrompt(ctx, turnCtx, sess, s, req, parts)
			return err
		})
		ended <- ans
	}()
	// The turn counts as running until its answer is written and its work
	// has ended, so that session/close, session/delete and the next prompt
	// wait for it.
	var ans answer
	select {
	case ans = <-ended:
	case <-turnCtx.Done():
		// Cancel is answered within CancelGrace whatever the turn is
		// waiting for (a store lock, a tool, a client that does not
		// answer); the work still running stops on its own, silenced.
		select {
		case ans = <-ended:
		case <-time.After(a.turns.cancelGrace()):
			sess.muteTurn()
			res, err := cancelledResponse(ctx)
			sess.markAnswered()
			acp.AfterResponse(ctx, func() {
				request.GoSafe(a.log, "ending a cancelled turn", func() {
					<-ended
					sess.endTurn()
				})
			})
			return res, err
		}
	}
	sess.markAnswered()
	acp.AfterResponse(ctx, func() { sess.endTurn() })
	return ans.res, ans.err
}

// Cancel stops the session's running turn, if any. The turn answers its
// prompt with stopReason "cancelled".
func (a *Agent) Cancel(_ context.Context, n *acp.CancelNotification) error {
	if t := a.sessions.runningTurn(n.SessionID); t != nil {
		t.cancel()
	}
	return nil
}
