package overlay

import (
	"bytes"
	"strings"

	"github.com/sessiond/sessiond/gitstore"
)

// The content rules: what `git fsck` checks inside the blobs of two
// special files, .gitmodules and .gitattributes, under every spelling git
// treats as them (HFS+ ignorable code points, NTFS short names and
// trailing dots or spaces). A repository that holds a blob breaking them
// fails `git fsck --strict`, and servers that check objects refuse pushes
// of it, so such a blob is never written.
//
// The checks follow git 2.39's fsck.c (fsck_blob, fsck_gitmodules_fn),
// submodule-config.c (check_submodule_name), config.c (the parser) and
// credential.c (the URL split): a differential test runs them against
// `git fsck --strict`.

// Sizes above which git fsck refuses to parse the files at all.
const (
	maxGitmodulesBytes    = 512 << 20 // core.bigFileThreshold
	maxGitattributesBytes = 100 << 20 // ATTR_MAX_FILE_SIZE
	maxGitattributesLine  = 2048      // ATTR_MAX_LINE_LENGTH
)

// ContentChecked reports whether a blob written at p with mode m is
// subject to the content rules: a regular file (not a symlink, which
// gitmodulesSymlink refuses) named .gitmodules or .gitattributes in any
// directory.
func ContentChecked(p string, m gitstore.Mode) bool {
	if m != gitstore.ModeFile && m != gitstore.ModeExec {
		return false
	}
	k := specialKind(baseName(p))
	return k == "gitmodules" || k == "gitattributes"
}

// CheckContent checks the content rules for data written at p with mode
// m. For .gitmodules: gitmodulesName (a submodule name that is empty or
// has a ".." component), gitmodulesUrl (a URL starting with "-", a
// relative or git:// URL that decodes to a newline or climbs above its
// root into a host, an http(s)/ftp(s) URL without a host or with a
// newline in a part), gitmodulesPath (a path starting with "-"),
// gitmodulesUpdate (update = !command) and gitmodulesParse (not valid git
// config syntax; git fsck only warns, sessiond refuses); for
// .gitattributes: gitattributesLineLength. Paths ContentChecked leaves
// out always pass.
func CheckContent(p string, m gitstore.Mode, data []byte) error {
	if !ContentChecked(p, m) {
		return nil
	}
	if specialKind(baseName(p)) == "gitattributes" {
		return checkGitattributes(p, data)
	}
	return checkGitmodules(p, data)
}

func checkGitattributes(p string, data []byte) error {
	if len(data) > maxGitattributesBytes {
		return pathErr(RuleGitattributesLarge, p, "%d bytes, over git's %d", len(data), maxGitattributesBytes)
	}
	// git reads the blob as a C string: a NUL ends it.
	if i := bytes.IndexByte(data, 0); i >= 0 {
		data = data[:i]
	}
	for n := 1; len(data) > 0; n++ {
		line, rest, _ := bytes.Cut(data, []byte{'\n'})
		if len(line) >= maxGitattributesLine {
			return pathErr(RuleGitattributesLineLength, p, "line %d is %d bytes; git reads lines under %d", n, len(line), maxGitattributesLine)
		}
		data = rest
	}
	return nil
}

func checkGitmodules(p string, data []byte) error {
	if len(data) > maxGitmodulesBytes {
		return pathErr(RuleGitmodulesLarge, p, "%d bytes, over git's %d", len(data), maxGitmodulesBytes)
	}
	var bad *PathError
	line, err := parseConfig(data, func(name string, value *string) bool {
		bad = checkSubmoduleEntry(p, name, value)
		return bad == nil
	})
	switch {
	case bad != nil:
		return bad
	case err != nil:
		return pathErr(RuleGitmodulesParse, p, "not valid git config syntax at line %d", line)
	case bytes.IndexByte(data, 0xff) >= 0:
		// git reads a 0xff byte as the end of the file (it reads signed
		// chars) and so checks less than the file holds; on platforms
		// with unsigned chars it does not parse at all.
		return pathErr(RuleGitmodulesParse, p, "a 0xff byte, which git reads as the end of the file")
	}
	return nil
}

// checkSubmoduleEntry is fsck_gitmodules_fn: the checks on one
// "submodule.<name>.<key>" entry. Other entries pass.
func checkSubmoduleEntry(p, name string, value *string) *PathError {
	name = cString(name)
	rest, ok := strings.CutPrefix(name, "submodule")
	if !ok || !strings.HasPrefix(rest, ".") {
		return nil
	}
	dot := strings.LastIndexByte(rest, '.')
	if dot == 0 {
		return nil // no subsection: not a submodule
	}
	sub, key := rest[1:dot], rest[dot+1:]
	if badSubmoduleName(sub) {
		return pathErr(RuleGitmodulesName, p, "submodule name %q is empty or has a \"..\" component", sub)
	}
	if value == nil {
		return nil
	}
	v := cString(*value)
	switch key {
	case "url":
		if badSubmoduleURL(v) {
			return pathErr(RuleGitmodulesURL, p, "submodule %q: url %q is refused (an option, a newline, or a relative URL that escapes its host)", sub, v)
		}
	case "path":
		if strings.HasPrefix(v, "-") {
			return pathErr(RuleGitmodulesPath, p, "submodule %q: path %q starts with \"-\"", sub, v)
		}
	case "update":
		if strings.HasPrefix(v, "!") {
			return pathErr(RuleGitmodulesUpdate, p, "submodule %q: update %q runs a command", sub, v)
		}
	}
	return nil
}

// cString is s as C code sees it: up to the first NUL.
func cString(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

func isXplatformSep(c byte) bool { return c == '/' || c == '\\' }

// badSubmoduleName is check_submodule_name: empty, or ".." as a component
// with either slash as separator.
func badSubmoduleName(name string) bool {
	if name == "" {
		return true
	}
	for i := 0; i < len(name); i++ {
		if i > 0 && !isXplatformSep(name[i-1]) {
			continue
		}
		if strings.HasPrefix(name[i:], "..") && (len(name) == i+2 || isXplatformSep(name[i+2])) {
			return true
		}
	}
	return false
}

func startsWithDotSlash(s string) bool {
	return len(s) >= 2 && s[0] == '.' && isXplatformSep(s[1])
}

func startsWithDotDotSlash(s string) bool {
	return len(s) >= 3 && s[0] == '.' && s[1] == '.' && isXplatformSep(s[2])
}

// badSubmoduleURL is check_submodule_url.
func badSubmoduleURL(url string) bool {
	if strings.HasPrefix(url, "-") {
		return true
	}
	if startsWithDotSlash(url) || startsWithDotDotSlash(url) || strings.HasPrefix(url, "git://") {
		// It could be appended to an http URL and url-decoded.
		if strings.Contains(urlDecode(url), "\n") {
			return true
		}
		// "../" climbing into the host part (CVE-2020-11008).
		n, next := 0, url
		for {
			if startsWithDotDotSlash(next) {
				n++
				next = next[3:]
			} else if startsWithDotSlash(next) {
				next = next[2:]
			} else {
				break
			}
		}
		return n > 0 && (strings.HasPrefix(next, ":") || strings.HasPrefix(next, "/"))
	}
	if curl, ok := urlToCurlURL(url); ok {
		return !credentialURLOK(curl)
	}
	return false
}

// urlToCurlURL is url_to_curl_url: the URL git-remote-curl would get.
func urlToCurlURL(url string) (string, bool) {
	for _, p := range []string{"http::", "https::", "ftp::", "ftps::"} {
		if rest, ok := strings.CutPrefix(url, p); ok {
			return rest, true
		}
	}
	for _, p := range []string{"http://", "https://", "ftp://", "ftps://"} {
		if strings.HasPrefix(url, p) {
			return url, true
		}
	}
	return "", false
}

// credentialURLOK is credential_from_url_gently with a non-empty host: a
// scheme, a host, and no newline in any decoded part.
func credentialURLOK(url string) bool {
	protoEnd := strings.Index(url, "://")
	if protoEnd <= 0 {
		return false
	}
	cp := url[protoEnd+3:]
	at := strings.IndexByte(cp, '@')
	colon := strings.IndexByte(cp, ':')
	slash := strings.IndexAny(cp, "/?#")
	if slash < 0 {
		slash = len(cp)
	}
	var parts []string
	host := 0
	switch {
	case at < 0 || slash <= at:
	case colon < 0 || at <= colon:
		parts = append(parts, urlDecode(cp[:at]))
		host = at + 1
	default:
		parts = append(parts, urlDecode(cp[:colon]), urlDecode(cp[colon+1:at]))
		host = at + 1
	}
	h := urlDecode(cp[host:slash])
	parts = append(parts, url[:protoEnd], h)
	path := strings.TrimLeft(cp[slash:], "/")
	if path != "" {
		parts = append(parts, urlDecode(path))
	}
	for _, s := range parts {
		if strings.Contains(s, "\n") {
			return false
		}
	}
	return h != ""
}

// urlDecode is url_decode_mem: %XX decoded (but never to NUL), the part
// before the first colon (a scheme) kept as it is.
func urlDecode(s string) string {
	var out strings.Builder
	if colon := strings.IndexByte(s, ':'); colon > 0 {
		out.WriteString(s[:colon])
		s = s[colon:]
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == 0 {
			break
		}
		if c == '%' && len(s)-i >= 3 {
			hi, lo := unhex(s[i+1]), unhex(s[i+2])
			if hi >= 0 && lo >= 0 && hi<<4|lo > 0 {
				out.WriteByte(byte(hi<<4 | lo))
				i += 2
				continue
			}
		}
		out.WriteByte(c)
	}
	return out.String()
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
