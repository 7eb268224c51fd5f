package workdir_test

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/egress"
	"github.com/sessiond/sessiond/workdir"
)

// The escape suite: each row is one attempt to leave the sandbox, a
// script that prints ESCAPED when the attempt worked and TRIED when it
// got as far as trying (so a script that broke early cannot pass), and
// what its output must show of the failure. A new escape is one row.
//
// The daemon's side of each attempt: a data directory holding a token
// key and a database, a second repository, a TCP port and a Unix
// socket of the host, and a descriptor the daemon holds without
// close-on-exec.
type escapeHost struct {
	data, repo, sock, token string
	port                    int
	fd                      int
}

type escape struct {
	name   string
	script func(h escapeHost) string
	// want is in the output (stdout and stderr) when the attempt failed
	// as it should; empty: only that it failed.
	want string
}

// escapeEgress: the rows named here run with an egress proxy admitting
// the allowlist (egress.go), as a command does whose repository's policy
// names one.
var escapeEgress = map[string][]string{
	"the host's loopback through the egress proxy": {"10.0.0.0/8", "*.example.com"},
	"around the egress proxy":                      {"127.0.0.0/8"},
}

var escapes = []escape{
	{"capabilities", func(h escapeHost) string {
		return `grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status | grep -v ':[[:space:]]*0000000000000000$' && echo ESCAPED; echo TRIED`
	}, ""},
	{"no_new_privs", func(h escapeHost) string {
		return `grep -q '^NoNewPrivs:[[:space:]]*1$' /proc/self/status || echo ESCAPED; echo TRIED`
	}, ""},
	{"umount the view", func(h escapeHost) string {
		return `umount /workspace/view && echo ESCAPED; umount -l /workspace/view && echo ESCAPED; echo TRIED`
	}, "must be superuser"},
	{"umount every mount", func(h escapeHost) string {
		return `for m in $(awk '{print $5}' /proc/self/mountinfo | sort -r); do umount -l "$m" 2>/dev/null && echo "ESCAPED $m"; done; cat ` + h.token + ` && echo ESCAPED; echo TRIED`
	}, "No such file or directory"},
	{"remount the root writable", func(h escapeHost) string {
		return `mount -o remount,rw / && echo ESCAPED; mount -o remount,rw /usr && echo ESCAPED; touch /usr/escaped && echo ESCAPED; echo TRIED`
	}, "Read-only file system"},
	{"write the repository's public objects or the upper directory through the .git mounts", func(h escapeHost) string {
		return `touch /sessiond/objects/x && echo ESCAPED; touch /sessiond/upper/x && echo ESCAPED; rm -rf /sessiond/objects/pack 2>/dev/null; ls /sessiond/objects/pack >/dev/null || echo ESCAPED; echo TRIED`
	}, "Read-only file system"},
	{"bind mount", func(h escapeHost) string {
		return `mkdir -p /tmp/b && mount --bind / /tmp/b && echo ESCAPED; echo TRIED`
	}, "permission denied"},
	{"new user namespace, then umount", func(h escapeHost) string {
		// Inside a user namespace of its own the command holds every
		// capability over a new mount namespace, whose copies of the
		// mounts the kernel locks. With Landlock no mount may change at
		// all; without it (the "no landlock" runs) the locks alone hold.
		// The calls are made directly, from the process that made the
		// namespaces (an exec would drop the capabilities of an unmapped
		// user, and the command cannot map itself root there: that takes
		// CAP_SETFCAP where it is); INSIDE shows it got there.
		return `python3 -c '` + inUserNS(h, false) + `'; echo TRIED`
	}, "INSIDE"},
	{"pivot_root and chroot", func(h escapeHost) string {
		// As above, then a new root over the locked copies: it shows
		// nothing more.
		return `python3 -c '` + inUserNS(h, true) + `'; chroot /proc/1/root ls && echo ESCAPED; echo TRIED`
	}, "INSIDE"},
	{"the helper's /proc", func(h escapeHost) string {
		return `cat /proc/1/environ && echo ESCAPED; ls /proc/1/root/ && echo ESCAPED; readlink /proc/1/fd/0 && echo ESCAPED; cat /proc/1/fd/3 && echo ESCAPED; timeout 5 cat /proc/1/mem && echo ESCAPED; readlink /proc/1/exe && echo ESCAPED; echo TRIED`
	}, "Permission denied"},
	{"the daemon's /proc", func(h escapeHost) string {
		// No process outside the sandbox is there to name.
		return `for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline 2>/dev/null | grep -q '[w]orkdir[.]test' && echo "ESCAPED $p"; done; echo TRIED`
	}, ""},
	{"ptrace", func(h escapeHost) string {
		// PID 1 (the helper) is the only process there not the
		// command's own; PTRACE_ATTACH (16) must be refused.
		return `python3 -c 'import ctypes; l = ctypes.CDLL(None, use_errno=True); r = l.ptrace(16, 1, 0, 0); print("ESCAPED" if r == 0 else "refused errno %d" % ctypes.get_errno())'; timeout 2 strace -p 1 -e trace=none -o /dev/null; [ $? -eq 124 ] && echo ESCAPED; echo TRIED`
	}, "refused errno 1"},
	{"signal the helper", func(h escapeHost) string {
		// Landlock scopes signals; where the kernel has no such scope the
		// helper ignores the ones that would end it.
		return `kill -TERM 1; kill -QUIT 1; sleep 0.2; kill -0 1 || echo ESCAPED; echo TRIED`
	}, ""},
	{"the data directory", func(h escapeHost) string {
		return `ls ` + h.data + ` && echo ESCAPED; cat ` + h.token + ` && echo ESCAPED; cat ` + filepath.Join(h.data, "sessiond.db") + ` && echo ESCAPED; echo TRIED`
	}, "No such file or directory"},
	{"the host's root-only files", func(h escapeHost) string {
		// A root daemon's command is the owner of root's files.
		return `for f in /etc/shadow /etc/gshadow /etc/ssh/ssh_host_*key /etc/ssl/private/*; do [ -e "$f" ] && head -c1 "$f" >/dev/null && echo "ESCAPED $f"; done; echo TRIED`
	}, ""},
	{"another repository", func(h escapeHost) string {
		return `ls ` + h.repo + ` && echo ESCAPED; cat ` + filepath.Join(h.repo, "HEAD") + ` && echo ESCAPED; echo TRIED`
	}, "No such file or directory"},
	{"the base checkouts", func(h escapeHost) string {
		return `ls ` + filepath.Join(h.data, "workdir", "bases") + ` && echo ESCAPED; echo TRIED`
	}, "No such file or directory"},
	{"run directories", func(h escapeHost) string {
		return `ls /run && echo ESCAPED; ls /var/run/ && echo ESCAPED; echo TRIED`
	}, "No such file or directory"},
	{"the host's Unix socket", func(h escapeHost) string {
		return `ls ` + filepath.Dir(h.sock) + ` && echo ESCAPED; python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' ` + h.sock + ` && echo ESCAPED; echo TRIED`
	}, "No such file or directory"},
	{"the daemon's port", func(h escapeHost) string {
		return `bash -c 'exec 3<>/dev/tcp/127.0.0.1/` + strconv.Itoa(h.port) + `' && echo ESCAPED; echo TRIED`
	}, "Connection refused"},
	{"inherited descriptors", func(h escapeHost) string {
		return `for fd in /proc/self/fd/*; do n=${fd##*/}; [ "$n" -gt 3 ] && echo "ESCAPED fd $n"; done; test -e /proc/self/fd/` + strconv.Itoa(h.fd) + ` && echo ESCAPED; echo TRIED`
	}, ""},
	{"writes outside the view, home and temporary directories", func(h escapeHost) string {
		return `for p in /x /etc/x /usr/x /sys/x /dev/x /var/x /workspace/x /home/x; do touch $p && echo "ESCAPED $p"; done; echo TRIED`
	}, "Read-only file system"},
	{"writes to /dev/shm (Landlock)", func(h escapeHost) string {
		return `touch /dev/shm/x && echo ESCAPED; mkdir /dev/shm/d && echo ESCAPED; mkfifo /dev/shm/f && echo ESCAPED; ln -s / /dev/shm/l && echo ESCAPED; echo TRIED`
	}, "Permission denied"},
	{"devices", func(h escapeHost) string {
		return `ls /dev | grep -vxE 'null|zero|full|random|urandom|tty|pts|shm|ptmx|fd|stdin|stdout|stderr' && echo ESCAPED; mknod /tmp/d b 254 0 && echo ESCAPED; echo TRIED`
	}, ""},
	{"kernel settings", func(h escapeHost) string {
		// Without Landlock, a root daemon's command is the host's uid 0
		// to the sysctl files' own check, which asks no capability.
		return `echo 1 > /proc/sys/kernel/sysrq && echo ESCAPED; echo x > /proc/sys/kernel/hostname && echo ESCAPED; v=$(cat /proc/sys/vm/swappiness) && echo $v > /proc/sys/vm/swappiness && echo ESCAPED; echo h > /proc/sysrq-trigger && echo ESCAPED; echo TRIED`
	}, ""},
	{"the host's loopback through the egress proxy", func(h escapeHost) string {
		// Every spelling of the host's loopback, the metadata address,
		// and a name resolving to loopback: the list holds none of them.
		// (A connection to the host's port would hang: no 403, ESCAPED.)
		port := strconv.Itoa(h.port)
		return `for u in http://127.0.0.1:` + port + `/ http://localhost:` + port + `/ 'http://[::ffff:127.0.0.1]:` + port + `/' http://127.1:` + port + `/ http://2130706433:` + port + `/ http://0.0.0.0:` + port + `/ 'http://[::1]:` + port + `/' http://169.254.169.254/; do
  for tunnel in "" -p; do
    code=$(curl -s $tunnel --max-time 5 --noproxy '' --proxy "$HTTP_PROXY" -o /dev/null -w '%{http_code}/%{http_connect}' "$u")
    case "$code" in *403*) ;; *) echo "ESCAPED $u $tunnel $code";; esac
  done
done
[ -n "$HTTP_PROXY" ] && echo TRIED`
	}, ""},
	{"around the egress proxy", func(h escapeHost) string {
		return `curl -s --max-time 5 --noproxy '*' http://127.0.0.1:` + strconv.Itoa(h.port) + `/ && echo ESCAPED
curl -s --max-time 5 --noproxy '*' http://192.0.2.1/ && echo ESCAPED
[ -n "$HTTP_PROXY" ] && echo TRIED`
	}, ""},
	{"setuid files", func(h escapeHost) string {
		return `cp /bin/sh "$HOME/suid" && chmod 4755 "$HOME/suid" && mkdir -p build && cp /bin/sh build/suid && chmod 6755 build/suid && echo TRIED`
	}, ""},
}

// inUserNS is Python for a command in a user and mount namespace of its
// own: it tries to unmount and remount what covers the host, and with
// pivot a new root over the locked copies, printing ESCAPED for each
// call that works.
func inUserNS(h escapeHost, pivot bool) string {
	code := `import ctypes, os
l = ctypes.CDLL(None, use_errno=True)
# A new user namespace (the caller holds every capability there until it
# execs) and a mount namespace owned by it.
if l.unshare(0x10000000 | 0x00020000) == 0:
    cap = [x for x in open("/proc/self/status") if x.startswith("CapEff")][0].split()[1]
    print("INSIDE" if int(cap, 16) != 0 else "no capability in the new namespace")
def t(name, r):
    print(("ESCAPED " if r == 0 else "refused ") + name, ctypes.get_errno())
MS_REMOUNT, MS_BIND, MNT_DETACH = 32, 4096, 2
t("umount view", l.umount2(b"/workspace/view", MNT_DETACH))
t("umount root", l.umount2(b"/", MNT_DETACH))
t("umount proc", l.umount2(b"/proc", MNT_DETACH))
t("remount root rw", l.mount(None, b"/", None, MS_REMOUNT | MS_BIND, None))
t("remount usr rw", l.mount(None, b"/usr", None, MS_REMOUNT | MS_BIND, None))
t("remount view suid", l.mount(None, b"/workspace/view", None, MS_REMOUNT | MS_BIND, None))
`
	if pivot {
		code += `os.makedirs("/tmp/r", exist_ok=True)
if l.mount(b"t", b"/tmp/r", b"tmpfs", 0, None) == 0:
    os.chdir("/tmp/r")
    nr = {"x86_64": 155, "aarch64": 41}[os.uname().machine]
    # The old root stacked over the new one (no directory needed: an
    # unmapped user cannot make one), then taken off.
    print("pivoted" if l.syscall(nr, b".", b".") == 0 else "no pivot", ctypes.get_errno())
    for step in ["over", "off"]:
        os.chdir("/")
        for p in ["` + h.data + `", "` + h.token + `", "` + h.repo + `"]:
            if os.path.exists(p):
                print("ESCAPED", p, "with the old root", step)
        print("old root taken off" if l.umount2(b"/", MNT_DETACH) == 0 else "old root stays", ctypes.get_errno())
`
	}
	return code
}

// newEscapeHost builds the daemon's side of the attempts for manager m
// (whose data directory is data).
func newEscapeHost(t *testing.T, data, repo string) escapeHost {
	t.Helper()
	h := escapeHost{data: data, repo: repo, token: filepath.Join(data, "token.key")}
	require.NoError(t, os.WriteFile(h.token, []byte("SECRET-TOKEN"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(data, "sessiond.db"), []byte("SECRET-DB"), 0o600))
	// A socket of a host service, in a directory nothing else hides.
	sockDir, err := os.MkdirTemp(outsideDir(t), "sock-")
	require.NoError(t, err)
	h.sock = filepath.Join(sockDir, "service.sock")
	ul, err := net.Listen("unix", h.sock)
	require.NoError(t, err)
	t.Cleanup(func() { ul.Close() })
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { tl.Close() })
	h.port = tl.Addr().(*net.TCPAddr).Port
	// A descriptor without close-on-exec, as one inherited by the daemon.
	fd, err := syscall.Open(h.token, syscall.O_RDONLY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { syscall.Close(fd) })
	h.fd = fd
	return h
}

// TestEscapes runs every row in both view modes, with Landlock where the
// kernel has it and again without it (as on kernels without), so the
// mounts and the dropped privileges are shown to hold on their own. A row
// whose name ends in "(Landlock)" holds only where Landlock is on.
func TestEscapes(t *testing.T) {
	plainRunOnly(t, "every escape tried by commands in namespaces")
	for _, mode := range []workdir.Mode{workdir.ModeOverlay, workdir.ModeCopy} {
		for _, landlock := range []bool{true, false} {
			name := string(mode)
			if !landlock {
				name += "/no landlock"
			}
			t.Run(name, func(t *testing.T) {
				// Below the directory the managers of these tests show, so
				// that the data directory and the repository are absent
				// because they are hidden, wherever the tests run. Run
				// as root, the data directory's parent is another user's
				// home of mode 0711: traversable, but the helper cannot
				// list it, and a command knowing the path must still
				// find nothing there.
				parent := outsideDir(t)
				data := filepath.Join(parent, "data")
				require.NoError(t, os.Mkdir(data, 0o700))
				if os.Getuid() == 0 {
					require.NoError(t, os.Chown(parent, unprivilegedUID, unprivilegedUID))
				}
				require.NoError(t, os.Chmod(parent, 0o711))
				repo := outsideDir(t)
				require.NoError(t, os.WriteFile(filepath.Join(repo, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644))
				m := newManagerIn(t, data, mode, func(c *workdir.Config) { c.NoLandlock = !landlock }, repo)
				if !m.Isolated() {
					t.Skip("no namespaces here")
				}
				h := newEscapeHost(t, data, repo)
				f := newFixture(t)
				for _, e := range escapes {
					t.Run(e.name, func(t *testing.T) {
						s, err := m.Prepare(t.Context(), f.view())
						require.NoError(t, err)
						// With the view's .git and its mounts, as every
						// session's command has them.
						c := workdir.Command{Argv: []string{"/bin/sh", "-c", e.script(h)}, Timeout: time.Minute, Git: f.gitFor(t)}
						if list, ok := escapeEgress[e.name]; ok {
							allow, err := egress.ParseAllowlist(list)
							require.NoError(t, err)
							c.Egress = egress.New(allow, nil)
						}
						res, err := s.Run(t.Context(), c)
						require.NoError(t, err)
						cs, err := s.Capture(t.Context(), f.view(), 0)
						require.NoError(t, err)
						require.NoError(t, s.Settle(t.Context(), f.view(), paths(cs)))
						if !landlock {
							require.Zero(t, res.Landlock)
						}
						if strings.HasSuffix(e.name, "(Landlock)") && res.Landlock == 0 {
							t.Skip("no Landlock: /dev/shm is a private tmpfs of its own, bounded as /tmp")
						}
						out := string(res.Stdout) + string(res.Stderr)
						assert.Contains(t, string(res.Stdout), "TRIED", out)
						assert.NotContains(t, out, "ESCAPED", out)
						assert.NotContains(t, out, "SECRET", out)
						if e.want != "" {
							assert.Contains(t, out, e.want)
						}
					})
				}
				// What the setuid row left: no setid bit survives in the
				// scratch, and the scratch is its owner's alone.
				scratch := filepath.Join(data, "workdir", "sessions", "s1")
				st, err := os.Stat(scratch)
				require.NoError(t, err)
				assert.Equal(t, os.FileMode(0o700), st.Mode().Perm(), "the scratch is private")
				var setid []string
				require.NoError(t, filepath.Walk(scratch, func(p string, fi os.FileInfo, err error) error {
					if err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
						setid = append(setid, p)
					}
					return nil
				}))
				assert.Empty(t, setid, "setuid and setgid bits are stripped in the scratch")
				found, _ := filepath.Glob(filepath.Join(scratch, "*", "suid"))
				more, _ := filepath.Glob(filepath.Join(scratch, "*", "build", "suid"))
				assert.NotEmpty(t, append(found, more...), "the setuid row made its files")
			})
		}
	}
}

// newManagerIn is newManager with the data directory data, hiding extra
// paths as the daemon hides its repositories.
func newManagerIn(t *testing.T, data string, mode workdir.Mode, opt func(*workdir.Config), hide ...string) *workdir.Manager {
	t.Helper()
	cfg := workdir.Config{Dir: filepath.Join(data, "workdir"), Mode: mode,
		Hide: func() []string { return append([]string{data}, hide...) }, Show: []string{outsideRoot()}}
	if opt != nil {
		opt(&cfg)
	}
	m, err := workdir.New(cfg)
	if errorsIsUnsupported(err) && !requireIsolation {
		t.Skipf("mode %s: %v", mode, err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	if requireIsolation && !cfg.NoNamespaces {
		require.True(t, m.Isolated(), "SESSIOND_TEST_REQUIRE_ISOLATION=1: this machine must give commands their namespaces")
	}
	return m
}

func errorsIsUnsupported(err error) bool {
	return err != nil && strings.Contains(err.Error(), workdir.ErrUnsupported.Error())
}

// The limits side of the escape suite: each row runs a command past one
// limit, which must fail inside as the limit says, with the result
// naming the limit where the kernel can tell; the session must run its
// next command as before, the daemon's own limits must be as they were
// (rlimits are the command's alone), and no command's cgroup may be left
// behind. A new attempt is one row. It runs in both view modes and
// unisolated (forModes), and as an unprivileged user with the rest.
type limitEscape struct {
	name    string
	limits  workdir.Limits
	timeout time.Duration
	script  string
	// want is in the output; exceeded in the result where counted
	// (cgroups for memory and pids; always for tmp and scratch);
	// timedOut: the command ran past its timeout.
	want     []string
	exceeded string
	timedOut bool
	// late is a file a process the command left would write after the
	// command ended; it must never appear.
	late string
}

var limitEscapes = []limitEscape{
	{name: "fork bomb", limits: workdir.Limits{Pids: 64},
		script: `i=0; while [ $i -lt 300 ]; do sleep 3 & i=$((i+1)); done; echo TRIED`,
		want:   []string{"fork"}, exceeded: workdir.LimitPids},
	{name: "memory hog", limits: workdir.Limits{MemoryBytes: 64 << 20},
		script: `awk 'BEGIN { s = "x"; while (1) s = s s }'; echo TRIED $?`,
		want:   []string{"TRIED"}, exceeded: workdir.LimitMemory},
	{name: "fill /tmp", limits: workdir.Limits{TmpBytes: 8 << 20},
		script: `head -c 20000000 /dev/zero > /tmp/big; echo TRIED`,
		want:   []string{"TRIED", "No space left on device"}, exceeded: workdir.LimitTmp},
	{name: "fill the scratch", limits: workdir.Limits{ScratchBytes: 16 << 20},
		script:   `mkdir -p build && head -c 12000000 /dev/zero > build/a && head -c 12000000 /dev/zero > build/b; sleep 2; echo TRIED`,
		exceeded: workdir.LimitScratch},
	{name: "fill the scratch with unlinked files kept open", limits: workdir.Limits{ScratchBytes: 16 << 20},
		script:   `mkdir -p build && exec 3>build/a 4>build/b && rm build/a build/b && head -c 12000000 /dev/zero >&3 && head -c 12000000 /dev/zero >&4; sleep 5; echo TRIED`,
		exceeded: workdir.LimitScratch},
	{name: "fill the scratch below a directory made unreadable", limits: workdir.Limits{ScratchBytes: 16 << 20},
		script:   `mkdir -p build/d && head -c 12000000 /dev/zero > build/d/a && head -c 12000000 /dev/zero > build/d/b && chmod 0 build/d; sleep 3; echo TRIED`,
		exceeded: workdir.LimitScratch},
	{name: "double-forked grandchild outliving a timeout", timeout: 500 * time.Millisecond,
		// Were the call to wait for what holds its output, it would
		// wait ten minutes.
		script:   `(setsid sh -c 'sleep 2; echo late > late.txt' &); setsid sleep 600 & sleep 600`,
		timedOut: true, late: "late.txt"},
}

func TestEscapeLimits(t *testing.T) {
	plainRunOnly(t, "commands in namespaces against every limit")
	rlimits := func() map[int]unix.Rlimit {
		out := map[int]unix.Rlimit{}
		for _, r := range []int{unix.RLIMIT_FSIZE, unix.RLIMIT_DATA, unix.RLIMIT_NPROC, unix.RLIMIT_CORE, unix.RLIMIT_NOFILE} {
			var l unix.Rlimit
			require.NoError(t, unix.Getrlimit(r, &l))
			out[r] = l
		}
		return out
	}
	before := rlimits()
	forModes(t, func(t *testing.T, m *workdir.Manager) {
		f := newFixture(t)
		for _, r := range limitEscapes {
			t.Run(r.name, func(t *testing.T) {
				if !m.Isolated() && r.exceeded == workdir.LimitTmp {
					t.Skip("unisolated commands share the host's /tmp")
				}
				counted := r.exceeded == workdir.LimitTmp || r.exceeded == workdir.LimitScratch || m.Cgroups() != ""
				if r.exceeded != "" && !counted && !m.Isolated() {
					t.Skip("unisolated and without cgroups, only rlimits of the daemon's user bound this")
				}
				timeout := r.timeout
				if timeout == 0 {
					timeout = 20 * time.Second
				}
				s, err := m.Prepare(t.Context(), f.view())
				require.NoError(t, err)
				res, err := s.Run(t.Context(), workdir.Command{Argv: []string{"/bin/sh", "-c", r.script}, Limits: r.limits, Timeout: timeout})
				require.NoError(t, err)
				out := string(res.Stdout) + string(res.Stderr)
				for _, w := range r.want {
					assert.Contains(t, strings.ToLower(out), strings.ToLower(w))
				}
				assert.Equal(t, r.timedOut, res.TimedOut, out)
				switch {
				case r.exceeded == "":
				case counted:
					assert.Contains(t, res.Exceeded, r.exceeded, "limits: %+v, output: %s", res.Limits, out)
				default:
					t.Logf("no cgroups here: %s is an rlimit, which the result cannot count", r.exceeded)
				}
				assert.NotEmpty(t, res.Limits)
				if r.late != "" {
					// Past the time the grandchild would have written.
					time.Sleep(3 * time.Second)
				}
				cs, err := s.Capture(t.Context(), f.view(), 0)
				require.NoError(t, err)
				if r.late != "" {
					assert.NotContains(t, paths(cs), r.late, "a process outlived the command")
				}
				require.NoError(t, s.Settle(t.Context(), f.view(), paths(cs)))

				// The session goes on, and what outgrew the scratch is gone.
				res, cs, s = f.runSh(m, "test ! -e build/a && test ! -e build/d && echo fine")
				require.NoError(t, s.Settle(t.Context(), f.view(), paths(cs)))
				assert.Equal(t, "fine\n", string(res.Stdout), string(res.Stderr))
				assert.Empty(t, res.Exceeded)
			})
		}
		assert.Empty(t, m.CommandCgroups(), "every command's cgroup is removed when it ends")
	})
	assert.Equal(t, before, rlimits(), "the daemon's own rlimits are as they were")
}

// Where no cgroup is writable, the rlimits that stand in are the
// command's alone: its helper, which reaps and reports, keeps none (a
// memory bound of a few megabytes on it would end the helper, and with
// it the command's result), and neither does the daemon.
func TestRlimitsAreTheCommandsAlone(t *testing.T) {
	plainRunOnly(t, "commands in namespaces under rlimits")
	for _, noNamespaces := range []bool{false, true} {
		t.Run(map[bool]string{false: "isolated", true: "unisolated"}[noNamespaces], func(t *testing.T) {
			data := outsideDir(t)
			m := newManagerIn(t, data, workdir.ModeCopy, func(c *workdir.Config) {
				c.NoCgroups, c.NoNamespaces = true, noNamespaces
			})
			f := newFixture(t)
			s, err := m.Prepare(t.Context(), f.view())
			require.NoError(t, err)
			res, err := s.Run(t.Context(), workdir.Command{Argv: []string{"/bin/sh", "-c",
				`grep 'Max data size' /proc/self/limits /proc/$PPID/limits; awk 'BEGIN { s = "x"; while (1) s = s s }'; echo TRIED`},
				Limits: workdir.Limits{MemoryBytes: 32 << 20}, Timeout: time.Minute})
			require.NoError(t, err)
			out := string(res.Stdout) + string(res.Stderr)
			assert.Equal(t, 0, res.ExitCode, out)
			assert.Contains(t, string(res.Stdout), "TRIED", out)
			assert.Regexp(t, `/proc/self/limits:Max data size\s+33554432\s+33554432`, out)
			assert.Regexp(t, `/proc/\d+/limits:Max data size\s+unlimited\s+unlimited`, out, "the helper keeps no rlimit of the command's")
			cs, err := s.Capture(t.Context(), f.view(), 0)
			require.NoError(t, err)
			require.NoError(t, s.Settle(t.Context(), f.view(), paths(cs)))
		})
	}
}
