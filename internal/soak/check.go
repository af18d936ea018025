package soak

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/workspace"
)

// check says what is wrong with one run after the soak: it did not
// complete, its conversation or workspace is not exactly what its visits
// made, or a blob its last checkpoint names is missing.
func (s *Soak) check(ctx context.Context, r *run) []string {
	bad := func(format string, args ...any) []string {
		return []string{fmt.Sprintf("run %s (%s): ", r.id, r.kind) + fmt.Sprintf(format, args...)}
	}
	if r.err != nil {
		return bad("did not complete: %v", r.err)
	}
	if r.result.Status != runstore.StatusCompleted {
		return bad("ended %s", r.result.Status)
	}
	cp, err := s.runs.Latest(ctx, r.id)
	if err != nil {
		return bad("latest checkpoint: %v", err)
	}
	var out []string
	switch r.kind {
	case "persist":
		if got := cp.Visits["writer"]; got != r.rounds {
			out = append(out, bad("writer visited %d times, want %d", got, r.rounds)...)
		}
		// The writer's last reply lists every earlier prompt of its
		// conversation: a lost turn, a repeated one or another
		// conversation's shows here.
		prompts, problems := writerPrompts(r, r.rounds-1)
		out = append(out, problems...)
		if got, want := fmt.Sprint(cp.Outputs["writer"]["text"]), writerReply(r.rounds, prompts); got != want {
			out = append(out, bad("writer's conversation is %q, want %q", got, want)...)
		}
		if got := fmt.Sprint(cp.Outputs["judge"]["n"]); got != strconv.Itoa(r.rounds) {
			out = append(out, bad("judge's conversation has %s turns, want %d", got, r.rounds)...)
		}
	case "cli":
		if got := cp.Visits["writer"]; got != r.rounds {
			out = append(out, bad("writer visited %d times, want %d", got, r.rounds)...)
		}
		// The fake model's reply lists every prompt of the conversation
		// the CLI sent it: the real CLI resumed its own session, restored
		// onto whatever worker ran each visit.
		prompts, problems := writerPrompts(r, r.rounds)
		out = append(out, problems...)
		if got, want := fmt.Sprint(cp.Outputs["writer"]["text"]), fmt.Sprintf("turn %d: %s", r.rounds, strings.Join(prompts, " | ")); got != want {
			out = append(out, bad("writer's conversation is %q, want %q", got, want)...)
		}
		out = append(out, s.compareWorkspace(ctx, r, cp, cliFiles(r.rounds), bad)...)
	case "tool":
		out = append(out, s.checkWorkspace(ctx, r, cp, bad)...)
	case "fanout":
		if got := cp.Visits["gather"]; got != r.rounds {
			out = append(out, bad("joined %d times, want %d", got, r.rounds)...)
		}
		// Each round's branches wrote on their own lines and the join
		// merged them: the workspace holds every branch's file.
		out = append(out, s.compareWorkspace(ctx, r, cp, fanoutFiles(r.rounds), bad)...)
	}
	for _, key := range cp.Refs() {
		if _, err := s.blobs.Stat(ctx, key); err != nil {
			out = append(out, bad("checkpoint %d names blob %s: %v", cp.Seq, key, err)...)
		}
	}
	return out
}

// writerPrompts are the prompts of the writer's visits 1..n as its
// conversation must hold them: "step k", and only on a visit an attempt of
// which was lost with its worker (its history says so), that visit's retry
// note before it, exactly as the visit's output recorded it (a note tells
// the agent that an earlier attempt of this very turn was interrupted,
// docs/operations.md). A note on a visit that lost no attempt is a
// problem of its own.
func writerPrompts(r *run, n int) ([]string, []string) {
	visits := map[string]visitRecord{}
	for _, x := range r.execs {
		for k, v := range x.visits {
			if prev, ok := visits[k]; ok && prev.interrupted {
				v.interrupted = true
			}
			visits[k] = v
		}
	}
	var prompts, problems []string
	for k := 1; k <= n; k++ {
		p := fmt.Sprintf("step %d", k)
		v := visits[fmt.Sprintf("writer/%d", k)]
		switch {
		case v.note != "" && v.interrupted:
			p = v.note + "\n\n" + p
		case v.note != "":
			problems = append(problems, fmt.Sprintf("run %s (%s): writer visit %d carries a retry note though no attempt of it was lost: %q", r.id, r.kind, k, v.note))
		}
		prompts = append(prompts, p)
	}
	return prompts, problems
}

// checkWorkspace exports a tool run's workspace and compares it, file by
// file, with what its visits wrote over the imported files; bad words a
// problem as check does.
func (s *Soak) checkWorkspace(ctx context.Context, r *run, cp *runstore.Checkpoint, bad func(string, ...any) []string) []string {
	want := map[string]string{}
	for i := range r.files {
		want[filepath.Join("src", strconv.Itoa(i/100), fmt.Sprintf("file-%d.txt", i))] = sourceContent(i)
	}
	var log strings.Builder
	for v := 1; v <= r.rounds; v++ {
		fmt.Fprintf(&log, "%d\n", v)
		want[fmt.Sprintf("f%d.txt", v)] = fmt.Sprintf("v%d\n", v)
	}
	want["log.txt"] = log.String()
	return s.compareWorkspace(ctx, r, cp, want, bad)
}

// compareWorkspace exports the run's workspace and compares it, file by
// file, with want.
func (s *Soak) compareWorkspace(ctx context.Context, r *run, cp *runstore.Checkpoint, want map[string]string, bad func(string, ...any) []string) []string {
	if cp.Workspace == nil {
		return bad("no workspace in its last checkpoint")
	}
	dir, err := os.MkdirTemp("", "tether-soak-export-*")
	if err != nil {
		return bad("%v", err)
	}
	defer os.RemoveAll(dir)
	if err := workspace.Export(ctx, s.blobs, r.id, cp.Workspace, dir, false, s.cfg.WorkspaceLimits); err != nil {
		return bad("export: %v", err)
	}
	got := map[string]string{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		got[rel] = string(b)
		return err
	})
	if err != nil {
		return bad("read the export: %v", err)
	}
	var out []string
	for name, content := range want {
		if g, ok := got[name]; !ok {
			out = append(out, bad("%s is missing from the workspace", name)...)
		} else if g != content {
			out = append(out, bad("%s holds %q, want %q", name, g, content)...)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			out = append(out, bad("%s is in the workspace but no visit wrote it", name)...)
		}
	}
	if len(out) > 5 {
		out = append(out[:5], bad("and %d more differences", len(out)-5)...)
	}
	return out
}

// deleteAll deletes every soak run with `tether delete` and says what is
// left of them: objects in the bucket, files in the workers' roots.
func (s *Soak) deleteAll(ctx context.Context, runs []*run, res *Result) []string {
	var out []string
	for _, r := range runs {
		if b, err := s.tether(ctx, "delete", r.id); err != nil {
			out = append(out, fmt.Sprintf("tether delete %s: %v: %s", r.id, err, strings.TrimSpace(string(b))))
		}
	}
	after, err := s.blobs.List(ctx, "")
	if err != nil {
		return append(out, fmt.Sprintf("list the bucket after deleting: %v", err))
	}
	res.StoreObjectsAfter = len(after)
	for _, info := range after {
		if strings.Contains(info.Key, s.prefix) {
			out = append(out, fmt.Sprintf("the bucket still holds %s after tether delete", info.Key))
		}
	}
	// What a worker keeps of runs is a cache with bounds: working
	// directories, and per run an object store and session roots.
	for _, i := range s.allWorkers() {
		root := filepath.Join(s.o.ClusterDir, "workers", fmt.Sprintf("w%d", i))
		total := 0
		for _, c := range []struct {
			dir   string
			bound int
		}{
			{"work", workspace.CachedDirs},
			{filepath.Join("state", "workspaces"), workspace.CachedRuns},
			{filepath.Join("state", "runs"), workspace.CachedRuns},
		} {
			entries, err := os.ReadDir(filepath.Join(root, c.dir))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				out = append(out, fmt.Sprintf("read worker %d's %s: %v", i, c.dir, err))
				continue
			}
			n := 0
			for _, e := range entries {
				if strings.Contains(e.Name(), s.prefix) {
					n++
				}
			}
			total += n
			if n > c.bound {
				out = append(out, fmt.Sprintf("worker %d keeps %d runs' %s, more than its cache's bound of %d", i, n, c.dir, c.bound))
			}
		}
		res.Leftovers[strconv.Itoa(i)] = total
	}
	return out
}
