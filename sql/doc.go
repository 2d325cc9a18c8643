// Package sql owns sqlstreams' statement language: splitting text into
// statements, the streaming statement envelope ksqlDB users write, and
// binding statements against the catalog into planner nodes.
//
//	text ─▶ Split ─▶ Parse ─┬─ envelope (CREATE STREAM …, WITH (…), EMIT,
//	                        │  SHOW, DESCRIBE, …): our own small tokenizer
//	                        └─ SELECT bodies and expressions: the TiDB parser
//	                           (ANSI_QUOTES), on the statement text with the
//	                           envelope blanked out, so positions still match
//	          ─▶ Bind(catalog) ─▶ planner.Node trees and expr.Expr trees
//
// This is the only package that imports TiDB's parser; its AST never
// leaves here. Errors are *Error values carrying a SQLSTATE and the line
// and column they point at.
package sql
