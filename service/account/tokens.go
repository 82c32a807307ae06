package account

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"seckill/model"
)

// UserEnsurer creates missing users in bulk.
type UserEnsurer interface {
	EnsureUsers(ctx context.Context, phones []string, role string, nick func(i int) string) ([]model.User, error)
}

// LoadTestPhone is the phone of the i-th (from 1) load-test user of role:
// 13xxxxxxxxx for ordinary users, 19xxxxxxxxx for admins.
func LoadTestPhone(role string, i int) string {
	prefix := "13"
	if role == model.RoleAdmin {
		prefix = "19"
	}
	return fmt.Sprintf("%s%09d", prefix, i)
}

// WriteTokens makes sure count load-test users of role exist and writes one
// "userId,token" line per user to w. It returns the number written.
func WriteTokens(ctx context.Context, users UserEnsurer, tokens TokenIssuer, role string, count int, w io.Writer) (int, error) {
	phones := make([]string, count)
	for i := range phones {
		phones[i] = LoadTestPhone(role, i+1)
	}
	list, err := users.EnsureUsers(ctx, phones, role, func(i int) string { return fmt.Sprintf("%s_%d", role, i+1) })
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriter(w)
	for _, u := range list {
		t, err := tokens.Issue(u.ID, u.Role)
		if err != nil {
			return 0, err
		}
		if _, err := fmt.Fprintf(bw, "%d,%s\n", u.ID, t); err != nil {
			return 0, fmt.Errorf("write tokens: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return 0, fmt.Errorf("write tokens: %w", err)
	}
	return len(list), nil
}
