package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/pki"
	"github.com/tether-run/tether/internal/testenv"
)

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
