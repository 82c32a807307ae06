// Package fairness is the waiting room's fairness run (docs/waiting-room.md):
// buyers join a voucher's room before the start, a few of them bots that
// join many times, poll 50 times a second and fire purchases with and
// without tokens; people join once and poll when told. Run measures the
// units sold, the purchases without a token, the bots' share of the units
// against their share of the joiners (an exact binomial test) and how soon
// every joiner learns the outcome after the sell-out. With SybilAccounts,
// one person holds that many of the people's accounts: Run measures the
// units that person won against the share of that many accounts.
package fairness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config is one run.
type Config struct {
	// Bases are the instances' base URLs (loopback).
	Bases      []string
	Buyers     int     // everyone who joins, people and bots
	Units      int     // the voucher's stock
	BotShare   float64 // the share of the buyers that are bots
	BotJoins   int     // how often each bot joins
	BotEvery   time.Duration
	NoShow     float64       // the share of admitted people who never buy
	StartAfter time.Duration // from the publish to the sale's start
	Deadline   time.Duration // the most the sale phase lasts
	AdminToken string
	// Token returns the JWT of a buyer.
	Token func(userID int64) (string, error)
	// FirstUser is the first buyer's id; the buyers are consecutive ids.
	FirstUser int64
	Seed      uint64 // picks the bots and the no-shows
	Conns     int    // connections per instance
	// SybilAccounts is how many of the people's accounts one person holds
	// (0: none). Each is an ordinary account (its own user id, so its own
	// phone): it joins once before the start, polls when told and buys
	// whenever admitted (the person never walks away).
	SybilAccounts int
}

// Result is what a run measured.
type Result struct {
	Buyers, Bots, Units int
	Sold, SoldByBots    int
	// TokenlessSold are the purchases without a token answered 200 (must
	// be 0); TokenlessRefused those answered 403 NOT_ADMITTED.
	TokenlessSold, TokenlessRefused int
	BotShareJoiners                 float64
	BotShareUnits                   float64
	PValue                          float64
	Orders                          int64 // the audit's orders
	Room                            json.RawMessage
	// LearnedMax and LearnedP99 are how long after the last unit sold the
	// joiners still waiting learned the outcome; Unlearned never did.
	LearnedMax, LearnedP99 time.Duration
	Learned, Unlearned     int
	WalkedAway             int // admitted people who never bought (no-shows)
	Requests               map[string]int64
	JoinPhase, SalePhase   time.Duration
	Errors                 []string
	// Sybil is the person holding many accounts, when Config.SybilAccounts
	// is set (absent otherwise).
	Sybil *Sybil `json:"Sybil,omitempty"`
}

// Sybil is what the person holding Accounts accounts won.
type Sybil struct {
	Accounts int
	// Admitted are the person's accounts the room admitted; Won the units
	// they bought.
	Admitted, Won int
	// FairOne is the fair share of one account: units / joiners; FairN
	// Accounts × FairOne, and Ratio Won / FairN.
	FairOne, FairN, Ratio float64
	// FairNBuying is Accounts × sold / the joiners who buy when admitted
	// (everyone but the people who walk away): the person's expected units
	// when the room gives each entry the same chance, higher than FairN
	// because the person never walks away and others do.
	FairNBuying float64
	// PValue is the exact two-sided binomial test of Won units out of the
	// sold against the share Accounts / joiners (as the bots' test);
	// AcceptLo and AcceptHi the range of units that test accepts at 5 %.
	PValue             float64
	AcceptLo, AcceptHi int
}

type run struct {
	cfg    Config
	cl     *http.Client
	botCl  *http.Client
	vid    int64
	begin  time.Time
	reqs   sync.Map // kind -> *atomic.Int64
	mu     sync.Mutex
	errs   []string
	soldAt []time.Time
	res    Result
}

// Run makes one run and returns its figures.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	client := func() *http.Client {
		return &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{
			MaxConnsPerHost: cfg.Conns, MaxIdleConnsPerHost: cfg.Conns}}
	}
	r := &run{cfg: cfg, cl: client(), botCl: client()}
	r.res = Result{Buyers: cfg.Buyers, Units: cfg.Units, Requests: map[string]int64{}}
	if err := r.publish(ctx); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5eed))
	kinds := make([]buyer, cfg.Buyers)
	nBots := int(float64(cfg.Buyers)*cfg.BotShare + 0.5)
	if cfg.SybilAccounts < 0 || nBots+cfg.SybilAccounts > cfg.Buyers {
		return nil, fmt.Errorf("%d accounts of one person and %d bots among %d buyers", cfg.SybilAccounts, nBots, cfg.Buyers)
	}
	for i, k := range rng.Perm(cfg.Buyers) {
		// The person's accounts come after the bots in the same shuffle,
		// and the no-show draw is made for every buyer: without them the
		// bots and the no-shows are those of a run without the option.
		sybil := i >= nBots && i < nBots+cfg.SybilAccounts
		noShow := rng.Float64() < cfg.NoShow && !sybil
		kinds[k] = buyer{id: cfg.FirstUser + int64(k), bot: i < nBots, sybil: sybil, noShow: noShow}
	}
	r.res.Bots = nBots
	if cfg.SybilAccounts > 0 {
		r.res.Sybil = &Sybil{Accounts: cfg.SybilAccounts}
	}
	for i := range kinds {
		tok, err := cfg.Token(kinds[i].id)
		if err != nil {
			return nil, err
		}
		kinds[i].token = tok
	}
	start := time.Now()
	if err := r.joinAll(ctx, kinds); err != nil {
		return nil, err
	}
	r.res.JoinPhase = time.Since(start)
	if time.Now().After(r.begin) {
		return nil, fmt.Errorf("the joins outlasted the start (%s): raise StartAfter", r.res.JoinPhase)
	}
	time.Sleep(time.Until(r.begin))
	sale, cancel := context.WithTimeout(ctx, cfg.Deadline)
	defer cancel()
	learned := make([]time.Time, len(kinds))
	var wg sync.WaitGroup
	for i := range kinds {
		wg.Go(func() { learned[i] = r.sell(sale, &kinds[i], rand.New(rand.NewPCG(cfg.Seed, uint64(i)))) })
	}
	wg.Wait()
	r.res.SalePhase = time.Since(r.begin)
	r.finish(ctx, kinds, learned)
	return &r.res, nil
}

type buyer struct {
	id           int64
	token        string
	bot, noShow  bool
	sybil        bool // one of the accounts of the person holding many
	bought, gone bool
	seen         bool // admitted (recorded for the person's accounts)
}

func (r *run) count(kind string) {
	v, _ := r.reqs.LoadOrStore(kind, &atomic.Int64{})
	v.(*atomic.Int64).Add(1)
}

func (r *run) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) < 20 {
		r.errs = append(r.errs, fmt.Sprintf(format, args...))
	}
}

// envelope is the service's answer.
type envelope struct {
	Success bool            `json:"success"`
	Code    string          `json:"code"`
	Data    json.RawMessage `json:"data"`
}

// call sends one request and decodes the envelope; status 0 is a
// transport error.
func (r *run) call(ctx context.Context, cl *http.Client, method, url, token, admission, body string) (int, envelope) {
	return r.callWith(ctx, cl, method, url, token, "Admission-Token", admission, body)
}

// callWith sends the request with the header name set to value (none
// when value is empty).
func (r *run) callWith(ctx context.Context, cl *http.Client, method, url, token, name, value, body string) (int, envelope) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, envelope{}
	}
	req.Header.Set("authorization", token)
	req.Header.Set("Content-Type", "application/json")
	if value != "" {
		req.Header.Set(name, value)
	}
	resp, err := cl.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			r.fail("%s %s: %v", method, url, err)
		}
		return 0, envelope{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e envelope
	if err := json.Unmarshal(b, &e); err != nil {
		r.fail("%s %s: body %q", method, url, b)
	}
	return resp.StatusCode, e
}

func (r *run) publish(ctx context.Context) error {
	base := r.cfg.Bases[0]
	code, e := r.call(ctx, r.cl, http.MethodPost, base+"/shop", r.cfg.AdminToken, "",
		`{"name":"fairness","typeId":1,"address":"loopback 1","x":120.15,"y":30.28}`)
	if code != http.StatusOK {
		return fmt.Errorf("create shop: %d %s", code, e.Code)
	}
	r.begin = time.Now().Add(r.cfg.StartAfter)
	body := fmt.Sprintf(`{"shopId":%s,"title":"fairness","payValue":100,"actualValue":200,"type":1,"stock":%d,"beginTime":%q,"endTime":%q,"waitingRoom":true}`,
		e.Data, r.cfg.Units, r.begin.Format(time.RFC3339Nano), r.begin.Add(time.Hour).Format(time.RFC3339Nano))
	code, e = r.call(ctx, r.cl, http.MethodPost, base+"/voucher/seckill", r.cfg.AdminToken, "", body)
	if code != http.StatusOK {
		return fmt.Errorf("publish: %d %s", code, e.Code)
	}
	id, err := strconv.ParseInt(string(e.Data), 10, 64)
	r.vid = id
	return err
}

func (r *run) url(i int64, suffix string) string {
	return r.cfg.Bases[int(i)%len(r.cfg.Bases)] + "/voucher-order/seckill/" + strconv.FormatInt(r.vid, 10) + suffix
}

// joinAll joins everyone before the start: people once, bots BotJoins
// times on alternating instances, all in a shuffled order.
func (r *run) joinAll(ctx context.Context, bs []buyer) error {
	type join struct{ b, n int }
	var jobs []join
	for i, b := range bs {
		n := 1
		if b.bot {
			n = r.cfg.BotJoins
		}
		for k := range n {
			jobs = append(jobs, join{i, k})
		}
	}
	rand.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
	ch := make(chan join)
	var wg sync.WaitGroup
	for range r.cfg.Conns * len(r.cfg.Bases) {
		wg.Go(func() {
			for j := range ch {
				b := &bs[j.b]
				r.count("join")
				if code, e := r.call(ctx, r.cl, http.MethodPost, r.url(b.id+int64(j.n), "/queue"), b.token, "", ""); code != http.StatusOK {
					r.fail("join of %d: %d %s", b.id, code, e.Code)
				}
			}
		})
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	return ctx.Err()
}

// queueAnswer is the queue routes' data.
type queueAnswer struct {
	Status       string `json:"status"`
	RetryAfterMs int64  `json:"retryAfterMs"`
	Token        string `json:"token"`
	Ticket       string `json:"ticket"`
}

// sell is one buyer's sale phase; it returns when the buyer learned the
// outcome (zero: never, or walked away).
func (r *run) sell(ctx context.Context, b *buyer, rng *rand.Rand) time.Time {
	pause := b.pause(r.cfg.BotEvery, rng)
	cl := r.cl
	if b.bot {
		// Bots have connections of their own: their rate is bounded by
		// the service, not by the people's queue for connections.
		cl = r.botCl
	}
	who := "person "
	if b.bot {
		who = "bot "
	}
	// ticket is the place ticket of the last answer, sent back on the
	// next poll as a browser does.
	ticket := ""
	for n := int64(0); ; n++ {
		select {
		case <-ctx.Done():
			return time.Time{}
		case <-time.After(pause):
		}
		if b.bot {
			// A purchase with no token, on every round.
			r.count(who + "buy without token")
			switch code, e := r.call(ctx, cl, http.MethodPost, r.url(b.id+n, ""), b.token, "", ""); {
			case code == http.StatusOK:
				r.sold(b, false)
				return time.Now()
			case code == http.StatusForbidden && e.Code == "NOT_ADMITTED":
				r.mu.Lock()
				r.res.TokenlessRefused++
				r.mu.Unlock()
			}
		}
		r.count(who + "poll")
		code, e := r.callWith(ctx, cl, http.MethodGet, r.url(b.id+n, "/queue"), b.token, "Queue-Ticket", ticket, "")
		if code != http.StatusOK {
			pause = time.Second
			continue
		}
		var a queueAnswer
		if err := json.Unmarshal(e.Data, &a); err != nil {
			r.fail("poll of %d: %v", b.id, err)
			return time.Time{}
		}
		if a.Ticket != "" {
			ticket = a.Ticket
		}
		switch a.Status {
		case "sold_out", "closed":
			return time.Now()
		case "admitted":
			if b.sybil {
				r.admitted(b)
			}
			if b.noShow && !b.bot {
				b.gone = true
				return time.Time{}
			}
			r.count(who + "buy with token")
			code, e := r.call(ctx, cl, http.MethodPost, r.url(b.id+n, ""), b.token, a.Token, "")
			switch {
			case code == http.StatusOK:
				r.sold(b, true)
				return time.Now()
			case code == http.StatusConflict && e.Code == "SOLD_OUT":
				return time.Now()
			}
		}
		pause = b.pause(r.cfg.BotEvery, rng)
		if !b.bot && a.RetryAfterMs > 0 {
			pause = time.Duration(a.RetryAfterMs) * time.Millisecond
		}
	}
}

// pause is the wait before a buyer's next round: a bot's fixed beat, a
// person's first poll spread over two seconds.
func (b *buyer) pause(every time.Duration, rng *rand.Rand) time.Duration {
	if b.bot {
		return every
	}
	return time.Duration(rng.Int64N(int64(2 * time.Second)))
}

// admitted records the first admission of one of the person's accounts.
func (r *run) admitted(b *buyer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !b.seen {
		b.seen = true
		r.res.Sybil.Admitted++
	}
}

func (r *run) sold(b *buyer, withToken bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b.bought = true
	r.soldAt = append(r.soldAt, time.Now())
	r.res.Sold++
	if b.bot {
		r.res.SoldByBots++
	}
	if b.sybil {
		r.res.Sybil.Won++
	}
	if !withToken {
		r.res.TokenlessSold++
	}
}

// finish computes the figures and reads the audit.
func (r *run) finish(ctx context.Context, bs []buyer, learned []time.Time) {
	res := &r.res
	res.BotShareJoiners = float64(res.Bots) / float64(res.Buyers)
	if res.Sold > 0 {
		res.BotShareUnits = float64(res.SoldByBots) / float64(res.Sold)
		res.PValue = BinomialTwoSided(res.SoldByBots, res.Sold, res.BotShareJoiners)
	}
	if sy := res.Sybil; sy != nil {
		buying := 0
		for _, b := range bs {
			if b.bot || !b.noShow {
				buying++
			}
		}
		share := float64(sy.Accounts) / float64(res.Buyers)
		sy.FairOne = float64(res.Units) / float64(res.Buyers)
		sy.FairN = float64(sy.Accounts) * sy.FairOne
		sy.Ratio = float64(sy.Won) / sy.FairN
		sy.FairNBuying = float64(sy.Accounts) * float64(res.Sold) / float64(buying)
		sy.PValue = 1
		if res.Sold > 0 {
			sy.PValue = BinomialTwoSided(sy.Won, res.Sold, share)
		}
		sy.AcceptLo, sy.AcceptHi = BinomialRange(res.Sold, share, 0.05)
	}
	var last time.Time
	for _, t := range r.soldAt {
		if t.After(last) {
			last = t
		}
	}
	var lags []time.Duration
	for i, b := range bs {
		switch {
		case b.gone:
			res.WalkedAway++
		case b.bought:
		case learned[i].IsZero():
			res.Unlearned++
		default:
			res.Learned++
			lags = append(lags, max(learned[i].Sub(last), 0))
		}
	}
	if len(lags) > 0 {
		slices.Sort(lags)
		res.LearnedMax = lags[len(lags)-1]
		res.LearnedP99 = lags[len(lags)*99/100]
	}
	r.reqs.Range(func(k, v any) bool {
		res.Requests[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	res.Orders, res.Room = r.audit(ctx)
	res.Errors = r.errs
}

// audit reads the voucher's audit. In async mode the stream consumers
// write the orders after the 200 answers: it reads again, for at most
// 30 s, while the database holds fewer orders than were sold.
func (r *run) audit(ctx context.Context) (int64, json.RawMessage) {
	var audit struct {
		Orders      int64           `json:"orders"`
		WaitingRoom json.RawMessage `json:"waitingRoom"`
	}
	for end := time.Now().Add(30 * time.Second); ; {
		code, e := r.call(ctx, r.cl, http.MethodGet, r.cfg.Bases[0]+"/admin/vouchers/"+strconv.FormatInt(r.vid, 10)+"/audit", r.cfg.AdminToken, "", "")
		if code != http.StatusOK || json.Unmarshal(e.Data, &audit) != nil {
			r.fail("audit: %d %s", code, e.Code)
			return 0, nil
		}
		if audit.Orders >= int64(r.res.Sold) || time.Now().After(end) {
			return audit.Orders, audit.WaitingRoom
		}
		time.Sleep(200 * time.Millisecond)
	}
}
