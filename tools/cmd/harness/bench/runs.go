package bench

// The measurements of `harness bench`. First the limits: redis-benchmark,
// mariadb-slap, and wrk on the no-op endpoint. Then the seckill runs (wrk,
// k6), with the drain and the audit of every run. Last, the extra profiled
// runs of a missed target.

// admitStream is the scratch stream of the admission limit (no consumer
// group reads it).
const admitStream = "bench:orders"

// auditResponse is the admin audit endpoint's answer (model.Audit).
type auditResponse struct {
	Data struct {
		DuplicateRejections int64  `json:"duplicateRejections"`
		Consistent          bool   `json:"consistent"`
		Pending             *int64 `json:"pending"`
	} `json:"data"`
}

// groupCommitOff is the server setting of the sync -pertxn run: one
// transaction per order, the course's path.
const groupCommitOff = "SECKILL_SYNC_GROUP_COMMIT=off"

// limitsNotHit are the purchase limits of the -limits run. Every limit is on,
// and none is reached. Every request is a new user, and one voucher and one
// address get far fewer requests than their limits.
var limitsNotHit = []string{"SECKILL_RATE_LIMIT=1000", "SECKILL_RATE_LIMIT_VOUCHER=100000000", "SECKILL_RATE_LIMIT_IP=100000000"}
