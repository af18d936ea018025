package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tether-run/tether/internal/egress"
)

// probeCommand runs one attack from inside the sandbox, as an agent's
// shell would with a small C program, and prints what the kernel said.
const probeCommand = "sandbox-probe"

// testServices stand for the worker's own services in these tests.
var testServices []egress.Service

// probeMain: `<test binary> sandbox-probe WHAT [ARG]`. It prints
// "WHAT=ok" or "WHAT=<error>" and exits 0.
func probeMain(args []string) int {
	if len(args) == 0 {
		fmt.Println("usage: sandbox-probe WHAT [ARG]")
		return 2
	}
	what, arg := args[0], ""
	if len(args) > 1 {
		arg = args[1]
	}
	fmt.Printf("%s=%s\n", what, result0(probe(what, arg)))
	return 0
}

func result0(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func probe(what, arg string) error {
	switch what {
	case "tiocsti":
		// A terminal of the sandbox's own devpts: TIOCSTI on it, with
		// the high bits of the request set too (the kernel ignores them).
		m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY, 0)
		if err != nil {
			return fmt.Errorf("open ptmx: %w", err)
		}
		defer unix.Close(m)
		c := byte('x')
		for _, req := range []uint64{unix.TIOCSTI, 1<<32 | unix.TIOCSTI} {
			if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(m), uintptr(req), uintptr(unsafe.Pointer(&c))); e != 0 {
				return e
			}
		}
		return nil
	case "tiocsti-fd":
		fd, _ := strconv.Atoi(arg)
		c := byte('x')
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCSTI, uintptr(unsafe.Pointer(&c))); e != 0 {
			return e
		}
		return nil
	case "tiocllinux":
		sub := byte(6)
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCLINUX, uintptr(unsafe.Pointer(&sub))); e != 0 {
			return e
		}
		return nil
	case "open":
		f, err := os.OpenFile(arg, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		return f.Close()
	case "packet":
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ALL)))
		if err == nil {
			unix.Close(fd)
		}
		return err
	case "raw":
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
		if err == nil {
			unix.Close(fd)
		}
		return err
	case "netlink":
		// A netlink socket of each kind an attacker would use: routing
		// (as a datagram socket, which the raw-socket rule lets
		// through), socket diagnostics, uevents, audit.
		for _, s := range []struct{ typ, proto int }{
			{unix.SOCK_DGRAM, unix.NETLINK_ROUTE}, {unix.SOCK_RAW, unix.NETLINK_ROUTE},
			{unix.SOCK_DGRAM, unix.NETLINK_SOCK_DIAG}, {unix.SOCK_DGRAM, unix.NETLINK_KOBJECT_UEVENT}, {unix.SOCK_DGRAM, unix.NETLINK_AUDIT},
		} {
			fd, err := unix.Socket(unix.AF_NETLINK, s.typ|unix.SOCK_CLOEXEC, s.proto)
			if err == nil {
				unix.Close(fd)
				return fmt.Errorf("netlink %d/%d opened", s.typ, s.proto)
			}
			if !errors.Is(err, unix.EPERM) {
				return err
			}
		}
		return unix.EPERM
	case "vsock":
		for _, typ := range []int{unix.SOCK_STREAM, unix.SOCK_DGRAM, unix.SOCK_SEQPACKET} {
			fd, err := unix.Socket(unix.AF_VSOCK, typ|unix.SOCK_CLOEXEC, 0)
			if err == nil {
				unix.Close(fd)
				return fmt.Errorf("vsock %d opened", typ)
			}
			if !errors.Is(err, unix.EPERM) {
				return err
			}
		}
		return unix.EPERM
	case "userns":
		return unix.Unshare(unix.CLONE_NEWUSER)
	case "unix":
		c, err := net.DialTimeout("unix", arg, time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	case "tcp":
		c, err := net.DialTimeout("tcp", arg, 2*time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	case "get":
		// A plain GET, straight to the address (a relay, if any, is
		// there); the body's first line is printed.
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
		resp, err := c.Get(arg)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return fmt.Errorf("status %d body %s", resp.StatusCode, strings.TrimSpace(string(b)))
	case "proxy":
		// CONNECT arg through the proxy the environment names.
		u := os.Getenv("HTTPS_PROXY")
		if u == "" {
			return fmt.Errorf("no HTTPS_PROXY")
		}
		c, err := net.DialTimeout("tcp", strings.TrimPrefix(u, "http://"), 2*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", arg, arg)
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
		if err != nil {
			return err
		}
		if resp.StatusCode == http.StatusOK {
			return fmt.Errorf("status 200")
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return fmt.Errorf("status %d %s", resp.StatusCode, strings.TrimSpace(string(b)))
	case "setuid":
		return unix.Setresuid(0, 0, 0)
	case "fifo":
		// SCHED_FIFO, what chrt -f 99 asks for.
		type param struct{ prio int32 }
		p := param{99}
		if _, _, e := unix.Syscall(unix.SYS_SCHED_SETSCHEDULER, 0, 1, uintptr(unsafe.Pointer(&p))); e != 0 {
			return e
		}
		return nil
	case "immutable":
		f, err := os.Open(arg)
		if err != nil {
			return err
		}
		defer f.Close()
		return unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, 0x10)
	case "shm":
		// A System V segment under key arg, left behind on purpose.
		key, _ := strconv.Atoi(arg)
		_, err := unix.SysvShmGet(key, 1<<20, unix.IPC_CREAT|0o666)
		return err
	case "key":
		// A key in the user and in the session keyring.
		for _, ring := range []int{unix.KEY_SPEC_USER_KEYRING, unix.KEY_SPEC_SESSION_KEYRING} {
			if _, err := unix.AddKey("user", arg, []byte("left-behind"), ring); err != nil {
				return fmt.Errorf("add_key to %d: %w", ring, err)
			}
		}
		return nil
	case "findkey":
		for _, ring := range []int{unix.KEY_SPEC_USER_KEYRING, unix.KEY_SPEC_SESSION_KEYRING} {
			if id, err := unix.KeyctlSearch(ring, "user", arg, 0); err == nil {
				return fmt.Errorf("found key %d in keyring %d", id, ring)
			}
		}
		return nil
	case "alloc":
		// Touch arg MiB of memory.
		n, _ := strconv.Atoi(arg)
		b, err := unix.Mmap(-1, 0, n<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return err
		}
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		return nil
	}
	return fmt.Errorf("unknown probe %q", what)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
