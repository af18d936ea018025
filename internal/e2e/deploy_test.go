package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/tether-run/tether/internal/catalogue"
	"github.com/tether-run/tether/internal/config"
	"github.com/tether-run/tether/internal/pki"
	"github.com/tether-run/tether/internal/testenv"
	"github.com/tether-run/tether/workflows"
)

// There is no container engine here, so docker-compose.yml is kept true
// another way: it loads and interpolates as docker compose would, every
// image is pinned by .env (the pin file scripts/cluster.sh and
// scripts/tools.sh read too), the servers it runs are the versions the
// cluster script builds, the worker gets only settings Tether reads, and
// the Dockerfile's defaults are .env's.
func TestComposeFileAgreesWithThePinsAndTheCode(t *testing.T) {
	root := testenv.Root()
	for _, p := range composeProblems(t, root, filepath.Join(root, "docker-compose.yml")) {
		t.Error(p)
	}
}

// The check fails when a version in the compose file drifts from the pin
// file: an image written out by hand, or a pin the cluster does not use.
func TestComposeCheckCatchesDrift(t *testing.T) {
	root := testenv.Root()
	raw, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	require.NoError(t, err)
	for _, c := range []struct{ name, from, to, want string }{
		{"server image", "temporalio/server:${TEMPORAL_VERSION}", "temporalio/server:1.28.0", "temporalio/server:1.28.0"},
		{"s3 image", "versity/versitygw:v${VERSITYGW_VERSION}", "versity/versitygw:latest", "versity/versitygw:latest"},
		{"worker setting", "TETHER_SHUTDOWN_GRACE: 20s", "TETHER_SHUTDOWN_GRACE: 20s\n      TETHER_NO_SUCH_SETTING: x", "TETHER_NO_SUCH_SETTING"},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Contains(t, string(raw), c.from)
			dir := t.TempDir()
			for _, f := range []string{".env", "Dockerfile"} {
				b, err := os.ReadFile(filepath.Join(root, f))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
			}
			path := filepath.Join(dir, "docker-compose.yml")
			require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(raw), c.from, c.to, 1)), 0o644))
			problems := composeProblems(t, root, path)
			require.NotEmpty(t, problems)
			assert.Contains(t, strings.Join(problems, "\n"), c.want)
		})
	}
}

// composeProblems loads the compose file at path with the pin file beside
// it, as docker compose does, and lists what disagrees with the pins, the
// cluster script's versions and the code.
func composeProblems(t *testing.T, root, path string) []string {
	t.Helper()
	dir := filepath.Dir(path)
	pins := readPins(t, filepath.Join(dir, ".env"))
	opts, err := cli.NewProjectOptions([]string{path},
		cli.WithWorkingDirectory(dir), cli.WithEnvFiles(filepath.Join(dir, ".env")), cli.WithDotEnv,
		cli.WithProfiles([]string{"cli"}))
	require.NoError(t, err)
	project, err := opts.LoadProject(context.Background())
	require.NoError(t, err, "docker compose would not load %s", path)

	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	// Every image line names its version through a pin.
	for _, m := range regexp.MustCompile(`(?m)^\s+image:\s*(\S+)`).FindAllStringSubmatch(string(raw), -1) {
		if !regexp.MustCompile(`:[^:]*\$\{[A-Z_]+_VERSION\}`).MatchString(m[1]) {
			bad("image %s is not pinned by a *_VERSION variable of .env", m[1])
		}
	}
	// The servers are the versions the cluster script builds and starts.
	tools := map[string]string{}
	out, err := exec.Command("bash", filepath.Join(root, "scripts", "tools.sh"), "versions").Output()
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			tools[f[0]] = f[1]
		}
	}
	want := map[string]string{
		"temporal":           "temporalio/server:" + strings.TrimPrefix(tools["temporal-server"], "v"),
		"s3":                 "versity/versitygw:" + tools["versitygw"],
		"postgresql":         "postgres:" + pins["POSTGRESQL_VERSION"],
		"temporal-ui":        "temporalio/ui:" + pins["TEMPORAL_UI_VERSION"],
		"temporal-schema":    "temporalio/admin-tools:" + pins["TEMPORAL_ADMINTOOLS_VERSION"],
		"temporal-namespace": "temporalio/admin-tools:" + pins["TEMPORAL_ADMINTOOLS_VERSION"],
	}
	for name, image := range want {
		s, ok := project.Services[name]
		if !ok {
			bad("service %s is missing", name)
			continue
		}
		if s.Image != image {
			bad("service %s runs %s, the cluster script starts %s", name, s.Image, image)
		}
	}
	if !strings.HasPrefix(pins["TEMPORAL_ADMINTOOLS_VERSION"], pins["TEMPORAL_VERSION"]) {
		bad("admin tools %s are not of server %s", pins["TEMPORAL_ADMINTOOLS_VERSION"], pins["TEMPORAL_VERSION"])
	}
	// The worker and the CLI get only what Tether (or the AWS SDK's
	// credential chain) reads, and are built at the pinned versions.
	known := config.Variables()
	docker, err := os.ReadFile(filepath.Join(dir, "Dockerfile"))
	require.NoError(t, err)
	for _, name := range []string{"worker", "tether"} {
		s, ok := project.Services[name]
		if !ok {
			bad("service %s is missing", name)
			continue
		}
		for v := range s.Environment {
			if !slices.Contains(known, v) && !strings.HasPrefix(v, "AWS_") {
				bad("service %s sets %s, which Tether does not read (internal/config)", name, v)
			}
		}
		if s.Build == nil {
			bad("service %s is not built from the Dockerfile", name)
			continue
		}
		for arg, v := range s.Build.Args {
			if v == nil || *v != pins[arg] {
				bad("service %s builds with %s=%v, .env pins %s", name, arg, v, pins[arg])
			}
			if !regexp.MustCompile(`(?m)^ARG ` + arg + `=` + regexp.QuoteMeta(pins[arg]) + `$`).Match(docker) {
				bad("the Dockerfile's default for %s is not .env's %s", arg, pins[arg])
			}
		}
	}
	// Every CLI backend's pin is an AGENT_CLI_ line of .env, which the
	// image installs from .env itself and scripts/tools.sh from the same
	// lines.
	if !regexp.MustCompile(`(?m)^COPY \.env `).Match(docker) || !strings.Contains(string(docker), "AGENT_CLI_") {
		bad("the Dockerfile does not install the agent CLIs of .env's AGENT_CLI_ lines")
	}
	for _, b := range catalogue.All() {
		if _, pinned := pins[b.Pin]; b.Implemented && b.CLI != "" && (!strings.HasPrefix(b.Pin, "AGENT_CLI_") || !pinned) {
			bad("backend %s runs %s but names no AGENT_CLI_ line of .env as its pin (%q)", b.Name, b.CLI, b.Pin)
		}
	}
	for arg, spec := range pins {
		if !strings.HasPrefix(arg, "AGENT_CLI_") {
			continue
		}
		i := strings.LastIndex(spec, "@")
		if i <= 0 || tools[spec[:i]] != spec[i+1:] {
			bad("scripts/tools.sh does not install %s=%s", arg, spec)
		}
	}
	if tools["kimi-cli"] != pins["KIMI_CLI_VERSION"] {
		bad("scripts/tools.sh installs kimi-cli %s, .env pins %s", tools["kimi-cli"], pins["KIMI_CLI_VERSION"])
	}
	return problems
}

// readPins reads the pin file's NAME=value lines.
func readPins(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	pins := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && !strings.HasPrefix(k, "#") {
			pins[k] = v
		}
	}
	return pins
}

// confinedPaths are where a confined agent or tool process may look
// (internal/sandbox: the system's paths, /etc, devices, its HOME, scratch
// and workspace, which in the worker image live under /home and /tmp): a
// certificate mounted under one of them would be within its reach.
var confinedPaths = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/proc", "/sys", "/etc", "/dev", "/home", "/tmp", "/var", "/run", "/root"}

// There is no container engine here to start docker-compose.yml, so its
// TLS is kept true to what make cluster runs (TestClusterFrontendRequires
// MutualTLS) by reading it: the server mounts its own certificates at the
// directory its configuration reads, each client names a certificate, key
// and CA in the volume of its own role and in no other, nothing but the
// certs service and the server mounts the server's or the CA's keys, and
// the workers' certificates are outside what a confined process sees.
func TestComposeRunsTheFrontendWithMutualTLS(t *testing.T) {
	root := testenv.Root()
	opts, err := cli.NewProjectOptions([]string{filepath.Join(root, "docker-compose.yml")},
		cli.WithWorkingDirectory(root), cli.WithEnvFiles(filepath.Join(root, ".env")), cli.WithDotEnv,
		cli.WithProfiles([]string{"cli"}))
	require.NoError(t, err)
	project, err := opts.LoadProject(context.Background())
	require.NoError(t, err)
	svc := func(name string) types.ServiceConfig {
		s, ok := project.Services[name]
		require.True(t, ok, "service %s is missing", name)
		return s
	}

	certs := svc("certs")
	require.NotEmpty(t, certs.Entrypoint)
	assert.Equal(t, "tether-certs", certs.Entrypoint[0])
	hosts := flagValue(certs.Entrypoint, "-hosts")
	assert.Contains(t, strings.Split(hosts, ","), "temporal", "the frontend's certificate names the host clients dial")
	docker, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	assert.Contains(t, string(docker), "-o /out/tether-certs ./internal/pki/cmd/certs", "the image carries tether-certs")

	server := svc("temporal")
	dir := server.Environment["TETHER_TEMPORAL_TLS_DIR"]
	require.NotNil(t, dir)
	assert.Equal(t, "tls-"+pki.RoleServer, mountAt(server, *dir), "the server mounts its own certificates where its configuration reads them")
	assert.Equal(t, types.ServiceConditionCompletedSuccessfully, server.DependsOn["certs"].Condition)

	// Each client: a certificate, key and CA, all in its own role's
	// volume, mounted read-only, and no other role's.
	for name, role := range map[string]string{"worker": pki.RoleWorker, "tether": pki.RoleCLI, "temporal-ui": pki.RoleUI, "temporal-namespace": pki.RoleCLI} {
		s := svc(name)
		var files []string
		for _, names := range [][]string{
			{"TEMPORAL_TLS_CERT", "TEMPORAL_TLS_CLIENT_CERT_PATH"},
			{"TEMPORAL_TLS_KEY", "TEMPORAL_TLS_CLIENT_KEY_PATH"},
			{"TEMPORAL_TLS_CA", "TEMPORAL_TLS_SERVER_CA_CERT_PATH"},
		} {
			var f string
			for _, n := range names {
				if v := s.Environment[n]; v != nil {
					f = *v
				}
			}
			if !assert.NotEmpty(t, f, "service %s sets none of %v", name, names) {
				continue
			}
			files = append(files, f)
			assert.Equal(t, "tls-"+role, mountAt(s, filepath.Dir(f)), "service %s: %s is not in its role's volume", name, f)
		}
		for _, v := range s.Volumes {
			if strings.HasPrefix(v.Source, "tls-") {
				assert.Equal(t, "tls-"+role, v.Source, "service %s mounts another role's certificates", name)
				assert.True(t, v.ReadOnly, "service %s mounts its certificates writable", name)
			}
		}
		if name == "worker" {
			for _, f := range files {
				for _, p := range confinedPaths {
					assert.False(t, f == p || strings.HasPrefix(f, p+"/"), "the worker's %s is under %s, which confined processes see", f, p)
				}
			}
		}
	}
	for name, s := range project.Services {
		for _, v := range s.Volumes {
			if v.Source == "tls-"+pki.RoleServer || v.Source == "tls-"+pki.RoleCA {
				assert.Contains(t, []string{"certs", "temporal"}, name, "service %s mounts %s", name, v.Source)
			}
		}
	}
}

// The server's configuration reads the files pki writes, and verifies the
// names pki's certificates carry.
func TestTemporalConfigReadsTheFilesPKIWrites(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testenv.Root(), "deploy", "temporal", "config", "tether.yaml"))
	require.NoError(t, err)
	cfg := string(b)
	written := []string{pki.CAFile, pki.FrontendCertFile, pki.FrontendKeyFile, pki.SystemWorkerCertFile, pki.SystemWorkerKeyFile, pki.InternodeCAFile, pki.InternodeCertFile, pki.InternodeKeyFile}
	read := regexp.MustCompile(`\{\{ \$tls \}\}/([a-z.-]+)`).FindAllStringSubmatch(cfg, -1)
	require.NotEmpty(t, read)
	var files []string
	for _, m := range read {
		assert.Contains(t, written, m[1])
		files = append(files, m[1])
	}
	for _, f := range written {
		assert.Contains(t, files, f, "the server does not read %s", f)
	}
	for _, name := range []string{pki.FrontendName, pki.InternodeName} {
		assert.Contains(t, cfg, "serverName: "+name)
	}
	assert.Equal(t, 2, strings.Count(cfg, "requireClientAuth: true"), "the frontend and internode both require client certificates")
}

// mountAt is the volume s mounts at dir, "" for none.
func mountAt(s types.ServiceConfig, dir string) string {
	for _, v := range s.Volumes {
		if v.Target == dir {
			return v.Source
		}
	}
	return ""
}

// flagValue is the argument after flag in argv.
func flagValue(argv []string, flag string) string {
	i := slices.Index(argv, flag)
	if i < 0 || i+1 >= len(argv) {
		return ""
	}
	return argv[i+1]
}

// The dev server's script, the cluster's and the compose file register
// every search attribute a run sets, with its type, before a worker
// starts: the cluster's server reads them from a cache it refreshes every
// minute, so a worker registering them itself would leave its first runs
// a minute of failing workflow tasks.
func TestSetupsRegisterTheSearchAttributes(t *testing.T) {
	root := testenv.Root()
	typeName := map[enumspb.IndexedValueType]string{enumspb.INDEXED_VALUE_TYPE_KEYWORD: "Keyword", enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST: "KeywordList"}
	for _, file := range []string{"scripts/devserver.sh", "scripts/cluster.sh", "docker-compose.yml"} {
		b, err := os.ReadFile(filepath.Join(root, file))
		require.NoError(t, err)
		for name, typ := range workflows.SearchAttributeTypes {
			require.Contains(t, typeName, typ, "a type this test does not name")
			assert.Regexp(t, `\b`+name+"="+typeName[typ]+`\b`, string(b), "%s registers %s as %s", file, name, typeName[typ])
		}
	}
}
