package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"seckill/model"
)

// TestTranslateUnavailable: a transaction rolled back because its context
// ended is a dependency that could not answer in time (503), not a 500.
func TestTranslateUnavailable(t *testing.T) {
	for _, err := range []error{context.DeadlineExceeded, sql.ErrTxDone, fmt.Errorf("audit: %w", sql.ErrTxDone)} {
		if got := translate(err); !errors.Is(got, model.ErrUnavailable) {
			t.Errorf("translate(%v) = %v, want ErrUnavailable", err, got)
		}
	}
	if got := translate(errors.New("syntax")); errors.Is(got, model.ErrUnavailable) {
		t.Errorf("translate(syntax) = %v, want not ErrUnavailable", got)
	}
}
