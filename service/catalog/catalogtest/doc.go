// Package catalogtest holds the in-memory fakes of the stores that package
// catalog declares: shops and vouchers. The handler tests and the service's
// domain tests share them (the sale reads the vouchers the catalog
// publishes). Each keeps its rows in exported maps that a test may seed and
// read; its exported error fields make its calls fail.
package catalogtest
