package workdir

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// What a command cannot reach, beyond the paths the daemon names (its
// data directory and the repositories): the directories of host
// services' sockets (/run, /var/run, and the directory of every Unix
// socket the host has bound by path), and people's home directories
// (/home, /root and the daemon's own), where keys and credentials live.
// Of a hidden home, what the daemon's PATH goes through (a toolchain
// installed there) is still shown, without the well-known credential
// files.

// runDirs hold host services' sockets.
var runDirs = []string{"/run", "/var/run"}

// credentialFiles are kept out of a home even where part of it is shown.
var credentialFiles = []string{
	".ssh", ".aws", ".azure", ".gnupg", ".netrc", ".git-credentials", ".docker", ".kube",
	".pgpass", ".npmrc", ".pypirc", ".config/gh", ".config/gcloud", ".cargo/credentials",
	".cargo/credentials.toml", ".gem/credentials",
}

// rootSecrets are the host's well-known root-only secrets, hidden where
// the daemon runs as root: its commands are then uid 0 of the host to
// the file system's permission checks (a user namespace maps the daemon's
// uid, and a command holds no capability, but it is the owner of every
// file root owns), so a root-only file the root shows would be readable.
// A daemon of its own unprivileged user has no such reach, which is why
// the README asks for one; this list covers the usual places.
var rootSecrets = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/ssh/ssh_host_*key",
	"/etc/ssl/private", "/etc/sudoers", "/etc/sudoers.d", "/etc/security/opasswd",
	"/etc/NetworkManager/system-connections", "/etc/wireguard", "/etc/credstore", "/etc/credstore.encrypted",
	"/var/lib/sudo", "/var/lib/systemd/credential.secret", "/var/spool/cron", "/var/log/btmp", "/var/log/auth.log",
	"/boot",
}

// systemDirs are never hidden whole for a socket found in them; the
// socket itself is.
var systemDirs = map[string]bool{"/": true, "/usr": true, "/etc": true, "/bin": true, "/sbin": true,
	"/lib": true, "/lib64": true, "/opt": true, "/var": true, "/srv": true, "/mnt": true, "/var/lib": true}

// reach is what commands cannot see of the host, and what of a hidden
// home they still can.
type reach struct {
	hide []string
	show []string
}

type reachCache struct {
	once   sync.Once
	static reach
}

// system computes the hidden and shown paths that do not depend on the
// daemon's configuration: the homes and the PATH once, the host's
// sockets (which come and go) at every call.
func (c *reachCache) system() reach {
	c.once.Do(func() { c.static = staticReach() })
	r := reach{hide: slices.Clone(c.static.hide), show: c.static.show}
	var socks []string
	for _, sock := range unixSockets() {
		dir := filepath.Dir(sock)
		if systemDirs[dir] {
			socks = append(socks, sock)
		} else {
			socks = append(socks, dir)
		}
	}
	r.hide = append(r.hide, resolveAll(socks)...)
	return r
}

func staticReach() reach {
	var r reach
	r.hide = append(r.hide, runDirs...)
	homes := []string{"/home", "/root"}
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) && h != "/" {
		homes = append(homes, h)
	}
	for _, h := range homes {
		r.hide = append(r.hide, h)
		for _, f := range credentialFiles {
			r.hide = append(r.hide, filepath.Join(h, f))
		}
	}
	// The toolchains on the daemon's PATH that live in a hidden home.
	for _, p := range filepath.SplitList(os.Getenv("PATH")) {
		if !filepath.IsAbs(p) {
			continue
		}
		p = resolve(p)
		for _, h := range homes {
			h = resolve(h)
			rel, err := filepath.Rel(h, p)
			if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
				continue
			}
			r.show = append(r.show, filepath.Join(h, strings.Split(rel, string(filepath.Separator))[0]))
		}
	}
	if os.Geteuid() == 0 {
		for _, g := range rootSecrets {
			found, _ := filepath.Glob(g)
			r.hide = append(r.hide, found...)
		}
	}
	r.hide = resolveAll(r.hide)
	return r
}

// unixSockets lists the paths of the Unix sockets bound in this network
// namespace (/proc/net/unix), which a command could connect to whatever
// its own network.
func unixSockets() []string {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 8 || !strings.HasPrefix(fs[7], "/") {
			continue
		}
		if p := filepath.Clean(fs[7]); !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// resolve is p with its symlinks resolved, where it exists.
func resolve(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// resolveAll resolves each path, keeping the path as given too where it
// differs (a symlink on the way hides what it names and itself).
func resolveAll(ps []string) []string {
	out := make([]string, 0, len(ps))
	seen := map[string]bool{}
	for _, p := range ps {
		for _, q := range []string{filepath.Clean(p), resolve(p)} {
			if filepath.IsAbs(q) && !seen[q] {
				seen[q] = true
				out = append(out, q)
			}
		}
	}
	return out
}
