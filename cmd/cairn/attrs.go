package main

import (
	"iter"
	"maps"
	"slices"
)

// sortedAttrs yields attributes in key order, so output is stable.
func sortedAttrs(m map[string]string) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}
