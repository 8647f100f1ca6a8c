// Package jsvalue models JSON values the way a JavaScript engine holds them after
// JSON.parse, so that cairn can reproduce the exact bytes JSON.stringify writes in the
// TypeScript Powertools idempotency library: numbers are IEEE-754 doubles formatted with
// ECMAScript Number::toString, strings are UTF-16 code unit sequences (lone surrogates
// survive), and objects enumerate array-index keys first, in ascending numeric order,
// then the other keys in insertion order.
package jsvalue
