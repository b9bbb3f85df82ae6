// Package unixsock is the broker's Unix socket for programs on the same
// machine (the extension host, `airlock call`, `mcp --broker`): a socket
// file in a folder only the user can enter, and every connection's peer
// checked, before a byte is read, to run as the same user. The launch
// token is still required on every request; the socket replaces TCP's
// loopback hop, not the token (PROTOCOL section 1).
package unixsock

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"
)

// MaxPath is the longest socket path the kernel binds: sun_path holds 108
// bytes with its terminating NUL.
const MaxPath = 107

// Refused is told the uid of each connection closed because its peer ran
// as another user (-1 when the peer could not be read).
type Refused func(uid int)

// Listen binds path, a Unix socket, and returns a listener that closes,
// unread, every connection whose peer is not the current user. The folder
// holding path must be the user's and closed to everyone else (0700, as
// $XDG_RUNTIME_DIR is); a socket left at path by a broker that is gone is
// replaced; anything else there is refused. The socket file is 0600 and is
// removed when the listener closes.
func Listen(path string, refused Refused) (net.Listener, error) {
	if err := CheckPath(path); err != nil {
		return nil, err
	}
	return listen(path, refused)
}

// listen is Listen without the folder rule: the socket itself.
func listen(path string, refused Refused) (net.Listener, error) {
	if err := clearStale(path); err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrListen, err)
	}
	ln.SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("%w: %v", ErrListen, err)
	}
	return &listener{UnixListener: ln, uid: os.Getuid(), refused: refused}, nil
}

// CheckPath refuses a relative or too long path, and a folder that is not
// the user's own or that others may enter, with a *PathError; Listen
// checks it too, but a command checks it before anything starts.
func CheckPath(path string) error {
	if !filepath.IsAbs(path) {
		return &PathError{ErrPath, "not an absolute path"}
	}
	if len(path) > MaxPath {
		return &PathError{ErrPath, fmt.Sprintf("%d bytes, over the %d a socket path may have", len(path), MaxPath)}
	}
	dir := filepath.Dir(path)
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &PathError{ErrFolder, "no folder " + dir}
	case err != nil:
		return &PathError{ErrFolder, err.Error()}
	case !info.IsDir():
		return &PathError{ErrFolder, dir + " is not a folder"}
	}
	if owner, ok := ownerOf(info); !ok || owner != os.Getuid() {
		return &PathError{ErrFolder, dir + " is not yours; use a folder only you can enter, such as $XDG_RUNTIME_DIR"}
	}
	if info.Mode().Perm()&0o077 != 0 {
		return &PathError{ErrFolder, fmt.Sprintf("others can enter %s (mode %04o); use a folder only you can enter (mode 0700), such as $XDG_RUNTIME_DIR", dir, info.Mode().Perm())}
	}
	return nil
}

// clearStale removes a socket at path that nothing answers on (a broker
// that was killed leaves its socket), and refuses a live one or any other
// kind of file.
func clearStale(path string) error {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrListen, err)
	}
	if info.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%w: %s exists and is not a socket", ErrInUse, path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("%w: a process already listens on %s", ErrInUse, path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("%w: %v", ErrListen, err)
	}
	return nil
}

// listener accepts only connections from its own user.
type listener struct {
	*net.UnixListener
	uid     int
	refused Refused
}

// Accept returns the next connection whose peer runs as the user; others
// are closed before anything is read from them.
func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			return nil, err
		}
		uid, err := peerUID(c)
		if err == nil && uid == l.uid {
			return c, nil
		}
		c.Close()
		if err != nil {
			uid = -1
		}
		if l.refused != nil {
			l.refused(uid)
		}
	}
}
