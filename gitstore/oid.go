package gitstore

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
)

// OIDSize is the length in bytes of a SHA-1 object id.
const OIDSize = 20

// OID is a git object id (SHA-1). The zero value means "no object".
type OID [OIDSize]byte

// ZeroOID is the id of no object; a compare-and-swap with ZeroOID as the
// old value means "the ref must not exist".
var ZeroOID OID

// ParseOID parses a full 40-digit hexadecimal object id.
func ParseOID(s string) (OID, error) {
	var o OID
	if len(s) != 2*OIDSize {
		return o, fmt.Errorf("%w: %q is not a 40-digit hex object id", ErrInvalidOID, s)
	}
	if _, err := hex.Decode(o[:], []byte(s)); err != nil {
		return o, fmt.Errorf("%w: %q is not a 40-digit hex object id", ErrInvalidOID, s)
	}
	return o, nil
}

// MustParseOID is ParseOID for constants in tests; it panics on bad input.
func MustParseOID(s string) OID {
	o, err := ParseOID(s)
	if err != nil {
		panic(err)
	}
	return o
}

// String returns the 40-digit lower-case hexadecimal form.
func (o OID) String() string { return hex.EncodeToString(o[:]) }

// IsZero reports whether o is the zero id.
func (o OID) IsZero() bool { return o == ZeroOID }

// MarshalText implements encoding.TextMarshaler (JSON, database rows).
func (o OID) MarshalText() ([]byte, error) {
	if o.IsZero() {
		return []byte{}, nil
	}
	return []byte(o.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler; the empty string is the
// zero id.
func (o *OID) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*o = ZeroOID
		return nil
	}
	v, err := ParseOID(string(b))
	if err != nil {
		return err
	}
	*o = v
	return nil
}

// Kind is a git object type.
type Kind int8

// Object kinds, numbered as in git's pack format.
const (
	KindCommit Kind = 1
	KindTree   Kind = 2
	KindBlob   Kind = 3
	KindTag    Kind = 4
)

func (k Kind) String() string {
	switch k {
	case KindCommit:
		return "commit"
	case KindTree:
		return "tree"
	case KindBlob:
		return "blob"
	case KindTag:
		return "tag"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// HashObject returns the id git gives an object of kind k with content data
// (what `git hash-object -t <kind>` prints).
func HashObject(k Kind, data []byte) OID {
	h := sha1.New()
	h.Write([]byte(k.String()))
	h.Write([]byte{' '})
	h.Write(strconv.AppendInt(nil, int64(len(data)), 10))
	h.Write([]byte{0})
	h.Write(data)
	var o OID
	h.Sum(o[:0])
	return o
}

// Mode is a git tree entry mode.
type Mode uint32

// The canonical modes git writes into trees.
const (
	ModeFile    Mode = 0o100644
	ModeExec    Mode = 0o100755
	ModeSymlink Mode = 0o120000
	ModeDir     Mode = 0o040000
	ModeGitlink Mode = 0o160000
)

// IsDir reports whether m is a tree.
func (m Mode) IsDir() bool { return m == ModeDir }

// IsBlob reports whether m names a blob (regular file, executable or symlink).
func (m Mode) IsBlob() bool { return m == ModeFile || m == ModeExec || m == ModeSymlink }

// Writable reports whether sessiond may write an entry with mode m: regular
// files, executables and symlinks. Gitlinks in a base are read-only.
func (m Mode) Writable() bool { return m.IsBlob() }

// String returns the mode as git prints it in `ls-tree` (six octal digits).
func (m Mode) String() string { return fmt.Sprintf("%06o", uint32(m)) }

// ParseMode parses an octal mode such as "100644" or "40000".
func ParseMode(s string) (Mode, error) {
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: %q", ErrInvalidMode, s)
	}
	return Mode(v), nil
}

// Canonical maps a mode to the one git would write in a tree, the way
// fsck's canonical-mode rule does: any regular file is 100644 unless its
// owner execute bit is set.
func (m Mode) Canonical() Mode {
	switch m & 0o170000 {
	case 0o100000:
		if m&0o100 != 0 {
			return ModeExec
		}
		return ModeFile
	case 0o040000:
		return ModeDir
	case 0o120000:
		return ModeSymlink
	case 0o160000:
		return ModeGitlink
	}
	return m
}

// treeMode is the mode as it is encoded in a tree object (no leading zero).
func (m Mode) treeMode() []byte {
	switch m {
	case ModeFile:
		return modeFileText
	case ModeExec:
		return modeExecText
	case ModeDir:
		return modeDirText
	case ModeSymlink:
		return modeSymlinkText
	case ModeGitlink:
		return modeGitlinkText
	}
	return strconv.AppendUint(nil, uint64(m), 8)
}

// The canonical modes as trees spell them, shared: encoding a tree is on
// every write's path.
var (
	modeFileText    = []byte("100644")
	modeExecText    = []byte("100755")
	modeDirText     = []byte("40000")
	modeSymlinkText = []byte("120000")
	modeGitlinkText = []byte("160000")
)

func hexDecode(dst []byte, s string) (int, error) { return hex.Decode(dst, []byte(s)) }
