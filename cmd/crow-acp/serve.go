package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/crow-acp/crow-acp/acp"
	"github.com/crow-acp/crow-acp/agent"
	"github.com/crow-acp/crow-acp/persistence/sqlite"
	"github.com/crow-acp/crow-acp/streaming"
)

// serve speaks ACP on stdin/stdout until stdin ends or ctx is cancelled.
func serve(ctx context.Context, cfg *config, std stdio) int {
	log, closeLog, err := newLogger(cfg, std)
	if err != nil {
		fmt.Fprintf(std.err, "crow-acp: %v\n", err)
		return exitUsage
	}
	defer closeLog()

	store, err := sqlite.Open(ctx, cfg.dbPath)
	if err != nil {
		log.Error("cannot open the session database", zap.String("path", cfg.dbPath), zap.Error(err))
		fmt.Fprintf(std.err, "crow-acp: cannot open the session database %s: %v\n", cfg.dbPath, err)
		return exitError
	}
	defer store.Close()

	model := streaming.NewOpenAI(streaming.OpenAIConfig{BaseURL: cfg.baseURL, APIKey: cfg.apiKey})
	conn := acp.NewConn(std.in, std.out, acp.Options{MaxLineBytes: cfg.maxLineBytes, Logger: log})
	ag := agent.New(conn, store, model, agent.Config{Model: cfg.model, Version: version}, log)
	log.Info("serving ACP on stdio", zap.String("model", cfg.model), zap.String("db", cfg.dbPath),
		zap.Bool("apiKeySet", cfg.apiKey != ""))
	if err := conn.Serve(ctx, ag); err != nil {
		log.Error("serve", zap.Error(err))
		return exitError
	}
	log.Info("client disconnected; exiting")
	return exitOK
}

// newLogger logs to stderr, or to the log file when one is configured.
// stdout carries ACP frames only.
func newLogger(cfg *config, std stdio) (*zap.Logger, func(), error) {
	level, err := zapcore.ParseLevel(cfg.logLevel)
	if err != nil {
		return nil, nil, fmt.Errorf("log level: %w", err)
	}
	sink := zapcore.AddSync(std.err)
	closeFn := func() {}
	if cfg.logFile != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.logFile), 0o700); err != nil {
			return nil, nil, fmt.Errorf("log file: %w", err)
		}
		f, err := os.OpenFile(cfg.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("log file: %w", err)
		}
		sink, closeFn = zapcore.AddSync(f), func() { _ = f.Close() }
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(sink), level)
	log := zap.New(core)
	return log, func() { _ = log.Sync(); closeFn() }, nil
}
