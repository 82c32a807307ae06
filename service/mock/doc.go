// Package mock holds the in-memory fakes of the stores that package service
// declares. The handler tests and the service tests share them. There is one
// fake a store interface. Each keeps its rows in exported maps that a test
// may seed and read. Its exported error fields make its calls fail.
//
// It imports model only, so the service's own tests may import it.
package mock
