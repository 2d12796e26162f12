//go:build !linux

package admin

import (
	"errors"
	"net"
)

// peerUID is not available here: the socket's mode 0600 and its private
// directory are the only protection.
func peerUID(*net.UnixConn) (int, error) {
	return 0, errors.New("peer credentials are not supported on this system")
}

const peerCredentialsChecked = false
