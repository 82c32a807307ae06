package sale

import (
	"context"
	"errors"
	"testing"

	"seckill/model"
)

type listStore struct {
	userID int64
	limit  int
}

func (s *listStore) ListByUser(_ context.Context, userID int64, limit int) ([]model.VoucherOrder, error) {
	s.userID, s.limit = userID, limit
	return []model.VoucherOrder{{ID: 1, UserID: userID}}, nil
}

// TestHistoryOrders: the caller's orders, at most MaxUserOrders; no caller
// is unauthorized.
func TestHistoryOrders(t *testing.T) {
	st := &listStore{}
	h := NewHistory(st)
	got, err := h.Orders(context.Background(), 7)
	if err != nil || len(got) != 1 || st.userID != 7 || st.limit != MaxUserOrders {
		t.Errorf("got %v, %v (store asked for user %d, limit %d), want user 7's orders, limit %d", got, err, st.userID, st.limit, MaxUserOrders)
	}
	if _, err := h.Orders(context.Background(), 0); !errors.Is(err, model.ErrUnauthorized) {
		t.Errorf("no user: got %v, want ErrUnauthorized", err)
	}
}
