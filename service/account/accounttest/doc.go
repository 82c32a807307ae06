// Package accounttest holds the in-memory fakes of the stores that package
// account declares: users, login codes, code limits, a token issuer. The
// handler tests and the account tests share them. Each keeps its rows in
// exported maps that a test may seed and read; its exported error fields
// make its calls fail.
package accounttest
