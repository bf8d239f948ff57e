package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"

	vtlog "github.com/dolthub/vitess/go/vt/log"
	"github.com/sirupsen/logrus"
)

// NewLogger returns the server's logger, which writes slog's text format
// to w from level up, and sends the libraries' own loggers to it, so the
// log has one format:
//
//   - go-mysql-server logs through logrus's standard logger: its entries
//     become lines with component=sql at their level, except that its
//     per-client lines (connect, disconnect, a statement's error, which
//     the client gets) and its own "ready" and "closing" lines (the
//     server logs its own) are debug, and its
//     three-line secure_file_priv warning is one line, logged once
//     however many listeners start;
//   - Vitess's MySQL protocol code logs through its log package's
//     functions: component=wire, at their level, except that a
//     connection's end is debug;
//   - Go's log package and libraries that use slog's default logger (the
//     replica's MySQL client) write to it as well.
//
// The store (Pebble) logs through the logger Start gives it. NewLogger
// sets process-wide state, so a process calls it once.
func NewLogger(w io.Writer, level slog.Level) *slog.Logger {
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)
	routeLogrus(logrus.StandardLogger(), log.With("component", "sql"), level)
	routeVitess(log.With("component", "wire"))
	return log
}

// routeLogrus makes l write nothing itself and pass its entries to log.
// Its level follows ours: go-mysql-server does costly work for debug
// logging (normalising every query's text) only when logrus says debug
// is on.
func routeLogrus(l *logrus.Logger, log *slog.Logger, level slog.Level) {
	l.SetOutput(io.Discard)
	l.SetFormatter(discardFormatter{})
	switch {
	case level <= slog.LevelDebug:
		l.SetLevel(logrus.DebugLevel)
	case level <= slog.LevelInfo:
		l.SetLevel(logrus.InfoLevel)
	case level <= slog.LevelWarn:
		l.SetLevel(logrus.WarnLevel)
	default:
		l.SetLevel(logrus.ErrorLevel)
	}
	l.ReplaceHooks(logrus.LevelHooks{})
	l.AddHook(&logrusHook{log: log})
}

// discardFormatter spares logrus formatting entries nobody reads.
type discardFormatter struct{}

func (discardFormatter) Format(*logrus.Entry) ([]byte, error) { return nil, nil }

type logrusHook struct {
	log            *slog.Logger
	secureFilePriv sync.Once
}

func (h *logrusHook) Levels() []logrus.Level { return logrus.AllLevels }

// Fire passes one logrus entry to slog.
func (h *logrusHook) Fire(e *logrus.Entry) error {
	level := slog.LevelDebug
	switch e.Level {
	case logrus.PanicLevel, logrus.FatalLevel, logrus.ErrorLevel:
		level = slog.LevelError
	case logrus.WarnLevel:
		level = slog.LevelWarn
	case logrus.InfoLevel:
		level = slog.LevelInfo
	}
	msg := e.Message
	switch {
	case msg == "NewConnection" || msg == "ConnectionClosed":
		// One per client connection: debug, as MySQL's connection notes.
		level = slog.LevelDebug
	case msg == "error running query" || msg == "unable to prepare query":
		// A client's statement failed, and the client has the error: as
		// in MySQL, not the server log's business (a duplicate key or a
		// deadlock is no server trouble) but for debugging.
		level = slog.LevelDebug
	case strings.HasPrefix(msg, "Server ready.") || strings.HasPrefix(msg, "Server closing listener."):
		// The server logs when it is ready and when it shuts down.
		level = slog.LevelDebug
	case strings.HasPrefix(msg, "secure_file_priv is set to"):
		h.secureFilePriv.Do(func() {
			h.log.Warn("secure_file_priv is empty: a user with the FILE privilege (root has it) can read and write " +
				"any file the server process can (LOAD DATA INFILE, LOAD_FILE, SELECT ... INTO OUTFILE)")
		})
		return nil
	case strings.HasPrefix(msg, "Any user with GRANT FILE privileges") ||
		strings.HasPrefix(msg, "Please consider restarting the server with secure_file_priv"):
		return nil // the rest of the warning above
	}
	ctx := e.Context
	if ctx == nil {
		ctx = context.Background()
	}
	if !h.log.Enabled(ctx, level) {
		return nil
	}
	keys := make([]string, 0, len(e.Data))
	for k := range e.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		args = append(args, k, e.Data[k])
	}
	h.log.Log(ctx, level, msg, args...)
	return nil
}

// routeVitess points Vitess's log functions (by default Go's log package,
// every level alike) at log, each at its own level.
func routeVitess(log *slog.Logger) {
	vtlog.Info = func(a ...any) { log.Info(fmt.Sprint(a...)) }
	vtlog.Infof = func(f string, a ...any) { log.Info(fmt.Sprintf(f, a...)) }
	vtlog.Warning = func(a ...any) { log.Warn(fmt.Sprint(a...)) }
	vtlog.Warningf = func(f string, a ...any) { log.Warn(fmt.Sprintf(f, a...)) }
	vtlog.Error = func(a ...any) { log.Error(fmt.Sprint(a...)) }
	vtlog.Errorf = func(f string, a ...any) {
		msg := fmt.Sprintf(f, a...)
		if strings.HasPrefix(msg, "Error reading packet from") {
			// A connection ended other than by COM_QUIT: the client
			// went away, or the server closed it (KILL, a departed
			// client's statement, shutdown). A disconnect, so debug.
			log.Debug(msg)
			return
		}
		log.Error(msg)
	}
}
