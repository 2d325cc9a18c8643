// Package expr owns scalar expression trees, the function registry and the
// compilation of trees into evaluators. Its language is ksqlDB's.
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
//
// # Nodes and their constructors
//
// Every constructor checks types and returns a *TypeError naming the
// operator or function and the types it was given:
//
//	NewBinary, NewUnary        arithmetic, ||, comparisons, AND, OR, NOT, -x
//	NewCast                    CAST(x AS t), ksqlDB's conversions (cast.go)
//	NewIn, NewBetween          x [NOT] IN (…), x [NOT] BETWEEN lo AND hi
//	NewLike                    x [NOT] LIKE p [ESCAPE e] (like.go)
//	NewDistinct, NewIsTrue     IS [NOT] DISTINCT FROM, IS [NOT] TRUE|FALSE
//	NewCase                    simple and searched CASE
//	NewSubscript, NewField     arr[i] (1-based, negative from the end),
//	                           map[k], struct->field
//	NewArray, NewMap, NewStruct  ARRAY[…], MAP(k := v, …), STRUCT(f := v, …)
//	NewLambda, NewLambdaVar    lambdas for TRANSFORM, FILTER, REDUCE
//	NewCall, Lookup            scalar functions (functions_*.go)
//	LookupTable                table functions (EXPLODE)
//
// Values of different types meet through implicit coercion (coerce.go):
// numbers widen INT → BIGINT → DECIMAL → DOUBLE and an untyped NULL takes
// any type; the constructors insert the casts. DECIMAL arithmetic and its
// result types are in decimal.go.
//
// # Errors and NULL
//
// A value that does not convert or parse (CAST('x' AS INT), a date that
// does not match its pattern, JSON that is not JSON), integer or DECIMAL
// division by zero and DECIMAL overflow give NULL, as they leave the
// column NULL in ksqlDB. An Evaluator returns an error only for what the
// statement got wrong in a way that could not be seen before the data
// arrived: a bad pattern, time zone, unit or encoding held in a column,
// or GENERATE_SERIES with a zero step. Constant arguments of that kind are
// checked by NewCall, at statement time.
//
// # For the binder
//
//   - Date units: DATEADD(DAYS, 1, d) and the other *ADD/*SUB functions take
//     the unit as a STRING argument; pass the bare word as a STRING
//     literal ('DAYS'). Singular or plural, any case.
//   - Decimal literals: DecimalLiteral("1.50") gives a DECIMAL(3, 2)
//     literal, as ksqlDB types 1.50; ParseNumberLiteral keeps giving INT,
//     BIGINT or DOUBLE.
//   - Lambdas: call LambdaParamTypes(fn, types of the arguments before the
//     lambda, its position, its parameter count) to type the parameters,
//     bind the body with NewLambdaVar(position, name, type) for parameter
//     references (a nested lambda refers to an outer parameter by name),
//     wrap it with NewLambda and pass it to NewCall as an argument.
//   - STRUCT field names are matched exactly, then case-insensitively
//     when that is unambiguous.
//   - Table functions: LookupTable gives Check (the element type) and
//     Expand; ExplodeElements is EXPLODE's expansion of an evaluated ARRAY.
//
// Time zones come from the embedded tz database (time/tzdata), so they
// work on hosts without one.
package expr
