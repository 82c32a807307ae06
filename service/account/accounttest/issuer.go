package accounttest

import "fmt"

// Issuer is an account.TokenIssuer producing readable tokens
// (tok-<user>-<role>). Err, when set, is Issue's error.
type Issuer struct{ Err error }

// Issue returns the readable token of userID and role.
func (f Issuer) Issue(userID int64, role string) (string, error) {
	if f.Err != nil {
		return "", f.Err
	}
	return fmt.Sprintf("tok-%d-%s", userID, role), nil
}
