// Package expr owns scalar expression trees, the function registry and the
// compilation of trees into evaluators.
//
//	sql (binds names) ──▶ expr.Expr tree (typed, immutable, printable)
//	                          │ Compile, once per task
//	                          ▼
//	                      Evaluator: closures over the input row, with their
//	                      own scratch buffers; no allocation per record
//
// Trees are plain data: planner and physical print and compare them, and
// exec compiles them. An Evaluator is not safe for concurrent use; each
// task compiles its own.
package expr
