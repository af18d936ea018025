package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/console"
	"github.com/tether-run/tether/internal/github/triggers"
	"github.com/tether-run/tether/internal/github/webhook"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/health"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runlist"
	"github.com/tether-run/tether/internal/runstore"
)

func (a *app) consoleCmd() *cobra.Command {
	addr := console.DefaultAddr
	cmd := &cobra.Command{
		Use:   "console [--addr HOST:PORT]",
		Short: "Serve the web console: watch runs live, answer, steer, read diffs and conversations",
		Long: `Serve the console, a web page over the runs Temporal and the run store know:
every run, waiting ones first; a run's graph, visits, live progress,
budgets and checkpoints; each visit's files and conversation; a fan-out's
attempts side by side. It answers, steers, cancels, resumes, rewinds, forks
and deletes runs the way the tether commands do.

It listens on 127.0.0.1:8080 unless --addr says otherwise. On an address
other machines can reach it refuses to start without ` + console.TokenEnv + `,
and then asks every visitor for that token.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			opts := console.Options{Addr: addr, Token: string(a.cfg.ConsoleToken), WorkspaceLimits: a.cfg.WorkspaceLimits, Actions: consoleActions{a}, WebUI: a.cfg.RunURL, LinkKey: a.cfg.LinkKey}
			// A refusal to listen comes before any connection.
			if _, err := console.CheckAddr(opts.Addr, opts.Token); err != nil {
				return usageErr("%v", err)
			}
			c, err := a.temporal()
			if err != nil {
				return failedErr(err)
			}
			runs, err := a.store(ctx)
			if err != nil {
				return failedErr(err)
			}
			opts.Temporal, opts.Runs = c, runs
			if opts.GitHubHook, err = a.githubHook(c); err != nil {
				return err
			}
			srv, err := console.New(opts)
			if err != nil {
				return usageErr("%v", err)
			}
			defer srv.Close()
			return srv.Serve(ctx, func(bound string) {
				fmt.Fprintf(a.out, "console: http://%s/ (Temporal %s, store %s)\n", bound, a.cfg.TemporalAddress, a.cfg.BlobURL)
			})
		},
	}
	cmd.Flags().StringVar(&addr, "addr", addr, "host:port to listen on")
	return cmd
}

// githubHook is the console's GitHub webhook, when TETHER_TRIGGERS or
// TETHER_GITHUB_WEBHOOK_SECRET is set: the triggers file and every graph
// it names are checked first, and every problem is printed with its code
// and position.
func (a *app) githubHook(c client.Client) (http.Handler, error) {
	if a.cfg.Triggers == "" && a.cfg.GitHubWebhookSecret == nil {
		return nil, nil
	}
	var t *triggers.Triggers
	if a.cfg.Triggers != "" {
		var err error
		if t, err = triggers.Load(a.cfg.Triggers); err != nil {
			fmt.Fprintln(a.out, err)
			return nil, usageErr("%s=%s is not a valid triggers file", triggers.Env, a.cfg.Triggers)
		}
	}
	h, err := webhook.New(a.cfg.GitHubWebhookSecret, t, c, slog.Default())
	if err != nil {
		return nil, usageErr("%v", err)
	}
	fmt.Fprintf(a.out, "console: GitHub webhook at %s (%d triggers from %s)\n", webhook.Path, len(t.File.Triggers), a.cfg.Triggers)
	return h, nil
}

// consoleActions are the console's actions: the commands' own code paths.
type consoleActions struct{ a *app }

var _ console.Actions = consoleActions{}

func (c consoleActions) Health(ctx context.Context, run string) health.Report {
	return c.a.health(ctx, run)
}

func (c consoleActions) State(ctx context.Context, run string) (*console.RunState, error) {
	l, err := c.a.loadState(ctx, run)
	if err != nil {
		return nil, err
	}
	d := l.described
	rs := &console.RunState{State: l.st, Source: l.source, Running: pendingProgress(d), Workers: l.workers}
	if d != nil {
		rs.Temporal = temporalStatusName(statusOf(d))
		info := d.GetWorkflowExecutionInfo()
		rs.History = &console.History{RunID: info.GetExecution().GetRunId(), Events: info.GetHistoryLength()}
		rs.Started = info.GetStartTime().AsTime()
		if info.GetCloseTime() != nil {
			rs.Closed = info.GetCloseTime().AsTime()
		}
		rs.Executions = 1
		if row, ok, err := runlist.Run(ctx, c.a.client, run); err == nil && ok {
			rs.Started, rs.Executions = row.Started, row.Executions
		}
	}
	return rs, nil
}

func (c consoleActions) Live(ctx context.Context, run string) (*console.Live, error) {
	d, err := c.a.describe(ctx, run)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return &console.Live{}, nil
	}
	return &console.Live{
		Temporal: temporalStatusName(statusOf(d)),
		Events:   d.GetWorkflowExecutionInfo().GetHistoryLength(),
		Running:  pendingProgress(d),
	}, nil
}

func (c consoleActions) Graph(ctx context.Context, run string) (*graph.Graph, error) {
	return c.a.runGraph(ctx, run)
}

func (c consoleActions) Answer(ctx context.Context, run, question, text, by string) error {
	cl, done, err := c.a.as(by)
	if err != nil {
		return failedErr(err)
	}
	defer done()
	return answer(ctx, cl, run, runapi.Answer{QuestionID: question, Text: text})
}

func (c consoleActions) QueueAnswer(ctx context.Context, run, question, text, by string) error {
	return c.a.queueAnswer(ctx, run, runapi.Answer{QuestionID: question, Text: text}, by)
}

func (c consoleActions) Guide(ctx context.Context, run, node, text, by string) (string, error) {
	return c.a.guide(ctx, run, node, text, by)
}

func (c consoleActions) Cancel(ctx context.Context, run string) (string, error) {
	return c.a.cancel(ctx, run)
}

func (c consoleActions) Resume(ctx context.Context, run string) (string, error) {
	return c.a.resume(ctx, run, "", 0, 0, graphFix{})
}

func (c consoleActions) Rewind(ctx context.Context, run string, seq int64) (string, error) {
	runs, err := c.closed(ctx, run, "rewind")
	if err != nil {
		return "", err
	}
	msg, warnings, err := c.a.rewind(ctx, run, seq, runs, graphFix{})
	for _, w := range warnings {
		msg += w + "\n"
	}
	return msg, err
}

func (c consoleActions) Fork(ctx context.Context, run string, seq int64) (string, string, error) {
	runs, err := c.a.store(ctx)
	if err != nil {
		return "", "", failedErr(err)
	}
	return c.a.fork(ctx, run, seq, "", runs, graphFix{})
}

func (c consoleActions) Delete(ctx context.Context, run string) (string, error) {
	runs, err := c.closed(ctx, run, "delete")
	if err != nil {
		return "", err
	}
	return c.a.deleteRun(ctx, run, runs)
}

// closed is onRun's check for the console: the run must be closed, and
// the store open.
func (c consoleActions) closed(ctx context.Context, run, verb string) (*runstore.Store, error) {
	if err := c.a.requireClosed(ctx, run, verb); err != nil {
		return nil, err
	}
	runs, err := c.a.store(ctx)
	if err != nil {
		return nil, failedErr(err)
	}
	return runs, nil
}
