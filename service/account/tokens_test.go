package account

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"seckill/model"
	"seckill/service/account/accounttest"
	"seckill/service/internal/servicetest"
)

// fakeEnsurer returns one user per phone, ids from 1000, and records its input.
type fakeEnsurer struct {
	phones []string
	role   string
	nicks  []string
	err    error
}

func (f *fakeEnsurer) EnsureUsers(_ context.Context, phones []string, role string, nick func(i int) string) ([]model.User, error) {
	f.phones, f.role = phones, role
	if f.err != nil {
		return nil, f.err
	}
	out := make([]model.User, len(phones))
	for i, p := range phones {
		f.nicks = append(f.nicks, nick(i))
		out[i] = model.User{ID: int64(1000 + i), Phone: p, Role: role, NickName: nick(i)}
	}
	return out, nil
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestLoadTestPhone(t *testing.T) {
	tests := []struct {
		role string
		i    int
		want string
	}{
		{model.RoleUser, 1, "13000000001"},
		{model.RoleUser, 123456, "13000123456"},
		{model.RoleAdmin, 1, "19000000001"},
		{model.RoleAdmin, 999_999_999, "19999999999"},
	}
	for _, tt := range tests {
		got := LoadTestPhone(tt.role, tt.i)
		if got != tt.want {
			t.Errorf("LoadTestPhone(%q, %d): got %q, want %q", tt.role, tt.i, got, tt.want)
		}
		if !ValidPhone(got) {
			t.Errorf("LoadTestPhone(%q, %d) = %q: not a valid phone, so such users could not log in", tt.role, tt.i, got)
		}
	}
}

func TestWriteTokens(t *testing.T) {
	tests := []struct {
		name      string
		role      string
		count     int
		wantLines []string
	}{
		{"users", model.RoleUser, 3, []string{"1000,tok-1000-user", "1001,tok-1001-user", "1002,tok-1002-user"}},
		{"admins", model.RoleAdmin, 2, []string{"1000,tok-1000-admin", "1001,tok-1001-admin"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ens := &fakeEnsurer{}
			var buf bytes.Buffer
			n, err := WriteTokens(context.Background(), ens, accounttest.Issuer{}, tt.role, tt.count, &buf)
			if err != nil {
				t.Fatalf("got %v, want nil", err)
			}
			if n != tt.count {
				t.Errorf("written: got %d, want %d", n, tt.count)
			}
			want := strings.Join(tt.wantLines, "\n") + "\n"
			if got := buf.String(); got != want {
				t.Errorf("output: got %q, want %q", got, want)
			}
			if ens.role != tt.role || len(ens.phones) != tt.count {
				t.Errorf("ensured: got role %q, %d phones, want %q, %d", ens.role, len(ens.phones), tt.role, tt.count)
			}
			for i, p := range ens.phones {
				if want := LoadTestPhone(tt.role, i+1); p != want {
					t.Errorf("phone %d: got %q, want %q", i, p, want)
				}
				if want := fmt.Sprintf("%s_%d", tt.role, i+1); ens.nicks[i] != want {
					t.Errorf("nick %d: got %q, want %q", i, ens.nicks[i], want)
				}
			}
		})
	}
}

func TestWriteTokensErrors(t *testing.T) {
	tests := []struct {
		name      string
		ensureErr error
		issueErr  error
		failWrite bool
		wantErr   string
	}{
		{name: "ensure fails", ensureErr: model.Unavailable(servicetest.ErrIO), wantErr: "dependency unavailable"},
		{name: "issue fails", issueErr: errors.New("sign failed"), wantErr: "sign failed"},
		{name: "write fails", failWrite: true, wantErr: "disk full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w io.Writer = &bytes.Buffer{}
			if tt.failWrite {
				w = failWriter{}
			}
			n, err := WriteTokens(context.Background(), &fakeEnsurer{err: tt.ensureErr}, accounttest.Issuer{Err: tt.issueErr}, model.RoleUser, 2, w)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
			}
			if n != 0 {
				t.Errorf("written: got %d, want 0", n)
			}
		})
	}
}
