// Package pki issues the certificates of one Tether cluster's Temporal
// server, so that its frontend (gRPC and the HTTP API) and the traffic
// between its own services accept only clients that hold a certificate the
// cluster issued:
//
//   - a client CA, which signs the frontend's server certificate and one
//     client certificate per role (workers, the tether CLI, the Web UI,
//     Temporal's own system worker);
//   - an internode CA of its own for the history and matching services, so
//     that no client certificate, leaked or not, is accepted there.
//
// Ensure writes them under one directory, a subdirectory per role, each
// holding only what that role mounts: scripts/cluster.sh and
// docker-compose.yml run it (cmd/certs) once per cluster, and again on
// every start, when it reissues only what is missing or about to expire.
package pki

// Roles: the subdirectories of the directory Ensure writes. Each client
// role's holds CAFile (the client CA, which verifies the frontend),
// CertFile and KeyFile.
const (
	// RoleCA holds the client CA's certificate and key (kept to reissue
	// client certificates without changing the CA every client trusts).
	RoleCA = "ca"
	// RoleServer holds what the Temporal server mounts: the client CA
	// (which verifies clients), the frontend's certificate, the system
	// worker's client certificate, and the internode CA and certificate.
	RoleServer = "server"
	// RoleWorker, RoleCLI and RoleUI are the clients: tether-worker; the
	// tether CLI, the temporal CLI and the soak; the Temporal Web UI.
	RoleWorker = "worker"
	RoleCLI    = "cli"
	RoleUI     = "ui"
)

// ClientRoles are the roles that hold a client certificate of their own.
var ClientRoles = []string{RoleWorker, RoleCLI, RoleUI}

// The files of a role's directory.
const (
	CAFile   = "ca.pem"
	CertFile = "cert.pem"
	KeyFile  = "key.pem"
)

// The files of RoleServer's directory besides CAFile.
const (
	FrontendCertFile     = "frontend.pem"
	FrontendKeyFile      = "frontend-key.pem"
	SystemWorkerCertFile = "system-worker.pem"
	SystemWorkerKeyFile  = "system-worker-key.pem"
	InternodeCAFile      = "internode-ca.pem"
	InternodeCertFile    = "internode.pem"
	InternodeKeyFile     = "internode-key.pem"
)

// Names every frontend and internode certificate carries besides the
// hosts it is issued for: the server name Temporal's own clients verify
// (deploy/temporal/config/tether.yaml), whatever address they dial.
const (
	FrontendName  = "temporal-frontend"
	InternodeName = "temporal-internode"
)
