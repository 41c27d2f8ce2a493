package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/cmd/crow-acp/internal/config"
	"github.com/crow-acp/crow-acp/internal/agent"
	"github.com/crow-acp/crow-acp/internal/agent/tool"
	"github.com/crow-acp/crow-acp/internal/framelog"
	"github.com/crow-acp/crow-acp/internal/persistence/backend"
	"github.com/crow-acp/crow-acp/internal/secret"
)

const serveUsage = `Usage: crow-acp [serve] [flags]

Speaks the Agent Client Protocol on stdin/stdout until stdin ends: this is
what editors (Zed's agent_servers, acpx...) launch. stdout carries ACP frames
only; logs go to stderr or the log file.
`

func runServe(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet("serve", serveUsage)
	cf := config.AddFlags(fs, config.FlagsAll)
	pos, cfg, err := configured(fs, cf, args, e)
	if err == nil {
		err = wantArgs(fs, pos, 0, 0, "")
	}
	if err != nil {
		return e.fail(err)
	}
	return serve(ctx, cfg, e.std)
}

// serve speaks ACP on stdin/stdout until stdin ends or ctx is cancelled.
func serve(ctx context.Context, cfg *config.Settings, std stdio) int {
	log, closeLog, err := newLogger(cfg, std.err)
	if err != nil {
		fmt.Fprintf(std.err, "crow-acp: %v\n", err)
		return exitUsage
	}
	defer closeLog()

	// The database opens while initialize is answered: an editor waits
	// for that answer before it shows the agent, and nothing in it is
	// stored. A request that needs the store waits for the open; if it
	// fails, that request gets the reason and a later one tries again.
	store, err := backend.OpenBackground(cfg.DB.V, func(err error) error {
		err = cfg.OpenFailed(err)
		log.Error("cannot open the session database", zap.Error(err))
		return err
	})
	if err != nil { // config.Load checked the setting
		fmt.Fprintf(std.err, "crow-acp: %v\n", err)
		return exitUsage
	}
	defer store.Close()

	conn, ag, closeAgent := connectAgent(ctx, cfg, store, std.in, std.out, log)
	defer closeAgent()
	connID := ag.ConnectionID()
	log.Info("serving ACP on stdio", zap.String("model", cfg.Model.V), zap.String("db", backend.Describe(cfg.DB.V)),
		zap.String("config", cfg.File), zap.Bool("configFound", cfg.FileFound),
		zap.String("connection", connID), zap.Bool("apiKeySet", cfg.APIKey.V != ""))
	serveErr := conn.Serve(ctx, ag)
	// Before closeAgent: the connection's record and frames are written
	// if the database opens in time; a database that never answers (a
	// hung network file system) does not keep the process.
	notOpen := store.Settle(storeGrace)
	if errors.Is(notOpen, backend.ErrAbandoned) {
		log.Error("the session database did not open in time; exiting without it", zap.Duration("waited", storeGrace))
	}
	if serveErr != nil {
		log.Error("serve", zap.Error(serveErr))
		return exitError
	}
	log.Info("client disconnected; exiting")
	if err := notOpen; err != nil {
		// Served without a database: the client saw the reason on each
		// request that needed it; a shell sees it here.
		fmt.Fprintf(std.err, "crow-acp: %v\n", err)
		return exitError
	}
	return exitOK
}

// storeGrace is how long a process whose client has gone still waits for
// the database to open, to write the connection's record and frames.
const storeGrace = 5 * time.Second

// connectAgent wires an agent to an ACP connection over in/out, with the
// frame log recording every frame into store. closeAgent releases the
// agent's session leases and commits the frame log; call it after the
// connection stopped serving.
func connectAgent(ctx context.Context, cfg *config.Settings, store backend.Store, in io.Reader, out io.Writer, log *zap.Logger) (*acp.Conn, *agent.Agent, func()) {
	agentCfg := cfg.Agent(version)
	agentCfg.ConnectionID = agent.NewConnectionID()
	agentCfg.Windows = store // windows the endpoints told, kept across processes
	// A database that cannot record the connection (read-only, full) turns
	// the frame log off by itself; the connection is served without it.
	jr := framelog.Open(ctx, store, framelog.Options{ConnectionID: agentCfg.ConnectionID, Logger: log, MaxPromptBytes: agentCfg.MaxPromptBytes})
	connOpts := acp.Options{MaxLineBytes: cfg.MaxLineBytes.V, Logger: log, OnFrame: jr.OnFrame}
	agentStore := jr.Store(store)
	agentCfg.FrameLog = jr
	conn := acp.NewConn(in, out, connOpts)
	tool.SetMCPLimits(cfg.MCPLimits())
	ag := agent.New(conn, agentStore, cfg.ModelClient(), agentCfg, log)
	return conn, ag, func() {
		ag.Close()
		jr.Close()
	}
}

// newLogger logs to the log file when one is configured, else to fallback
// (stderr for serve; nowhere for the terminal commands, whose output is for
// people). stdout carries ACP frames only.
func newLogger(cfg *config.Settings, fallback io.Writer) (*zap.Logger, func(), error) {
	level, err := zapcore.ParseLevel(cfg.LogLevel.V)
	if err != nil {
		return nil, nil, fmt.Errorf("log level: %w", err)
	}
	if cfg.LogFile.V == "" && fallback == nil {
		return zap.NewNop(), func() {}, nil
	}
	// One redactor for every configured secret: whatever a log entry
	// quotes (an endpoint's error, a URL), no secret reaches the log.
	redactor := cfg.Redactor()
	sink := zapcore.AddSync(secret.NewWriter(fallback, redactor))
	closeFn := func() {}
	if cfg.LogFile.V != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.LogFile.V), 0o700); err != nil {
			return nil, nil, fmt.Errorf("log file: %w", err)
		}
		f, err := os.OpenFile(cfg.LogFile.V, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("log file: %w", err)
		}
		sink, closeFn = zapcore.AddSync(secret.NewWriter(f, redactor)), func() { _ = f.Close() }
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(sink), level)
	log := zap.New(core)
	return log, func() { _ = log.Sync(); closeFn() }, nil
}
