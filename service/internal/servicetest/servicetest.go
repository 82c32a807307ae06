// Package servicetest holds the small helpers every domain's tests share:
// a silent logger, a driver error, and the check of an expected error.
package servicetest

import (
	"errors"
	"io"
	"log/slog"
	"testing"

	"seckill/model"
)

// DiscardLog is a logger that writes nothing.
func DiscardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// ErrIO stands for a driver error the repository translated.
var ErrIO = errors.New("dial tcp 10.0.0.9:3306: connect: connection refused")

// CheckErr fails the test unless err is what the case wants: an
// InvalidArgumentError on wantField, an error matching wantErr, or nil when
// both are empty. It reports whether an error was wanted.
func CheckErr(t *testing.T, err error, wantField string, wantErr error) bool {
	t.Helper()
	switch {
	case wantField != "":
		var ia *model.InvalidArgumentError
		if !errors.As(err, &ia) || ia.Field != wantField {
			t.Fatalf("got %v, want InvalidArgumentError on %q", err, wantField)
		}
		return true
	case wantErr != nil:
		if !errors.Is(err, wantErr) {
			t.Fatalf("got %v, want %v", err, wantErr)
		}
		return true
	case err != nil:
		t.Fatalf("got %v, want nil", err)
	}
	return false
}
