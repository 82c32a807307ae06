package faults

import (
	"strings"
	"testing"
	"time"
)

// roomShots are five purchases: two admitted who bought, one told
// sold_out whose purchase without a token was refused, one without a token
// again (a duplicate whose admission was used), one sent without joining.
func roomShots() []shot {
	return []shot{
		{Seq: 0, User: 0, Status: 200, Code: "OK", OrderID: 1, Room: "admitted"},
		{Seq: 1, User: 1, Status: 200, Code: "OK", OrderID: 2, Room: "admitted"},
		{Seq: 2, User: 2, Status: 403, Code: "NOT_ADMITTED", Room: "sold_out", NoToken: true},
		{Seq: 3, User: 1, Status: 403, Code: "NOT_ADMITTED", Room: "closed", NoToken: true},
		{Seq: 4, User: 2, Status: 403, Code: "NOT_ADMITTED", Room: roomSkipped, NoToken: true},
	}
}

func TestJudgeRoom(t *testing.T) {
	c := caseNamed(t, "room-kill-sync")
	room := func() *roomFacts {
		return &roomFacts{Hash: true, Keys: 3, Audit: map[string]any{"joined": 3.0, "admitted": 2.0, "purchased": 2.0, "state": "sold_out"}}
	}
	tests := []struct {
		name  string
		edit  func(shots []shot, f *roomFacts) *roomFacts
		fails string // "" for a pass
	}{
		{"the room holds", func(s []shot, f *roomFacts) *roomFacts { return f }, ""},
		{"a purchase without a token served", func(s []shot, f *roomFacts) *roomFacts {
			s[2].Status, s[2].Code, s[2].OrderID = 200, "OK", 3
			return f
		}, "without an admission token got 200"},
		{"a token refused", func(s []shot, f *roomFacts) *roomFacts { s[1].NoToken = false; s[1].Code = "NOT_ADMITTED"; return f }, "with an admission token were refused"},
		{"a buyer never told", func(s []shot, f *roomFacts) *roomFacts { s[2].Room = "waiting"; return f }, "never got a final answer"},
		{"the room gone from Redis", func(s []shot, f *roomFacts) *roomFacts { f.Hash = false; return f }, "hash is not in Redis"},
		{"the room not sold out", func(s []shot, f *roomFacts) *roomFacts { f.Audit["state"] = "open"; return f }, "want sold_out"},
		{"an admitted buyer not counted as joined", func(s []shot, f *roomFacts) *roomFacts { f.Audit["joined"] = 1.0; return f }, "counts 1 joined"},
		{"the room never read", func(s []shot, f *roomFacts) *roomFacts { return nil }, "the fault never read it"},
		{"a purchase without joining served", func(s []shot, f *roomFacts) *roomFacts {
			s[4].Status, s[4].Code, s[4].OrderID = 200, "OK", 3
			return f
		}, "without an admission token got 200"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shots := roomShots()
			f := tt.edit(shots, room())
			status, codes := tallyShots(shots)
			r := CaseResult{Status: status, Codes: codes, Orders: 2, transportOK: true}
			if strings.Contains(tt.name, "served") {
				r.Orders = 3
			}
			seq := make([]int, len(shots))
			marks := map[string]time.Duration{"instance 2 killed": 0}
			c.judge(judgement{e: &caseEnv{room: f}, l: &loadRun{plan: loadPlan{Seq: seq}, marks: marks}, shots: shots, r: &r})
			finishVerdict(&r, false)
			if tt.fails == "" {
				if r.Verdict != "pass" {
					t.Errorf("got %s %q, want pass", r.Verdict, r.Failures)
				}
				return
			}
			if r.Verdict != "FAIL" || !strings.Contains(strings.Join(r.Failures, "; "), tt.fails) {
				t.Errorf("got %s %q, want FAIL with %q", r.Verdict, r.Failures, tt.fails)
			}
		})
	}
}
