package confine

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp filter every confined process runs under refuses what no
// agent or tool needs and an attacker would use:
//
//   - ioctl TIOCSTI and TIOCLINUX: pushing keystrokes into a terminal's
//     input (only the low 32 bits of the request are compared, as the
//     kernel reads them);
//   - packet sockets and raw sockets: capturing the machine's traffic;
//   - netlink sockets (the kernel's routing, audit, uevent and socket
//     diagnostics interfaces) and vsock sockets (to a hypervisor or its
//     virtual machines): nothing an agent CLI or a tool needs inside a
//     network namespace of its own, and a wide surface of the kernel
//     (glibc and libuv already live without netlink here, whose raw
//     sockets the line above refuses);
//   - a new user namespace (clone or unshare with CLONE_NEWUSER; clone3,
//     whose flags a filter cannot read, is ENOSYS so that libc falls back
//     to clone): capabilities of its own;
//   - io_uring (its operations bypass this filter), bpf, perf events,
//     userfaultfd, module and kexec loading, mounts, swap, reboot, process
//     accounting and the kernel log;
//   - any system call of another architecture (32-bit entry points on a
//     64-bit kernel), which would dodge the numbers checked here.
//
// Each is refused with EPERM (clone3 with ENOSYS); everything else is
// allowed: Landlock, the namespaces and the missing capabilities do the
// rest.

// seccompData offsets (struct seccomp_data).
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
	offArg1 = 24
)

// x32Bit marks an x32 system call on x86-64.
const x32Bit = 0x40000000

// deniedSyscalls are refused outright.
var deniedSyscalls = []uintptr{
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_FSOPEN, unix.SYS_FSMOUNT, unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE,
	unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT, unix.SYS_ACCT, unix.SYS_SYSLOG,
}

// nativeArch is the audit architecture of this build.
func nativeArch() (uint32, error) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, nil
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, nil
	}
	return 0, fmt.Errorf("confine: no seccomp filter for %s", runtime.GOARCH)
}

// bpfProg assembles a classic BPF program with named jump targets.
type bpfProg struct {
	ins    []unix.SockFilter
	labels map[string]int
	fixes  []fix
}

type fix struct {
	at     int
	jt, jf string
}

func (p *bpfProg) stmt(code uint16, k uint32) {
	p.ins = append(p.ins, unix.SockFilter{Code: code, K: k})
}

func (p *bpfProg) load(off uint32) { p.stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, off) }
func (p *bpfProg) ret(k uint32)    { p.stmt(unix.BPF_RET|unix.BPF_K, k) }
func (p *bpfProg) and(k uint32)    { p.stmt(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, k) }
func (p *bpfProg) label(name string) {
	p.labels[name] = len(p.ins)
}

// jump is a conditional jump on the accumulator against k: to jt when it
// holds, else to jf; "" falls through to the next instruction.
func (p *bpfProg) jump(op uint16, k uint32, jt, jf string) {
	p.fixes = append(p.fixes, fix{at: len(p.ins), jt: jt, jf: jf})
	p.stmt(unix.BPF_JMP|op|unix.BPF_K, k)
}

func (p *bpfProg) assemble() ([]unix.SockFilter, error) {
	for _, f := range p.fixes {
		for _, t := range []struct {
			name string
			dst  *uint8
		}{{f.jt, &p.ins[f.at].Jt}, {f.jf, &p.ins[f.at].Jf}} {
			if t.name == "" {
				continue
			}
			to, ok := p.labels[t.name]
			off := to - f.at - 1
			if !ok || off < 0 || off > 255 {
				return nil, fmt.Errorf("confine: seccomp jump to %q out of range", t.name)
			}
			*t.dst = uint8(off)
		}
	}
	return p.ins, nil
}

// seccompFilter is the filter described above, for this architecture.
func seccompFilter() ([]unix.SockFilter, error) {
	arch, err := nativeArch()
	if err != nil {
		return nil, err
	}
	eperm := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	p := &bpfProg{labels: map[string]int{}}
	p.load(offArch)
	p.jump(unix.BPF_JEQ, arch, "", "deny")
	p.load(offNr)
	if runtime.GOARCH == "amd64" {
		p.jump(unix.BPF_JGE, x32Bit, "deny", "")
	}
	p.jump(unix.BPF_JEQ, unix.SYS_IOCTL, "ioctl", "")
	p.jump(unix.BPF_JEQ, unix.SYS_SOCKET, "socket", "")
	p.jump(unix.BPF_JEQ, unix.SYS_UNSHARE, "userns", "")
	p.jump(unix.BPF_JEQ, unix.SYS_CLONE, "clone", "")
	p.jump(unix.BPF_JEQ, unix.SYS_CLONE3, "enosys", "")
	for _, nr := range deniedSyscalls {
		p.jump(unix.BPF_JEQ, uint32(nr), "deny", "")
	}
	p.ret(unix.SECCOMP_RET_ALLOW)

	p.label("ioctl")
	p.load(offArg1)
	p.jump(unix.BPF_JEQ, unix.TIOCSTI, "deny", "")
	p.jump(unix.BPF_JEQ, unix.TIOCLINUX, "deny", "")
	p.ret(unix.SECCOMP_RET_ALLOW)

	p.label("socket")
	p.load(offArg0)
	p.jump(unix.BPF_JEQ, unix.AF_PACKET, "deny", "")
	p.jump(unix.BPF_JEQ, unix.AF_NETLINK, "deny", "")
	p.jump(unix.BPF_JEQ, unix.AF_VSOCK, "deny", "")
	p.load(offArg1)
	p.and(0xf)
	p.jump(unix.BPF_JEQ, unix.SOCK_RAW, "deny", "")
	p.jump(unix.BPF_JEQ, unix.SOCK_PACKET, "deny", "")
	p.ret(unix.SECCOMP_RET_ALLOW)

	// clone's flags are its first argument on both architectures.
	p.label("clone")
	p.label("userns")
	p.load(offArg0)
	p.and(unix.CLONE_NEWUSER)
	p.jump(unix.BPF_JEQ, 0, "allow", "deny")

	p.label("enosys")
	p.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	p.label("allow")
	p.ret(unix.SECCOMP_RET_ALLOW)
	p.label("deny")
	p.ret(eperm)
	return p.assemble()
}

// installSeccomp puts the filter on every thread of this process (and so
// on everything it starts from now on).
func installSeccomp() error {
	ins, err := seccompFilter()
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("confine: no_new_privs: %w", err)
	}
	prog := unix.SockFprog{Len: uint16(len(ins)), Filter: &ins[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(ins)
	if errno != 0 {
		return fmt.Errorf("confine: install the seccomp filter: %w", errno)
	}
	return nil
}
