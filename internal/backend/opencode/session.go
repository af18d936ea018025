package opencode

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/untrusted"
)

// dataDir is opencode's data directory (XDG_DATA_HOME/opencode) relative
// to the state root: its database, logs and, were anyone to log in, its
// credentials (auth.json, on the deny list).
const dataDir = ".local/share/opencode"

// syncedDir records, per session, which export the database holds and for
// which working directory (see sync). It lives beside the database, so a
// root that loses its database loses the records too.
const syncedDir = dataDir + "/tether-synced"

// synced is what the database was last given of a session: the digest of
// the export it matches and the working directory the session runs in.
type synced struct {
	Workdir string `json:"workdir"`
	Export  string `json:"export_sha256"`
}

// workdirOf is the working directory as opencode records it: absolute,
// with symbolic links resolved (the kernel's view of its cwd).
func workdirOf(env agent.Env) (string, error) {
	wd, err := filepath.Abs(env.Workdir)
	if err != nil {
		return "", fmt.Errorf("opencode: working directory: %w", err)
	}
	if real, err := filepath.EvalSymlinks(wd); err == nil {
		wd = real
	}
	return wd, nil
}

func digest(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// maxSyncedBytes caps a record of what the database holds.
const maxSyncedBytes = 64 << 10

// readSynced is the record of id, or the zero record when there is none
// or it does not parse. The record lies in the state root, where the
// agent can write: a link, a FIFO or a device in its place, or a record
// over its cap, is agent.ErrUnsafeFile.
func readSynced(root, id string) (synced, error) {
	var s synced
	b, err := untrusted.ReadFile(root, syncedDir+"/"+id, maxSyncedBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, nil
	case err != nil:
		return s, fmt.Errorf("opencode: %w", err)
	}
	_ = json.Unmarshal(b, &s)
	return s, nil
}

// forgetSynced removes the record of id.
func forgetSynced(root, id string) error {
	err := os.Remove(filepath.Join(root, filepath.FromSlash(syncedDir), id))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("opencode: %w", err)
	}
	return nil
}

func writeSynced(root, id string, s synced) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return writeState(root, syncedDir+"/"+id, b)
}

// sync makes the database of the visit's root hold session id as its
// export file has it, running in the visit's working directory. opencode
// runs a resumed session in the directory its record names, not in its
// own working directory, and a root's database may hold an older state of
// the session than its export (a later visit ran on another worker, whose
// export was unpacked here) or none at all (a fresh root). Unless the
// record says the database already holds this export for this directory,
// the executor imports the export with its directory set to the visit's
// (`opencode import` replaces a session of the same id and keeps the id).
func (o Options) sync(ctx context.Context, c *cliexec.CLI, req agent.Request, visit *cliexec.Visit, id string) error {
	root := req.Env.StateRoot
	// The export lies in the state root, where the agent can write.
	b, err := untrusted.ReadFile(root, exportName(id), packer.DefaultMaxFileBytes)
	if err != nil {
		return fmt.Errorf("opencode: read session %s: %w", id, err)
	}
	wd, err := workdirOf(req.Env)
	if err != nil {
		return err
	}
	want := synced{Workdir: wd, Export: digest(b)}
	have, err := readSynced(root, id)
	if err != nil {
		return err
	}
	if have == want {
		return nil
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("opencode: session %s: export: %w", id, err)
	}
	var info map[string]any
	if err := json.Unmarshal(doc["info"], &info); err != nil || info["id"] != id {
		return fmt.Errorf("%w: opencode export %s does not hold session %s", agent.ErrNoSession, exportName(id), id)
	}
	info["directory"] = wd
	// path is the directory relative to the filesystem root, as opencode
	// writes it.
	info["path"] = filepath.ToSlash(wd[len(filepath.VolumeName(wd))+1:])
	if doc["info"], err = json.Marshal(info); err != nil {
		return err
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	file, err := visit.WriteFile("import.json", out)
	if err != nil {
		return fmt.Errorf("opencode: %w", err)
	}
	spec := c.Spec(ctx, req, visit)
	spec.Args, spec.Env, spec.Stdin = []string{"import", "--pure", file}, o.bookkeepingEnv(c, req, visit), ""
	spec.Stop = nil // only the visit's own run is ended for ask_user
	var stdout bytes.Buffer
	spec.Stdout = &stdout
	if _, err := cliexec.Run(ctx, spec); err != nil {
		return fmt.Errorf("opencode: import session %s: %w", id, err)
	}
	return writeSynced(root, id, want)
}

// export writes session id's export into the root (SessionsDir/<id>.json)
// and records that the database holds it.
func (o Options) export(ctx context.Context, c *cliexec.CLI, req agent.Request, visit *cliexec.Visit, id string) error {
	spec := c.Spec(ctx, req, visit)
	spec.Args, spec.Env, spec.Stdin = []string{"export", "--pure", id}, o.bookkeepingEnv(c, req, visit), ""
	// The ask_user grace ended the visit's run; the export must not be
	// ended by it too (measured: it was, after 30 s under load, and
	// printed nothing).
	spec.Stop = nil
	var stdout bytes.Buffer
	spec.Stdout = &stdout
	if _, err := cliexec.Run(ctx, spec); err != nil {
		return fmt.Errorf("opencode: export session %s: %w", id, err)
	}
	b := bytes.TrimSpace(stdout.Bytes())
	var doc struct {
		Info struct {
			ID string `json:"id"`
		} `json:"info"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("opencode: export session %s: %w", id, err)
	}
	if doc.Info.ID != id {
		return fmt.Errorf("opencode: export of session %s holds session %q", id, doc.Info.ID)
	}
	b = append(b, '\n')
	if err := writeState(req.Env.StateRoot, exportName(id), b); err != nil {
		return err
	}
	wd, err := workdirOf(req.Env)
	if err != nil {
		return err
	}
	return writeSynced(req.Env.StateRoot, id, synced{Workdir: wd, Export: digest(b)})
}

// writeState writes a file below root through a temporary file and a
// rename, so that neither the CLI nor the packer reads half of it, and
// never through a link the agent planted on the way
// (untrusted.WriteFile).
func writeState(root, rel string, data []byte) error {
	if err := untrusted.WriteFile(root, rel, data, 0o600); err != nil {
		return fmt.Errorf("opencode: write %s: %w", rel, err)
	}
	return nil
}

// quietConfigDir keeps opencode off the network at start. For every
// configuration directory (here <root>/.config/opencode) opencode installs
// its plugin package, @opencode-ai/plugin, from the npm registry in the
// background, unless the directory has a node_modules and a lock file
// that already lists it; with no plugin configured, nothing imports it.
// A visit waited up to 12 s for that install under load.
func quietConfigDir(root string) error {
	dir := filepath.Join(root, ".config", "opencode")
	if err := os.MkdirAll(filepath.Join(dir, "node_modules"), 0o700); err != nil {
		return fmt.Errorf("opencode: %w", err)
	}
	lock := filepath.Join(dir, "package-lock.json")
	if _, err := os.Stat(lock); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return writeState(root, ".config/opencode/package-lock.json",
		[]byte(`{"lockfileVersion":3,"packages":{"":{"dependencies":{"@opencode-ai/plugin":"*"}}}}`+"\n"))
}
