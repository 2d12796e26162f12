package sdk

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Error codes of users, tokens and login codes.
const (
	// CodeLastAdmin: the change would leave no enabled admin (409).
	CodeLastAdmin = "LAST_ADMIN"
	// CodeUserExists: POST /users with a taken username (409).
	CodeUserExists = "USER_EXISTS"
	// CodeLoginCodeInvalid: a login code that is unknown, used, expired
	// or of a disabled user (401).
	CodeLoginCodeInvalid = "LOGIN_CODE_INVALID"
)

// UsersResponse answers GET /users (Coder's GetUsersResponse names).
type UsersResponse struct {
	Users []User `json:"users"`
	Count int    `json:"count"`
}

// CreateUserRequest is POST /users.
type CreateUserRequest struct {
	Name  string `json:"username"`
	Admin bool   `json:"admin,omitempty"`
}

// UpdateUserRequest is PATCH /users/{user}; absent fields stay.
type UpdateUserRequest struct {
	Disabled *bool `json:"disabled,omitempty"`
	Admin    *bool `json:"admin,omitempty"`
	// Budget sets the user's budget override: a Budget object (a null
	// limit in it: none of that kind), or JSON null to remove the override
	// so the deployment's defaults apply. Absent: unchanged.
	Budget json.RawMessage `json:"budget,omitempty"`
}

// APIKey describes a token without its secret (codersdk.APIKey's names
// where it has them; kind and expired are chatd's).
type APIKey struct {
	ID        uuid.UUID `json:"id"`
	UserID    uuid.UUID `json:"user_id"`
	Username  string    `json:"username"`
	TokenName string    `json:"token_name"`
	// Kind is api (made by the API or the CLI), session (a web login) or
	// bootstrap (CHATD_BOOTSTRAP_TOKEN).
	Kind      string     `json:"kind"`
	CreatedAt time.Time  `json:"created_at"`
	LastUsed  *time.Time `json:"last_used"`  // null: never used (uses are recorded once a minute at most)
	ExpiresAt *time.Time `json:"expires_at"` // null: never expires; a session's slides with use
	Expired   bool       `json:"expired"`
}

// CreateTokenRequest is POST /users/{user}/tokens (codersdk's names).
// Lifetime (nanoseconds, as Coder's) or ExpiresAt gives an expiry; with
// neither the token never expires.
type CreateTokenRequest struct {
	TokenName string     `json:"token_name"`
	Lifetime  int64      `json:"lifetime,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// GenerateAPIKeyResponse answers POST /users/{user}/tokens: the secret
// (shown only this once) and its description.
type GenerateAPIKeyResponse struct {
	Key   string `json:"key"`
	Token APIKey `json:"token"`
}
