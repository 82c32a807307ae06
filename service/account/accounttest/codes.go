package accounttest

import (
	"context"
	"sync"
	"time"

	"seckill/model"
)

// Codes is a account.CodeStore. It counts the wrong guesses like the real
// one and drops a code at the last allowed wrong guess.
type Codes struct {
	mu    sync.Mutex
	Codes map[string]string
	Wrong map[string]int
	TTLs  map[string]time.Duration
	// SaveErr and CheckErr, when set, are SaveCode's and CheckCode's error.
	SaveErr  error
	CheckErr error
}

// NewCodes returns an empty store.
func NewCodes() *Codes {
	return &Codes{Codes: map[string]string{}, Wrong: map[string]int{}, TTLs: map[string]time.Duration{}}
}

func (f *Codes) init() {
	if f.Codes == nil {
		f.Codes = map[string]string{}
	}
	if f.Wrong == nil {
		f.Wrong = map[string]int{}
	}
	if f.TTLs == nil {
		f.TTLs = map[string]time.Duration{}
	}
}

// SaveCode stores phone's code and clears its wrong guesses.
func (f *Codes) SaveCode(_ context.Context, phone, code string, ttl time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.SaveErr != nil {
		return f.SaveErr
	}
	f.init()
	f.Codes[phone], f.TTLs[phone], f.Wrong[phone] = code, ttl, 0
	return nil
}

// CheckCode reports whether code is phone's, and consumes it if so.
func (f *Codes) CheckCode(_ context.Context, phone, code string, maxWrong int) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.CheckErr != nil {
		return false, f.CheckErr
	}
	f.init()
	want, ok := f.Codes[phone]
	switch {
	case !ok:
		return false, nil
	case want == code:
		delete(f.Codes, phone)
		return true, nil
	}
	if f.Wrong[phone]++; f.Wrong[phone] >= maxWrong {
		delete(f.Codes, phone)
	}
	return false, nil
}

// Code reads phone's code; "" when none is stored.
func (f *Codes) Code(phone string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.Codes[phone]
}

// Expire drops phone's code as the TTL would.
func (f *Codes) Expire(phone string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.Codes, phone)
}

// CodeLimits is a account.CodeLimiter. It allows Burst events per key and
// then refuses with Period/Rate to wait. Keys records every key counted.
type CodeLimits struct {
	mu     sync.Mutex
	Counts map[string]int
	Keys   []string
	// Err, when set, is every call's error.
	Err error
}

// NewCodeLimits returns limits that counted nothing yet.
func NewCodeLimits() *CodeLimits { return &CodeLimits{Counts: map[string]int{}} }

func (f *CodeLimits) allow(key string, l model.Limit) (bool, time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Err != nil {
		return false, 0, f.Err
	}
	if f.Counts == nil {
		f.Counts = map[string]int{}
	}
	f.Keys = append(f.Keys, key)
	if f.Counts[key] >= l.Burst {
		return false, l.Period / time.Duration(l.Rate), nil
	}
	f.Counts[key]++
	return true, 0, nil
}

// Reset forgets what key counted, as the key's expiry would.
func (f *CodeLimits) Reset(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.Counts, key)
}

// AllowAddr counts a code request from addr.
func (f *CodeLimits) AllowAddr(_ context.Context, addr string, l model.Limit) (bool, time.Duration, error) {
	return f.allow("addr:"+addr, l)
}

// AllowCooldown counts a code sent to phone within the cooldown.
func (f *CodeLimits) AllowCooldown(_ context.Context, phone string, l model.Limit) (bool, time.Duration, error) {
	return f.allow("cooldown:"+phone, l)
}

// AllowDaily counts a code sent to phone within the day.
func (f *CodeLimits) AllowDaily(_ context.Context, phone string, l model.Limit) (bool, time.Duration, error) {
	return f.allow("daily:"+phone, l)
}
