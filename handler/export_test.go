package handler

// InvalidArgumentOf exposes invalidArgument to the external tests.
var InvalidArgumentOf = invalidArgument
