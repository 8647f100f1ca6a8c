package local

import "math/rand/v2"

func jitter(n int64) int64 {
	if n <= 0 {
		return 0
	}
	return rand.Int64N(n)
}
