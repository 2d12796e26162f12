package sdk

import "time"

// CodeUserDisabled: a login link was asked for a disabled user (409).
const CodeUserDisabled = "USER_DISABLED"

// LoginLink is the answer of POST /users/{user}/login-link (admins): a
// one-time login code for the user, valid until ExpiresAt, and the path of
// the web UI's link (the page's origin goes before it; the code is in the
// fragment, which never reaches a server's logs).
type LoginLink struct {
	Code      string    `json:"code"`
	Path      string    `json:"path"`
	ExpiresAt time.Time `json:"expires_at"`
}
